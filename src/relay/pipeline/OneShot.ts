/**
 * What the relays of one-answer requests (embeddings, images, audio, rerank)
 * share: the billed pipeline (`BilledPipeline.ts`) with the accepted
 * answer billed from its usage or its own cost and answered as JSON; the
 * services and the price it runs on; and the one upstream JSON call with the
 * channel's timeouts and the vendor's error classified.
 *
 * @since 0.1.0
 */
import type { CallSigning } from "../../upstreams/auth/CallSigning.ts"
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import type { Usage } from "../../canonical/Usage.ts"
import type { Price } from "../../domain/Pricing.ts"
import { type GatewayError, ModelNotPriced, UpstreamFailed } from "../../errors/GatewayError.ts"
import { CurrentRequest, usageRequestId } from "../../observability/RequestRecord.ts"
import type { Principal } from "../../services/Auth.ts"
import type { Candidate, ChannelRouter } from "../../services/ChannelRouter.ts"
import type { GatewaySettings, Settings } from "../../services/GatewaySettings.ts"
import type { Ledger } from "../../billing/Ledger.ts"
import type { RateLimiter } from "../../services/RateLimiter.ts"
import {
  channelTimeouts,
  type ErrorClassifier,
  readJsonAnswer,
  type UpstreamClient
} from "../../upstreams/transport/UpstreamClient.ts"
import type { Catalog, Channel, Limits } from "../../storage/Catalog.ts"
import { type PipelineServices, pipelineServices, runBilled } from "./BilledPipeline.ts"

/** The services a one-answer relay runs on: the billed pipeline's. @category models */
export type OneShotServices = PipelineServices

/**
 * The services a one-answer relay runs on, taken from the context (a relay's
 * layer takes them once).
 *
 * @category services
 */
export const oneShotServices: Effect.Effect<
  OneShotServices,
  never,
  ChannelRouter | Ledger | RateLimiter | GatewaySettings
> = pipelineServices

/**
 * A model's price as a request is billed at: the catalog's price, the group
 * ratio (fixed-point ×10⁹, see `domain/Pricing.ts`) and the group's limits.
 *
 * @category models
 */
export interface Priced {
  readonly price: Price
  readonly ratio: bigint
  readonly limits: Limits | undefined
}

/**
 * The catalog's price of `model`, the ratio (fixed-point ×10⁹, 1 when the
 * group has none) and limits of `group`. Fails with `ModelNotPriced` when the
 * model has no price, or one `priced` does not accept (no price for its kind).
 *
 * @category billing
 */
export const priceFor = (
  catalog: typeof Catalog.Service,
  model: string,
  group: string,
  priced: (price: Price) => boolean
): Effect.Effect<Priced, ModelNotPriced> => {
  const snapshot = catalog.snapshot()
  const price = snapshot.prices.get(model)
  const groupOf = snapshot.groups.get(group)
  return price === undefined || !priced(price)
    ? Effect.fail(new ModelNotPriced({ model }))
    : Effect.succeed({ price, ratio: groupOf?.ratio ?? 1_000_000_000n, limits: groupOf?.limits })
}

/** One billed one-answer request, its candidates already chosen and priced. @category models */
export interface OneShotRequest<A> {
  readonly principal: Principal
  readonly groupLimits: Limits | undefined
  readonly model: string
  readonly price: Price
  /** The group ratio, fixed-point ×10⁹ (see `domain/Pricing.ts`). */
  readonly ratio: bigint
  /** The prompt-token estimate billed when the upstream reported none. */
  readonly promptTokens: number
  /** Epoch milliseconds the request started. */
  readonly started: number
  /** Quota units held before the first attempt. */
  readonly hold: bigint
  readonly candidates: ReadonlyArray<Candidate>
  readonly attempt: (candidate: Candidate) => Effect.Effect<A, UpstreamFailed>
  /** The usage the accepted answer bills. */
  readonly usageOf: (answer: A) => Usage
  /** The accepted answer's cost in quota units, when not priced by tokens (default the text cost of its usage). */
  readonly costOf?: ((answer: A) => bigint) | undefined
  readonly respond: (answer: A) => HttpServerResponse.HttpServerResponse
  /**
   * The usage-log request id (default the gateway-made id of the HTTP request, else a fresh one); a task keeps
   * it to log its final adjustment under it.
   */
  readonly requestId?: string | undefined
}

/**
 * Runs `request` through the billed pipeline (`BilledPipeline.ts`), its
 * accepted answer billed from `usageOf` (or `costOf`) and answered as JSON
 * with `x-sluice-cost`. Fails with the rate limiter's, the ledger's or the
 * last attempt's error; nothing is charged then.
 *
 * @category relay
 */
export const runOneShot = <A>(
  services: OneShotServices,
  request: OneShotRequest<A>
): Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError> =>
  Effect.flatMap(CurrentRequest, (record) => {
    let accepted: A | undefined
    const costOf = request.costOf
    return runBilled(services, {
      principal: request.principal,
      groupLimits: request.groupLimits,
      model: request.model,
      price: request.price,
      ratio: request.ratio,
      promptTokens: request.promptTokens,
      started: request.started,
      stream: false,
      // A request id the gateway made (the answer's `x-request-id`) is also the usage log's, as on the text
      // routes, so a caller (the console playground) can find its cost.
      requestId: request.requestId ?? usageRequestId(record),
      cost: costOf === undefined ? undefined : () => costOf(accepted as A),
      hold: request.hold,
      candidates: request.candidates,
      attempt: () => request.attempt,
      deliver: (chosen, context) => {
        accepted = chosen.value
        return context.answerJson(chosen, { usage: request.usageOf(chosen.value) }, request.respond(chosen.value))
      }
    })
  })

/** The largest JSON answer a one-answer call reads (images in `b64_json`, several to an answer, fit well). */
const MAX_JSON_ANSWER_BYTES = 256 * 1024 * 1024

/**
 * One upstream call whose 2xx answer is JSON: its text, parsed value and headers (names in lower case).
 * Fails with `UpstreamFailed`: a non-2xx status as `classify` reads the
 * vendor's error, or `bad-body` for a 2xx answer that is not JSON.
 *
 * @category upstream
 */
export const postForJson = (
  client: typeof UpstreamClient.Service,
  settings: Settings,
  channel: Channel,
  target: {
    readonly url: string
    readonly headers: Record<string, string>
    readonly signing?: CallSigning | undefined
  },
  body: Parameters<typeof UpstreamClient.Service.post>[2],
  classify: ErrorClassifier
): Effect.Effect<
  { readonly text: string; readonly json: unknown; readonly headers: Readonly<Record<string, string>> },
  UpstreamFailed
> =>
  Effect.gen(function* () {
    const response = yield* client.post(
      target.url,
      target.headers,
      body,
      channelTimeouts(channel, settings),
      target.signing
    )
    const answer = yield* readJsonAnswer(response, classify, channel.id, MAX_JSON_ANSWER_BYTES)
    return { ...answer, headers: response.headers }
  })
