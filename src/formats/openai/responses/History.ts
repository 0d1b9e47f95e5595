/**
 * A Responses body rebuilt in place for a same-format channel, which must
 * still get every other field of the caller's body (`store`, `include`,
 * `text.verbosity`, `stream_options`, hosted tools, …): continued from a
 * stored conversation (the gateway expands `previous_response_id` itself; the
 * upstream never saw the gateway's ids), or without another vendor's
 * reasoning tokens.
 *
 * @since 0.1.0
 */
import type { Message } from "../../../canonical/Request.ts"
import { encodeResponsesRequest } from "./RequestEncoder.ts"

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

const FOREIGN = /^sluice\.(anthropic|gemini)\./

/**
 * The caller's Responses body without the `reasoning` input items whose
 * `encrypted_content` another vendor minted (written `sluice.<origin>.…` by
 * the gateway, `ReasoningOrigin.ts`), as the request encoder leaves such
 * items out (OpenAI refuses a token it did not mint); every other field as
 * sent. A new object; `raw` is left as it is.
 *
 * @category history
 */
export const withoutForeignReasoning = (raw: Record<string, unknown>): Record<string, unknown> => {
  if (!Array.isArray(raw.input)) return raw
  const input = raw.input.filter((item) => {
    if (typeof item !== "object" || item === null || (item as { type?: unknown }).type !== "reasoning") return true
    const token = (item as { encrypted_content?: unknown }).encrypted_content
    return !(typeof token === "string" && FOREIGN.test(token))
  })
  return { ...raw, input }
}
