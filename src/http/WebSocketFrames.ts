/**
 * What a gateway socket accepts from a caller, frame by frame, before anything is forwarded or billed: a text frame
 * (binary is refused), at most `maxBytes` of UTF-8, holding one JSON object with a string `type`, nested at most
 * `MAX_JSON_DEPTH` levels, with no lone UTF-16 surrogate in any string (raw or escaped), at no more than `perSecond` events a second. A refusal is a `Refusal`
 * the caller is told of in an `error` event (`errorEvent`: the shape OpenAI's Realtime and Responses sockets send,
 * `{type: "error", event_id?, error: {type, code, message, param, event_id}}`); the socket stays usable.
 *
 * @since 0.3.0
 */
import { MAX_JSON_DEPTH, nestsTooDeep } from "../domain/JsonDepth.ts"

/** Why a caller's frame was refused: the `error` event's `code`, `message` and `param`. @category models */
export interface Refusal {
  readonly code: string
  readonly message: string
  readonly param: string | null
  /** The caller's `event_id` when the frame was an object that carried one. */
  readonly eventId: string | null
}

/** A frame accepted: the event and the bytes it took. @category models */
export interface ClientEvent {
  readonly event: Record<string, unknown>
  readonly type: string
  readonly text: string
  readonly bytes: number
}

const encoder = new TextEncoder()

/** Whether a parsed JSON value holds a string (or key) with a lone UTF-16 surrogate (a `\\ud800` escape). */
const holdsLoneSurrogate = (value: unknown): boolean => {
  if (typeof value === "string") return !value.isWellFormed()
  if (Array.isArray(value)) return value.some(holdsLoneSurrogate)
  if (typeof value === "object" && value !== null) {
    return Object.entries(value).some(([key, item]) => !key.isWellFormed() || holdsLoneSurrogate(item))
  }
  return false
}

const refusal = (code: string, message: string, param: string | null = null, eventId: string | null = null) => ({
  code,
  message,
  param,
  eventId
})

/**
 * Reads one frame's data (`MessageEvent.data`: a string for a text frame, bytes for a binary one) as a client
 * event, or the refusal to send back. Never throws.
 *
 * @category parsing
 */
export const readClientEvent = (data: unknown, maxBytes: number): ClientEvent | Refusal => {
  if (typeof data !== "string") {
    return refusal("invalid_frame", "Binary frames are not accepted; send each event as a JSON text frame.")
  }
  // A UTF-8 length is at least the UTF-16 length: a frame that long is refused without encoding it.
  const bytes = data.length > maxBytes ? data.length : encoder.encode(data).length
  if (bytes > maxBytes) {
    return refusal("frame_too_large", `The event is more than ${maxBytes} bytes, the most accepted.`)
  }
  if (!data.isWellFormed()) {
    return refusal("invalid_json", "The event holds a lone UTF-16 surrogate; it cannot be forwarded.")
  }
  if (nestsTooDeep(data)) {
    return refusal("invalid_json", `The event nests deeper than ${MAX_JSON_DEPTH} levels.`)
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(data)
  } catch {
    return refusal("invalid_json", "The event is not valid JSON.")
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    return refusal("invalid_event", "The event must be a JSON object.")
  }
  const event = parsed as Record<string, unknown>
  if (holdsLoneSurrogate(event)) {
    return refusal("invalid_json", "The event holds a lone UTF-16 surrogate; it cannot be forwarded.")
  }
  const eventId = typeof event.event_id === "string" ? event.event_id.slice(0, 200) : null
  if (typeof event.type !== "string" || event.type === "") {
    return refusal("missing_required_parameter", "The event has no `type`.", "type", eventId)
  }
  return { event, type: event.type, text: data, bytes }
}

/**
 * Whether `value` is a `Refusal` (what `readClientEvent` returns for a refused frame).
 *
 * @category predicates
 */
export const isRefusal = (value: ClientEvent | Refusal): value is Refusal => "code" in value

/**
 * The `error` event telling the caller of `refusal` (OpenAI's error event shape; `type` `invalid_request_error`
 * unless given), as the JSON text to send.
 *
 * @category encoding
 */
export const errorEvent = (refusal: Refusal, type = "invalid_request_error"): string =>
  JSON.stringify({
    type: "error",
    event_id: `event_${crypto.randomUUID().replaceAll("-", "").slice(0, 20)}`,
    error: {
      type,
      code: refusal.code,
      message: refusal.message,
      param: refusal.param,
      event_id: refusal.eventId
    }
  })

/**
 * A per-socket event rate: `admit(now)` is true while at most `perSecond` events arrived in the last second (a
 * sliding window of arrival times, at most `perSecond` kept); `perSecond` 0 admits everything.
 *
 * @category constructors
 */
export const makeEventRate = (perSecond: number): { readonly admit: (now: number) => boolean } => {
  const arrivals: Array<number> = []
  return {
    admit: (now) => {
      if (perSecond <= 0) return true
      while (arrivals.length > 0 && now - arrivals[0] >= 1000) arrivals.shift()
      if (arrivals.length >= perSecond) return false
      arrivals.push(now)
      return true
    }
  }
}
