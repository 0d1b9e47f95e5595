/**
 * The streamed answer body: every pulled chunk arrives in order; the
 * finalizer runs exactly once, and before the reader sees the end, whether
 * the pulls end, the caller cancels mid-pull, or a pull dies (which errors the
 * stream without saying why).
 */
import { deepStrictEqual, rejects, strictEqual } from "node:assert/strict"
import { Cause, Context, Effect } from "effect"
import { readableBody } from "../../src/http/ReadableBody.ts"

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** A pull over `texts` in turn, then `Cause.Done`. */
const pullOf = (texts: ReadonlyArray<string>) => {
  let index = 0
  return Effect.suspend(() =>
    index < texts.length ? Effect.succeed([encoder.encode(texts[index++])] as const) : Cause.done()
  )
}

Deno.test("readable body: chunks in order, finalizer once and before the end is seen", async () => {
  const log: Array<string> = []
  const body = readableBody(
    pullOf(["a", "b", "c"]),
    Effect.sync(() => log.push("finalized")),
    Context.empty()
  )
  const reader = body.getReader()
  while (true) {
    const { done, value } = await reader.read()
    if (done) {
      log.push("end seen")
      break
    }
    log.push(decoder.decode(value))
  }
  deepStrictEqual(log, ["a", "b", "c", "finalized", "end seen"])
})

Deno.test("readable body: a cancel during a pull interrupts it and finalizes once", async () => {
  let finalized = 0
  let interrupted = false
  const pending = Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => (interrupted = true))))
  const body = readableBody(
    Effect.andThen(Effect.void, pending),
    Effect.sync(() => finalized++),
    Context.empty()
  )
  const reader = body.getReader()
  const read = reader.read()
  await new Promise((resolve) => setTimeout(resolve, 10))
  await reader.cancel()
  const result = await read
  strictEqual(result.done, true)
  strictEqual(interrupted, true)
  strictEqual(finalized, 1)
})

Deno.test("readable body: a dying pull errors the stream after the finalizer, without its cause", async () => {
  let finalized = 0
  const body = readableBody(
    Effect.die(new Error("secret sk-test-upstream")),
    Effect.sync(() => finalized++),
    Context.empty()
  )
  await rejects(body.getReader().read(), (error: Error) => {
    strictEqual(error.message.includes("sk-test"), false)
    return true
  })
  strictEqual(finalized, 1)
})
