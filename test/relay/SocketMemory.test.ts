import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { makeSocketMemory } from "../../src/relay/socket/SocketMemory.ts"

Deno.test("a socket's memory keeps its last responses, within its count and bytes", () => {
  const memory = makeSocketMemory({ maxResponses: 2, maxBytes: 40 })
  memory.save("a", ["one"])
  memory.save("b", ["two"])
  memory.save("c", ["three"])
  strictEqual(memory.load("a"), undefined, "the oldest is forgotten past the count")
  deepStrictEqual(memory.load("c"), ["three"])
  memory.save("d", ["x".repeat(30)])
  strictEqual(memory.load("b"), undefined, "forgotten past the bytes")
  strictEqual(memory.load("c"), undefined)
  strictEqual(memory.size().responses, 1)
  memory.save("huge", ["y".repeat(100)])
  strictEqual(memory.load("huge"), undefined, "an entry above the byte cap alone is not kept")
  deepStrictEqual(memory.load("d"), ["x".repeat(30)])
  strictEqual(memory.size().bytes, JSON.stringify(["x".repeat(30)]).length)
})
