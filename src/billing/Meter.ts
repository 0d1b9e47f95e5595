/**
 * The meter: what an answer reported and delivered, as plain values, and the
 * pure rules that turn it into the usage to bill. The stream bridge reports
 * each upstream read as a `MeterDelta`; the settlement folds the deltas into
 * its `Meter` (`absorbInto`) and bills `billedUsage` of it. Nothing here runs
 * an effect, and nothing here knows the relay.
 *
 * @since 0.1.0
 */
import type { OutputPart } from "../canonical/Content.ts"
import { emptyUsage, type Usage } from "../canonical/Usage.ts"
import { safeVendorText } from "../domain/Redact.ts"
import type { UpstreamFailed } from "../errors/GatewayError.ts"
import { charactersToTokens } from "../formats/shared/TokenCount.ts"

/**
 * What one step of a streamed answer meant for billing. `usage` is the last
 * usage reported in the batch (undefined: none); `final` says the format's
 * final usage arrived (`UsageUpdate.final`); `finished` says the answer's
 * `Finish` came (a usage reported before it is then final too);
 * `deliveredCharacters` counts the text, reasoning and tool-argument
 * characters of the step; `failure` ends the answer as failed.
 *
 * @category models
 */
export interface MeterDelta {
  readonly usage: Usage | undefined
  readonly final: boolean
  readonly finished: boolean
  readonly deliveredCharacters: number
  /** The delivered text, tool arguments and reasoning of the step, in order (`undefined`: none). */
  readonly deliveredText: Array<string> | undefined
  readonly failure: UpstreamFailed | undefined
  /** The answer's public id (`ResponseStart`), when assembling. */
  readonly answerId: string | undefined
  /** The assembled answer, once it finished, when assembling. */
  readonly answer: ReadonlyArray<OutputPart> | undefined
}

/**
 * How a request ended, for billing and the usage log. `usage` is the last
 * usage the upstream reported; `final` says it was the final one (a complete
 * answer's, or a stream's final usage: `UsageUpdate.final`, or a usage
 * reported before the stream's `Finish`), after which it never changes;
 * `deliveredCharacters` counts the text, reasoning and tool-argument
 * characters that reached the caller.
 *
 * @category models
 */
export interface Meter {
  readonly usage: Usage | undefined
  readonly final: boolean
  readonly deliveredCharacters: number
  /** HTTP status of the outcome (the upstream's, or 499 when the caller left before any answer). */
  readonly status: number
  readonly error: string | null
  readonly answerId: string | undefined
  readonly answer: ReadonlyArray<OutputPart> | undefined
}

/** A meter whose fields can be set in place, owned by one settlement. @category models */
export type MutableMeter = { -readonly [K in keyof Meter]: Meter[K] }

/** A meter with nothing measured yet: no usage, nothing delivered, status 200. @category constructors */
export const emptyMeter: Meter = {
  usage: undefined,
  final: false,
  deliveredCharacters: 0,
  status: 200,
  error: null,
  answerId: undefined,
  answer: undefined
}

/**
 * The meter after a stream step's delta (a new meter; `meter` is unchanged).
 *
 * @category metering
 */
export const applyDelta = (meter: Meter, delta: MeterDelta): Meter => {
  const next = { ...meter }
  absorbInto(next, delta)
  return next
}

/**
 * `applyDelta` in place, on a meter the caller owns (a settlement's, updated
 * on every stream read without an object per read). After the final usage,
 * later usages change nothing: the final usage is the bill.
 *
 * @category metering
 */
export const absorbInto = (meter: MutableMeter, delta: MeterDelta): void => {
  if (delta.usage !== undefined && !meter.final) meter.usage = delta.usage
  if (delta.final || (delta.finished && meter.usage !== undefined)) meter.final = true
  meter.deliveredCharacters += delta.deliveredCharacters
  if (delta.failure !== undefined) {
    meter.status = failureStatus(delta.failure)
    meter.error = failureText(delta.failure)
  }
  if (delta.answerId !== undefined) meter.answerId = delta.answerId
  if (delta.answer !== undefined) meter.answer = delta.answer
}

/** The HTTP status a failed upstream call is logged with: the upstream's, or 502 when it had none. @category metering */
export const failureStatus = (error: UpstreamFailed): number => error.status >= 400 ? error.status : 502

/**
 * The usage-log text of a failure: its kind and the vendor's words with
 * anything key-like masked, bounded to 500 characters.
 *
 * @category metering
 */
export const failureText = (error: UpstreamFailed): string => `${error.kind}: ${safeVendorText(error.message, 480)}`

/**
 * Whether the bill of `meter` estimates the delivered part (no final usage,
 * and something was delivered): then the delivered text is worth counting
 * with the vendor's tokenizer (`billedUsage`'s `deliveredTokens`).
 *
 * @category metering
 */
export const billsDelivered = (meter: Meter): boolean =>
  !(meter.final && meter.usage !== undefined) && meter.deliveredCharacters > 0

/**
 * The usage to bill, or `undefined` when nothing is chargeable (a failure that
 * delivered nothing). A final usage is billed as reported, whatever happened
 * after it. Otherwise (a stream cut before its final usage, an answer with no
 * usage) the output is the larger of what was reported so far (Anthropic's
 * `message_start` reports `output_tokens: 1`) and the tokens delivered
 * (`deliveredTokens`, default a quarter token per delivered character), the
 * delivered part never counted above `outputCap` (the output tokens the hold
 * was sized for); the input is the reported one, or `promptTokens`. An answer
 * that reported no usage and delivered nothing costs nothing. Token counts.
 *
 * @category metering
 */
export const billedUsage = (
  meter: Meter,
  promptTokens: number,
  options: { readonly deliveredTokens?: number | undefined; readonly outputCap?: number | undefined } = {}
): Usage | undefined => {
  const failed = meter.status >= 400
  if (failed && meter.deliveredCharacters === 0) return undefined
  if (meter.final && meter.usage !== undefined) return meter.usage
  const counted = options.deliveredTokens ?? charactersToTokens(meter.deliveredCharacters)
  const delivered = options.outputCap === undefined ? counted : Math.min(counted, options.outputCap)
  const reported = meter.usage
  if (reported === undefined) {
    return delivered > 0 ? { inputTokens: promptTokens, outputTokens: delivered } : emptyUsage
  }
  return {
    ...reported,
    inputTokens: reported.inputTokens > 0 ? reported.inputTokens : promptTokens,
    outputTokens: Math.max(reported.outputTokens, delivered)
  }
}

/**
 * A charge in quota units (micro-USD, `bigint`) as USD with six decimals,
 * exact: the `x-sluice-cost` header's value (`"-0.000001"` for a refund).
 *
 * @category metering
 */
export const costHeader = (quota: bigint): string => {
  const negative = quota < 0n
  const units = negative ? -quota : quota
  const text = `${units / 1_000_000n}.${String(units % 1_000_000n).padStart(6, "0")}`
  return negative ? `-${text}` : text
}

/**
 * A charge in quota units as USD, a number (the stream's `usage.cost`).
 *
 * @category metering
 */
export const costUsd = (quota: bigint): number => Number(costHeader(quota))
