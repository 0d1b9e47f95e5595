/**
 * Settlement: the one place a request's bill is made. The meter collects what
 * an answer reported and delivered; `settle` turns it into a cost, settles the
 * quota hold(s), records the usage-log row of the final attempt, releases the
 * rate-limit permit and hands a complete answer to `onAnswer` — exactly once
 * per request, uninterruptibly, whatever ends it (success, failure, the caller
 * hanging up, shutdown).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { OutputPart } from "../canonical/Content.ts"
import { emptyUsage, type Usage } from "../canonical/Usage.ts"
import { type Price, textCost } from "../domain/Pricing.ts"
import { safeVendorText } from "../domain/Redact.ts"
import type { UpstreamFailed } from "../errors/GatewayError.ts"
import type { Principal } from "../services/Auth.ts"
import type { Candidate } from "../services/ChannelRouter.ts"
import type { Hold, QuotaLedger } from "../services/QuotaLedger.ts"
import type { Permit } from "../services/RateLimiter.ts"
import type { UsageLog } from "../services/UsageLog.ts"
import type { RequestRecord } from "../observability/RequestRecord.ts"
import type { MeterDelta } from "./StreamBridge.ts"

/**
 * How a request ended, for billing and the usage log. `usage` is the last
 * usage the upstream reported; `final` says it was the final one (a complete
 * answer, or a stream's `Finish`); `deliveredCharacters` counts the text,
 * reasoning and tool-argument characters that reached the caller.
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

/** A meter with nothing measured yet. @category constructors */
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
 * The meter after a stream step's delta.
 *
 * @category metering
 */
export const applyDelta = (meter: Meter, delta: MeterDelta): Meter => {
  const next = { ...meter }
  absorbInto(next, delta)
  return next
}

/** `applyDelta` in place, on a meter the caller owns (the settlement's, updated on every stream read). */
const absorbInto = (meter: { -readonly [K in keyof Meter]: Meter[K] }, delta: MeterDelta): void => {
  if (delta.usage !== undefined) meter.usage = delta.usage
  if (delta.final) meter.final = true
  meter.deliveredCharacters += delta.deliveredCharacters
  if (delta.failure !== undefined) {
    meter.status = failureStatus(delta.failure)
    meter.error = failureText(delta.failure)
  }
  if (delta.answerId !== undefined) meter.answerId = delta.answerId
  if (delta.answer !== undefined) meter.answer = delta.answer
}

/** The status a failed upstream call is logged with (502 when it had none). @category metering */
export const failureStatus = (error: UpstreamFailed): number => error.status >= 400 ? error.status : 502

/**
 * The usage-log text of a failure: its kind and the vendor's words with
 * anything key-like masked, bounded to 500 characters.
 *
 * @category metering
 */
export const failureText = (error: UpstreamFailed): string => `${error.kind}: ${safeVendorText(error.message, 480)}`

/**
 * The usage to bill, or `undefined` when nothing is chargeable (a failure that
 * delivered nothing). A final usage is billed as reported. Otherwise (a stream
 * cut before its final usage, an answer with no usage) the output is the
 * larger of what was reported so far (Anthropic's `message_start` reports
 * `output_tokens: 1`) and an estimate of what was delivered (a quarter token
 * per character); the input is the reported one, or `promptTokens`. An
 * answer that reported no usage and delivered nothing costs nothing.
 *
 * @category metering
 */
export const billedUsage = (meter: Meter, promptTokens: number): Usage | undefined => {
  const failed = meter.status >= 400
  if (failed && meter.deliveredCharacters === 0) return undefined
  if (meter.final && meter.usage !== undefined) return meter.usage
  const delivered = Math.ceil(meter.deliveredCharacters / 4)
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

/** Where the bill goes and what it is priced at; fixed for a request. @category models */
export interface SettlementInput {
  readonly ledger: typeof QuotaLedger.Service
  readonly usageLog: typeof UsageLog.Service
  readonly principal: Principal
  readonly requestId: string
  readonly model: string
  readonly stream: boolean
  readonly price: Price
  /** The group ratio, fixed-point ×10⁹ (see `domain/Pricing.ts`). */
  readonly ratio: bigint
  /** The prompt-token estimate billed when the upstream reported none. */
  readonly promptTokens: number
  /** Epoch milliseconds the request started (latency). */
  readonly started: number
  readonly permit: Permit
  readonly onAnswer?: ((id: string, content: ReadonlyArray<OutputPart>) => Effect.Effect<void>) | undefined
  /** The request's telemetry record: told of each failed attempt and of the bill (tokens, charged quota). */
  readonly record?: RequestRecord | undefined
  /**
   * The cost of a billed usage in quota units, for requests not priced by
   * tokens (images: the count returned × `per_image`); default the text cost
   * of `price` and `ratio`.
   */
  readonly cost?: ((usage: Usage) => bigint) | undefined
}

/**
 * A request's settlement: its meter, the holds it took, and `settle`.
 *
 * @category models
 */
export interface Settlement {
  /** The current meter. */
  readonly meter: () => Meter
  /** Replaces the meter (an answer reported, a failure). */
  readonly update: (f: (meter: Meter) => Meter) => void
  /** Takes a stream step's delta into the meter (`applyDelta`). */
  readonly absorb: (delta: MeterDelta) => void
  /** Adds a hold to settle (the request's own, or an extension for inlined media). */
  readonly addHold: (hold: Hold) => void
  /** Logs an attempt that failed before the answer began (cost 0; the request goes on). */
  readonly logFailedAttempt: (candidate: Candidate, attempt: number, error: UpstreamFailed) => void
  /**
   * Bills the request once: the cost from the meter, every hold settled
   * (extensions refunded first, the cost against the first), the usage-log row
   * of `attempt`, the permit released, `onAnswer` for a complete answer.
   * Later calls do nothing. Uninterruptible.
   */
  readonly settle: (candidate: Candidate | undefined, attempt: number) => Effect.Effect<void>
  /**
   * Ends a request whose answer never reached the caller (it failed, or the
   * caller left first): every hold refunded, the permit released, no row (the
   * failed attempts logged theirs). Does nothing after `settle`; once.
   */
  readonly abandon: Effect.Effect<void>
}

/**
 * A new settlement for one request.
 *
 * @category constructors
 */
export const makeSettlement = (input: SettlementInput): Settlement => {
  // Mutable inside the settlement only: a stream's many deltas update it in place (no object per read).
  let meter: { -readonly [K in keyof Meter]: Meter[K] } = { ...emptyMeter }
  let settled = false
  const holds: Array<Hold> = []
  const row = (candidate: Candidate | undefined, attempt: number) => ({
    requestId: input.requestId,
    attempt,
    userId: input.principal.userId,
    tokenId: input.principal.tokenId,
    channelId: candidate?.channel.id ?? null,
    model: input.model,
    upstreamModel: candidate?.upstreamModel ?? null,
    latencyMs: Date.now() - input.started,
    stream: input.stream
  })

  const settle = (candidate: Candidate | undefined, attempt: number): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (settled) return Effect.void
      settled = true
      const usage = billedUsage(meter, input.promptTokens)
      const cost = usage === undefined ? 0n : input.cost === undefined
        ? textCost(
          input.ratio,
          input.price,
          usage.inputTokens,
          usage.outputTokens,
          usage.cachedInputTokens ?? 0,
          usage.cacheCreationInputTokens ?? 0
        )
        : input.cost(usage)
      const [main, ...extensions] = holds
      const counted = usage ?? emptyUsage
      // The row is recorded in the step the charge is booked, so a ledger commit takes both or neither.
      const record = (charged: bigint) => {
        input.record?.billed(
          candidate?.channel.name,
          counted.inputTokens,
          counted.outputTokens,
          counted.cachedInputTokens ?? 0,
          counted.reasoningTokens ?? 0,
          charged
        )
        input.usageLog.record({
          ...row(candidate, attempt),
          promptTokens: counted.inputTokens,
          completionTokens: counted.outputTokens,
          cachedTokens: counted.cachedInputTokens ?? 0,
          reasoningTokens: counted.reasoningTokens ?? 0,
          cost: charged,
          status: meter.status,
          error: meter.error
        })
      }
      const charge = main === undefined ? Effect.sync(() => record(0n)) : input.ledger.settle(main, cost, record)
      const billed = extensions.length === 0
        ? charge
        : Effect.andThen(Effect.forEach(extensions, (hold) => input.ledger.settle(hold, 0n), { discard: true }), charge)
      const released = input.permit.release(usage === undefined ? 0 : usage.inputTokens + usage.outputTokens)
      const answered = meter.status < 400 && input.onAnswer !== undefined && meter.answerId !== undefined &&
          meter.answer !== undefined
        ? input.onAnswer(meter.answerId, meter.answer)
        : Effect.void
      return Effect.andThen(billed, answered === Effect.void ? released : Effect.andThen(released, answered))
    }).pipe(Effect.uninterruptible)

  const abandon = Effect.suspend(() => {
    if (settled) return Effect.void
    settled = true
    return Effect.forEach(holds, (hold) => input.ledger.settle(hold, 0n), { discard: true }).pipe(
      Effect.andThen(input.permit.release(0))
    )
  }).pipe(Effect.uninterruptible)

  return {
    meter: () => meter,
    update: (f) => {
      meter = { ...f(meter) }
    },
    absorb: (delta) => absorbInto(meter, delta),
    addHold: (hold) => {
      holds.push(hold)
    },
    logFailedAttempt: (candidate, attempt, error) => {
      input.record?.attemptFailed(candidate.channel.name, error.kind, error.retryable)
      input.usageLog.record({
        ...row(candidate, attempt),
        promptTokens: 0,
        completionTokens: 0,
        cachedTokens: 0,
        reasoningTokens: 0,
        cost: 0n,
        status: error.status === 0 ? 502 : error.status,
        error: failureText(error)
      })
    },
    settle,
    abandon
  }
}
