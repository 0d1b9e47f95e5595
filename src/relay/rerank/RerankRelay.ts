/**
 * The relay of the rerank routes: the one-answer billed sequence
 * (`runOneShot`: limits → hold → `Failover` → settlement) with a rerank
 * attempt, on the channel types `upstreams/RerankAdapter.ts` lists (cohere,
 * jina). Billed `per_search` × search units: held at the most the documents
 * can cost (`searchUnitsBound`), settled at the units the vendor billed
 * (Cohere's `meta.billed_units.search_units`), else one per 100 documents; a
 * model priced by `input` tokens instead is billed the tokens the vendor
 * counted (Jina's `usage.total_tokens`), else the hold's estimate. A failed
 * call costs nothing.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Layer } from "effect"
import { HttpServerResponse } from "effect/http"
import type { Usage } from "../../canonical/Usage.ts"
import { utf8Length } from "../../canonical/Estimate.ts"
import { type Price, searchCost, textCost } from "../../domain/Pricing.ts"
import { type GatewayError, UpstreamFailed } from "../../errors/GatewayError.ts"
import {
  decodeRerankAnswer,
  encodeRerankAnswer,
  encodeRerankRequest,
  rerankErrorClassifier,
  type RerankRequest,
  searchUnitsBound,
  searchUnitsMeasured
} from "../../formats/rerank/Codec.ts"
import type { Principal } from "../../services/Auth.ts"
import type { Candidate } from "../../services/ChannelRouter.ts"
import { GatewaySettings } from "../../services/GatewaySettings.ts"
import { UpstreamClient } from "../../upstreams/transport/UpstreamClient.ts"
import { Catalog } from "../../storage/Catalog.ts"
import { rerankAdapters } from "../../upstreams/RerankAdapter.ts"
import { oneShotServices, postForJson, priceFor, runOneShot } from "../pipeline/OneShot.ts"
import { servingCandidates } from "../pipeline/Serving.ts"

/** What a rerank route hands the relay. @category models */
export interface RerankRelayInput {
  readonly request: RerankRequest
  readonly principal: Principal
}

/** An accepted rerank: the caller's JSON and what it bills. */
interface RerankResult {
  readonly body: Record<string, unknown>
  readonly usage: Usage
  readonly cost: bigint
}

const isRerankPriced = (price: Price): boolean =>
  price.free || price.perSearch !== undefined || price.input !== undefined

/** The prompt tokens of `request` at most: UTF-8 bytes / 2 of the query once per document and every document. */
const tokensBound = (request: RerankRequest): number => {
  const query = Math.ceil(utf8Length(request.query) / 2)
  return request.documents.reduce(
    (sum, document) =>
      sum + query + Math.ceil(utf8Length(typeof document === "string" ? document : JSON.stringify(document)) / 2),
    0
  )
}

/** @category services */
export class RerankRelay extends Context.Service<RerankRelay, {
  /**
   * Reranks `input.request` on the first candidate that answers; the answer
   * is Cohere's v2 JSON. Fails with `ModelNotFound` when no candidate
   * reranks, `ModelNotPriced` for a model with neither `per_search`, `input`
   * nor `free`, and the relay's usual quota, rate-limit and upstream failures.
   */
  readonly run: (input: RerankRelayInput) => Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError>
}>()("sluice/relay/rerank/RerankRelay") {
  /** Needs the one-shot services, `UpstreamClient`, `GatewaySettings` and `Catalog`. */
  static readonly layer = Layer.effect(
    RerankRelay,
    Effect.gen(function* () {
      const client = yield* UpstreamClient
      const settings = yield* GatewaySettings
      const catalog = yield* Catalog
      const services = yield* oneShotServices

      const run = (input: RerankRelayInput): Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError> =>
        Effect.gen(function* () {
          const { request, principal } = input
          const started = yield* Clock.currentTimeMillis
          const candidates = yield* servingCandidates(
            services,
            principal,
            request.model,
            (candidate) => rerankAdapters[candidate.channel.type] !== undefined
          )
          const { price, ratio, limits } = yield* priceFor(catalog, request.model, principal.group, isRerankPriced)
          const bySearch = price.free || price.perSearch !== undefined
          const boundTokens = tokensBound(request)
          const hold = bySearch
            ? searchCost(ratio, price, searchUnitsBound(request))
            : textCost(ratio, price, boundTokens, 0)
          const id = crypto.randomUUID()

          const attempt = (candidate: Candidate): Effect.Effect<RerankResult, UpstreamFailed> =>
            Effect.gen(function* () {
              const adapter = rerankAdapters[candidate.channel.type]!
              const target = adapter.target(candidate.channel, candidate.key.key)
              const body = encodeRerankRequest(adapter.wire, request, candidate.upstreamModel)
              for (const param of candidate.channel.settings.strip_params ?? []) delete body[param]
              const { json } = yield* postForJson(
                client,
                settings,
                candidate.channel,
                target,
                JSON.stringify(body),
                rerankErrorClassifier(adapter.wire)
              )
              const answer = decodeRerankAnswer(adapter.wire, json, request.documents.length)
              if (answer instanceof UpstreamFailed) return yield* answer
              const units = answer.searchUnits ?? searchUnitsMeasured(request)
              const tokens = answer.tokens ?? boundTokens
              return {
                body: encodeRerankAnswer(request, answer, units, id),
                usage: { inputTokens: answer.tokens ?? 0, outputTokens: 0 },
                cost: bySearch ? searchCost(ratio, price, units) : textCost(ratio, price, tokens, 0)
              }
            })

          return yield* runOneShot(services, {
            principal,
            groupLimits: limits,
            model: request.model,
            price,
            ratio,
            promptTokens: 0,
            started,
            hold,
            candidates,
            attempt,
            usageOf: (answer) => answer.usage,
            costOf: (answer) => answer.cost,
            respond: (answer) => HttpServerResponse.jsonUnsafe(answer.body)
          })
        })

      return RerankRelay.of({ run })
    })
  )
}
