/**
 * Kling's own video routes, with the gateway's Bearer keys (spec "Endpoints:
 * Referenced but not shown": `/<video-vendor>/v1/*` routes use Bearer
 * authentication): `POST /kling/v1/videos/text2video`, `POST
 * /kling/v1/videos/image2video`, and `GET /kling/v1/videos/{text2video |
 * image2video}/{task_id}`, in Kling's `{code, message, request_id, data}`
 * envelope (`formats/kling/videos/ResponseCodec.ts`). A Kling-shaped body is
 * decoded into the canonical video request (`formats/kling/videos/
 * RequestDecoder.ts`) and submitted by the `VideoRelay` on any video channel
 * that serves the model (a `kling` channel, or `openai`, `ark`, `gemini`),
 * billed as every video task. The task id is the gateway's public id: the
 * same task reads through `GET /v1/videos/{id}`, the unified route, and
 * either Kling query path (the caller's own tasks only, read through
 * `CallerTasks`: another's id is 404 code 1203). Errors leave in Kling's envelope with Kling's HTTP status and
 * service code, and `param` naming the field.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Result } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import type { GatewayError } from "../errors/GatewayError.ts"
import { internalProblem, toProblem } from "../errors/Envelope.ts"
import { decodeKlingRequest } from "../formats/kling/videos/RequestDecoder.ts"
import { encodeKlingError, encodeKlingTask, klingErrorCode } from "../formats/kling/videos/ResponseCodec.ts"
import { KLING_DEFAULT_SECONDS, type KlingAction } from "../formats/kling/videos/Wire.ts"
import { readJsonObject } from "../http/Body.ts"
import { clientAddressOf, gatewayOriginOf } from "../http/ClientAddress.ts"
import { credentialOf } from "../http/Credentials.ts"
import { errorHeaders, reportFailure } from "../http/Respond.ts"
import { VideoRelay } from "../relay/videos/VideoRelay.ts"
import { Auth } from "../services/Auth.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"
import { UserCaps } from "../services/UserCaps.ts"
import { CallerTasks } from "../tasks/CallerTasks.ts"
import { klingViewOf } from "./KlingTaskView.ts"

/** A fresh id for one request, as Kling's `request_id`. */
const newRequestId = (): string => crypto.randomUUID()

/**
 * Recovers every failure (and defect) of `effect` as Kling's error envelope
 * with Kling's HTTP status (`klingErrorCode`) and the gateway's error headers.
 */
const respondKling = (requestId: string) =>
<R>(
  effect: Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R> =>
  effect.pipe(
    Effect.catch((error: GatewayError) => {
      const problem = toProblem(error)
      return Effect.as(
        reportFailure(error),
        HttpServerResponse.jsonUnsafe(encodeKlingError(problem, requestId), {
          status: klingErrorCode(problem).status,
          headers: errorHeaders(error)
        })
      )
    }),
    Effect.catchDefect((defect) =>
      Effect.logError("Request failed with a defect", defect).pipe(
        Effect.as(HttpServerResponse.jsonUnsafe(encodeKlingError(internalProblem, requestId), { status: 500 }))
      )
    )
  )

/** @category services */
export class Kling extends Context.Service<Kling, {
  /** `POST /kling/v1/videos/{action}`: the new task in Kling's envelope. Never fails. */
  readonly create: (
    request: HttpServerRequest.HttpServerRequest,
    action: KlingAction
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  /** `GET /kling/v1/videos/{action}/{task_id}`: the caller's task in Kling's envelope. Never fails. */
  readonly retrieve: (
    request: HttpServerRequest.HttpServerRequest,
    taskId: string
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
}>()("sluice/routes/KlingRoutes/Kling") {
  /** Needs Auth, GatewaySettings, UserCaps, VideoRelay and CallerTasks. */
  static readonly layer = Layer.effect(
    Kling,
    Effect.gen(function* () {
      const auth = yield* Auth
      const settings = yield* GatewaySettings
      const caps = yield* UserCaps
      const relay = yield* VideoRelay
      const tasks = yield* CallerTasks

      const principalOf = (request: HttpServerRequest.HttpServerRequest) =>
        auth.authenticate(credentialOf("bearer", request), clientAddressOf(request))

      const create = (request: HttpServerRequest.HttpServerRequest, action: KlingAction) => {
        const requestId = newRequestId()
        return Effect.gen(function* () {
          const principal = yield* principalOf(request)
          const body = yield* readJsonObject(request, settings.maxBodyBytes)
          const decoded = decodeKlingRequest(body, action)
          if (Result.isFailure(decoded)) return yield* decoded.failure
          const origin = gatewayOriginOf(request, settings.publicUrl)
          return yield* caps.task(
            principal.userId,
            relay.submit({
              request: decoded.success,
              defaultSeconds: decoded.success.seconds ?? KLING_DEFAULT_SECONDS,
              principal,
              respond: (task) => HttpServerResponse.jsonUnsafe(encodeKlingTask(klingViewOf(task, origin), requestId))
            })
          )
        }).pipe(respondKling(requestId))
      }

      const retrieve = (request: HttpServerRequest.HttpServerRequest, taskId: string) => {
        const requestId = newRequestId()
        return Effect.gen(function* () {
          const principal = yield* principalOf(request)
          const task = yield* tasks.read(principal.userId, taskId, "video")
          return HttpServerResponse.jsonUnsafe(
            encodeKlingTask(klingViewOf(task, gatewayOriginOf(request, settings.publicUrl)), requestId)
          )
        }).pipe(respondKling(requestId))
      }

      return Kling.of({ create, retrieve })
    })
  )
}

/**
 * The Kling-shaped video routes.
 *
 * @category routes
 */
export const KlingRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const kling = yield* Kling
  const param = Effect.map(HttpRouter.params, (params) => params.id ?? "")
  for (const action of ["text2video", "image2video"] as const) {
    yield* router.add("POST", `/kling/v1/videos/${action}`, (request) => kling.create(request, action))
    yield* router.add(
      "GET",
      `/kling/v1/videos/${action}/:id`,
      (request) => Effect.flatMap(param, (id) => kling.retrieve(request, id))
    )
  }
}))
