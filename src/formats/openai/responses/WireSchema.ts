/**
 * Small pieces of the OpenAI Responses wire format shared by the request,
 * response and stream translators: usage objects, finish reasons, media
 * sources as URLs or data URIs, reasoning efforts and output item ids.
 *
 * Facts come from the official SDK types (`openai@7.57.0`,
 * `resources/responses/responses.d.ts`: `ResponseUsage`, `Response.status`,
 * `Response.IncompleteDetails`, `ResponseInputImage`, `ResponseInputFile`) and
 * the API reference (platform.openai.com/docs/api-reference/responses).
 *
 * @since 0.1.0
 */
import { Predicate } from "effect"
import { parseDataUri, toDataUri } from "../../../canonical/DataUri.ts"
import type { MediaSource } from "../../../canonical/Content.ts"
import type { FinishReason } from "../../../canonical/Finish.ts"
import type { ReasoningEffort } from "../../../canonical/Request.ts"
import type { Usage } from "../../../canonical/Usage.ts"

/**
 * The Responses `usage` object (`ResponseUsage`): token counts, with cached and
 * cache-written prompt tokens under `input_tokens_details` and reasoning tokens
 * under `output_tokens_details`.
 *
 * @category models
 */
export interface WireUsage {
  readonly input_tokens: number
  readonly input_tokens_details: { readonly cached_tokens: number; readonly cache_write_tokens: number }
  readonly output_tokens: number
  readonly output_tokens_details: { readonly reasoning_tokens: number }
  readonly total_tokens: number
}

/**
 * Canonical usage → Responses `usage`. Absent detail counts are written as 0,
 * since the SDK types make every field required.
 *
 * @category encoding
 */
export const usageToWire = (usage: Usage): WireUsage => ({
  input_tokens: usage.inputTokens,
  input_tokens_details: {
    cached_tokens: usage.cachedInputTokens ?? 0,
    cache_write_tokens: usage.cacheCreationInputTokens ?? 0
  },
  output_tokens: usage.outputTokens,
  output_tokens_details: { reasoning_tokens: usage.reasoningTokens ?? 0 },
  total_tokens: usage.inputTokens + usage.outputTokens
})

const countAt = (record: unknown, key: string): number | undefined => {
  if (!Predicate.isObject(record)) return undefined
  const value = record[key]
  return typeof value === "number" && Number.isFinite(value) ? value : undefined
}

/**
 * A Responses `usage` value (untrusted) → canonical usage; `undefined` when it
 * has no numeric `input_tokens` and `output_tokens`. Responses semantics match
 * the canonical ones: `input_tokens` includes cached tokens, `output_tokens`
 * includes reasoning tokens.
 *
 * @category decoding
 */
export const usageFromWire = (value: unknown): Usage | undefined => {
  const inputTokens = countAt(value, "input_tokens")
  const outputTokens = countAt(value, "output_tokens")
  if (inputTokens === undefined || outputTokens === undefined || !Predicate.isObject(value)) return undefined
  const cachedInputTokens = countAt(value.input_tokens_details, "cached_tokens")
  const cacheCreationInputTokens = countAt(value.input_tokens_details, "cache_write_tokens")
  const reasoningTokens = countAt(value.output_tokens_details, "reasoning_tokens")
  return {
    inputTokens,
    outputTokens,
    ...(cachedInputTokens === undefined ? {} : { cachedInputTokens }),
    ...(cacheCreationInputTokens === undefined ? {} : { cacheCreationInputTokens }),
    ...(reasoningTokens === undefined ? {} : { reasoningTokens })
  }
}

/**
 * The Responses `status` and `incomplete_details.reason` that express a
 * canonical finish reason. `length` is `incomplete` / `max_output_tokens`,
 * `content-filter` is `incomplete` / `content_filter`, `error` is `failed`;
 * everything else is `completed` (the Responses format has no separate word for
 * "stopped to call tools": the `function_call` items say it).
 *
 * @category encoding
 */
export const statusOfFinish = (
  reason: FinishReason
): { readonly status: "completed" | "incomplete" | "failed"; readonly incompleteReason: string | null } => {
  switch (reason) {
    case "length":
      return { status: "incomplete", incompleteReason: "max_output_tokens" }
    case "content-filter":
      return { status: "incomplete", incompleteReason: "content_filter" }
    case "error":
      return { status: "failed", incompleteReason: null }
    case "stop":
    case "tool-calls":
    case "other":
      return { status: "completed", incompleteReason: null }
  }
}

/**
 * A Responses `status` (plus `incomplete_details.reason`, and whether the
 * output holds `function_call` items) → canonical finish reason.
 *
 * @category decoding
 */
export const finishOfStatus = (
  status: string | undefined,
  incompleteReason: string | undefined,
  hasToolCalls: boolean
): FinishReason => {
  if (status === "incomplete") {
    if (incompleteReason === "max_output_tokens") return "length"
    if (incompleteReason === "content_filter") return "content-filter"
    return "other"
  }
  if (status === "failed" || status === "cancelled") return "error"
  return hasToolCalls ? "tool-calls" : "stop"
}

/**
 * Reads an image or file reference: a `data:<media type>;base64,<data>` URI
 * becomes inline Base64, anything else (http(s) URLs, data URIs that are not
 * Base64) stays a URL, unchanged.
 *
 * @category decoding
 */
export const mediaSourceOf = (reference: string): MediaSource => {
  const inline = parseDataUri(reference, "application/octet-stream")
  return inline === undefined ? { kind: "url", url: reference } : { kind: "base64", ...inline }
}

/**
 * A media source as the Responses format references it: the URL itself, or a
 * `data:<media type>;base64,<data>` URI.
 *
 * @category encoding
 */
export const referenceOf = (source: MediaSource): string =>
  source.kind === "url" ? source.url : toDataUri(source.mediaType, source.data)

/**
 * The reasoning efforts the Responses format accepts (`Shared.ReasoningEffort`:
 * `none`, `minimal`, `low`, `medium`, `high`, `xhigh`, `max`). `max` has no
 * canonical level and is read as `xhigh`, the nearest one.
 *
 * @category decoding
 */
export const effortFromWire = (effort: string): ReasoningEffort =>
  effort === "max" ? "xhigh" : effort as ReasoningEffort

/**
 * The nearest Responses effort for a token budget (messages
 * `thinking.budget_tokens`, generate-content `thinkingBudget`): up to 1024
 * tokens `low`, up to 8192 `medium`, above that `high`.
 *
 * @category encoding
 */
export const effortOfBudget = (budgetTokens: number): ReasoningEffort =>
  budgetTokens <= 1024 ? "low" : budgetTokens <= 8192 ? "medium" : "high"

/**
 * A deterministic output item id: `<prefix>_<response id without its "resp_"
 * prefix>_<output index>` (`msg_abc_0`, `rs_abc_1`, `fc_abc_2`, `ctc_abc_3` for a custom tool call), so the same
 * answer always gets the same ids and a stream's items match its final
 * `response.completed` snapshot.
 *
 * @category encoding
 */
export const itemId = (prefix: "msg" | "rs" | "fc" | "ctc", responseId: string, outputIndex: number): string =>
  `${prefix}_${responseId.replace(/^resp_/, "")}_${outputIndex}`
