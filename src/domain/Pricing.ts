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
  /** USD per 1M audio input tokens (`audio_input`: the Realtime API). */
  readonly audioInput?: bigint | undefined
  /** USD per 1M audio output tokens (`audio_output`: the Realtime API). */
  readonly audioOutput?: bigint | undefined
  /** USD per 1M audio input tokens read from the vendor's cache (`cached_audio_input`); `undefined` = `audioInput`. */
  readonly cachedAudioInput?: bigint | undefined
  /** USD per 1M input tokens of a line of a batch delegated to a vendor (`batch_input`); `undefined` = `input`. */
  readonly batchInput?: bigint | undefined
  /** USD per 1M output tokens of a line of a batch delegated to a vendor (`batch_output`); `undefined` = `output`. */
  readonly batchOutput?: bigint | undefined
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
 * The price a line of a batch delegated to a vendor's batch API is billed at (with `textCost`): `input` and
 * `output` replaced by `batch_input` / `batch_output` where they are set, every other price kept (so an unset
 * `cached_input` or `cache_write`, which follows `input`, follows the batch input price). A model without batch
 * prices is billed its normal prices.
 *
 * @category billing
 */
export const batchPrice = (price: Price): Price =>
  price.batchInput === undefined && price.batchOutput === undefined ? price : {
    ...price,
    input: price.batchInput ?? price.input,
    output: price.batchOutput ?? price.output
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

/**
 * The token counts of one Realtime response (`response.done`'s `response.usage`, see
 * `relay/realtime/RealtimeUsage.ts`), each a non-negative integer. The cached counts are parts of their kind's input
 * counts; the kinds' counts are parts of `inputTokens` / `outputTokens`.
 *
 * @category models
 */
export interface RealtimeTokens {
  readonly inputTokens: number
  readonly outputTokens: number
  readonly textInput: number
  readonly audioInput: number
  readonly imageInput: number
  readonly cachedText: number
  readonly cachedAudio: number
  readonly cachedImage: number
  readonly textOutput: number
  readonly audioOutput: number
}

/**
 * Whether `price` can bill a Realtime session: free, or text prices (`input`, `output`) and both audio prices
 * (`audio_input`, `audio_output`). A session may carry audio in either direction, so both are required up front.
 *
 * @category billing
 */
export const isRealtimePriced = (price: Price): boolean =>
  price.free ||
  (price.input !== undefined && price.output !== undefined && price.audioInput !== undefined &&
    price.audioOutput !== undefined)

const dearer = (left: bigint, right: bigint): bigint => left > right ? left : right

/**
 * The cost of one Realtime response in quota units: text (and image) input at `input` (cached at `cached_input`),
 * audio input at `audio_input` (cached at `cached_audio_input`), text output at `output`, audio output at
 * `audio_output`, times the group ratio, rounded up once. Input or output tokens the details do not account for (a
 * vendor that reports totals only) are billed at the dearer of the text and audio price of their direction, so a
 * thin report never bills less. Cached counts are capped at their kind's count.
 *
 * @category billing
 */
export const realtimeCost = (ratio: bigint, price: Price, tokens: RealtimeTokens): bigint => {
  if (price.free) return 0n
  const input = price.input ?? 0n
  const output = price.output ?? 0n
  const audioIn = price.audioInput ?? input
  const audioOut = price.audioOutput ?? output
  const cachedText = count(Math.min(tokens.cachedText, tokens.textInput))
  const cachedAudio = count(Math.min(tokens.cachedAudio, tokens.audioInput))
  const cachedImage = count(Math.min(tokens.cachedImage, tokens.imageInput))
  const detailedIn = count(tokens.textInput) + count(tokens.audioInput) + count(tokens.imageInput)
  const detailedOut = count(tokens.textOutput) + count(tokens.audioOutput)
  const restIn = count(tokens.inputTokens) > detailedIn ? count(tokens.inputTokens) - detailedIn : 0n
  const restOut = count(tokens.outputTokens) > detailedOut ? count(tokens.outputTokens) - detailedOut : 0n
  const raw = (count(tokens.textInput) - cachedText + count(tokens.imageInput) - cachedImage) * input +
    (cachedText + cachedImage) * (price.cachedInput ?? input) +
    (count(tokens.audioInput) - cachedAudio) * audioIn + cachedAudio * (price.cachedAudioInput ?? audioIn) +
    restIn * dearer(input, audioIn) +
    count(tokens.textOutput) * output + count(tokens.audioOutput) * audioOut + restOut * dearer(output, audioOut)
  return ceilDiv(ratio * raw, SCALE * SCALE)
}

/**
 * The most one Realtime response of `inputTokens` input and `outputTokens` output can cost at `price`: every token
 * at the dearest price of its direction (what a session's float is sized with).
 *
 * @category billing
 */
export const realtimeBound = (ratio: bigint, price: Price, inputTokens: number, outputTokens: number): bigint => {
  if (price.free) return 0n
  const input = price.input ?? 0n
  const output = price.output ?? 0n
  const dearIn = [price.audioInput ?? input, price.cachedInput ?? input, price.cachedAudioInput ?? input].reduce(
    dearer,
    input
  )
  const dearOut = dearer(output, price.audioOutput ?? output)
  return ceilDiv(ratio * (count(inputTokens) * dearIn + count(outputTokens) * dearOut), SCALE * SCALE)
}
