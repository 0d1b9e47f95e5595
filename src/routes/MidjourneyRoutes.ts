/**
 * The Midjourney routes (`/mj/*`), the API Midjourney-proxy servers expose
 * and gateways relay (`formats/midjourney/Wire.ts` has its sources), with the
 * gateway's own keys:
 *
 * - `POST /mj/submit/imagine`, `/mj/submit/blend`, `/mj/submit/describe`: a
 *   new task; `POST /mj/submit/change` (`{taskId, action, index}`, or
 *   `/mj/submit/simple-change` `{content: "<taskId> U1"}`) and
 *   `POST /mj/submit/action` (`{taskId, customId}`, a button of a finished
 *   task): a task made from the caller's task `taskId`; answered
 *   `{code: 1, description, result: <public task id>, properties}` (code 21
 *   when the action now waits for `POST /mj/submit/modal` `{taskId, prompt?,
 *   maskBase64?}`). Billed per action (`relay/midjourney/MidjourneyRelay.ts`).
 * - `GET /mj/task/{id}/fetch`: the caller's task in the proxy's shape
 *   (`encodeMjTask`); `POST /mj/task/list-by-condition` `{ids}`: those of
 *   the ids that are the caller's tasks (others' and unknown ids are left out).
 * - `GET /mj/image/{id}`: a finished task's image, fetched from the proxy's
 *   image URL through the SSRF guard (`MidjourneyRelay.image`) and served as
 *   the type its bytes are, with the safe media headers (`http/SafeMedia.ts`).
 *   For the caller's own task only, like the other task routes: its key
 *   (either header) or its browser session (the console), another user's id
 *   answering 404; or, with no key, a signed URL (`?expires=…&signature=…`,
 *   `domain/SignedUrl.ts`: HMAC-SHA256 under the gateway's URL signing key of
 *   the task id and the expiry, valid `MJ_IMAGE_URL_TTL_SECONDS` and up to an
 *   hour more), which is what the task object's `imageUrl` is, so that it can
 *   go into an `<img>` tag. A wrong or expired signature with no key is 403.
 *
 * Keys: `Authorization: Bearer sk-…`, or `mj-api-secret: sk-…`, the header
 * Midjourney-proxy clients send (`Credentials.ts`). Errors leave in the
 * proxy's envelope with the gateway's status, `type` and `param`
 * (`encodeMjError`). The upstream's task ids never leave the gateway.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Result } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { decodeMjSubmit, encodeMjError, encodeMjTask, type MjSubmitKind } from "../formats/midjourney/Wire.ts"
import { decodeMjListIds } from "../formats/midjourney/TaskList.ts"
import { Forbidden } from "../errors/GatewayError.ts"
import { readJsonObject } from "../http/Body.ts"
import { clientAddressOf, gatewayOriginOf } from "../http/ClientAddress.ts"
import { credentialOf } from "../http/Credentials.ts"
import { respondWith } from "../http/Respond.ts"
import { safeMediaHeaders } from "../http/SafeMedia.ts"
import { MidjourneyRelay, type MjSubmitted } from "../relay/midjourney/MidjourneyRelay.ts"
import { Auth } from "../services/Auth.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"
import { UrlSigner } from "../services/UrlSigner.ts"
import { UserCaps } from "../services/UserCaps.ts"
import { Sessions } from "../accounts/Sessions.ts"
import { CallerTasks } from "../tasks/CallerTasks.ts"
import type { Task } from "../tasks/TaskStore.ts"
import { mjTaskViewOf } from "./MidjourneyTaskView.ts"
import { sessionCookieOf } from "./api/Api.ts"
import { bearerOrSessionUser } from "./SessionCaller.ts"

/**
 * How long a task object's signed `imageUrl` opens the image without a key, at
 * least, in seconds (one day; the expiry is rounded up to the hour, so up to
 * an hour more). A client that reads the task again gets a fresh URL.
 *
 * @category constants
 */
export const MJ_IMAGE_URL_TTL_SECONDS = 86_400

/** What a signed image URL opens: the resource its signature names (`domain/SignedUrl.ts`). */
const imageResource = (taskId: string): string => `mj-image/${taskId}`

/** @category services */
export class Midjourney extends Context.Service<Midjourney, {
  /** `POST /mj/submit/{kind}`. Never fails: errors in the proxy's envelope. */
  readonly submit: (
    request: HttpServerRequest.HttpServerRequest,
    kind: MjSubmitKind
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  /** `GET /mj/task/{id}/fetch`. Never fails. */
  readonly fetch: (
    request: HttpServerRequest.HttpServerRequest,
    taskId: string
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  /** `POST /mj/task/list-by-condition`. Never fails. */
  readonly list: (request: HttpServerRequest.HttpServerRequest) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  /** `GET /mj/image/{id}` (see the module doc for who may read it). Never fails. */
  readonly image: (
    request: HttpServerRequest.HttpServerRequest,
    taskId: string
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
}>()("sluice/routes/MidjourneyRoutes/Midjourney") {
  /** Needs Auth, Sessions, GatewaySettings, UrlSigner, UserCaps, MidjourneyRelay and CallerTasks. */
  static readonly layer = Layer.effect(
    Midjourney,
    Effect.gen(function* () {
      const auth = yield* Auth
      const settings = yield* GatewaySettings
      const caps = yield* UserCaps
      const relay = yield* MidjourneyRelay
      const tasks = yield* CallerTasks
      const signer = yield* UrlSigner
      const userOf = bearerOrSessionUser(auth, yield* Sessions, "midjourney")

      /** The task object of `task` with its signed image URL under the gateway's `origin`. */
      const viewOf = (task: Task, origin: string) =>
        Effect.map(
          signer.sign(imageResource(task.publicId), MJ_IMAGE_URL_TTL_SECONDS),
          (query) => encodeMjTask(mjTaskViewOf(task, `${origin}/mj/image/${task.publicId}?${query}`))
        )

      const callerOf = (request: HttpServerRequest.HttpServerRequest) =>
        auth.authenticate(credentialOf("midjourney", request), clientAddressOf(request))

      const answer = (code: number, description: string, result: string) =>
        HttpServerResponse.jsonUnsafe({ code, description, result, properties: {} })

      const submit = (request: HttpServerRequest.HttpServerRequest, kind: MjSubmitKind) =>
        Effect.gen(function* () {
          const principal = yield* callerOf(request)
          const body = yield* readJsonObject(request, settings.maxBodyBytes)
          const decoded = decodeMjSubmit(kind, body)
          if (Result.isFailure(decoded)) return yield* decoded.failure
          const value = decoded.success
          if (value.kind === "modal") {
            const task = yield* relay.modal(value, principal)
            return answer(1, "Submit success", task.publicId)
          }
          return yield* caps.task(
            principal.userId,
            relay.submit({
              submit: value,
              principal,
              respond: ({ task, code }: MjSubmitted) =>
                answer(code, code === 21 ? "Waiting for window confirm" : "Submit success", task.publicId)
            })
          )
        }).pipe(respondWith(encodeMjError))

      const fetch = (request: HttpServerRequest.HttpServerRequest, taskId: string) =>
        Effect.gen(function* () {
          const principal = yield* callerOf(request)
          const task = yield* tasks.read(principal.userId, taskId, "midjourney")
          return HttpServerResponse.jsonUnsafe(yield* viewOf(task, gatewayOriginOf(request, settings.publicUrl)))
        }).pipe(respondWith(encodeMjError))

      const list = (request: HttpServerRequest.HttpServerRequest) =>
        Effect.gen(function* () {
          const principal = yield* callerOf(request)
          const body = yield* readJsonObject(request, settings.maxBodyBytes)
          const ids = decodeMjListIds(body)
          if (Result.isFailure(ids)) return yield* ids.failure
          const origin = gatewayOriginOf(request, settings.publicUrl)
          const found = yield* tasks.readMany(principal.userId, ids.success, "midjourney")
          return HttpServerResponse.jsonUnsafe(yield* Effect.forEach(found, (task) => viewOf(task, origin)))
        }).pipe(respondWith(encodeMjError))

      const image = (request: HttpServerRequest.HttpServerRequest, taskId: string) =>
        Effect.gen(function* () {
          const params = new URL(request.url, "http://gateway").searchParams
          const verdict = yield* signer.check(imageResource(taskId), params)
          // A true signature opens the image; else the caller's key or session, for its own task only.
          const keyOrSession = credentialOf("midjourney", request) !== undefined || sessionCookieOf(request) !== ""
          if (verdict !== "valid" && verdict !== "absent" && !keyOrSession) {
            return yield* new Forbidden({
              message: verdict === "expired"
                ? "The image URL has expired; fetch the task again for a new one."
                : "The image URL's signature is not valid."
            })
          }
          const owner = verdict === "valid" ? undefined : yield* userOf(request)
          const opened = yield* relay.image(taskId, owner)
          return HttpServerResponse.uint8Array(opened.bytes, {
            headers: { ...safeMediaHeaders("image", opened.mediaType), "cache-control": "private, max-age=3600" }
          })
        }).pipe(respondWith(encodeMjError))

      return Midjourney.of({ submit, fetch, list, image })
    })
  )
}

/**
 * The `/mj/*` routes.
 *
 * @category routes
 */
export const MidjourneyRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const mj = yield* Midjourney
  for (const kind of ["imagine", "change", "simple-change", "action", "modal", "blend", "describe"] as const) {
    yield* router.add("POST", `/mj/submit/${kind}`, (request) => mj.submit(request, kind))
  }
  yield* router.add(
    "GET",
    "/mj/task/:id/fetch",
    (request) => Effect.flatMap(HttpRouter.params, (params) => mj.fetch(request, params.id ?? ""))
  )
  yield* router.add("POST", "/mj/task/list-by-condition", mj.list)
  yield* router.add(
    "GET",
    "/mj/image/:id",
    (request) => Effect.flatMap(HttpRouter.params, (params) => mj.image(request, params.id ?? ""))
  )
}))
