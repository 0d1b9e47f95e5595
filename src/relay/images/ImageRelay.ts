/**
 * The relay of the image routes: the same parts as the text and embedding
 * relays (docs/ARCHITECTURE.md, "The billed pipeline") with an image attempt. Candidates
 * (ChannelRouter, kept to channel types that make images) → limits
 * (RateLimiter) → hold (QuotaLedger: ceil(ratio × n × per_image) quota units,
 * the images asked for) → `Failover` over image attempts (one per candidate
 * until one is accepted) → `Settlement` (the same cost rule on the images the
 * upstream actually returned; the usage-log row; permit release). A failed
 * request costs nothing. A caller who asked for `url` from an upstream that
 * answered Base64 gets a gateway URL (`ImageContents`), never a `data:` URI.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Layer } from "effect"
import { HttpServerResponse } from "effect/http"
import type { GeneratedImage, ImageRequest, ImageResponse } from "../../canonical/Image.ts"
import { emptyUsage } from "../../canonical/Usage.ts"
import type { ImageFamily } from "../../formats/images/ImageFamilies.ts"
import { imageCost, isImagePriced } from "../../domain/Pricing.ts"
import { type GatewayError, UpstreamFailed } from "../../errors/GatewayError.ts"
import { encodeImagesAnswer, type ImageCallBody, type ImageWire, imageWires } from "../../formats/images/Wires.ts"
import type { Principal } from "../../services/Auth.ts"
import type { Candidate } from "../../services/ChannelRouter.ts"
import { GatewaySettings, type Settings } from "../../services/GatewaySettings.ts"
import { encodeForm, UpstreamClient } from "../../upstreams/transport/UpstreamClient.ts"
import { ImageContents } from "../../tasks/ImageContents.ts"
import { Catalog } from "../../storage/Catalog.ts"
import { imageAdapters } from "../../upstreams/ImageAdapter.ts"
import { oneShotServices, postForJson, priceFor, runOneShot } from "../pipeline/OneShot.ts"
import { servingCandidates } from "../pipeline/Serving.ts"

/** Upstream calls of one attempt in flight at once (generate-content makes one image per call). */
const CALLS_IN_FLIGHT = 4

/**
 * What an image route hands the relay: the decoded request, its model's
 * family, the caller, and the gateway's address as the caller reaches it
 * (`contentBase`, no trailing `/`): where Base64 images are served when the
 * caller asked for a `url` (`ImageContents`); without it such images stay
 * `data:` URIs.
 *
 * @category models
 */
export interface ImageRelayInput {
  readonly request: ImageRequest
  readonly family: ImageFamily | undefined
  readonly principal: Principal
  readonly contentBase?: string | undefined
}

/** The wire of `candidate`'s channel, or `undefined` when its type cannot make images. @category attempts */
export const imageWireOf = (candidate: Candidate): ImageWire | undefined => {
  const adapter = imageAdapters[candidate.channel.type]
  return adapter === undefined ? undefined : imageWires[adapter.wire]
}

/** A call body as bytes or text, and its content type. */
const encoded = (call: ImageCallBody): Effect.Effect<{ body: string | Uint8Array; contentType: string }> =>
  call._tag === "json"
    ? Effect.succeed({ body: JSON.stringify(call.body), contentType: "application/json" })
    : encodeForm(call.form)

/**
 * One attempt of `request` on a candidate: every call the wire needs, their
 * images in order (never more than `request.n`). Fails with the upstream's
 * `UpstreamFailed`. The async image task runs it in the background too.
 *
 * @category attempts
 */
export const makeImageAttempt = (
  request: ImageRequest,
  family: ImageFamily | undefined,
  client: typeof UpstreamClient.Service,
  settings: Settings
) =>
(candidate: Candidate): Effect.Effect<ImageResponse, UpstreamFailed> =>
  Effect.gen(function* () {
    const { channel } = candidate
    const wire = imageWireOf(candidate)!
    const calls = wire.encodeCalls(request, candidate.upstreamModel, family)
    const one = (call: ImageCallBody) =>
      Effect.gen(function* () {
        if (call._tag === "json") { for (const param of channel.settings.strip_params ?? []) delete call.body[param] }
        const { body, contentType } = yield* encoded(call)
        const target = imageAdapters[channel.type]!.target(
          channel,
          candidate.key.key,
          candidate.upstreamModel,
          request.edit !== undefined,
          call._tag === "form"
        )
        const { json } = yield* postForJson(
          client,
          settings,
          channel,
          { url: target.url, headers: { ...target.headers, "content-type": contentType } },
          body,
          wire.classifyError
        )
        const decoded = wire.decodeResponse(json)
        return decoded instanceof UpstreamFailed ? yield* decoded : decoded
      })
    const answers = yield* Effect.forEach(calls, one, { concurrency: CALLS_IN_FLIGHT })
    const images: Array<GeneratedImage> = answers.flatMap((answer) => answer.images)
    // Never more than asked for (a vendor's group answer may run over), so the bill never passes the hold.
    return { images: images.slice(0, request.n) }
  })

/** @category services */
export class ImageRelay extends Context.Service<ImageRelay, {
  /**
   * Makes `input.request`'s images on the first candidate that answers; the
   * answer is OpenAI's images JSON. Fails with `ModelNotFound` when no
   * candidate can make images, `ModelNotPriced` for a model with neither
   * `per_image` nor `free`, and the relay's usual quota, rate-limit and
   * upstream failures.
   */
  readonly run: (input: ImageRelayInput) => Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError>
}>()("sluice/relay/images/ImageRelay") {
  /** Needs the text relay's services: ChannelRouter, QuotaLedger, UsageLog, UpstreamClient, settings, limits, Catalog. */
  static readonly layer = Layer.effect(
    ImageRelay,
    Effect.gen(function* () {
      const client = yield* UpstreamClient
      const settings = yield* GatewaySettings
      const catalog = yield* Catalog
      const services = yield* oneShotServices
      const contents = yield* ImageContents

      const run = Effect.fnUntraced(function* (input: ImageRelayInput) {
        const { principal, request } = input
        // The answer's `created` is read when it is encoded, outside any effect: from the request's clock.
        const clock = yield* Clock.Clock
        const started = clock.currentTimeMillisUnsafe()
        const candidates = yield* servingCandidates(
          services,
          principal,
          request.model,
          (candidate) => imageWireOf(candidate) !== undefined
        )
        const { price, ratio, limits } = yield* priceFor(catalog, request.model, principal.group, isImagePriced)
        return yield* runOneShot(services, {
          principal,
          groupLimits: limits,
          model: request.model,
          price,
          ratio,
          promptTokens: 0,
          started,
          // The hold for every image asked for.
          hold: imageCost(ratio, price, request.n),
          candidates,
          // A caller who asked for a URL gets one: Base64 images are kept and served by the gateway.
          attempt: (candidate) =>
            makeImageAttempt(request, input.family, client, settings)(candidate).pipe(
              Effect.flatMap((answer) =>
                request.b64 || input.contentBase === undefined || answer.images.every((image) => "url" in image)
                  ? Effect.succeed(answer)
                  : Effect.map(
                    contents.keep(principal.userId, answer.images, input.contentBase!),
                    (images): ImageResponse => ({ ...answer, images })
                  )
              )
            ),
          usageOf: () => emptyUsage,
          costOf: (answer) => imageCost(ratio, price, answer.images.length),
          respond: (answer) =>
            HttpServerResponse.jsonUnsafe(
              encodeImagesAnswer(answer, request.b64, Math.floor(clock.currentTimeMillisUnsafe() / 1000))
            )
        })
      }) as (input: ImageRelayInput) => Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError>

      return ImageRelay.of({ run })
    })
  )
}
