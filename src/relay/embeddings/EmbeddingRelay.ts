/**
 * The relay of the embedding routes: the same parts as the text relay
 * (docs/ARCHITECTURE.md, "The billed pipeline") with an embedding attempt in place of a
 * text one. Candidates (ChannelRouter, kept to channel types that can embed,
 * and to openai channels for token-array inputs) → limits (RateLimiter) →
 * hold (QuotaLedger, the whole batch's prompt upper bound) → `Failover` over
 * `EmbeddingAttempt`s → `Settlement` (cost = ceil(ratio × input tokens ×
 * input price) from the upstream's usage, or the prompt estimate when it
 * reported none; the usage-log row; permit release). A failed request costs
 * nothing.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Layer } from "effect"
import { HttpServerResponse } from "effect/http"
import { type EmbeddingRequest, embeddingTokensTypical, embeddingTokensUpperBound } from "../../canonical/Embedding.ts"
import { type Price, textCost } from "../../domain/Pricing.ts"
import { type GatewayError, InvalidRequest } from "../../errors/GatewayError.ts"
import type { EmbeddingInbound } from "../../formats/embeddings/Wires.ts"
import type { Principal } from "../../services/Auth.ts"
import { GatewaySettings } from "../../services/GatewaySettings.ts"
import { UpstreamClient } from "../../upstreams/transport/UpstreamClient.ts"
import { Catalog } from "../../storage/Catalog.ts"
import { embeddingWireOf, makeEmbeddingAttempt } from "./EmbeddingAttempt.ts"
import { oneShotServices, priceFor, runOneShot } from "../pipeline/OneShot.ts"
import { servingCandidates } from "../pipeline/Serving.ts"

/** What an embedding route hands the relay. @category models */
export interface EmbeddingRelayInput {
  readonly inbound: EmbeddingInbound
  /** The caller's parsed JSON body (forwarded as is, model mapped, on same-format channels). */
  readonly raw: Record<string, unknown>
  readonly request: EmbeddingRequest
  readonly principal: Principal
}

/** @category services */
export class EmbeddingRelay extends Context.Service<EmbeddingRelay, {
  /**
   * Embeds `input.request` on the first candidate that answers; the answer is
   * JSON in the caller's format. Fails with `ModelNotFound` when no candidate
   * can embed, `InvalidRequest` (`input`) for token arrays with no openai
   * candidate, `ModelNotPriced` for a model with neither an input price nor
   * `free`, and the relay's usual quota, rate-limit and upstream failures.
   */
  readonly run: (input: EmbeddingRelayInput) => Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError>
}>()("sluice/relay/embeddings/EmbeddingRelay") {
  /** Needs the text relay's services: ChannelRouter, QuotaLedger, UsageLog, UpstreamClient, settings, limits, Catalog. */
  static readonly layer = Layer.effect(
    EmbeddingRelay,
    Effect.gen(function* () {
      const client = yield* UpstreamClient
      const settings = yield* GatewaySettings
      const catalog = yield* Catalog
      const services = yield* oneShotServices

      const run = Effect.fnUntraced(function* (input: EmbeddingRelayInput) {
        const { principal, request } = input
        const started = yield* Clock.currentTimeMillis
        const embedding = yield* servingCandidates(
          services,
          principal,
          request.model,
          (candidate) => embeddingWireOf(candidate) !== undefined
        )
        const tokens = request.inputs.some((one) => one.type === "tokens")
        const candidates = tokens
          ? embedding.filter((candidate) => embeddingWireOf(candidate)!.acceptsTokens)
          : embedding
        if (candidates.length === 0) {
          return yield* new InvalidRequest({
            message: `Token-array inputs can only be embedded on openai channels; model "${request.model}" has none.`,
            param: "input"
          })
        }
        const { price, ratio, limits } = yield* priceFor(
          catalog,
          request.model,
          principal.group,
          (price: Price) => price.free || price.input !== undefined
        )
        const promptTokens = embeddingTokensTypical(request)
        const attempt = makeEmbeddingAttempt({
          inbound: input.inbound,
          raw: input.raw,
          request,
          promptTokens,
          client,
          settings
        })

        return yield* runOneShot(services, {
          principal,
          groupLimits: limits,
          model: request.model,
          price,
          ratio,
          promptTokens,
          started,
          // One hold for the whole batch.
          hold: textCost(ratio, price, embeddingTokensUpperBound(request), 0),
          candidates,
          attempt,
          usageOf: (answer) => answer.usage,
          respond: (answer) => HttpServerResponse.text(answer.text, { contentType: "application/json" })
        })
      }) as (input: EmbeddingRelayInput) => Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError>

      return EmbeddingRelay.of({ run })
    })
  )
}
