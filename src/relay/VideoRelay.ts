/**
 * The relay of the video submit routes (`POST /v1/videos`, its remix, `POST
 * /v1/video/generations`): the billed sequence of one-answer requests
 * (`runOneShot`: permit → hold → failover → settle) where an attempt is
 * "submit the task upstream, read the upstream's task id, insert the task
 * row". Candidates are the router's, kept to channel types with a video wire.
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
import { Clock, Context, Effect, Layer } from "effect"
import type { HttpServerResponse } from "effect/http"
import { emptyUsage } from "../canonical/Usage.ts"
import type { VideoRequest } from "../canonical/Video.ts"
import { type Price, videoCost } from "../domain/Pricing.ts"
import { newVideoTaskId } from "../formats/videos/VideoFamilies.ts"
import { type GatewayError, InvalidRequest, ModelNotFound, NotFound, UpstreamFailed } from "../errors/GatewayError.ts"
import type { VideoCall, VideoWire } from "../formats/videos/Wires.ts"
import type { Principal } from "../services/Auth.ts"
import { type Candidate, ChannelRouter } from "../services/ChannelRouter.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"
import { Assets } from "../tasks/Assets.ts"
import { insertedTask, type Task, TaskStore } from "../tasks/TaskStore.ts"
import { UpstreamClient } from "../upstreams/transport/UpstreamClient.ts"
import { Catalog, type Limits, videoFamilyOf } from "../storage/Catalog.ts"
import { oneShotServices, priceFor, runOneShot } from "./OneShot.ts"
import { callVideoJson, videoWireOf } from "../tasks/VideoCalls.ts"

/** What a video route hands the relay. @category models */
export interface VideoSubmitInput {
  readonly request: VideoRequest
  /** Seconds billed when the request names none: the model family's default duration. */
  readonly defaultSeconds: number
  readonly principal: Principal
  /** The caller's answer for the task just made. */
  readonly respond: (task: Task) => HttpServerResponse.HttpServerResponse
}

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
}>()("sluice/relay/VideoRelay") {
  /** Needs the one-shot relay's services, the `TaskStore` and `Assets` (media references). */
  static readonly layer = Layer.effect(
    VideoRelay,
    Effect.gen(function* () {
      const router = yield* ChannelRouter
      const client = yield* UpstreamClient
      const settings = yield* GatewaySettings
      const catalog = yield* Catalog
      const store = yield* TaskStore
      const assets = yield* Assets
      const services = yield* oneShotServices

      /** The price of `model` for videos, or `ModelNotPriced`. */
      const priceOf = (model: string, group: string) =>
        priceFor(catalog, model, group, (price: Price) => price.free || price.perSecond !== undefined)

      /** The billed sequence around attempts that each make `call(candidate, wire)` and insert the task. */
      const run = (
        input: VideoSubmitInput,
        request: VideoRequest,
        candidates: ReadonlyArray<Candidate>,
        billed: { readonly price: Price; readonly ratio: bigint; readonly limits: Limits | undefined },
        call: (candidate: Candidate, wire: VideoWire) => VideoCall,
        remixOf: string | undefined
      ) => {
        const { principal } = input
        const seconds = request.seconds ?? input.defaultSeconds
        const hold = videoCost(billed.ratio, billed.price, seconds)
        const requestId = crypto.randomUUID().replaceAll("-", "")
        const attempt = (candidate: Candidate): Effect.Effect<Task, UpstreamFailed> =>
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
            const now = yield* Clock.currentTimeMillis
            const task = {
              publicId: newVideoTaskId(videoFamilyOf(catalog.snapshot(), request.model)),
              kind: "video" as const,
              userId: principal.userId,
              tokenId: principal.tokenId,
              channelId: candidate.channel.id,
              keyPosition: candidate.key.position,
              upstreamId: decoded.upstreamId,
              model: request.model,
              upstreamModel: candidate.upstreamModel,
              // The request as the caller gave it (asset refs unresolved), for the object and for a remix; an
              // inline image (up to megabytes of data URI) is not kept.
              request: {
                ...input.request,
                references: input.request.references.map((reference) =>
                  reference.ref.startsWith("data:") ? { ...reference, ref: "data:" } : reference
                ),
                seconds,
                ...(remixOf === undefined ? {} : { remixOf })
              },
              status: "queued" as const,
              requestId,
              billing: {
                ratio: String(billed.ratio),
                perSecond: billed.price.perSecond === undefined ? undefined : String(billed.price.perSecond),
                free: billed.price.free,
                seconds
              },
              quotaCharged: hold,
              nextPollAt: now + settings.taskPollMillis,
              deadlineAt: now + settings.taskDeadlineMillis
            }
            const id = yield* store.insert(task)
            return insertedTask(task, id, now)
          })
        return Effect.flatMap(Clock.currentTimeMillis, (started) =>
          runOneShot(services, {
            principal,
            groupLimits: billed.limits,
            model: request.model,
            price: billed.price,
            ratio: billed.ratio,
            promptTokens: 0,
            started,
            hold,
            candidates,
            attempt,
            usageOf: () => emptyUsage,
            costOf: () => hold,
            respond: input.respond,
            requestId
          }))
      }

      const submit = Effect.fnUntraced(function* (input: VideoSubmitInput) {
        const { principal } = input
        const model = input.request.model
        const routed = yield* router.candidates(principal, model)
        const candidates = routed.filter((candidate) => videoWireOf(candidate.channel) !== undefined)
        if (candidates.length === 0) return yield* new ModelNotFound({ model, status: settings.unknownModelStatus })
        const billed = yield* priceOf(model, principal.group)
        const request = yield* assets.resolveRequest(input.request, principal.userId)
        return yield* run(
          input,
          request,
          candidates,
          billed,
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
        const channel = catalog.snapshot().channels.get(original.channelId)
        const wire = channel === undefined ? undefined : videoWireOf(channel)
        const key = channel?.keys.find((candidate) => candidate.position === original.keyPosition) ??
          channel?.keys.find((candidate) => candidate.enabled)
        if (channel === undefined || wire === undefined || key === undefined) {
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
        const billed = yield* priceOf(original.model, principal.group)
        const resolved = yield* assets.resolveRequest(request, principal.userId)
        const upstreamId = original.upstreamId
        return yield* run(
          { ...input, request },
          resolved,
          [{ channel, key, upstreamModel: original.upstreamModel }],
          billed,
          () => remixCall(upstreamId, resolved, original.upstreamModel),
          original.publicId
        )
      }) as VideoRelay["Service"]["remix"]

      return VideoRelay.of({ submit, remix })
    })
  )
}
