/**
 * An upstream `application/vnd.amazon.eventstream` body (Bedrock's ConverseStream and InvokeModelWithResponseStream
 * answers) as batches of events in the shape the SSE reader hands out (`SseEvents.ts`), so a wire's stream decoder
 * reads either framing alike.
 *
 * The body is a sequence of binary messages (docs.aws.amazon.com/AmazonS3/latest/API/RESTSelectObjectAppendix.html,
 * "Event stream encoding"; the same framing Bedrock streams): a 12-byte prelude (total length, headers length, prelude
 * CRC32, all big-endian), headers, a payload and a message CRC32. Only the prelude's total length is read here, to
 * know where a message ends and to refuse one above `MAX_FRAME_BYTES` before buffering it; each whole message is
 * decoded by `@smithy/eventstream-codec`'s `EventStreamCodec` (loaded on first use), which verifies both CRCs and
 * parses the headers. A message split across reads is carried into the next; several in one read are all handed out.
 *
 * What an event is:
 * - `:message-type: event` → `event` = its `:event-type` (`contentBlockDelta`, `chunk`, …);
 * - `:message-type: exception` → `event` = its `:exception-type` (`throttlingException`, …);
 * - `:message-type: error` → `event` = its `:error-code`, `data` = `{"message": <:error-message>}`;
 * - `data` = the payload as UTF-8 text (a JSON object for Bedrock), `id` undefined.
 *
 * A message that fails its checksum or cannot be parsed, one larger than `MAX_FRAME_BYTES`, a payload nesting deeper
 * than `MAX_JSON_DEPTH`, and a body that ends inside a message fail with `UpstreamFailed` kind `bad-body` (a broken
 * stream: the relay's cut-stream billing applies).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { Sse } from "effect/encoding"
import { nestsTooDeep } from "../../domain/JsonDepth.ts"
import { UpstreamFailed } from "../../errors/GatewayError.ts"

/** The largest single message accepted, in bytes (prelude to CRC), as for an SSE event. @category constants */
export const MAX_FRAME_BYTES = 10 * 1024 * 1024

/** Prelude (8 bytes) + prelude CRC (4) + message CRC (4): the smallest message. */
const MINIMUM_FRAME_BYTES = 16

const broken = (message: string) => new UpstreamFailed({ kind: "bad-body", status: 200, message })

interface Codec {
  readonly decode: (message: ArrayBufferView) => {
    readonly headers: Readonly<Record<string, { readonly type: string; readonly value: unknown }>>
    readonly body: Uint8Array
  }
}

let loaded: Promise<Codec> | undefined

/** AWS's codec, built once on first use (a heavy import kept off the startup graph). */
const codec = (): Promise<Codec> =>
  loaded ??= Promise.all([import("@smithy/eventstream-codec"), import("@smithy/util-utf8")]).then((
    [{ EventStreamCodec }, { toUtf8, fromUtf8 }]
  ) => new EventStreamCodec(toUtf8, fromUtf8) as unknown as Codec)

const headerText = (
  headers: Readonly<Record<string, { readonly type: string; readonly value: unknown }>>,
  name: string
): string | undefined => {
  const header = headers[name]
  return header !== undefined && header.type === "string" && typeof header.value === "string" ? header.value : undefined
}

const utf8 = new TextDecoder("utf-8", { fatal: false })

/**
 * One decoded message as an event, or a failure for a message that is none of the three kinds.
 *
 * @category decoding
 */
export const eventOfMessage = (
  message: ReturnType<Codec["decode"]>
): Sse.Event | UpstreamFailed => {
  const kind = headerText(message.headers, ":message-type")
  const data = utf8.decode(message.body)
  const named = kind === "event"
    ? headerText(message.headers, ":event-type")
    : kind === "exception"
    ? headerText(message.headers, ":exception-type")
    : kind === "error"
    ? headerText(message.headers, ":error-code")
    : undefined
  if (named === undefined) return broken("An upstream event-stream message had no type.")
  return {
    _tag: "Event",
    event: named,
    id: undefined,
    data: kind === "error" ? JSON.stringify({ message: headerText(message.headers, ":error-message") ?? "" }) : data
  }
}

/**
 * Reads event-stream messages through `read` (the next chunk of the body, `undefined` at its end), as `sseReader`
 * reads SSE: the effect yields the next non-empty batch of events, as many as the reads it took produced, or
 * `undefined` once the body has ended between messages; it reads as many chunks as it needs for at least one event.
 * Run it again for the next batch, never concurrently.
 *
 * @category decoding
 */
export const eventStreamReader = <E>(
  read: Effect.Effect<Uint8Array | undefined, E>
): Effect.Effect<ReadonlyArray<Sse.Event> | undefined, E | UpstreamFailed> => {
  let pending: Uint8Array = new Uint8Array(0)
  let ended = false

  /** The messages whole in `pending`, removed from it. */
  const take = (decoder: Codec): Array<Sse.Event> | UpstreamFailed => {
    const out: Array<Sse.Event> = []
    let offset = 0
    while (pending.length - offset >= 4) {
      const view = new DataView(pending.buffer, pending.byteOffset + offset, pending.length - offset)
      const length = view.getUint32(0, false)
      if (length > MAX_FRAME_BYTES) return broken("An upstream event was too large.")
      if (length < MINIMUM_FRAME_BYTES) return broken("An upstream event-stream message was malformed.")
      if (pending.length - offset < length) break
      let message: ReturnType<Codec["decode"]>
      try {
        message = decoder.decode(pending.subarray(offset, offset + length))
      } catch {
        return broken("An upstream event-stream message failed its checksum or could not be read.")
      }
      offset += length
      const event = eventOfMessage(message)
      if (event instanceof UpstreamFailed) return event
      if (nestsTooDeep(event.data)) return broken("An upstream event nested too deep.")
      out.push(event)
    }
    pending = pending.slice(offset)
    return out
  }

  const next: Effect.Effect<ReadonlyArray<Sse.Event> | undefined, E | UpstreamFailed> = Effect.suspend(() =>
    ended ? Effect.undefined : Effect.flatMap(read, (bytes) => {
      if (bytes === undefined) {
        ended = true
        return pending.length === 0
          ? Effect.undefined
          : Effect.fail(broken("The upstream stream ended inside a message."))
      }
      const joined = new Uint8Array(pending.length + bytes.length)
      joined.set(pending, 0)
      joined.set(bytes, pending.length)
      pending = joined
      if (pending.length < 4) return next
      return Effect.flatMap(Effect.promise(codec), (decoder) => {
        const events = take(decoder)
        if (events instanceof UpstreamFailed) return Effect.fail(events)
        return events.length === 0 ? next : Effect.succeed(events)
      })
    })
  )
  return next
}
