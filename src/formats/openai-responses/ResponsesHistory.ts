/**
 * A Responses body continued from a stored conversation: the gateway expands
 * `previous_response_id` itself (the upstream never saw the gateway's ids), and
 * a same-format channel must still get every other field of the caller's body
 * (`store`, `include`, `text.verbosity`, `stream_options`, hosted tools, …).
 *
 * @since 0.1.0
 */
import type { Message } from "../../canonical/Request.ts"
import { encodeResponsesRequest } from "./ResponsesRequestEncoder.ts"

/**
 * The caller's Responses body `raw` with the stored conversation `history`
 * (no system messages; the caller's `instructions` apply, as the API applies
 * only the current request's) put before its `input` as Responses input items,
 * and `previous_response_id` removed; every other field as sent. A string
 * `input` becomes one user message item. A new object; `raw` is left as it is.
 *
 * @category history
 */
export const withHistory = (
  raw: Record<string, unknown>,
  history: ReadonlyArray<Message>
): Record<string, unknown> => {
  const { previous_response_id: _previous, ...rest } = raw
  const earlier = encodeResponsesRequest({ model: "", messages: history, stream: false }).body.input
  const current = typeof raw.input === "string"
    ? [{ role: "user", content: raw.input }]
    : Array.isArray(raw.input)
    ? raw.input
    : []
  return { ...rest, input: [...(Array.isArray(earlier) ? earlier : []), ...current] }
}
