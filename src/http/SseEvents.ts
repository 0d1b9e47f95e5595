/**
 * An upstream SSE body as events, in one stream stage: UTF-8 decoding that
 * carries a character split across reads into the next read, and Effect's SSE
 * parser (`Sse.makeParser`, the one behind `Sse.decode`) fed read by read.
 * One stage instead of three (`decodeText`, the `Sse.decode` channel,
 * `mapError`) keeps the per-response cost of a streamed answer low.
 *
 * Events that end before the body does are emitted as soon as their read is
 * parsed; an event the body leaves unterminated is dropped, as the SSE
 * standard says (HTML Living Standard, "Server-sent events", §9.2.6). A
 * `retry:` field is not an event and is ignored. An event above 10 MiB fails
 * the stream with `UpstreamFailed` kind `bad-body`.
 *
 * @since 0.1.0
 */
import { Effect, Stream } from "effect"
import { Sse } from "effect/encoding"
import { UpstreamFailed } from "../errors/GatewayError.ts"

/** The largest single event accepted, in bytes of text (the parser's own default). @category constants */
export const MAX_EVENT_BYTES = 10 * 1024 * 1024

/**
 * The events of an SSE byte stream.
 *
 * @category decoding
 */
export const sseEvents = <E>(body: Stream.Stream<Uint8Array, E>): Stream.Stream<Sse.Event, E | UpstreamFailed> =>
  Stream.suspend(() => {
    const decoder = new TextDecoder("utf-8", { ignoreBOM: false })
    let parsed: Array<Sse.Event> = []
    const parser = Sse.makeParser((event) => {
      if (event._tag === "Event") parsed.push(event)
    }, { maxEventSize: MAX_EVENT_BYTES })
    return body.pipe(
      Stream.mapAccumEffect(() => undefined, (state: undefined, bytes: Uint8Array) => {
        const error = parser.feed(decoder.decode(bytes, { stream: true }))
        if (error !== undefined) {
          return Effect.fail(
            new UpstreamFailed({ kind: "bad-body", status: 200, message: "An upstream event was too large." })
          )
        }
        const out = parsed
        parsed = []
        return Effect.succeed([state, out] as const)
      })
    )
  })
