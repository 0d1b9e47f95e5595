/**
 * The `text_completion` object in both directions (spec "Text completion";
 * openai@7.57.0 `Completion`, `CompletionChoice`).
 *
 * @since 0.1.0
 */
import { Predicate } from "effect"
import type { Response } from "../../../canonical/Response.ts"
import { emptyUsage } from "../../../canonical/Usage.ts"
import type { UpstreamFailed } from "../../../errors/GatewayError.ts"
import type { ResponseMeta } from "../../Format.ts"
import {
  badBody,
  decodeFinishReason,
  decodeUsage,
  encodeCompletionFinishReason,
  encodeUsage,
  inBandFailure,
  numberOrUndefined,
  stringOrUndefined
} from "../chat/WireSchema.ts"

/**
 * An upstream `text_completion` body → canonical `Response` (first choice's
 * `text` as one text part). A body with an `error` member → that failure; a
 * body without `choices[0].text` → `bad-body`.
 *
 * @category decoding
 */
export const decodeCompletionsResponse = (body: unknown): Response | UpstreamFailed => {
  if (!Predicate.isObject(body)) return badBody("The upstream answer is not a JSON object.")
  if (body.error !== undefined && body.error !== null) return inBandFailure(body.error)
  const choice = Array.isArray(body.choices) ? body.choices[0] : undefined
  const text = Predicate.isObject(choice) ? stringOrUndefined(choice.text) : undefined
  if (!Predicate.isObject(choice) || text === undefined) return badBody("The upstream answer has no choices[0].text.")
  const rawFinishReason = stringOrUndefined(choice.finish_reason)
  return {
    id: stringOrUndefined(body.id) ?? "",
    model: stringOrUndefined(body.model) ?? "",
    created: numberOrUndefined(body.created) ?? 0,
    content: text === "" ? [] : [{ type: "text", text }],
    finishReason: decodeFinishReason(rawFinishReason),
    ...(rawFinishReason === undefined ? {} : { rawFinishReason }),
    usage: decodeUsage(body.usage) ?? emptyUsage
  }
}

/**
 * Canonical `Response` → `text_completion` with `id`, `created`, `model` from
 * `meta`: one choice whose `text` is the joined text parts, `logprobs: null`,
 * and `finish_reason` `stop` / `length` / `content_filter` (tool calls and
 * reasoning cannot be expressed by this format and are not sent; a
 * `tool-calls` finish becomes `stop`).
 *
 * @category encoding
 */
export const encodeCompletionsResponse = (response: Response, meta: ResponseMeta): Record<string, unknown> => ({
  id: meta.id,
  object: "text_completion",
  created: meta.created,
  model: meta.model,
  choices: [{
    index: 0,
    text: response.content.map((part) => (part.type === "text" ? part.text : "")).join(""),
    logprobs: null,
    finish_reason: encodeCompletionFinishReason(response.finishReason)
  }],
  usage: encodeUsage(response.usage)
})
