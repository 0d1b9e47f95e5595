/**
 * Settlement: the one place a request's bill is made. The meter collects what
 * an answer reported and delivered; `settle` turns it into a cost, settles the
 * quota hold(s), records the usage-log row of the final attempt, releases the
 * rate-limit permit and hands a complete answer to `onAnswer` — exactly once
 * per request, uninterruptibly, whatever ends it (success, failure, the caller
 * hanging up, shutdown). The meter's pure rules are `billing/Meter.ts`'s.
 *
 * @since 0.1.0
 */
import { type Clock, Effect } from "effect"
import type { OutputPart } from "../../canonical/Content.ts"
import { emptyUsage, type Usage } from "../../canonical/Usage.ts"
import {
  absorbInto,
  billedUsage,
  billsDelivered,
  emptyMeter,
  failureText,
  type Meter,
  type MeterDelta,
  type MutableMeter
} from "../../billing/Meter.ts"
import { type Price, textCost } from "../../domain/Pricing.ts"
import { countTokens, TOKENIZED_CHARACTERS } from "../../formats/shared/TokenCount.ts"
import type { UpstreamFailed } from "../../errors/GatewayError.ts"
import type { Principal } from "../../services/Auth.ts"
import type { Candidate } from "../../services/ChannelRouter.ts"
import type { Ledger } from "../../billing/Ledger.ts"
import type { Hold } from "../../billing/QuotaLedger.ts"
import type { Permit } from "../../services/RateLimiter.ts"
import type { RequestRecord } from "../../observability/RequestRecord.ts"

/** Where the bill goes and what it is priced at; fixed for a request. @category models */
export interface SettlementInput {
  /** Where the holds, the charge and its usage row go (`billing/Ledger.ts`). */
  readonly ledger: typeof Ledger.Service
  readonly principal: Principal
  readonly requestId: string
  readonly model: string
  readonly stream: boolean
  readonly price: Price
  /** The group ratio, fixed-point ×10⁹ (see `domain/Pricing.ts`). */
  readonly ratio: bigint
  /** The prompt-token estimate billed when the upstream reported none. */
  readonly promptTokens: number
  /** The output tokens the hold was sized for: a cut stream's delivered estimate is never billed above it. */
  readonly outputCap?: number | undefined
  /** Epoch milliseconds the request started (latency), by `clock`. */
  readonly started: number
  /** The clock the usage rows' latencies are read from (the request's Effect `Clock`). */
  readonly clock: Clock.Clock
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
   * of `attempt`, the permit released; and `onAnswer` once for a complete
   * answer (a later call makes it when the answer was assembled after the
   * bill: a stream is billed at its final usage, before its `Finish`). Later
   * calls bill nothing. Uninterruptible.
   */
  readonly settle: (candidate: Candidate | undefined, attempt: number) => Effect.Effect<void>
  /**
   * Resolves once the bill's charge and usage row are committed (true), or
   * when the commit that should hold them failed (false: they stay queued and
   * are retried). Call after `settle`.
   */
  readonly durable: Effect.Effect<boolean>
  /** What `settle` charged, in quota units; `undefined` before it billed. */
  readonly charged: () => bigint | undefined
  /**
   * After `durable` answered false, for an answer withheld whole (a JSON answer): takes the bill back
   * (`QuotaLedger.withdraw`), so the failed request is not charged. Returns whether it did; false: the charge
   * stands (durable after all, or being committed), and the answer may be delivered.
   */
  readonly withdraw: () => boolean
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
  let meter: MutableMeter = { ...emptyMeter }
  /** The delivered pieces, kept (up to `TOKENIZED_CHARACTERS`) to count a cut stream's tokens. */
  const delivered: Array<string> = []
  let keptCharacters = 0
  /** When (epoch milliseconds, the settlement's clock) a streamed answer's first content was metered. */
  let firstTokenAt: number | undefined
  let billed = false
  let answered = false
  let charged: bigint | undefined
  /** The attempt whose row `settle` recorded with the charge. */
  let billedAttempt = 0
  const holds: Array<Hold> = []
  const row = (candidate: Candidate | undefined, attempt: number) => ({
    requestId: input.requestId,
    attempt,
    userId: input.principal.userId,
    tokenId: input.principal.tokenId,
    channelId: candidate?.channel.id ?? null,
    model: input.model,
    upstreamModel: candidate?.upstreamModel ?? null,
    latencyMs: input.clock.currentTimeMillisUnsafe() - input.started,
    firstTokenMs: firstTokenAt === undefined ? null : firstTokenAt - input.started,
    stream: input.stream
  })

  /** The usage to bill: as reported when final; a cut answer's delivered part counted with the vendor's tokenizer. */
  const usageToBill = (candidate: Candidate | undefined): Effect.Effect<Usage | undefined> => {
    const options = { outputCap: input.outputCap }
    if (!billsDelivered(meter) || candidate === undefined) {
      return Effect.sync(() => billedUsage(meter, input.promptTokens, options))
    }
    return Effect.map(
      countTokens(candidate.channel.type, candidate.upstreamModel, delivered, meter.deliveredCharacters),
      (deliveredTokens) => billedUsage(meter, input.promptTokens, { ...options, deliveredTokens })
    )
  }

  const bill = (candidate: Candidate | undefined, attempt: number, usage: Usage | undefined): Effect.Effect<void> => {
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
    // The ledger books the charge and this row in one step: a commit takes both or neither.
    const rowOf = (amount: bigint) => {
      charged = amount
      billedAttempt = attempt
      input.record?.billed(
        candidate?.channel.name,
        counted.inputTokens,
        counted.outputTokens,
        counted.cachedInputTokens ?? 0,
        counted.reasoningTokens ?? 0,
        amount
      )
      return {
        ...row(candidate, attempt),
        promptTokens: counted.inputTokens,
        completionTokens: counted.outputTokens,
        cachedTokens: counted.cachedInputTokens ?? 0,
        reasoningTokens: counted.reasoningTokens ?? 0,
        cost: amount,
        status: meter.status,
        error: meter.error
      }
    }
    const charge = input.ledger.book(main, cost, rowOf)
    const booked = extensions.length === 0
      ? charge
      : Effect.andThen(Effect.forEach(extensions, input.ledger.release, { discard: true }), charge)
    return Effect.andThen(
      booked,
      input.permit.release(usage === undefined ? 0 : usage.inputTokens + usage.outputTokens)
    )
  }

  /** `onAnswer` once, for a complete answer whose content is assembled. */
  const answerIfDue = (): Effect.Effect<void> => {
    if (
      answered || meter.status >= 400 || input.onAnswer === undefined || meter.answerId === undefined ||
      meter.answer === undefined
    ) return Effect.void
    answered = true
    return input.onAnswer(meter.answerId, meter.answer)
  }

  const settle = (candidate: Candidate | undefined, attempt: number): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (billed) return answerIfDue()
      billed = true
      return usageToBill(candidate).pipe(
        Effect.flatMap((usage) => bill(candidate, attempt, usage)),
        Effect.andThen(Effect.suspend(answerIfDue))
      )
    }).pipe(Effect.uninterruptible)

  const abandon = Effect.suspend(() => {
    if (billed) return Effect.void
    billed = true
    return Effect.forEach(holds, input.ledger.release, { discard: true }).pipe(
      Effect.andThen(input.permit.release(0))
    )
  }).pipe(Effect.uninterruptible)

  return {
    meter: () => meter,
    update: (f) => {
      meter = { ...f(meter) }
    },
    absorb: (delta) => {
      absorbInto(meter, delta)
      if (firstTokenAt === undefined && input.stream && delta.deliveredCharacters > 0) {
        firstTokenAt = input.clock.currentTimeMillisUnsafe()
      }
      if (delta.deliveredText !== undefined && keptCharacters < TOKENIZED_CHARACTERS) {
        for (const piece of delta.deliveredText) {
          delivered.push(piece)
          keptCharacters += piece.length
        }
      }
    },
    addHold: (hold) => {
      holds.push(hold)
    },
    logFailedAttempt: (candidate, attempt, error) => {
      input.record?.attemptFailed(candidate.channel.name, error.kind, error.retryable)
      input.ledger.record({
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
    durable: input.ledger.durable,
    charged: () => charged,
    withdraw: () => {
      const main = holds[0]
      if (main === undefined || charged === undefined) return false
      if (charged === 0n) return true
      return input.ledger.withdraw(main, charged, input.requestId, billedAttempt)
    },
    abandon
  }
}
