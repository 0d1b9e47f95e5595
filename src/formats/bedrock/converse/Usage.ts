/**
 * Converse's token usage (`TokenUsage`: `inputTokens`, `outputTokens`, `totalTokens`, `cacheReadInputTokens`,
 * `cacheWriteInputTokens`; API reference, API_runtime_TokenUsage.html; SDK `models_0.d.ts`) in canonical form.
 * Converse's `inputTokens` leaves out the tokens read from and written to the prompt cache
 * (docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html: the cache counts are reported apart from
 * `inputTokens`, as Anthropic's `input_tokens` leaves out its cache counts), while canonical `inputTokens` is the
 * whole prompt; so canonical input = `inputTokens` + cache read + cache write, cache read → `cachedInputTokens`
 * (billed at `cached_input`), cache write → `cacheCreationInputTokens` (billed at `cache_write`), as the messages
 * format's cache fields map (`anthropic/messages/Usage.ts`).
 *
 * @since 0.1.0
 */
import type { Usage } from "../../../canonical/Usage.ts"

const count = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : undefined

/**
 * A Converse `usage` object → canonical usage; `undefined` when it is not an object with whole, non-negative
 * `inputTokens` and `outputTokens` (cache counts that are not such numbers are taken as absent).
 *
 * @category decoding
 */
export const usageFromConverse = (usage: unknown): Usage | undefined => {
  if (typeof usage !== "object" || usage === null || Array.isArray(usage)) return undefined
  const record = usage as Record<string, unknown>
  const input = count(record.inputTokens)
  const output = count(record.outputTokens)
  if (input === undefined || output === undefined) return undefined
  const cacheRead = count(record.cacheReadInputTokens)
  const cacheWrite = count(record.cacheWriteInputTokens)
  return {
    inputTokens: input + (cacheRead ?? 0) + (cacheWrite ?? 0),
    outputTokens: output,
    ...(cacheRead === undefined ? {} : { cachedInputTokens: cacheRead }),
    ...(cacheWrite === undefined ? {} : { cacheCreationInputTokens: cacheWrite })
  }
}
