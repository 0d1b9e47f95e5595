/**
 * Small wire helpers shared by the chat completions and legacy completions
 * formats: the `usage` object, finish reasons, in-band stream errors and SSE
 * `data:` events. Field names follow the openai SDK types
 * (openai@7.57.0 `resources/completions.d.ts` `CompletionUsage`,
 * `resources/chat/completions/completions.d.ts` `ChatCompletion.Choice`).
 *
 * @since 0.1.0
 */
import { Predicate } from "effect"
import type { Sse } from "effect/encoding"
import type { FinishReason } from "../../../canonical/Finish.ts"
import type { Usage } from "../../../canonical/Usage.ts"
import { UpstreamFailed } from "../../../errors/GatewayError.ts"
import { classifyOpenAiError } from "../shared/ErrorBody.ts"

/**
 * The value if it is a string, else `undefined`.
 *
 * @category guards
 */
export const stringOrUndefined = (value: unknown): string | undefined => typeof value === "string" ? value : undefined

/**
 * The value if it is a finite number, else `undefined`.
 *
 * @category guards
 */
export const numberOrUndefined = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isFinite(value) ? value : undefined

/**
 * Reads an OpenAI `usage` object (`prompt_tokens`, `completion_tokens`,
 * `prompt_tokens_details.cached_tokens` / `cache_write_tokens`,
 * `completion_tokens_details.reasoning_tokens`) into canonical usage.
 * DeepSeek's own fields are read too, on any channel (teams point `openai`
 * channels at DeepSeek): `prompt_cache_hit_tokens` are the cached prompt
 * tokens, `prompt_cache_miss_tokens` the rest, `prompt_tokens` their sum
 * (api-docs.deepseek.com/api/create-chat-completion, "usage";
 * api-docs.deepseek.com/guides/kv_cache). `prompt_tokens_details.cached_tokens`
 * wins when it is above 0 (a proxy that fills both); without `prompt_tokens`,
 * the prompt is hits + misses. `undefined` when the value is not a usage object.
 *
 * @category decoding
 */
export const decodeUsage = (raw: unknown): Usage | undefined => {
  if (!Predicate.isObject(raw)) return undefined
  const hits = numberOrUndefined(raw.prompt_cache_hit_tokens)
  const misses = numberOrUndefined(raw.prompt_cache_miss_tokens)
  const inputTokens = numberOrUndefined(raw.prompt_tokens) ??
    (hits === undefined && misses === undefined ? undefined : (hits ?? 0) + (misses ?? 0))
  const outputTokens = numberOrUndefined(raw.completion_tokens)
  if (inputTokens === undefined && outputTokens === undefined) return undefined
  const promptDetails = Predicate.isObject(raw.prompt_tokens_details) ? raw.prompt_tokens_details : {}
  const completionDetails = Predicate.isObject(raw.completion_tokens_details) ? raw.completion_tokens_details : {}
  const detailed = numberOrUndefined(promptDetails.cached_tokens)
  // A zero next to DeepSeek's own count is a filler (`{cached_tokens: 0}` from a compatibility layer), not a miss.
  const cachedInputTokens = detailed !== undefined && (detailed > 0 || hits === undefined) ? detailed : hits
  const cacheCreationInputTokens = numberOrUndefined(promptDetails.cache_write_tokens)
  const reasoningTokens = numberOrUndefined(completionDetails.reasoning_tokens)
  return {
    inputTokens: inputTokens ?? 0,
    outputTokens: outputTokens ?? 0,
    ...(cachedInputTokens === undefined ? {} : { cachedInputTokens }),
    ...(cacheCreationInputTokens === undefined ? {} : { cacheCreationInputTokens }),
    ...(reasoningTokens === undefined ? {} : { reasoningTokens })
  }
}

/**
 * Canonical usage → the OpenAI `usage` object, always with
 * `prompt_tokens_details.cached_tokens` and
 * `completion_tokens_details.reasoning_tokens` (0 when unknown), as OpenAI
 * itself sends them; `cache_write_tokens` only when known.
 *
 * @category encoding
 */
export const encodeUsage = (usage: Usage): Record<string, unknown> => ({
  prompt_tokens: usage.inputTokens,
  completion_tokens: usage.outputTokens,
  total_tokens: usage.inputTokens + usage.outputTokens,
  prompt_tokens_details: {
    cached_tokens: usage.cachedInputTokens ?? 0,
    ...(usage.cacheCreationInputTokens === undefined ? {} : { cache_write_tokens: usage.cacheCreationInputTokens })
  },
  completion_tokens_details: { reasoning_tokens: usage.reasoningTokens ?? 0 }
})

/**
 * An OpenAI `finish_reason` (`stop`, `length`, `tool_calls`, legacy
 * `function_call`, `content_filter`) → canonical; anything else is `other`.
 *
 * @category decoding
 */
export const decodeFinishReason = (raw: string | null | undefined): FinishReason => {
  switch (raw) {
    case "stop":
      return "stop"
    case "length":
      return "length"
    case "tool_calls":
    case "function_call":
      return "tool-calls"
    case "content_filter":
      return "content-filter"
    default:
      return "other"
  }
}

const chatFinish: Record<FinishReason, string> = {
  "stop": "stop",
  "length": "length",
  "tool-calls": "tool_calls",
  "content-filter": "content_filter",
  "error": "stop",
  "other": "stop"
}

/**
 * Canonical finish reason → chat `finish_reason` (`error` and `other` become
 * `stop`, the only neutral value chat has).
 *
 * @category encoding
 */
export const encodeChatFinishReason = (reason: FinishReason): string => chatFinish[reason]

/**
 * Canonical finish reason → legacy completions `finish_reason`, which has only
 * `stop`, `length` and `content_filter` (openai SDK `CompletionChoice`).
 *
 * @category encoding
 */
export const encodeCompletionFinishReason = (reason: FinishReason): string =>
  reason === "length" ? "length" : reason === "content-filter" ? "content_filter" : "stop"

const inBandKinds: Record<string, UpstreamFailed["kind"]> = {
  server_error: "server",
  api_error: "server",
  rate_limit_exceeded: "throttled",
  rate_limit_error: "throttled",
  insufficient_quota: "quota",
  invalid_request_error: "rejected",
  authentication_error: "unauthorized",
  invalid_api_key: "unauthorized",
  permission_error: "unauthorized"
}

/**
 * The `error` member of an upstream body (an in-band `{"error": {...}}` stream
 * event, or a 200 answer that is an error) → `UpstreamFailed`. The status is
 * the error's numeric `code` when it has one (some compatible vendors put the
 * HTTP status there), else 0; the kind comes from that status through
 * `classifyOpenAiError`, or, without one, from the error's `code` / `type`
 * (`server_error`, `rate_limit_exceeded`, `insufficient_quota`, …), defaulting
 * to `server`.
 *
 * @category decoding
 */
export const inBandFailure = (error: unknown): UpstreamFailed => {
  const record = Predicate.isObject(error) ? error : {}
  const message = stringOrUndefined(record.message) ?? (typeof error === "string" ? error : "The upstream failed")
  const numericCode = typeof record.code === "number"
    ? record.code
    : typeof record.code === "string" && /^\d{3}$/.test(record.code)
    ? Number(record.code)
    : 0
  if (numericCode >= 400) {
    const classified = classifyOpenAiError(numericCode, JSON.stringify({ error }))
    return new UpstreamFailed({ kind: classified.kind, status: numericCode, message })
  }
  const code = stringOrUndefined(record.code)
  const type = stringOrUndefined(record.type)
  const kind = (code !== undefined ? inBandKinds[code] : undefined) ??
    (type !== undefined ? inBandKinds[type] : undefined) ?? "server"
  return new UpstreamFailed({ kind, status: 0, message })
}

/**
 * A `bad-body` failure for an answer that cannot be read (status 200: the
 * decoders only see successful answers).
 *
 * @category decoding
 */
export const badBody = (message: string): UpstreamFailed =>
  new UpstreamFailed({ kind: "bad-body", status: 200, message })

/**
 * A default (`message`) SSE event whose data is `payload` as JSON.
 *
 * @category encoding
 */
export const dataEvent = (payload: unknown): Sse.Event => ({
  _tag: "Event",
  event: "message",
  id: undefined,
  data: JSON.stringify(payload)
})

/**
 * The `data: [DONE]` end marker of OpenAI streams.
 *
 * @category encoding
 */
export const doneEvent: Sse.Event = { _tag: "Event", event: "message", id: undefined, data: "[DONE]" }

/**
 * Parses SSE data as JSON; `undefined` when it is not JSON.
 *
 * @category decoding
 */
export const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}
