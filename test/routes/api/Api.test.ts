/**
 * `nulPath`, the `/api` bodies' NUL check: the first NUL string or key in
 * document order, with its path; iterative, so a value nested far deeper than
 * any parse lets through still cannot overflow the stack.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import { nulPath } from "../../../src/routes/api/Api.ts"

/** The recursive walk `nulPath` replaced, kept here as the reference for its answers. */
const reference = (value: unknown, path: Array<PropertyKey>): Array<PropertyKey> | undefined => {
  if (typeof value === "string") return value.includes("\u0000") ? path : undefined
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) {
      const found = reference(item, [...path, index])
      if (found !== undefined) return found
    }
    return undefined
  }
  if (typeof value === "object" && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      if (key.includes("\u0000")) return [...path, key]
      const found = reference(item, [...path, key])
      if (found !== undefined) return found
    }
  }
  return undefined
}

Deno.test("nulPath: the first NUL string or key in document order, with its path", () => {
  strictEqual(nulPath({ a: "x", b: [1, { c: "y" }] }, []), undefined)
  deepStrictEqual(nulPath({ a: "x", b: [1, { c: "y\u0000" }] }, []), ["b", 1, "c"])
  deepStrictEqual(nulPath({ a: { deep: "\u0000" }, "b\u0000": 1 }, []), ["a", "deep"])
  deepStrictEqual(nulPath({ "k\u0000": "v\u0000" }, []), ["k\u0000"], "a key before its value")
  deepStrictEqual(nulPath(["\u0000"], ["body"]), ["body", 0])
  deepStrictEqual(nulPath("\u0000", []), [])
})

Deno.test("nulPath: the same answer as the recursive walk, for any JSON value", () => {
  const text = fc.string({ unit: fc.constantFrom("a", "b", "\u0000"), maxLength: 3 })
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 5, stringUnit: fc.constantFrom("a", "\u0000") }), text, (value, key) => {
      deepStrictEqual(nulPath(value, []), reference(value, []))
      deepStrictEqual(nulPath({ [key]: value }, ["x"]), reference({ [key]: value }, ["x"]))
    }),
    { numRuns: 500 }
  )
})

Deno.test("nulPath: a value nested 200,000 levels deep is walked without overflowing the stack", () => {
  let value: unknown = "end\u0000"
  for (let level = 0; level < 200_000; level++) value = level % 2 === 0 ? [value] : { k: value }
  const path = nulPath(value, [])
  strictEqual(path?.length, 200_000)
  deepStrictEqual(path?.slice(0, 2), ["k", 0])
  let clean: unknown = "end"
  for (let level = 0; level < 200_000; level++) clean = [clean]
  strictEqual(nulPath(clean, []), undefined)
})
