/**
 * The relay every text route shares: candidates (ChannelRouter), the price and
 * the output cap, then the billed pipeline (`relay/pipeline/BilledPipeline.ts`: limits, hold,
 * `Failover` over `Attempts`, settlement) with the answer as JSON or through
 * the `StreamBridge`, billed at its final usage before its end leaves.
 * Format knowledge stays in `formats/`.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Exit, Layer, Scope } from "effect"
import { HttpServerResponse } from "effect/http"
import { promptTokensTypical, promptTokensUpperBound } from "../../canonical/Estimate.ts"
import { costUsd } from "../../billing/Meter.ts"
import { holdPrice, isTextPriced, textCost } from "../../domain/Pricing.ts"
import { type GatewayError, InvalidRequest, LedgerUnavailable, ModelNotPriced } from "../../errors/GatewayError.ts"
import { sameFormatWire } from "../../formats/Format.ts"
import { formatOf } from "../../formats/Formats.ts"
import { streamBody } from "../../http/ReadableBody.ts"
import type { Candidate } from "../../services/ChannelRouter.ts"
import { MediaFetcher } from "../../upstreams/transport/MediaFetcher.ts"
import { UpstreamClient } from "../../upstreams/transport/UpstreamClient.ts"
import { Catalog } from "../../storage/Catalog.ts"
import { CurrentMetrics } from "../../observability/Metrics.ts"
import { TracingEnabled } from "../../observability/Tracing.ts"
import { type JsonAnswer, makeAttempts, type StreamHead } from "../pipeline/Attempts.ts"
import { runBilled } from "../pipeline/BilledPipeline.ts"
import { oneShotServices } from "../pipeline/OneShot.ts"
import { traced } from "../pipeline/Traced.ts"
import type { RelayInput } from "./RelayInput.ts"
import { bridgeBody } from "../pipeline/StreamBridge.ts"

export type { RelayInput, SideEndpoint } from "./RelayInput.ts"
export { limitSubjects } from "../pipeline/BilledPipeline.ts"

const sseHeaders = { "cache-control": "no-cache", "x-accel-buffering": "no" }

/** @category services */
export class Relay extends Context.Service<Relay, {
  /** Runs the pipeline; the answer is a complete response or an SSE (or JSON array) stream. */
  readonly run: (input: RelayInput) => Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError>
}>()("sluice/relay/text/Relay") {
  static readonly layer = Layer.effect(
    Relay,
    Effect.gen(function* () {
      const services = yield* oneShotServices
      const { router, settings } = services
      const client = yield* UpstreamClient
      const media = yield* MediaFetcher
      const catalog = yield* Catalog
      const metrics = yield* CurrentMetrics
      const tracing = yield* TracingEnabled
      const countRejection = Effect.sync(() => metrics?.rateLimited())
      const onRejected = () => countRejection

      const run = Effect.fnUntraced(function* (input: RelayInput) {
        const { principal, request, endpoint } = input
        const started = yield* Clock.currentTimeMillis
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

        return yield* runBilled(services, {
          principal,
          groupLimits: group?.limits,
          model: request.model,
          price,
          ratio,
          promptTokens: promptTokensTypical(request),
          outputCap: heldOutput,
          started,
          stream: request.stream && endpoint === undefined,
          requestId: input.requestId,
          record,
          onAnswer: input.onAnswer,
          hold: textCost(ratio, holdPrice(price), heldPrompt, heldOutput),
          candidates,
          traced: tracing,
          onRejected: metrics === undefined ? undefined : onRejected,
          attempt: (context) => {
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
                  return context.hold(extra)
                }),
              requestId: record?.requestId
            })
            const attempt: (candidate: Candidate) => Effect.Effect<JsonAnswer | StreamHead, GatewayError> =
              !request.stream || endpoint !== undefined ? attempts.json : attempts.stream
            return tracing ? traced(attempt) : attempt
          },
          deliver: (accepted, context) => {
            const value = accepted.value
            if (!("scope" in value)) {
              const { text, ...reported } = value
              return context.answerJson(
                accepted,
                reported,
                HttpServerResponse.text(text, { contentType: "application/json" })
              )
            }
            const bridge = {
              inbound: formatOf(input.inbound),
              wire: value.wire,
              passthrough: sameFormatWire(value.wire, input.inbound) !== undefined,
              meta: input.meta,
              jsonArray: input.jsonArrayStream === true,
              assemble: input.onAnswer !== undefined
            }
            const { settlement } = context
            // Billed at the final usage (or the upstream's end), durably, before the answer's end leaves; a bill
            // the ledger could not make durable withholds the end (the caller gets the ledger's error event).
            const onFinal = Effect.andThen(
              context.settle(accepted.candidate, accepted.attempt),
              Effect.flatMap(
                settlement.durable,
                (durable) =>
                  durable
                    ? Effect.succeed(input.includeCost === true ? costUsd(settlement.charged() ?? 0n) : undefined)
                    : Effect.fail(new LedgerUnavailable())
              )
            )
            return Effect.gen(function* () {
              const body = streamBody(
                bridgeBody(bridge, value.firstStep, value.first, value.next, settlement.absorb, onFinal),
                Scope.close(value.scope, Exit.void).pipe(
                  Effect.andThen(context.settle(accepted.candidate, accepted.attempt))
                ),
                yield* Effect.context<never>()
              )
              context.handOff()
              // The access-log line and the request metrics wait for the stream's settlement.
              record?.defer()
              const contentType = input.jsonArrayStream === true ? "application/json" : "text/event-stream"
              return HttpServerResponse.raw(body, { contentType, headers: sseHeaders })
            })
          }
        })
      }) as (input: RelayInput) => Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError>

      return Relay.of({ run })
    })
  )
}
