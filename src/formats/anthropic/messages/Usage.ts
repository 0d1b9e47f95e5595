/**
 * Token usage between the messages format and the canonical form. The
 * messages format's `input_tokens` excludes cache reads and writes ("Total
 * input tokens in a request is the summation of `input_tokens`,
 * `cache_creation_input_tokens`, and `cache_read_input_tokens`", SDK 1.12
 * `Usage`); canonical `inputTokens` includes them. `output_tokens_details.
 * thinking_tokens` is the reasoning share of `output_tokens`.
 *
 * @since 0.1.0
 */
import type { Usage } from "../../../canonical/Usage.ts"

/**
 * Usage counters as the messages format reports them (all token counts).
 *
 * @category models
 */
export interface WireUsage {
  readonly input_tokens: number
  readonly output_tokens: number
  readonly cache_read_input_tokens?: number | null | undefined
  readonly cache_creation_input_tokens?: number | null | undefined
  readonly output_tokens_details?: { readonly thinking_tokens: number } | null | undefined
}

/**
 * Wire usage → canonical usage (`inputTokens` = input + cache read + cache creation).
 *
 * @category decoding
 */
export const usageFromWire = (wire: WireUsage): Usage => {
  const cacheRead = wire.cache_read_input_tokens ?? undefined
  const cacheCreation = wire.cache_creation_input_tokens ?? undefined
  const thinking = wire.output_tokens_details?.thinking_tokens
  return {
    inputTokens: wire.input_tokens + (cacheRead ?? 0) + (cacheCreation ?? 0),
    outputTokens: wire.output_tokens,
    ...(cacheRead === undefined ? {} : { cachedInputTokens: cacheRead }),
    ...(cacheCreation === undefined ? {} : { cacheCreationInputTokens: cacheCreation }),
    ...(thinking === undefined ? {} : { reasoningTokens: thinking })
  }
}

/**
 * Canonical usage → wire usage: `input_tokens` is the uncached remainder
 * (never below 0); cache counters are 0 when unknown; `output_tokens_details`
 * only when reasoning tokens are known.
 *
 * @category encoding
 */
export const usageToWire = (usage: Usage): WireUsage => {
  const cacheRead = usage.cachedInputTokens ?? 0
  const cacheCreation = usage.cacheCreationInputTokens ?? 0
  return {
    input_tokens: Math.max(0, usage.inputTokens - cacheRead - cacheCreation),
    output_tokens: usage.outputTokens,
    cache_read_input_tokens: cacheRead,
    cache_creation_input_tokens: cacheCreation,
    ...(usage.reasoningTokens === undefined
      ? {}
      : { output_tokens_details: { thinking_tokens: usage.reasoningTokens } })
  }
}
