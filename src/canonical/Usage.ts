/**
 * Token usage in canonical form.
 *
 * @since 0.1.0
 */

/**
 * Token counts of one request. `inputTokens` is the whole prompt including
 * cached tokens (OpenAI semantics: `prompt_tokens`); `cachedInputTokens` is the
 * part of it read from a cache, `cacheCreationInputTokens` the part written to
 * one. `outputTokens` includes `reasoningTokens`.
 */
export interface Usage {
  readonly inputTokens: number
  readonly outputTokens: number
  readonly cachedInputTokens?: number | undefined
  readonly cacheCreationInputTokens?: number | undefined
  readonly reasoningTokens?: number | undefined
}

/** Zero usage. */
export const emptyUsage: Usage = { inputTokens: 0, outputTokens: 0 }

/** Total tokens (input + output). */
export const totalTokens = (usage: Usage): number => usage.inputTokens + usage.outputTokens
