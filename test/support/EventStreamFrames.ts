/**
 * AWS event-stream messages for tests, encoded by AWS's own codec (`@smithy/eventstream-codec`): an event of a type
 * with a JSON payload, an exception, and a whole body of several.
 */
import { EventStreamCodec } from "@smithy/eventstream-codec"
import { fromUtf8, toUtf8 } from "@smithy/util-utf8"

const codec = new EventStreamCodec(toUtf8, fromUtf8)

const text = (value: string) => ({ type: "string" as const, value })

/** One `:message-type: event` message of `type` whose payload is `payload` as JSON. */
export const eventFrame = (type: string, payload: unknown): Uint8Array =>
  codec.encode({
    headers: {
      ":message-type": text("event"),
      ":event-type": text(type),
      ":content-type": text("application/json")
    },
    body: fromUtf8(JSON.stringify(payload))
  })

/** One `:message-type: exception` message of `type` with `{message}` as its payload. */
export const exceptionFrame = (type: string, message: string): Uint8Array =>
  codec.encode({
    headers: {
      ":message-type": text("exception"),
      ":exception-type": text(type),
      ":content-type": text("application/json")
    },
    body: fromUtf8(JSON.stringify({ message }))
  })

/** Messages one after another, as one body. */
export const concatFrames = (frames: ReadonlyArray<Uint8Array>): Uint8Array => {
  const out = new Uint8Array(frames.reduce((total, frame) => total + frame.length, 0))
  let offset = 0
  for (const frame of frames) {
    out.set(frame, offset)
    offset += frame.length
  }
  return out
}

/** An InvokeModelWithResponseStream `chunk` event carrying `event` (one Messages stream event) Base64-encoded. */
export const chunkFrame = (event: Record<string, unknown>): Uint8Array =>
  eventFrame("chunk", { bytes: btoa(String.fromCharCode(...new TextEncoder().encode(JSON.stringify(event)))) })
