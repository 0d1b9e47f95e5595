/**
 * The billed pipeline (docs/ARCHITECTURE.md, "The billed pipeline"), written once for
 * every route that calls a vendor: permit (RateLimiter) → settlement → hold
 * (QuotaLedger; uninterruptible, so a hold taken is always settled) →
 * `failover` over the candidates (one attempt each until one is accepted,
 * failed attempts logged and reported to the router's health) → the answer
 * (`deliver`: JSON through `ctx.answerJson`, a stream through the
 * StreamBridge, a task record) → settlement (cost, settle, usage-log row,
 * permit release: exactly once, uninterruptible), or, when nothing reached
 * the caller, every hold back and the permit released. The text relay
 * (`Relay.ts`) and the one-answer relays (`OneShot.ts`: embeddings, images,
 * video submit and remix) run on it.
 *
 * @since 0.1.0
 */
import { Clock, Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import type { Usage } from "../canonical/Usage.ts"
import { costHeader, type Meter } from "../billing/Meter.ts"
import type { Price } from "../domain/Pricing.ts"
import { type GatewayError, LedgerUnavailable, type UpstreamFailed } from "../errors/GatewayError.ts"
import type { RequestRecord } from "../observability/RequestRecord.ts"
import type { Principal } from "../services/Auth.ts"
import type { Candidate, ChannelRouter } from "../services/ChannelRouter.ts"
import type { Settings } from "../services/GatewaySettings.ts"
import type { Ledger } from "../billing/Ledger.ts"
import type { RateLimiter } from "../services/RateLimiter.ts"
import type { Limits } from "../storage/Catalog.ts"
import { type Accepted, failover } from "./Failover.ts"
import { makeSettlement, type Settlement } from "./Settlement.ts"

/** The services the pipeline runs on (a relay's layer takes them once). @category models */
export interface PipelineServices {
  readonly router: typeof ChannelRouter.Service
  readonly ledger: typeof Ledger.Service
  readonly limiter: typeof RateLimiter.Service
  readonly settings: Settings
}

/** What the pipeline hands `deliver` and the attempts. @category models */
export interface PipelineContext {
  readonly settlement: Settlement
  /** Holds `amount` (quota units) more for this request; uninterruptible, so a hold taken is always settled. */
  readonly hold: (amount: bigint) => Effect.Effect<void, GatewayError>
  /** Bills the request (see `Settlement.settle`); traced when the relay traces. */
  readonly settle: (candidate: Candidate, attempt: number) => Effect.Effect<void>
  /**
   * Marks the answer as handed to the caller: from here the settlement, not the pipeline, ends the request
   * (a stream's body settles it). Call before returning a stream.
   */
  readonly handOff: () => void
  /**
   * A complete JSON answer: the meter updated with what it reported (`final` when it reported usage), the
   * request billed, the charge durable (journaled or committed, so a crash from here on gives nothing away), and
   * `response` with its `x-sluice-cost`. Fails with `LedgerUnavailable` (503 `quota_ledger_unavailable`) when no
   * journal could hold the charge: the answer is withheld and its charge taken back (`Settlement.withdraw`).
   */
  readonly answerJson: (
    accepted: Accepted<unknown>,
    reported: Partial<Meter>,
    response: HttpServerResponse.HttpServerResponse
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse, LedgerUnavailable>
}

/** One billed request, its candidates chosen and priced. @category models */
export interface BilledRequest<A> {
  readonly principal: Principal
  /** The group's rate limits, where the principal's own leave gaps. */
  readonly groupLimits: Limits | undefined
  readonly model: string
  readonly price: Price
  /** The group ratio, fixed-point ×10⁹ (see `domain/Pricing.ts`). */
  readonly ratio: bigint
  /** The prompt-token estimate billed when the upstream reported none. */
  readonly promptTokens: number
  /** The output tokens the hold was sized for (a cut stream is never billed above it). */
  readonly outputCap?: number | undefined
  /** Epoch milliseconds the request started. */
  readonly started: number
  /** The usage log's stream flag. */
  readonly stream: boolean
  /** The usage log's request id (`usageRequestId`). */
  readonly requestId: string
  readonly record?: RequestRecord | undefined
  readonly onAnswer?: Parameters<typeof makeSettlement>[0]["onAnswer"]
  /** The cost of a billed usage in quota units when not priced by tokens (images, video). */
  readonly cost?: ((usage: Usage) => bigint) | undefined
  /** Quota units held before the first attempt. */
  readonly hold: bigint
  readonly candidates: ReadonlyArray<Candidate>
  /** One attempt, given the pipeline's context (an attempt may hold more: media made inline). */
  readonly attempt: (
    context: PipelineContext
  ) => (candidate: Candidate, attempt: number) => Effect.Effect<A, UpstreamFailed | GatewayError>
  /** The accepted answer to the caller (it must settle, through `answerJson`, or hand off a stream). */
  readonly deliver: (
    accepted: Accepted<A>,
    context: PipelineContext
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError>
  /** Wraps the first hold and the settlement in spans (the text relay, with tracing on). */
  readonly traced?: boolean | undefined
  /** Called when the rate limiter refuses the request (a metric). */
  readonly onRejected?: (() => Effect.Effect<void>) | undefined
}

/**
 * Runs `request` through the billed pipeline (see the module doc). Fails with
 * the rate limiter's, the ledger's, the last attempt's or `deliver`'s error;
 * nothing is charged then.
 *
 * @category relay
 */
export const runBilled = <A>(
  services: PipelineServices,
  request: BilledRequest<A>
): Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function* () {
      const { ledger, settings } = services
      const acquire = services.limiter.acquire(limitSubjects(request.principal, request.groupLimits))
      const permit = yield* (request.onRejected === undefined ? acquire : Effect.tapError(acquire, request.onRejected))
      const settlement = makeSettlement({
        ledger,
        principal: request.principal,
        requestId: request.requestId,
        model: request.model,
        stream: request.stream,
        price: request.price,
        ratio: request.ratio,
        promptTokens: request.promptTokens,
        outputCap: request.outputCap,
        started: request.started,
        clock: yield* Clock.Clock,
        permit,
        onAnswer: request.onAnswer,
        record: request.record,
        cost: request.cost
      })
      let handedOff = false
      const hold = (amount: bigint) =>
        Effect.uninterruptible(Effect.map(ledger.hold(request.principal, amount), settlement.addHold))
      const settle = request.traced === true
        ? (candidate: Candidate, attempt: number) =>
          settlement.settle(candidate, attempt).pipe(Effect.withSpan("Settlement.settle"))
        : settlement.settle
      const context: PipelineContext = {
        settlement,
        hold,
        settle,
        handOff: () => {
          handedOff = true
        },
        answerJson: (accepted, reported, response) =>
          Effect.gen(function* () {
            settlement.update((meter) => ({ ...meter, ...reported, final: reported.usage !== undefined, status: 200 }))
            handedOff = true
            yield* settle(accepted.candidate, accepted.attempt)
            // No journal could hold the bill: the answer is withheld whole, and its charge taken back.
            if (!(yield* settlement.durable) && settlement.withdraw()) {
              return yield* Effect.fail(new LedgerUnavailable())
            }
            return HttpServerResponse.setHeader(response, "x-sluice-cost", costHeader(settlement.charged() ?? 0n))
          })
      }
      const answer = Effect.gen(function* () {
        const firstHold = hold(request.hold)
        yield* request.traced === true ? Effect.withSpan(firstHold, "QuotaLedger.hold") : firstHold
        const accepted = yield* failover({
          candidates: request.candidates,
          maxAttempts: Math.min(request.candidates.length, 1 + settings.retryTimes),
          deadline: request.started + settings.requestDeadlineMs,
          report: services.router.report,
          logFailed: (candidate, attempt, error) =>
            Effect.sync(() => settlement.logFailedAttempt(candidate, attempt, error)),
          attempt: request.attempt(context)
        })
        return yield* request.deliver(accepted, context)
      })
      // Nothing reached the caller (a failure, or the caller left): every hold back, the permit released.
      return yield* restore(answer).pipe(Effect.onExit(() => handedOff ? Effect.void : settlement.abandon))
    })
  )

/**
 * The rate-limit subjects of a request: its token and its user (group defaults fill gaps).
 *
 * @category limits
 */
export const limitSubjects = (principal: Principal, groupLimits: Limits | undefined) => [
  { key: `token:${principal.tokenId}`, limits: principal.tokenLimits ?? {} },
  { key: `user:${principal.userId}`, limits: principal.userLimits ?? groupLimits ?? {} }
]
