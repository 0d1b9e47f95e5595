/**
 * The relay every text route shares (DESIGN.md, "The relay in parts"):
 * candidates (ChannelRouter) → limits (RateLimiter) → hold (QuotaLedger) →
 * `Failover` over `Attempts` (one per candidate until one is accepted) → the
 * answer (JSON, or the `StreamBridge` for streams) → `Settlement` (cost,
 * settle, usage-log row, permit release: exactly once, uninterruptible).
 * Format knowledge stays in `formats/`.
 *
 * @since 0.1.0
 */
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { HttpServerResponse } from "effect/http"
import { promptTokensTypical, promptTokensUpperBound } from "../canonical/Estimate.ts"
import { holdPrice, isTextPriced, textCost } from "../domain/Pricing.ts"
import { type GatewayError, InvalidRequest, ModelNotPriced } from "../errors/GatewayError.ts"
import { formatOf } from "../formats/registry.ts"
import { readableBody } from "../http/ReadableBody.ts"
import type { Principal } from "../services/Auth.ts"
import { type Candidate, ChannelRouter } from "../services/ChannelRouter.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"
import { MediaFetcher } from "../services/MediaFetcher.ts"
import { QuotaLedger } from "../services/QuotaLedger.ts"
import { RateLimiter } from "../services/RateLimiter.ts"
import { UpstreamClient } from "../services/UpstreamClient.ts"
import { UsageLog } from "../services/UsageLog.ts"
import type { Limits } from "../storage/Catalog.ts"
import { Catalog } from "../storage/Catalog.ts"
import { CurrentMetrics } from "../observability/Metrics.ts"
import { TracingEnabled } from "../observability/Tracing.ts"
import { makeAttempts } from "./Attempts.ts"
import { traced } from "./Traced.ts"
import { failover } from "./Failover.ts"
import type { RelayInput } from "./RelayInput.ts"
import { costHeader, costUsd, makeSettlement } from "./Settlement.ts"
import { bridgeBody } from "./StreamBridge.ts"

export type { RelayInput, SideEndpoint } from "./RelayInput.ts"

const sseHeaders = { "cache-control": "no-cache", "x-accel-buffering": "no" }

/** @category services */
export class Relay extends Context.Service<Relay, {
  /** Runs the pipeline; the answer is a complete response or an SSE (or JSON array) stream. */
  readonly run: (input: RelayInput) => Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError>
}>()("sluice/relay/Relay") {
  static readonly layer = Layer.effect(
    Relay,
    Effect.gen(function* () {
      const router = yield* ChannelRouter
      const ledger = yield* QuotaLedger
      const usageLog = yield* UsageLog
      const client = yield* UpstreamClient
      const settings = yield* GatewaySettings
      const limiter = yield* RateLimiter
      const media = yield* MediaFetcher
      const catalog = yield* Catalog
      const metrics = yield* CurrentMetrics
      const tracing = yield* TracingEnabled
      const countRejection = Effect.sync(() => metrics?.rateLimited())
      const onRejected = () => countRejection

      const run = Effect.fnUntraced(function* (input: RelayInput) {
        const { principal, request, endpoint } = input
        const started = Date.now()
        const record = input.record
        record?.relayed(input.inbound, request.model)
        const routed = yield* router.candidates(principal, request.model)
        const candidates = endpoint === undefined ? routed : routed.filter((c) => endpoint.supports(c.channel))
        if (candidates.length === 0 && endpoint !== undefined) return yield* endpoint.unsupported(request.model)
        const snapshot = catalog.snapshot()
        const price = snapshot.prices.get(request.model)
        const group = snapshot.groups.get(principal.group)
        const ratio = group?.ratio ?? 1_000_000_000n
        if (price === undefined || !isTextPriced(price)) return yield* new ModelNotPriced({ model: request.model })
        record?.priced(principal.group)
        const outputCap = request.maxOutputTokens ?? settings.defaultMaxTokens
        if (!Number.isSafeInteger(outputCap) || outputCap < 0) {
          return yield* new InvalidRequest({
            message: "max_tokens must be a non-negative integer.",
            param: "max_tokens"
          })
        }
        // Every answer of a batch (chat `n`, several legacy prompts) may take the cap.
        const heldOutput = outputCap * (request.choices ?? 1)
        if (!Number.isSafeInteger(heldOutput)) {
          return yield* new InvalidRequest({
            message: "The output asked for (max_tokens for each of n answers) is too large.",
            param: "n"
          })
        }
        let heldPrompt = promptTokensUpperBound(request)

        return yield* Effect.uninterruptibleMask((restore) =>
          Effect.gen(function* () {
            const acquire = limiter.acquire(limitSubjects(principal, group?.limits))
            const permit = yield* (metrics === undefined ? acquire : Effect.tapError(acquire, onRejected))
            const settlement = makeSettlement({
              ledger,
              usageLog,
              principal,
              requestId: input.requestId,
              model: request.model,
              stream: request.stream && endpoint === undefined,
              price,
              ratio,
              promptTokens: promptTokensTypical(request),
              outputCap: heldOutput,
              started,
              permit,
              onAnswer: input.onAnswer,
              record
            })
            /** Holds `amount` more for this request; uninterruptible, so a hold taken is always settled. */
            const hold = (amount: bigint) =>
              Effect.uninterruptible(Effect.map(ledger.reserve(principal, amount), settlement.addHold))
            const settle = tracing
              ? (candidate: Candidate, attempt: number) =>
                settlement.settle(candidate, attempt).pipe(Effect.withSpan("Settlement.settle"))
              : settlement.settle
            const attempts = makeAttempts({
              input,
              client,
              media,
              settings,
              // Sent when the caller named no cap, so the answer cannot outgrow the hold.
              sentCap: request.maxOutputTokens === undefined ? outputCap : undefined,
              coverPrompt: (promptTokens) =>
                Effect.suspend(() => {
                  if (promptTokens <= heldPrompt) return Effect.void
                  const extra = textCost(ratio, holdPrice(price), promptTokens - heldPrompt, 0)
                  heldPrompt = promptTokens
                  return Effect.asVoid(hold(extra))
                }),
              requestId: record?.requestId
            })
            const loop = {
              candidates,
              maxAttempts: Math.min(candidates.length, 1 + settings.retryTimes),
              deadline: started + settings.requestDeadlineMs,
              report: router.report,
              logFailed: settlement.logFailedAttempt
            }
            let handedOff = false

            const answer = Effect.gen(function* () {
              const firstHold = hold(textCost(ratio, holdPrice(price), heldPrompt, heldOutput))
              yield* tracing ? Effect.withSpan(firstHold, "QuotaLedger.hold") : firstHold
              if (!request.stream || endpoint !== undefined) {
                const accepted = yield* failover({ ...loop, attempt: tracing ? traced(attempts.json) : attempts.json })
                const { text, ...billed } = accepted.value
                settlement.update((meter) => ({ ...meter, ...billed, final: billed.usage !== undefined, status: 200 }))
                handedOff = true
                yield* settle(accepted.candidate, accepted.attempt)
                // The charge is committed before the answer leaves: a crash from here on gives nothing away.
                yield* settlement.durable
                return HttpServerResponse.text(text, {
                  contentType: "application/json",
                  headers: { "x-sluice-cost": costHeader(settlement.charged() ?? 0n) }
                })
              }
              const accepted = yield* failover({
                ...loop,
                attempt: tracing ? traced(attempts.stream) : attempts.stream
              })
              const head = accepted.value
              const bridge = {
                inbound: formatOf(input.inbound),
                wire: head.wire,
                passthrough: head.wire.name === input.inbound,
                meta: input.meta,
                jsonArray: input.jsonArrayStream === true,
                assemble: input.onAnswer !== undefined
              }
              // Billed at the final usage (or the upstream's end), durably, before the answer's end leaves.
              const onFinal = Effect.andThen(
                settle(accepted.candidate, accepted.attempt),
                Effect.map(settlement.durable, () =>
                  input.includeCost === true ? costUsd(settlement.charged() ?? 0n) : undefined)
              )
              const body = readableBody(
                bridgeBody(bridge, head.firstStep, head.first, head.next, settlement.absorb, onFinal),
                Scope.close(head.scope, Exit.void).pipe(
                  Effect.andThen(settle(accepted.candidate, accepted.attempt))
                ),
                yield* Effect.context<never>()
              )
              handedOff = true
              // The access-log line and the request metrics wait for the stream's settlement.
              record?.defer()
              const contentType = input.jsonArrayStream === true ? "application/json" : "text/event-stream"
              return HttpServerResponse.raw(body, { contentType, headers: sseHeaders })
            })

            // Nothing reached the caller (a failure, or the caller left): every hold back, the permit released.
            return yield* restore(answer).pipe(Effect.onExit(() =>
              handedOff ? Effect.void : settlement.abandon
            ))
          })
        )
      }) as (input: RelayInput) => Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError>

      return Relay.of({ run })
    })
  )
}

/**
 * The rate-limit subjects of a request: its token and its user (group defaults fill gaps).
 *
 * @category limits
 */
export const limitSubjects = (principal: Principal, groupLimits: Limits | undefined) => [
  { key: `token:${principal.tokenId}`, limits: principal.tokenLimits ?? {} },
  { key: `user:${principal.userId}`, limits: principal.userLimits ?? groupLimits ?? {} }
]
