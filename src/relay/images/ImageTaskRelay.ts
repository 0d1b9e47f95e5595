/**
 * The async image task (`POST /v1/images/generations/async`): the request is
 * decoded and priced as the sync route's, charged at submit through the
 * task submit (`relay/pipeline/TaskSubmit.ts`; hold = ceil(ratio × n × `per_image` × 10⁶),
 * the attempt inserting the task row), and answered with the task's public id at
 * once. The generation itself runs in the background: the image relay's own
 * attempt (`makeImageAttempt`) with failover over the candidates; its answer
 * (the sync route's `data[]`, at most `MAX_RESULT_CHARS` of JSON) is stored
 * on the task, which ends `completed` and is re-priced on the images actually
 * returned, or ends `failed` and is refunded — by `TaskStore.finish`, once.
 * An instance that stops mid-generation leaves the task to its deadline,
 * after which the poller fails and refunds it.
 *
 * @since 0.1.0
 */
import { Clock, Context, Deferred, Duration, Effect, Layer, Schedule } from "effect"
import type { HttpServerResponse } from "effect/http"
import { imageCost, isImagePriced } from "../../domain/Pricing.ts"
import { newImageTaskId } from "../../domain/TaskIds.ts"
import type { GatewayError, UpstreamFailed } from "../../errors/GatewayError.ts"
import { encodeImagesAnswer } from "../../formats/images/Wires.ts"
import type { Candidate } from "../../services/ChannelRouter.ts"
import { ImageContents } from "../../tasks/ImageContents.ts"
import { failureKindOf } from "../../tasks/TaskPoller.ts"
import type { Task } from "../../tasks/TaskStore.ts"
import { UpstreamClient } from "../../upstreams/transport/UpstreamClient.ts"
import { Catalog } from "../../storage/Catalog.ts"
import { failover } from "../pipeline/Failover.ts"
import { type ImageRelayInput, imageWireOf, makeImageAttempt } from "./ImageRelay.ts"
import { priceFor } from "../pipeline/OneShot.ts"
import { perImageBilling, submitTask, taskSubmitServices } from "../pipeline/TaskSubmit.ts"
import { servingCandidates } from "../pipeline/Serving.ts"

/** The largest stored result, in characters of its `data[]` JSON (Base64 images included). @category constants */
export const MAX_RESULT_CHARS = 32 * 1024 * 1024

/** The caller-safe error of a failed generation, by the failure's kind (never the vendor's words but a request error's). */
const errorOf = (error: UpstreamFailed): { readonly code: string; readonly message: string } =>
  error.kind === "rejected"
    ? { code: "invalid_request", message: error.message.slice(0, 500) }
    : { code: "upstream_error", message: "No upstream channel could make the images." }

/** Whether `candidate`'s channel type has an image wire. */
const runsImages = (candidate: Candidate): boolean => imageWireOf(candidate) !== undefined

/** @category services */
export class ImageTaskRelay extends Context.Service<ImageTaskRelay, {
  /**
   * Starts an async image task; the answer is `respond(task)`. Fails as the
   * sync image relay does before any upstream call (`ModelNotFound`,
   * `ModelNotPriced`, quota, rate limits).
   */
  readonly submit: (
    input: ImageRelayInput,
    respond: (task: Task) => HttpServerResponse.HttpServerResponse
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError>
}>()("sluice/relay/images/ImageTaskRelay") {
  /**
   * Needs the task submit's services (`relay/pipeline/TaskSubmit.ts`), the `Catalog`, the `UpstreamClient` and `ImageContents`;
   * generations run in the layer's scope.
   */
  static readonly layer = Layer.effect(
    ImageTaskRelay,
    Effect.gen(function* () {
      const services = yield* taskSubmitServices
      const { router, settings, store, ledger } = services
      const client = yield* UpstreamClient
      const catalog = yield* Catalog
      const contents = yield* ImageContents
      const scope = yield* Effect.scope

      /** Ends `task`, retrying while its charge is not yet committed (see `TaskStore.finish`). */
      const finish = (task: Task, end: Parameters<typeof store.finish>[1]) =>
        ledger.flush.pipe(
          Effect.andThen(store.finish(task, end)),
          Effect.retry({ schedule: Schedule.spaced(Duration.millis(500)), times: 20 }),
          Effect.catchCause((cause) =>
            Effect.logWarning("Image task could not be ended; its deadline will", {
              task: task.publicId,
              failure: failureKindOf(cause)
            })
          )
        )

      const submit = Effect.fnUntraced(function* (
        input: ImageRelayInput,
        respond: (task: Task) => HttpServerResponse.HttpServerResponse
      ) {
        const { principal, request } = input
        const candidates = yield* servingCandidates(services, principal, request.model, runsImages)
        const priced = yield* priceFor(catalog, request.model, principal.group, isImagePriced)
        const { price, ratio } = priced
        const settled = yield* Deferred.make<void>()
        const imageAttempt = makeImageAttempt(request, input.family, client, settings)

        /** The generation, in the background once the submit's charge is booked. */
        const generate = (task: Task, from: Candidate) =>
          Effect.gen(function* () {
            yield* Deferred.await(settled)
            const start = candidates.indexOf(from)
            const tried = candidates.slice(start < 0 ? 0 : start)
            const outcome = yield* failover({
              candidates: tried,
              maxAttempts: Math.min(tried.length, 1 + settings.retryTimes),
              deadline: (yield* Clock.currentTimeMillis) + settings.requestDeadlineMs,
              report: router.report,
              logFailed: () => Effect.void,
              attempt: imageAttempt
            }).pipe(Effect.result)
            if (outcome._tag === "Failure") {
              return yield* finish(task, { status: "failed", error: errorOf(outcome.failure), cost: 0n })
            }
            const generated = outcome.success.value
            // A caller who asked for a URL gets one: Base64 images are kept and served by the gateway.
            const answer = request.b64 || input.contentBase === undefined ||
                generated.images.every((image) => "url" in image)
              ? generated
              : { ...generated, images: yield* contents.keep(principal.userId, generated.images, input.contentBase) }
            const data =
              encodeImagesAnswer(answer, request.b64, Math.floor((yield* Clock.currentTimeMillis) / 1000)).data
            if (JSON.stringify(data).length > MAX_RESULT_CHARS) {
              return yield* finish(task, {
                status: "failed",
                error: { code: "result_too_large", message: "The images are too large to keep; ask for URLs." },
                cost: 0n
              })
            }
            yield* finish(task, {
              status: "completed",
              publicResult: data,
              cost: imageCost(ratio, price, answer.images.length)
            })
          })

        return yield* submitTask(services, {
          principal,
          model: request.model,
          priced,
          hold: imageCost(ratio, price, request.n),
          candidates,
          attempt: (candidate, insert) =>
            insert(candidate, {
              publicId: newImageTaskId(),
              kind: "image",
              upstreamId: null,
              request: { model: request.model, prompt: request.prompt, n: request.n, size: request.size },
              status: "in_progress",
              billing: perImageBilling(priced, request.n),
              // Only its deadline concerns the poller.
              firstPollAfter: settings.taskDeadlineMillis
            }).pipe(Effect.tap((task) => Effect.forkIn(generate(task, candidate), scope))),
          respond: (task) => {
            Deferred.doneUnsafe(settled, Effect.void)
            return respond(task)
          }
        })
      }) as ImageTaskRelay["Service"]["submit"]

      return ImageTaskRelay.of({ submit })
    })
  )
}
