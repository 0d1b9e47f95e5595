/**
 * The relay of the Midjourney submit routes (`POST /mj/submit/*`): the task
 * submit (`relay/pipeline/TaskSubmit.ts`: permit → hold → failover → settle) where an attempt
 * is "submit the task to the channel's proxy, read its task id, insert the
 * task row". Each action is billed at the price of
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
import { Context, Effect, Layer } from "effect"
import type { HttpServerResponse } from "effect/http"
import { imageCost, isImagePriced } from "../../domain/Pricing.ts"
import { newMidjourneyTaskId } from "../../domain/TaskIds.ts"
import {
  type GatewayError,
  InvalidRequest,
  ModelNotFound,
  NotFound,
  UpstreamFailed
} from "../../errors/GatewayError.ts"
import {
  actionOfCustomId,
  decodeMjSubmitAnswer,
  encodeMjSubmit,
  type MjAction,
  type MjSubmit,
  type MjTaskDetail,
  MODAL_ACTIONS,
  modelOfAction
} from "../../formats/midjourney/Wire.ts"
import type { Principal } from "../../services/Auth.ts"
import type { Candidate } from "../../services/ChannelRouter.ts"
import type { Settings } from "../../services/GatewaySettings.ts"
import { Catalog } from "../../storage/Catalog.ts"
import { callMidjourney, runsMidjourney } from "../../tasks/MidjourneyCalls.ts"
import type { Task, TaskStore } from "../../tasks/TaskStore.ts"
import { sniffMediaType } from "../../http/SafeMedia.ts"
import { safeFetch } from "../../upstreams/transport/SafeFetch.ts"
import { UpstreamClient } from "../../upstreams/transport/UpstreamClient.ts"
import { vendorFetchFailure, vendorUrlHosts } from "../../upstreams/transport/VendorUrls.ts"
import { priceFor } from "../pipeline/OneShot.ts"
import { homeOf, perImageBilling, submitTask, taskSubmitServices } from "../pipeline/TaskSubmit.ts"
import { servingCandidates } from "../pipeline/Serving.ts"

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

/**
 * A finished task's image as the caller is to get it: its bytes (at most
 * `media_max_bytes`) and the type they are sniffed to be (`image/png`,
 * `image/jpeg`, `image/webp` or `image/gif`; else `application/octet-stream`),
 * never the type the proxy named.
 *
 * @category models
 */
export interface MjImage {
  readonly mediaType: string
  readonly bytes: Uint8Array
}

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

/**
 * `original` when a change or an action may be made from it: finished, and
 * for an action, the `customId` one of its buttons; else `InvalidRequest`
 * naming the field.
 */
const actionable = (original: Task, submit: MjTaskSubmit): Effect.Effect<Task, InvalidRequest> => {
  if (original.status !== "completed") {
    return Effect.fail(
      new InvalidRequest({
        message:
          `The task ${original.publicId} is not finished (it is ${original.status}): no action can be taken on it yet.`,
        param: "taskId"
      })
    )
  }
  if (submit.kind === "action" && !buttonsOf(original).some((button) => button.customId === submit.customId)) {
    return Effect.fail(
      new InvalidRequest({
        message: `customId is not one of the buttons of task ${original.publicId}.`,
        param: "customId"
      })
    )
  }
  return Effect.succeed(original)
}

/** What the public task object shows before the proxy says more (no images: they can be megabytes). */
const shownRequest = (submit: MjTaskSubmit, action: MjAction, original: Task | undefined) => ({
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
})

/** Posts a submit (`encodeMjSubmit`) to `candidate`'s proxy; the proxy's acceptance, or `UpstreamFailed`. */
const postSubmit = (
  client: typeof UpstreamClient.Service,
  settings: Settings,
  candidate: Candidate,
  call: ReturnType<typeof encodeMjSubmit>
) =>
  callMidjourney(client, settings, { channel: candidate.channel, key: candidate.key.key }, "POST", call.path, call.body)
    .pipe(Effect.flatMap((json) => {
      const accepted = decodeMjSubmitAnswer(json, candidate.channel.id)
      return accepted instanceof UpstreamFailed ? Effect.fail(accepted) : Effect.succeed(accepted)
    }))

/** Whether `candidate`'s channel type runs Midjourney tasks. */
const runsMj = (candidate: Candidate): boolean => runsMidjourney(candidate.channel)

/**
 * Opens the image of the finished Midjourney task `taskId` (see
 * `MidjourneyRelay.image`): the proxy's image URL fetched without the channel
 * key (a CDN's or the proxy's public one) through the SSRF guard — public
 * addresses only, but the channel's own host and `media_allow_hosts`
 * (`upstreams/transport/VendorUrls.ts`) — within `media_max_bytes` and
 * `media_timeout_ms`, and its type sniffed from its bytes.
 */
const openImage = (
  store: typeof TaskStore.Service,
  catalog: typeof Catalog.Service,
  settings: Settings
) =>
  Effect.fnUntraced(function* (taskId: string, owner: bigint | undefined) {
    const task = yield* (owner === undefined ? store.findAnyOwner(taskId) : store.find(taskId, owner))
    if (task.kind !== "midjourney") return yield* new NotFound({ what: "task", id: taskId.slice(0, 100) })
    const url = task.result?.url
    if (task.status !== "completed" || url === undefined) {
      return yield* new NotFound({ what: "image", id: taskId.slice(0, 100) })
    }
    const channel = catalog.snapshot().channels.get(task.channelId)
    const fetched = yield* safeFetch(url, {
      maxBytes: settings.mediaMaxBytes,
      timeoutMs: settings.mediaTimeoutMs,
      allowHosts: vendorUrlHosts(channel?.baseUrl, settings.mediaAllowHosts),
      accept: "image/*"
    }).pipe(
      Effect.tapError((error) =>
        error.reason === "http-status" ? Effect.void : Effect.logWarning("Vendor image URL refused").pipe(
          Effect.annotateLogs({ channel: channel?.name ?? String(task.channelId), reason: error.reason })
        )
      ),
      Effect.mapError((error) =>
        vendorFetchFailure(error, task.channelId, "The image is no longer held by the upstream.", () => ({
          kind: "server",
          message: "The upstream failed to send the image."
        }))
      )
    )
    return { mediaType: yield* sniffMediaType("image", fetched.bytes), bytes: fetched.bytes }
  }) as MidjourneyRelay["Service"]["image"]

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
   * Reads the image of the Midjourney task `taskId` of user `owner`, or of
   * whoever owns it when `owner` is `undefined` (the caller holds a signed
   * URL of it). Fails with `NotFound` (task) when there is no such task of
   * the owner's, `NotFound` (image) when it is not finished with an image,
   * and with `UpstreamFailed` when the proxy no longer serves it (`rejected`
   * for 404/410) or its URL is refused by the guard (`bad-body`).
   */
  readonly image: (taskId: string, owner: bigint | undefined) => Effect.Effect<MjImage, NotFound | UpstreamFailed>
}>()("sluice/relay/midjourney/MidjourneyRelay") {
  /** Needs the task submit's services (`relay/pipeline/TaskSubmit.ts`), the `Catalog` and the `UpstreamClient`. */
  static readonly layer = Layer.effect(
    MidjourneyRelay,
    Effect.gen(function* () {
      const services = yield* taskSubmitServices
      const { router, settings, store } = services
      const client = yield* UpstreamClient
      const catalog = yield* Catalog

      /** The caller's Midjourney task `taskId`, or `NotFound` naming `taskId`. */
      const originalOf = (taskId: string, principal: Principal) =>
        store.find(taskId, principal.userId).pipe(
          // The not-found names the caller's field; a store out of reach stays what it is.
          Effect.catchTag("NotFound", () =>
            Effect.fail(new NotFound({ what: "task", id: taskId.slice(0, 100), param: "taskId" }))),
          Effect.filterOrFail(
            (task) =>
              task.kind === "midjourney" && task.upstreamId !== null,
            () => new NotFound({ what: "task", id: taskId.slice(0, 100), param: "taskId" })
          )
        )

      /** The original's channel and key, still configured; else a 503. */
      const homeIn = (original: Task): Effect.Effect<Candidate, UpstreamFailed> => {
        const home = homeOf(catalog, original)
        return home === undefined || !runsMidjourney(home.channel)
          ? Effect.fail(
            new UpstreamFailed({ kind: "server", status: 503, message: "The task's channel is no longer configured." })
          )
          : Effect.succeed(home)
      }

      /**
       * Where a submit runs: the router's Midjourney candidates for a new task; the original's home, if it serves
       * `model`, for one made from another (the router is still asked: the caller's group and token must reach the
       * action's model). Else `ModelNotFound`.
       */
      const candidatesFor = (principal: Principal, model: string, original: Task | undefined) =>
        original === undefined
          ? servingCandidates(services, principal, model, runsMj)
          : router.candidates(principal, model).pipe(
            Effect.andThen(homeIn(original)),
            Effect.filterOrFail(
              (home) => home.channel.models.includes(model),
              () => new ModelNotFound({ model, status: settings.unknownModelStatus })
            ),
            Effect.map((home) => [home])
          )

      const submit = Effect.fnUntraced(function* (input: MjSubmitInput) {
        const { principal, submit } = input
        const action = actionOf(submit)
        const model = modelOfAction(action)
        const original = submit.kind === "change" || submit.kind === "action"
          ? yield* Effect.flatMap(originalOf(submit.taskId, principal), (found) => actionable(found, submit))
          : undefined
        const candidates = yield* candidatesFor(principal, model, original)
        const priced = yield* priceFor(catalog, model, principal.group, isImagePriced)
        const call = encodeMjSubmit(submit, original?.upstreamId ?? undefined)
        return yield* submitTask(services, {
          principal,
          model,
          priced,
          hold: imageCost(priced.ratio, priced.price, 1),
          candidates,
          attempt: (candidate, insert) =>
            Effect.gen(function* () {
              const accepted = yield* postSubmit(client, settings, candidate, call)
              const task = yield* insert(candidate, {
                publicId: newMidjourneyTaskId(),
                kind: "midjourney",
                upstreamId: accepted.upstreamId,
                request: shownRequest(submit, action, original),
                status: "queued",
                billing: perImageBilling(priced, 1)
              })
              const code: MjSubmitted["code"] = accepted.code === 21 && MODAL_ACTIONS.has(action) ? 21 : 1
              return { task, code }
            }),
          respond: input.respond
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
        const home = yield* homeIn(original)
        const accepted = yield* postSubmit(
          client,
          settings,
          home,
          encodeMjSubmit(submit, original.upstreamId ?? undefined)
        )
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

      return MidjourneyRelay.of({ submit, modal, image: openImage(store, catalog, settings) })
    })
  )
}
