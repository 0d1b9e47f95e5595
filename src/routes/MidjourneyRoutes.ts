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
 *   maskBase64?}`). Billed per action (`relay/MidjourneyRelay.ts`).
 * - `GET /mj/task/{id}/fetch`: the caller's task in the proxy's shape
 *   (`encodeMjTask`); `POST /mj/task/list-by-condition` `{ids}`: those of
 *   the ids that are the caller's tasks (others' and unknown ids are left out).
 * - `GET /mj/image/{id}`: a finished task's image, streamed from the proxy's
 *   image URL (the `imageUrl` of the task object points here, never at the
 *   upstream). No key: the id is 128 random bits (`newMidjourneyTaskId`) and
 *   the URL goes into `<img>` tags, as the proxies' own image URLs do.
 *
 * Keys: `Authorization: Bearer sk-…`, or `mj-api-secret: sk-…`, the header
 * Midjourney-proxy clients send (`Credentials.ts`). Errors leave in the
 * proxy's envelope with the gateway's status, `type` and `param`
 * (`encodeMjError`). The upstream's task ids never leave the gateway.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { decodeMjSubmit, encodeMjError, encodeMjTask, type MjSubmitKind } from "../formats/midjourney/Wire.ts"
import { decodeMjListIds } from "../formats/midjourney/TaskList.ts"
import { readJsonObject } from "../http/Body.ts"
import { clientAddressOf, gatewayOriginOf } from "../http/ClientAddress.ts"
import { credentialOf } from "../http/Credentials.ts"
import { respondWith } from "../http/Respond.ts"
import { MidjourneyRelay, type MjSubmitted } from "../relay/MidjourneyRelay.ts"
import { Auth } from "../services/Auth.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"
import { UserCaps } from "../services/UserCaps.ts"
import { CallerTasks } from "../tasks/CallerTasks.ts"
import { mjTaskViewOf } from "../tasks/TaskView.ts"

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
  /** `GET /mj/image/{id}`. Never fails. */
  readonly image: (taskId: string) => Effect.Effect<HttpServerResponse.HttpServerResponse>
}>()("sluice/routes/MidjourneyRoutes/Midjourney") {
  /** Needs Auth, GatewaySettings, UserCaps, MidjourneyRelay and CallerTasks. */
  static readonly layer = Layer.effect(
    Midjourney,
    Effect.gen(function* () {
      const auth = yield* Auth
      const settings = yield* GatewaySettings
      const caps = yield* UserCaps
      const relay = yield* MidjourneyRelay
      const tasks = yield* CallerTasks

      const callerOf = (request: HttpServerRequest.HttpServerRequest) =>
        auth.authenticate(credentialOf("midjourney", request), clientAddressOf(request))

      const answer = (code: number, description: string, result: string) =>
        HttpServerResponse.jsonUnsafe({ code, description, result, properties: {} })

      const submit = (request: HttpServerRequest.HttpServerRequest, kind: MjSubmitKind) =>
        Effect.gen(function* () {
          const principal = yield* callerOf(request)
          const body = yield* readJsonObject(request, settings.maxBodyBytes)
          const decoded = decodeMjSubmit(kind, body)
          if (!decoded.ok) return yield* decoded.error
          const value = decoded.value
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
          return HttpServerResponse.jsonUnsafe(
            encodeMjTask(mjTaskViewOf(task, gatewayOriginOf(request, settings.publicUrl)))
          )
        }).pipe(respondWith(encodeMjError))

      const list = (request: HttpServerRequest.HttpServerRequest) =>
        Effect.gen(function* () {
          const principal = yield* callerOf(request)
          const body = yield* readJsonObject(request, settings.maxBodyBytes)
          const ids = decodeMjListIds(body)
          if (!ids.ok) return yield* ids.error
          const origin = gatewayOriginOf(request, settings.publicUrl)
          const found = yield* tasks.readMany(principal.userId, ids.value, "midjourney")
          return HttpServerResponse.jsonUnsafe(found.map((task) => encodeMjTask(mjTaskViewOf(task, origin))))
        }).pipe(respondWith(encodeMjError))

      const image = (taskId: string) =>
        Effect.gen(function* () {
          const opened = yield* relay.image(taskId)
          return HttpServerResponse.stream(opened.body, {
            contentType: opened.contentType,
            headers: {
              "cache-control": "private, max-age=3600",
              "x-content-type-options": "nosniff",
              "content-security-policy": "default-src 'none'"
            }
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
    () => Effect.flatMap(HttpRouter.params, (params) => mj.image(params.id ?? ""))
  )
}))
