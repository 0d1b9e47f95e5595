/**
 * DeepSeek's usage object as an OpenAI client reads it. DeepSeek reports the
 * prompt tokens read from its context cache as `prompt_cache_hit_tokens` and the
 * rest as `prompt_cache_miss_tokens` (api-docs.deepseek.com/api/create-chat-completion,
 * "usage"; api-docs.deepseek.com/guides/kv_cache), which the official SDKs do not
 * type; a same-format answer (chat or legacy completions, on a `deepseek`
 * channel or an `openai` channel pointed at DeepSeek) therefore also gets
 * OpenAI's `prompt_tokens_details.cached_tokens`, DeepSeek's own fields kept.
 * An answer without DeepSeek's field is passed on untouched.
 *
 * @since 0.1.0
 */
import { Predicate } from "effect"
import type { Sse } from "effect/encoding"

/**
 * `usage` with `prompt_tokens_details.cached_tokens` set from
 * `prompt_cache_hit_tokens` (a new object), or `undefined` when it reports no
 * hits field or already carries a `cached_tokens`.
 *
 * @category encoding
 */
export const withOpenAiCachedTokens = (usage: unknown): Record<string, unknown> | undefined => {
  if (!Predicate.isObject(usage) || Array.isArray(usage)) return undefined
  const hits = usage.prompt_cache_hit_tokens
  if (typeof hits !== "number") return undefined
  const details = Predicate.isObject(usage.prompt_tokens_details) ? usage.prompt_tokens_details : {}
  if (typeof details.cached_tokens === "number") return undefined
  return { ...usage, prompt_tokens_details: { ...details, cached_tokens: hits } }
}

/**
 * A DeepSeek answer body (chat or FIM completion) with its usage shown the
 * OpenAI way too (`withOpenAiCachedTokens`), or `undefined` when nothing changes.
 *
 * @category encoding
 */
export const answerWithOpenAiUsage = (body: Record<string, unknown>): Record<string, unknown> | undefined => {
  const usage = withOpenAiCachedTokens(body.usage)
  return usage === undefined ? undefined : { ...body, usage }
}

/**
 * A DeepSeek stream event whose chunk carries usage, with that usage shown the
 * OpenAI way too; `undefined` for any other event (only events naming
 * `prompt_cache_hit_tokens` are parsed).
 *
 * @category encoding
 */
export const eventWithOpenAiUsage = (event: Sse.Event): Sse.Event | undefined => {
  if (!event.data.includes("prompt_cache_hit_tokens")) return undefined
  let chunk: unknown
  try {
    chunk = JSON.parse(event.data)
  } catch {
    return undefined
  }
  if (!Predicate.isObject(chunk) || Array.isArray(chunk)) return undefined
  const shown = answerWithOpenAiUsage(chunk as Record<string, unknown>)
  return shown === undefined ? undefined : { ...event, data: JSON.stringify(shown) }
}
