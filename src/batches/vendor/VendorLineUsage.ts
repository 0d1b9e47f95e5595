/**
 * The usage a line of a delegated batch reported, read from its answer body in the vendor's terms, and its cost at
 * the model's batch prices (`Pricing.batchPrice`, docs/BILLING.md "Batches").
 *
 * Fields read: OpenAI chat completions and completions `usage.prompt_tokens` / `completion_tokens` /
 * `prompt_tokens_details.cached_tokens`; Responses `usage.input_tokens` / `output_tokens` /
 * `input_tokens_details.cached_tokens`; embeddings `usage.prompt_tokens` (platform.openai.com/docs/api-reference);
 * Anthropic `usage.input_tokens` (cache reads and writes excluded) / `output_tokens` / `cache_read_input_tokens` /
 * `cache_creation_input_tokens` (docs.anthropic.com/en/api/messages).
 *
 * @since 0.4.0
 */
import { batchPrice, type Price, textCost } from "../../domain/Pricing.ts"

/** A line's usage in the gateway's terms: cached and written tokens are parts of `promptTokens`. @category models */
export interface LineUsage {
  readonly promptTokens: number
  readonly completionTokens: number
  readonly cachedTokens: number
  readonly cacheWriteTokens: number
}

const tokens = (value: unknown): number =>
  typeof value === "number" && Number.isSafeInteger(value) && value > 0 ? value : 0

const field = (value: unknown, name: string): unknown =>
  typeof value === "object" && value !== null ? (value as Record<string, unknown>)[name] : undefined

/**
 * The usage of an answer `body` (parsed JSON) of `api`; `undefined` when it has no `usage` object. Negative,
 * fractional or absurd counts read as 0.
 *
 * @category billing
 */
export const lineUsage = (api: "openai" | "anthropic", body: unknown): LineUsage | undefined => {
  const usage = field(body, "usage")
  if (typeof usage !== "object" || usage === null) return undefined
  if (api === "anthropic") {
    const cachedTokens = tokens(field(usage, "cache_read_input_tokens"))
    const cacheWriteTokens = tokens(field(usage, "cache_creation_input_tokens"))
    return {
      promptTokens: tokens(field(usage, "input_tokens")) + cachedTokens + cacheWriteTokens,
      completionTokens: tokens(field(usage, "output_tokens")),
      cachedTokens,
      cacheWriteTokens
    }
  }
  const responses = field(usage, "input_tokens") !== undefined
  return {
    promptTokens: tokens(field(usage, responses ? "input_tokens" : "prompt_tokens")),
    completionTokens: tokens(field(usage, responses ? "output_tokens" : "completion_tokens")),
    cachedTokens: tokens(
      field(field(usage, responses ? "input_tokens_details" : "prompt_tokens_details"), "cached_tokens")
    ),
    cacheWriteTokens: 0
  }
}

/**
 * What a delegated line costs, in quota units: `usage` at `batchPrice(price)` times the group `ratio` (fixed-point,
 * as `textCost` takes it), rounded up per line.
 *
 * @category billing
 */
export const lineCost = (ratio: bigint, price: Price, usage: LineUsage): bigint =>
  textCost(
    ratio,
    batchPrice(price),
    usage.promptTokens,
    usage.completionTokens,
    usage.cachedTokens,
    usage.cacheWriteTokens
  )
