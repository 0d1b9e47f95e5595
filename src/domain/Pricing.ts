/**
 * Exact cost arithmetic in quota units (1 unit = 1 micro-USD), per the outer
 * contract (docs/ARCHITECTURE.md, "Outer contract"): text cost = ceil(group_ratio × (prompt_tokens × input +
 * completion_tokens × output)) where `input` and `output` are USD per 1M tokens
 * (so USD per 1M tokens × tokens = micro-USD). The prompt tokens read from a
 * vendor's cache are priced at `cached_input` and those written to it at
 * `cache_write` instead of `input` (both are counted inside prompt_tokens);
 * each defaults to `input`, which leaves the contract's formula unchanged. Decimal prices and ratios are
 * held as fixed-point bigints with 9 decimals, so no float rounding enters a
 * bill.
 *
 * @since 0.1.0
 */

const SCALE = 1_000_000_000n
const SCALE_DIGITS = 9

/**
 * A non-negative decimal as a bigint scaled by 10⁹. Accepts numbers and
 * decimal strings (PostgreSQL NUMERIC arrives as a string); more than 9
 * decimals are rounded up, so a price is never under-charged.
 *
 * @category parsing
 */
export const toFixed = (value: string | number): bigint => {
  const text = typeof value === "number" ? value.toFixed(12) : value.trim()
  const match = /^(\d+)(?:\.(\d*))?$/.exec(text)
  if (match === null) throw new RangeError(`Not a non-negative decimal: ${text}`)
  const whole = BigInt(match[1])
  const fraction = match[2] ?? ""
  const kept = fraction.slice(0, SCALE_DIGITS).padEnd(SCALE_DIGITS, "0")
  const roundUp = /[1-9]/.test(fraction.slice(SCALE_DIGITS)) ? 1n : 0n
  return whole * SCALE + BigInt(kept) + roundUp
}

const ceilDiv = (numerator: bigint, denominator: bigint): bigint =>
  numerator === 0n ? 0n : (numerator + denominator - 1n) / denominator

/**
 * A model's prices, as fixed-point bigints (`toFixed`). `undefined` = no price.
 *
 * @category models
 */
export interface Price {
  readonly input?: bigint | undefined
  readonly output?: bigint | undefined
  /** Prompt tokens read from the vendor's cache; `undefined` = `input`. */
  readonly cachedInput?: bigint | undefined
  /** Prompt tokens written to the vendor's cache; `undefined` = `input`. */
  readonly cacheWrite?: bigint | undefined
  readonly perImage?: bigint | undefined
  readonly perSecond?: bigint | undefined
  /** USD per 1M input characters (`per_1m_characters`: speech models billed by the text they read). */
  readonly perMillionCharacters?: bigint | undefined
  /** USD per search unit (`per_search`: rerank). */
  readonly perSearch?: bigint | undefined
  readonly free: boolean
}

const count = (tokens: number): bigint => BigInt(Math.max(0, Math.trunc(tokens)))

/**
 * The cost of a text request in quota units. `cachedTokens` (read from the
 * vendor's cache) and `cacheWriteTokens` (written to it) are parts of
 * `promptTokens`, each capped to what is left of it; token counts must be
 * non-negative safe integers.
 *
 * @category billing
 */
export const textCost = (
  ratio: bigint,
  price: Price,
  promptTokens: number,
  completionTokens: number,
  cachedTokens = 0,
  cacheWriteTokens = 0
): bigint => {
  if (price.free) return 0n
  const prompt = count(promptTokens)
  const cached = count(Math.min(cachedTokens, promptTokens))
  const written = count(Math.min(cacheWriteTokens, Math.max(0, promptTokens - Number(cached))))
  const input = price.input ?? 0n
  const raw = (prompt - cached - written) * input + cached * (price.cachedInput ?? input) +
    written * (price.cacheWrite ?? input) + count(completionTokens) * (price.output ?? 0n)
  return ceilDiv(ratio * raw, SCALE * SCALE)
}

/**
 * The price a quota hold is sized with: `input` raised to the dearest of the
 * three prompt prices, so a prompt whose tokens turn out to be cache writes
 * (dearer than `input` at some vendors) is still covered by its hold.
 *
 * @category billing
 */
export const holdPrice = (price: Price): Price => {
  const input = price.input ?? 0n
  const dearest = [price.cachedInput ?? input, price.cacheWrite ?? input].reduce(
    (high, value) => value > high ? value : high,
    input
  )
  return dearest === input ? price : { ...price, input: dearest }
}

/**
 * The cost of `count` images (`per_image` USD each) in quota units.
 *
 * @category billing
 */
export const imageCost = (ratio: bigint, price: Price, count: number): bigint =>
  price.free ? 0n : ceilDiv(ratio * BigInt(count) * (price.perImage ?? 0n) * 1_000_000n, SCALE * SCALE)

/**
 * The cost of `seconds` of video (`per_second` USD each) in quota units.
 *
 * @category billing
 */
export const videoCost = (ratio: bigint, price: Price, seconds: number): bigint =>
  price.free ? 0n : ceilDiv(ratio * BigInt(Math.ceil(seconds)) * (price.perSecond ?? 0n) * 1_000_000n, SCALE * SCALE)

/**
 * Whether text requests for a model with `price` can be billed.
 *
 * @category billing
 */
export const isTextPriced = (price: Price): boolean =>
  price.free || price.input !== undefined || price.output !== undefined

/**
 * Whether `price` can bill images: `per_image`, or a free model.
 *
 * @category billing
 */
export const isImagePriced = (price: Price): boolean => price.free || price.perImage !== undefined

/**
 * Whether `price` can bill videos: `per_second`, or a free model.
 *
 * @category billing
 */
export const isVideoPriced = (price: Price): boolean => price.free || price.perSecond !== undefined

/**
 * The cost of reading `characters` characters aloud (`per_1m_characters` USD
 * per million) in quota units: ceil(ratio × characters × price), since USD per
 * 1M × count is micro-USD, as with tokens.
 *
 * @category billing
 */
export const characterCost = (ratio: bigint, price: Price, characters: number): bigint =>
  price.free ? 0n : ceilDiv(ratio * count(characters) * (price.perMillionCharacters ?? 0n), SCALE * SCALE)

/**
 * The cost of `milliseconds` of audio (`per_second` USD each) in quota units:
 * ceil(ratio × milliseconds × price × 10³), so a fraction of a second is
 * billed as the fraction it is (transcription).
 *
 * @category billing
 */
export const audioCost = (ratio: bigint, price: Price, milliseconds: number): bigint =>
  price.free ? 0n : ceilDiv(ratio * count(milliseconds) * (price.perSecond ?? 0n) * 1_000n, SCALE * SCALE)

/**
 * The cost of `units` search units (`per_search` USD each) in quota units.
 *
 * @category billing
 */
export const searchCost = (ratio: bigint, price: Price, units: number): bigint =>
  price.free ? 0n : ceilDiv(ratio * count(units) * (price.perSearch ?? 0n) * 1_000_000n, SCALE * SCALE)
