/**
 * Drives the pure stream translators of a `Format` without running an Effect:
 * feed SSE events to a decoder, or canonical parts to an encoder, and collect
 * what comes out.
 */
import type { Sse } from "effect/encoding"
import type { StreamPart } from "../../src/canonical/StreamPart.ts"
import type { Problem, ResponseMeta, StreamDecoder, StreamEncoder } from "../../src/formats/Format.ts"
import type { UpstreamFailed } from "../../src/errors/GatewayError.ts"

/** An SSE event with the given name (default `message`) and data. */
export const sse = (data: string | object, event = "message"): Sse.Event => ({
  _tag: "Event",
  event,
  id: undefined,
  data: typeof data === "string" ? data : JSON.stringify(data)
})

/** The outcome of decoding a whole event list. */
export interface Decoded {
  readonly parts: ReadonlyArray<StreamPart>
  readonly failure: UpstreamFailed | undefined
  readonly complete: boolean
}

/** Feeds `events` through `decoder`; stops at the first in-band failure. */
export const runDecoder = <S>(decoder: StreamDecoder<S>, events: ReadonlyArray<Sse.Event>): Decoded => {
  let state = decoder.initial()
  const parts: Array<StreamPart> = []
  for (const event of events) {
    const result = decoder.step(state, event)
    if (!Array.isArray(result)) return { parts, failure: result as UpstreamFailed, complete: false }
    const [next, out] = result as readonly [S, ReadonlyArray<StreamPart>]
    state = next
    parts.push(...out)
  }
  const complete = decoder.complete(state)
  if (complete) parts.push(...decoder.flush(state))
  return { parts, failure: undefined, complete }
}

/** Feeds `parts` through `encoder`, then `end` (or `fail` with `problem`). */
export const runEncoder = <S>(
  encoder: StreamEncoder<S>,
  meta: ResponseMeta,
  parts: ReadonlyArray<StreamPart>,
  problem?: Problem
): ReadonlyArray<Sse.Event> => {
  let state = encoder.initial(meta)
  const out: Array<Sse.Event> = []
  for (const part of parts) {
    const [next, events] = encoder.step(state, part)
    state = next
    out.push(...events)
  }
  out.push(...(problem === undefined ? encoder.end(state) : encoder.fail(state, problem)))
  return out
}
