/**
 * The relay of the video submit routes (`POST /v1/videos`, its remix, `POST
 * /v1/video/generations`): the task submit (`relay/pipeline/TaskSubmit.ts`: permit → hold →
 * failover → settle) where an attempt is "submit the task upstream, read the
 * upstream's task id, insert the task row". Candidates are the router's, kept to channel types with a video wire.
 * The hold, charged in full when the upstream accepts, is the pre-charge:
 * ceil(ratio × seconds × `per_second` × 10⁶) quota units, `seconds` the
 * requested duration or the family's default (docs/ARCHITECTURE.md, "Outer contract");
 * the poller refunds it if the task fails and re-prices it on the actual
 * duration. A model with neither `per_second` nor `free` is refused
 * (`ModelNotPriced`), as text models without a price are. Media references are
 * resolved (`asset://` to a URL) before the first attempt.
 *
 * A remix runs on the original task's channel and key (spec "Video:
 * OpenAI-style routes"): the original must be the caller's own task (else
 * `NotFound`, 404 `task_not_exist`), and the body's `model` the original's
 * (else 400 naming `model`, before any hold or vendor call).
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
import type { HttpServerResponse } from "effect/http"
import type { VideoRequest } from "../../canonical/Video.ts"
import { isVideoPriced, videoCost } from "../../domain/Pricing.ts"
import { newVideoTaskId } from "../../formats/videos/VideoFamilies.ts"
import { type GatewayError, InvalidRequest, NotFound, UpstreamFailed } from "../../errors/GatewayError.ts"
import type { VideoCall, VideoWire } from "../../formats/videos/Wires.ts"
import type { Principal } from "../../services/Auth.ts"
import type { Candidate } from "../../services/ChannelRouter.ts"
import { Assets } from "../../tasks/Assets.ts"
import type { Task } from "../../tasks/TaskStore.ts"
import { UpstreamClient } from "../../upstreams/transport/UpstreamClient.ts"
import { Catalog, videoFamilyOf } from "../../storage/Catalog.ts"
import { type Priced, priceFor } from "../pipeline/OneShot.ts"
import { homeOf, perSecondBilling, submitTask, taskSubmitServices } from "../pipeline/TaskSubmit.ts"
import { servingCandidates } from "../pipeline/Serving.ts"
import { callVideoJson, videoWireOf } from "../../tasks/VideoCalls.ts"

/** What a video route hands the relay. @category models */
export interface VideoSubmitInput {
  readonly request: VideoRequest
  /** Seconds billed when the request names none: the model family's default duration. */
  readonly defaultSeconds: number
  readonly principal: Principal
  /** The caller's answer for the task just made. */
  readonly respond: (task: Task) => HttpServerResponse.HttpServerResponse
}

/** Whether `candidate`'s channel type has a video wire. */
const runsVideo = (candidate: Candidate): boolean => videoWireOf(candidate.channel) !== undefined

/**
 * The request a video task keeps, as the caller gave it (asset refs
 * unresolved), for the object and for a remix: an inline image (up to
 * megabytes of data URI) is not kept; `seconds` as billed; `remixOf` the
 * original's public id.
 */
const keptRequest = (request: VideoRequest, seconds: number, remixOf: string | undefined) => ({
  ...request,
  references: request.references.map((reference) =>
    reference.ref.startsWith("data:") ? { ...reference, ref: "data:" } : reference
  ),
  seconds,
  ...(remixOf === undefined ? {} : { remixOf })
})

/** @category services */
export class VideoRelay extends Context.Service<VideoRelay, {
  /**
   * Submits a video task on the first candidate that accepts it; the answer
   * is `input.respond(task)`. Fails with `ModelNotFound` (no video channel
   * serves the model), `ModelNotPriced`, `InvalidRequest` (a media
   * reference), and the relay's quota, rate-limit and upstream failures.
   */
  readonly submit: (input: VideoSubmitInput) => Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError>
  /**
   * Remixes the caller's task `originalId` on its channel. Fails with
   * `NotFound` (task) when it is not the caller's or does not exist, and as
   * `submit` does.
   */
  readonly remix: (
    originalId: string,
    input: VideoSubmitInput
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError>
}>()("sluice/relay/videos/VideoRelay") {
  /** Needs the task submit's services (`relay/pipeline/TaskSubmit.ts`), the `Catalog`, the `UpstreamClient` and `Assets` (media references). */
  static readonly layer = Layer.effect(
    VideoRelay,
    Effect.gen(function* () {
      const services = yield* taskSubmitServices
      const { settings, store } = services
      const client = yield* UpstreamClient
      const catalog = yield* Catalog
      const assets = yield* Assets

      /** The task submit whose attempts each make `call(candidate, wire)` and insert the task. */
      const run = (
        input: VideoSubmitInput,
        request: VideoRequest,
        candidates: ReadonlyArray<Candidate>,
        priced: Priced,
        call: (candidate: Candidate, wire: VideoWire) => VideoCall,
        remixOf: string | undefined
      ) => {
        const seconds = request.seconds ?? input.defaultSeconds
        return submitTask(services, {
          principal: input.principal,
          model: request.model,
          priced,
          hold: videoCost(priced.ratio, priced.price, seconds),
          candidates,
          attempt: (candidate, insert) =>
            Effect.gen(function* () {
              const wire = videoWireOf(candidate.channel)!
              const submitCall = call(candidate, wire)
              const json = yield* callVideoJson(
                client,
                settings,
                { channel: candidate.channel, key: candidate.key.key },
                wire,
                submitCall
              )
              const decoded = wire.decodeSubmit(json, submitCall)
              if (decoded instanceof UpstreamFailed) return yield* decoded
              return yield* insert(candidate, {
                publicId: newVideoTaskId(videoFamilyOf(catalog.snapshot(), request.model)),
                kind: "video",
                upstreamId: decoded.upstreamId,
                request: keptRequest(input.request, seconds, remixOf),
                status: "queued",
                billing: perSecondBilling(priced, seconds)
              })
            }),
          respond: input.respond
        })
      }

      const submit = Effect.fnUntraced(function* (input: VideoSubmitInput) {
        const { principal } = input
        const model = input.request.model
        const candidates = yield* servingCandidates(services, principal, model, runsVideo)
        const priced = yield* priceFor(catalog, model, principal.group, isVideoPriced)
        const request = yield* assets.resolveRequest(input.request, principal.userId)
        return yield* run(
          input,
          request,
          candidates,
          priced,
          (candidate, wire) => wire.submit(request, candidate.upstreamModel),
          undefined
        )
      }) as VideoRelay["Service"]["submit"]

      const remix = Effect.fnUntraced(function* (originalId: string, input: VideoSubmitInput) {
        const { principal } = input
        const original = yield* store.find(originalId, principal.userId)
        if (original.kind !== "video" || original.upstreamId === null) {
          return yield* new NotFound({ what: "task", id: originalId })
        }
        if (input.request.model !== original.model) {
          // A remix runs the original's model on its channel; another model named would silently not be used.
          return yield* new InvalidRequest({
            message: `model must be the original task's model, ${JSON.stringify(original.model)}, to remix it.`,
            param: "model"
          })
        }
        const home = homeOf(catalog, original)
        const wire = home === undefined ? undefined : videoWireOf(home.channel)
        if (home === undefined || wire === undefined) {
          return yield* new UpstreamFailed({
            kind: "server",
            status: 503,
            message: "The original task's channel is no longer configured."
          })
        }
        const remixCall = wire.remix
        if (remixCall === undefined) {
          return yield* new InvalidRequest({
            message: "The original task's channel cannot remix videos.",
            param: "video_id"
          })
        }
        const originalSeconds = typeof original.request.seconds === "number" ? original.request.seconds : undefined
        const request: VideoRequest = {
          ...input.request,
          model: original.model,
          seconds: input.request.seconds ?? originalSeconds
        }
        const priced = yield* priceFor(catalog, original.model, principal.group, isVideoPriced)
        const resolved = yield* assets.resolveRequest(request, principal.userId)
        const upstreamId = original.upstreamId
        return yield* run(
          { ...input, request },
          resolved,
          [home],
          priced,
          () => remixCall(upstreamId, resolved, original.upstreamModel),
          original.publicId
        )
      }) as VideoRelay["Service"]["remix"]

      return VideoRelay.of({ submit, remix })
    })
  )
}
