/**
 * The relay of the Midjourney submit routes (`POST /mj/submit/*`): the billed
 * sequence of one-answer requests (`runOneShot`: permit → hold → failover →
 * settle) where an attempt is "submit the task to the channel's proxy, read
 * its task id, insert the task row". Each action is billed at the price of
 * its model, `mj_<action>` (`modelOfAction`: `mj_imagine`, `mj_upscale`,
 * `mj_variation`, `mj_reroll`, `mj_blend`, `mj_describe`, …; an action that
 * opens a modal is `mj_modal`): ceil(ratio × `per_image` × 10⁶) quota units,
 * held and charged when the proxy accepts; the poller refunds it whole if the
 * task fails (`TaskPoller`, `TaskStore.finish`). A model without `per_image`
 * (or `free`) is refused (`ModelNotPriced`).
 *
 * New tasks (imagine, blend, describe) go to the router's candidates for the
 * model that run Midjourney tasks, with failover. A task made from another
 * (`change`, `action`, `modal`) runs on the original's channel and key, since
 * only that proxy knows the original: the original must be the caller's own
 * Midjourney task (else `NotFound`, code 3), finished for a change or an
 * action, and an action's `customId` one of the original's buttons. A modal
 * completes the action that opened it (billed then) and is not billed again.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Layer, Stream } from "effect"
import type { HttpServerResponse } from "effect/http"
import { emptyUsage } from "../canonical/Usage.ts"
import { imageCost, isImagePriced } from "../domain/Pricing.ts"
import { newMidjourneyTaskId } from "../domain/TaskIds.ts"
import { type GatewayError, InvalidRequest, ModelNotFound, NotFound, UpstreamFailed } from "../errors/GatewayError.ts"
import {
  actionOfCustomId,
  decodeMjSubmitAnswer,
  encodeMjSubmit,
  type MjAction,
  type MjSubmit,
  type MjTaskDetail,
  MODAL_ACTIONS,
  modelOfAction
} from "../formats/midjourney/Wire.ts"
import type { Principal } from "../services/Auth.ts"
import { type Candidate, ChannelRouter } from "../services/ChannelRouter.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"
import { Catalog } from "../storage/Catalog.ts"
import { callMidjourney, runsMidjourney } from "../tasks/MidjourneyCalls.ts"
import { insertedTask, type Task, TaskStore } from "../tasks/TaskStore.ts"
import { channelTimeouts, UpstreamClient } from "../upstreams/transport/UpstreamClient.ts"
import { oneShotServices, priceFor, runOneShot } from "./OneShot.ts"

/** A submit that makes a task (every kind but `modal`). @category models */
export type MjTaskSubmit = Exclude<MjSubmit, { readonly kind: "modal" }>

/** A modal's submit. @category models */
export type MjModalSubmit = Extract<MjSubmit, { readonly kind: "modal" }>

/**
 * What a submit made: the task and the code to answer (21 for an action that
 * now waits for its modal, else 1).
 *
 * @category models
 */
export interface MjSubmitted {
  readonly task: Task
  readonly code: 1 | 21
}

/** What a submit route hands the relay. @category models */
export interface MjSubmitInput {
  readonly submit: MjTaskSubmit
  readonly principal: Principal
  readonly respond: (submitted: MjSubmitted) => HttpServerResponse.HttpServerResponse
}

/** A finished task's image as the caller is to get it: a safe content type and the bytes as they arrive. @category models */
export interface MjImage {
  /** `image/png`, `image/jpeg`, `image/webp` or `image/gif` as the upstream said; else `application/octet-stream`. */
  readonly contentType: string
  readonly body: Stream.Stream<Uint8Array, UpstreamFailed>
}

/** The image types served as themselves; anything else the upstream sends is served as bytes to download. */
const IMAGE_TYPES = /^image\/(png|jpeg|webp|gif)$/

/** The action a submit asks for. */
const actionOf = (submit: MjTaskSubmit): MjAction => {
  switch (submit.kind) {
    case "imagine":
      return "IMAGINE"
    case "blend":
      return "BLEND"
    case "describe":
      return "DESCRIBE"
    case "change":
      return submit.action
    case "action":
      // The decoder accepts only customIds with a known action.
      return actionOfCustomId(submit.customId) ?? "UPSCALE"
  }
}

/** The buttons a finished task was stored with. */
const buttonsOf = (task: Task): ReadonlyArray<{ readonly customId: string }> => {
  const detail = task.publicResult as Partial<MjTaskDetail> | null
  return Array.isArray(detail?.buttons) ? detail.buttons : []
}

/** @category services */
export class MidjourneyRelay extends Context.Service<MidjourneyRelay, {
  /**
   * Submits a task on the first candidate that accepts it; the answer is
   * `input.respond`. Fails with `NotFound` (the original task), `InvalidRequest`
   * (an unfinished original, a `customId` not among its buttons),
   * `ModelNotFound`, `ModelNotPriced`, and the billed sequence's quota,
   * rate-limit and upstream failures.
   */
  readonly submit: (input: MjSubmitInput) => Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError>
  /**
   * Sends a modal to the proxy for the caller's task `submit.taskId` that
   * waits for one; the task. Not billed. Fails with `NotFound`,
   * `InvalidRequest` (not a task that waits for a modal) and the proxy's
   * refusal.
   */
  readonly modal: (submit: MjModalSubmit, principal: Principal) => Effect.Effect<Task, GatewayError>
  /**
   * Opens the image of the Midjourney task `taskId`, whoever owns it (the id
   * is the capability: 128 random bits). Fails with `NotFound` (image) when
   * there is no such finished task with an image, and with `UpstreamFailed`
   * when the upstream no longer serves it (`rejected` for 404/410).
   */
  readonly image: (taskId: string) => Effect.Effect<MjImage, NotFound | UpstreamFailed>
}>()("sluice/relay/MidjourneyRelay") {
  /** Needs the one-shot relay's services and the `TaskStore`. */
  static readonly layer = Layer.effect(
    MidjourneyRelay,
    Effect.gen(function* () {
      const router = yield* ChannelRouter
      const client = yield* UpstreamClient
      const settings = yield* GatewaySettings
      const catalog = yield* Catalog
      const store = yield* TaskStore
      const services = yield* oneShotServices

      /** The caller's Midjourney task `taskId`, or `NotFound` naming `taskId`. */
      const originalOf = (taskId: string, principal: Principal) =>
        store.find(taskId, principal.userId).pipe(
          Effect.mapError(() => new NotFound({ what: "task", id: taskId.slice(0, 100), param: "taskId" })),
          Effect.filterOrFail(
            (task) => task.kind === "midjourney" && task.upstreamId !== null,
            () => new NotFound({ what: "task", id: taskId.slice(0, 100), param: "taskId" })
          )
        )

      /** The original's channel and key, still configured; else a 503. */
      const homeOf = (original: Task): Effect.Effect<Candidate, UpstreamFailed> => {
        const channel = catalog.snapshot().channels.get(original.channelId)
        const key = channel?.keys.find((candidate) => candidate.position === original.keyPosition) ??
          channel?.keys.find((candidate) => candidate.enabled)
        return channel === undefined || key === undefined || !runsMidjourney(channel)
          ? Effect.fail(
            new UpstreamFailed({ kind: "server", status: 503, message: "The task's channel is no longer configured." })
          )
          : Effect.succeed({ channel, key, upstreamModel: original.upstreamModel })
      }

      const submit = Effect.fnUntraced(function* (input: MjSubmitInput) {
        const { principal, submit } = input
        const action = actionOf(submit)
        const model = modelOfAction(action)
        let original: Task | undefined
        if (submit.kind === "change" || submit.kind === "action") {
          const found = yield* originalOf(submit.taskId, principal)
          if (found.status !== "completed") {
            return yield* new InvalidRequest({
              message:
                `The task ${found.publicId} is not finished (it is ${found.status}): no action can be taken on it yet.`,
              param: "taskId"
            })
          }
          if (submit.kind === "action" && !buttonsOf(found).some((button) => button.customId === submit.customId)) {
            return yield* new InvalidRequest({
              message: `customId is not one of the buttons of task ${found.publicId}.`,
              param: "customId"
            })
          }
          original = found
        }
        // The caller's group and token must reach the action's model; an action runs where its original ran.
        const routed = yield* router.candidates(principal, model)
        const candidates = original === undefined
          ? routed.filter((candidate) => runsMidjourney(candidate.channel))
          : [yield* homeOf(original)].filter((home) => home.channel.models.includes(model))
        if (candidates.length === 0) return yield* new ModelNotFound({ model, status: settings.unknownModelStatus })
        const { price, ratio, limits } = yield* priceFor(catalog, model, principal.group, isImagePriced)
        const hold = imageCost(ratio, price, 1)
        const requestId = crypto.randomUUID().replaceAll("-", "")
        const call = encodeMjSubmit(submit, original?.upstreamId ?? undefined)

        const attempt = (candidate: Candidate): Effect.Effect<MjSubmitted, UpstreamFailed> =>
          Effect.gen(function* () {
            const json = yield* callMidjourney(
              client,
              settings,
              { channel: candidate.channel, key: candidate.key.key },
              "POST",
              call.path,
              call.body
            )
            const accepted = decodeMjSubmitAnswer(json, candidate.channel.id)
            if (accepted instanceof UpstreamFailed) return yield* accepted
            const now = yield* Clock.currentTimeMillis
            const fields = {
              publicId: newMidjourneyTaskId(),
              kind: "midjourney" as const,
              userId: principal.userId,
              tokenId: principal.tokenId,
              channelId: candidate.channel.id,
              keyPosition: candidate.key.position,
              upstreamId: accepted.upstreamId,
              model,
              upstreamModel: candidate.upstreamModel,
              // What the public task object shows before the proxy says more (no images: they can be megabytes).
              request: {
                action,
                prompt: submit.kind === "imagine"
                  ? submit.prompt
                  : typeof original?.request.prompt === "string"
                  ? original.request.prompt
                  : "",
                ...(submit.state === undefined ? {} : { state: submit.state }),
                ...(submit.botType === undefined ? {} : { botType: submit.botType }),
                ...(submit.kind === "action" ? { customId: submit.customId } : {}),
                ...(original === undefined ? {} : { parent: original.publicId })
              },
              status: "queued" as const,
              requestId,
              billing: {
                ratio: String(ratio),
                perImage: price.perImage === undefined ? undefined : String(price.perImage),
                free: price.free,
                n: 1
              },
              quotaCharged: hold,
              nextPollAt: now + settings.taskPollMillis,
              deadlineAt: now + settings.taskDeadlineMillis
            }
            const id = yield* store.insert(fields)
            const task = insertedTask(fields, id, now)
            return { task, code: accepted.code === 21 && MODAL_ACTIONS.has(action) ? 21 : 1 }
          })

        return yield* runOneShot(services, {
          principal,
          groupLimits: limits,
          model,
          price,
          ratio,
          promptTokens: 0,
          started: yield* Clock.currentTimeMillis,
          hold,
          candidates,
          attempt,
          usageOf: () => emptyUsage,
          costOf: () => hold,
          respond: input.respond,
          requestId
        })
      }) as MidjourneyRelay["Service"]["submit"]

      const modal = Effect.fnUntraced(function* (submit: MjModalSubmit, principal: Principal) {
        const original = yield* originalOf(submit.taskId, principal)
        const action = original.request.action
        if (typeof action !== "string" || !MODAL_ACTIONS.has(action as MjAction) || original.status !== "queued") {
          return yield* new InvalidRequest({
            message: `The task ${original.publicId} is not waiting for a modal.`,
            param: "taskId"
          })
        }
        const home = yield* homeOf(original)
        const call = encodeMjSubmit(submit, original.upstreamId ?? undefined)
        const json = yield* callMidjourney(
          client,
          settings,
          { channel: home.channel, key: home.key.key },
          "POST",
          call.path,
          call.body
        )
        const accepted = decodeMjSubmitAnswer(json, home.channel.id)
        if (accepted instanceof UpstreamFailed) return yield* accepted
        if (accepted.upstreamId !== original.upstreamId) {
          return yield* new UpstreamFailed({
            kind: "bad-body",
            status: 200,
            message: "The upstream answered the modal with another task.",
            channelId: home.channel.id
          })
        }
        return original
      }) as MidjourneyRelay["Service"]["modal"]

      const image = Effect.fnUntraced(function* (taskId: string) {
        const task = yield* store.findAnyOwner(taskId).pipe(
          Effect.mapError(() => new NotFound({ what: "image", id: taskId.slice(0, 100) }))
        )
        const url = task.result?.url
        if (task.kind !== "midjourney" || task.status !== "completed" || url === undefined) {
          return yield* new NotFound({ what: "image", id: taskId.slice(0, 100) })
        }
        const channel = catalog.snapshot().channels.get(task.channelId)
        // The upstream's image URL is fetched without the channel key: it is a CDN's, or the proxy's public one.
        const upstream = yield* client.send(
          "GET",
          url,
          { accept: "image/*" },
          undefined,
          channelTimeouts(channel ?? { settings: {} }, settings)
        )
        if (upstream.status !== 200) {
          upstream.abort()
          const gone = upstream.status === 404 || upstream.status === 410
          return yield* new UpstreamFailed({
            kind: gone ? "rejected" : "server",
            status: upstream.status,
            message: gone ? "The image is no longer held by the upstream." : "The upstream failed to send the image.",
            channelId: task.channelId
          })
        }
        const type = (upstream.headers["content-type"] ?? "").split(";")[0].trim().toLowerCase()
        return {
          contentType: IMAGE_TYPES.test(type) ? type : "application/octet-stream",
          body: Stream.unfold(
            undefined,
            () => Effect.map(upstream.read, (chunk) => chunk === undefined ? undefined : [chunk, undefined] as const)
          ).pipe(Stream.ensuring(Effect.sync(upstream.abort)))
        }
      }) as MidjourneyRelay["Service"]["image"]

      return MidjourneyRelay.of({ submit, modal, image })
    })
  )
}
