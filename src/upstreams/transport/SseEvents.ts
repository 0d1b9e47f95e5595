/**
 * An upstream SSE body as batches of events, read chunk by chunk: UTF-8
 * decoding that carries a character split across reads into the next read,
 * and Effect's SSE parser (`Sse.makeParser`, the one behind `Sse.decode`) fed
 * read by read. It is a plain reading effect rather than a stream stage, so a
 * streamed answer's whole pipeline (read, parse, translate, encode) runs as
 * one pull per upstream read (see `Relay`).
 *
 * Events that end before the body does are handed out as soon as their read
 * is parsed; an event the body leaves unterminated is dropped, as the SSE
 * standard says (HTML Living Standard, "Server-sent events", §9.2.6). A
 * `retry:` field is not an event and is ignored. An event above 10 MiB, or
 * one whose data nests arrays and objects deeper than `MAX_JSON_DEPTH`
 * (checked here, before any decoder parses it: a hostile upstream's bracket
 * bomb costs one linear scan), fails with `UpstreamFailed` kind `bad-body`.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { Sse } from "effect/encoding"
import { nestsTooDeep } from "../../domain/JsonDepth.ts"
import { UpstreamFailed } from "../../errors/GatewayError.ts"

/** The largest single event accepted, in bytes of text (the parser's own default). @category constants */
export const MAX_EVENT_BYTES = 10 * 1024 * 1024

const tooLarge = new UpstreamFailed({ kind: "bad-body", status: 200, message: "An upstream event was too large." })
const tooDeep = new UpstreamFailed({ kind: "bad-body", status: 200, message: "An upstream event nested too deep." })

/**
 * Reads SSE events through `read` (the next chunk of the body, `undefined` at
 * its end). The effect it returns yields the next non-empty batch of events,
 * as many as the reads it took produced, or `undefined` once the body has
 * ended; it reads as many chunks as it needs for at least one event. Run it
 * again for the next batch, never concurrently.
 *
 * @category decoding
 */
export const sseReader = <E>(
  read: Effect.Effect<Uint8Array | undefined, E>
): Effect.Effect<ReadonlyArray<Sse.Event> | undefined, E | UpstreamFailed> => {
  const decoder = new TextDecoder("utf-8", { ignoreBOM: false })
  let parsed: Array<Sse.Event> = []
  let ended = false
  let deep = false
  const parser = Sse.makeParser((event) => {
    if (event._tag !== "Event") return
    if (nestsTooDeep(event.data)) deep = true
    else parsed.push(event)
  }, { maxEventSize: MAX_EVENT_BYTES })
  const next: Effect.Effect<ReadonlyArray<Sse.Event> | undefined, E | UpstreamFailed> = Effect.suspend(() =>
    ended ? Effect.undefined : Effect.flatMap(read, (bytes) => {
      if (bytes === undefined) {
        ended = true
        return Effect.undefined
      }
      if (parser.feed(decoder.decode(bytes, { stream: true })) !== undefined) return Effect.fail(tooLarge)
      if (deep) return Effect.fail(tooDeep)
      if (parsed.length === 0) return next
      const out = parsed
      parsed = []
      return Effect.succeed(out)
    })
  )
  return next
}
