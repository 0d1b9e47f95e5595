/**
 * The upstream SSE reader: chunk boundaries anywhere (split lines, a
 * multi-byte UTF-8 character split across reads) give the same events as the
 * whole body, and the same as Effect's own `Sse.decode` pipeline; every batch
 * it hands out is non-empty; `retry:` is not an event; an oversized event,
 * or one nested deeper than `MAX_JSON_DEPTH`, fails as `bad-body`.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { Effect, Stream } from "effect"
import { Sse } from "effect/encoding"
import fc from "fast-check"
import { MAX_JSON_DEPTH } from "../../../src/domain/JsonDepth.ts"
import { MAX_EVENT_BYTES, sseReader } from "../../../src/upstreams/transport/SseEvents.ts"

const encoder = new TextEncoder()

/** Every event the reader hands out for `chunks` read in turn; each batch must be non-empty. */
const readAll = (chunks: ReadonlyArray<Uint8Array>) =>
  Effect.gen(function* () {
    let index = 0
    const next = sseReader(Effect.sync(() => chunks[index++]))
    const events: Array<Sse.Event> = []
    while (true) {
      const batch = yield* next
      if (batch === undefined) return events
      strictEqual(batch.length > 0, true)
      events.push(...batch)
    }
  })

const collect = (chunks: ReadonlyArray<Uint8Array>) => Effect.runPromise(readAll(chunks))

const reference = (chunks: ReadonlyArray<Uint8Array>) =>
  Effect.runPromise(
    Stream.runCollect(Stream.fromIterable(chunks).pipe(Stream.decodeText(), Stream.pipeThroughChannel(Sse.decode())))
  )

/** `bytes` cut at `cuts` (any offsets, sorted and deduplicated). */
const split = (bytes: Uint8Array, cuts: ReadonlyArray<number>): Array<Uint8Array> => {
  const points = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b)
  const pieces: Array<Uint8Array> = []
  let start = 0
  for (const point of [...points, bytes.length]) {
    if (point > start) pieces.push(bytes.slice(start, point))
    start = Math.max(start, point)
  }
  return pieces
}

const eventArbitrary = fc.record({
  event: fc.constantFrom("message", "content_block_delta", "response.output_text.delta"),
  // Any Unicode (emoji, CJK, accents), no line breaks inside one data line.
  data: fc.string({ unit: "grapheme", maxLength: 40 }).map((text) => text.replace(/[\r\n]/g, " "))
})

Deno.test("sseReader: any split of the bytes gives the same events as the whole body and as Sse.decode", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(eventArbitrary, { minLength: 1, maxLength: 8 }),
      fc.array(fc.nat(), { maxLength: 12 }),
      async (events, cuts) => {
        const text = events.map((event) =>
          Sse.encoder.write({ _tag: "Event", event: event.event, id: undefined, data: event.data })
        ).join("")
        const bytes = encoder.encode(text)
        const whole = await collect([bytes])
        const pieces = await collect(split(bytes, cuts))
        deepStrictEqual(pieces, whole)
        deepStrictEqual(pieces, await reference(split(bytes, cuts)))
        deepStrictEqual(
          pieces.map((event) => ({ event: event.event, data: event.data })),
          events.map((event) => ({ event: event.event, data: event.data }))
        )
      }
    ),
    { numRuns: 300 }
  )
})

Deno.test("sseReader: a four-byte character split byte by byte arrives whole", async () => {
  const bytes = encoder.encode('data: {"text":"Grüße 😀 世界"}\n\n')
  const events = await collect(split(bytes, Array.from({ length: bytes.length }, (_, index) => index)))
  strictEqual(events.length, 1)
  strictEqual(events[0].data, '{"text":"Grüße 😀 世界"}')
})

Deno.test("sseReader: retry is not an event; an unterminated last event is dropped", async () => {
  const events = await collect([encoder.encode("retry: 1000\n\ndata: one\n\ndata: cut off")])
  deepStrictEqual(events.map((event) => event.data), ["one"])
})

Deno.test("sseReader: an event above the size limit fails as bad-body", async () => {
  const huge = encoder.encode(`data: ${"x".repeat(MAX_EVENT_BYTES + 1)}`)
  const failure = await Effect.runPromise(Effect.flip(readAll([huge])))
  strictEqual(failure._tag, "UpstreamFailed")
  strictEqual(failure.kind, "bad-body")
})

Deno.test("sseReader: an event nested deeper than MAX_JSON_DEPTH fails as bad-body before any decoder parses it", async () => {
  const nested = (levels: number) => "[".repeat(levels) + "]".repeat(levels)
  const fine = await collect([
    encoder.encode(`data: ${nested(MAX_JSON_DEPTH)}\n\ndata: {"text":"${"[".repeat(1000)}"}\n\n`)
  ])
  strictEqual(fine.length, 2, "64 levels, and brackets inside a string, are read")
  for (const levels of [MAX_JSON_DEPTH + 1, 1_000_000]) {
    const failure = await Effect.runPromise(
      Effect.flip(readAll([encoder.encode(`data: {"ok":1}\n\ndata: ${nested(levels)}\n\n`)]))
    )
    strictEqual(failure._tag, "UpstreamFailed")
    strictEqual(failure.kind, "bad-body")
    strictEqual(failure.message, "An upstream event nested too deep.")
  }
})
