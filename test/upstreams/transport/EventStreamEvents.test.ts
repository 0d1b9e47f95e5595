/**
 * The event-stream reader (`src/upstreams/transport/EventStreamEvents.ts`) over bodies made by AWS's own encoder:
 * frames split at every byte and several in one read, exception frames, a corrupted CRC, an oversized prelude, and a
 * body cut inside a frame.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { Effect, Exit } from "effect"
import type { Sse } from "effect/encoding"
import { UpstreamFailed } from "../../../src/errors/GatewayError.ts"
import { eventStreamReader, MAX_FRAME_BYTES } from "../../../src/upstreams/transport/EventStreamEvents.ts"
import { concatFrames, eventFrame, exceptionFrame } from "../../support/EventStreamFrames.ts"

/** Every event the reader hands out for `chunks`, or the failure it ends with. */
const readAll = async (chunks: ReadonlyArray<Uint8Array>): Promise<Array<Sse.Event> | UpstreamFailed> => {
  let index = 0
  const next = eventStreamReader(Effect.sync(() => chunks[index++]))
  const events: Array<Sse.Event> = []
  const exit = await Effect.runPromiseExit(Effect.gen(function* () {
    while (true) {
      const batch = yield* next
      if (batch === undefined) return
      events.push(...batch)
    }
  }))
  if (Exit.isSuccess(exit)) return events
  const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
  if (failure === undefined || !(failure.error instanceof UpstreamFailed)) throw new Error(String(exit.cause))
  return failure.error
}

const body = concatFrames([
  eventFrame("messageStart", { role: "assistant" }),
  eventFrame("contentBlockDelta", { contentBlockIndex: 0, delta: { text: "Héllo ✓" }, p: "abcdefgh" }),
  eventFrame("messageStop", { stopReason: "end_turn" })
])

const expected: Array<Sse.Event> = [
  { _tag: "Event", event: "messageStart", id: undefined, data: '{"role":"assistant"}' },
  {
    _tag: "Event",
    event: "contentBlockDelta",
    id: undefined,
    data: '{"contentBlockIndex":0,"delta":{"text":"Héllo ✓"},"p":"abcdefgh"}'
  },
  { _tag: "Event", event: "messageStop", id: undefined, data: '{"stopReason":"end_turn"}' }
]

Deno.test("eventStreamReader: several frames in one read, each an event named by its :event-type", async () => {
  deepStrictEqual(await readAll([body]), expected)
})

Deno.test("eventStreamReader: frames split at every byte, and one byte per read, give the same events", async () => {
  for (let cut = 1; cut < body.length; cut++) {
    deepStrictEqual(await readAll([body.slice(0, cut), body.slice(cut)]), expected, `split at ${cut}`)
  }
  deepStrictEqual(await readAll(Array.from(body, (byte) => Uint8Array.of(byte))), expected)
})

Deno.test("eventStreamReader: an exception frame is an event named by its :exception-type", async () => {
  const events = await readAll([
    concatFrames([eventFrame("messageStart", { role: "assistant" }), exceptionFrame("throttlingException", "Slow")])
  ])
  deepStrictEqual(events, [
    expected[0],
    { _tag: "Event", event: "throttlingException", id: undefined, data: '{"message":"Slow"}' }
  ])
})

Deno.test("eventStreamReader: a frame whose message CRC or prelude CRC is wrong is a broken stream", async () => {
  for (const position of [body.length - 1, 9]) {
    const corrupted = body.slice()
    corrupted[position] ^= 0xff
    const failure = await readAll([corrupted])
    strictEqual(failure instanceof UpstreamFailed, true)
    strictEqual((failure as UpstreamFailed).kind, "bad-body")
  }
})

Deno.test("eventStreamReader: a prelude announcing more than the limit fails before the frame is buffered", async () => {
  const prelude = new Uint8Array(12)
  new DataView(prelude.buffer).setUint32(0, MAX_FRAME_BYTES + 1, false)
  let reads = 0
  const next = eventStreamReader(Effect.sync(() => {
    reads += 1
    return reads === 1 ? prelude : new Uint8Array(1024)
  }))
  const exit = await Effect.runPromiseExit(next)
  strictEqual(Exit.isFailure(exit), true)
  strictEqual(reads, 1, "nothing read after the oversized prelude")
  const failure = Exit.isFailure(exit) ? exit.cause.reasons.find((reason) => reason._tag === "Fail") : undefined
  strictEqual((failure?.error as UpstreamFailed).message, "An upstream event was too large.")
})

Deno.test("eventStreamReader: a body that ends inside a frame is a broken stream; one that ends between frames ends", async () => {
  const cut = await readAll([body.slice(0, body.length - 3)])
  strictEqual(cut instanceof UpstreamFailed && cut.kind === "bad-body", true)
  deepStrictEqual(await readAll([]), [])
})

Deno.test("eventStreamReader: a payload nesting deeper than the JSON limit is refused", async () => {
  const deep = "[".repeat(100) + "]".repeat(100)
  const frame = eventFrame("contentBlockDelta", JSON.parse(deep))
  const failure = await readAll([frame])
  strictEqual(failure instanceof UpstreamFailed && failure.message, "An upstream event nested too deep.")
})
