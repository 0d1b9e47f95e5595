/**
 * The async image routes (spec "Endpoints: Images"):
 * `POST /v1/images/generations/async` takes the sync route's body (decoded
 * with the model family's rules) and answers `{id, task_id}` at once;
 * `GET /v1/images/generations/async/{taskId}` answers the task's status and,
 * once completed, the sync route's `data[]` (`encodeImageTask`). Bearer auth,
 * or the browser session when no key is sent (the console playground,
 * `SessionCaller.ts`);
 * a task is its owner's only (anyone else: 404 `task_not_exist`). Errors leave
 * in the gateway envelope.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Result } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { NotFound } from "../errors/GatewayError.ts"
import { decodeImageRequest } from "../formats/images/Wires.ts"
import { encodeOpenAiError } from "../formats/openai/shared/ErrorBody.ts"
import { encodeImageTask } from "../formats/videos/VideoObject.ts"
import { gatewayOriginOf } from "../http/ClientAddress.ts"
import { readJsonObject } from "../http/Body.ts"
import { respondWith } from "../http/Respond.ts"
import { ImageTaskRelay } from "../relay/images/ImageTaskRelay.ts"
import { Auth } from "../services/Auth.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"
import { Sessions } from "../accounts/Sessions.ts"
import { Tokens } from "../accounts/Tokens.ts"
import { TaskStore } from "../tasks/TaskStore.ts"
import { Catalog, imageFamilyOf } from "../storage/Catalog.ts"
import { UserCaps } from "../services/UserCaps.ts"
import { bearerOrSession, makeSessionCaller } from "./SessionCaller.ts"
import { taskViewOf } from "../tasks/TaskView.ts"

/** @category services */
export class ImageTasks extends Context.Service<ImageTasks, {
  /** `POST /v1/images/generations/async`. Never fails: errors are rendered in the gateway envelope. */
  readonly submit: (
    request: HttpServerRequest.HttpServerRequest
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  /** `GET /v1/images/generations/async/{taskId}`. Never fails. */
  readonly retrieve: (
    request: HttpServerRequest.HttpServerRequest,
    taskId: string
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
}>()("sluice/routes/TaskImageRoutes/ImageTasks") {
  /** Needs Auth, Sessions, Tokens, GatewaySettings, Catalog, ImageTaskRelay, TaskStore and UserCaps. */
  static readonly layer = Layer.effect(
    ImageTasks,
    Effect.gen(function* () {
      const auth = yield* Auth
      const settings = yield* GatewaySettings
      const catalog = yield* Catalog
      const relay = yield* ImageTaskRelay
      const store = yield* TaskStore
      const caps = yield* UserCaps
      const callerOf = bearerOrSession(auth, makeSessionCaller(yield* Sessions, yield* Tokens, auth))

      const submit = (request: HttpServerRequest.HttpServerRequest) =>
        Effect.gen(function* () {
          const principal = yield* callerOf(request)
          const raw = yield* readJsonObject(request, settings.maxBodyBytes)
          const family = typeof raw.model === "string" ? imageFamilyOf(catalog.snapshot(), raw.model) : undefined
          const decoded = decodeImageRequest(raw, family)
          if (Result.isFailure(decoded)) return yield* decoded.failure
          return yield* caps.task(
            principal.userId,
            relay.submit(
              {
                request: decoded.success,
                family,
                principal,
                contentBase: gatewayOriginOf(request, settings.publicUrl)
              },
              (task) => HttpServerResponse.jsonUnsafe({ id: task.publicId, task_id: task.publicId })
            )
          )
        }).pipe(respondWith(encodeOpenAiError))

      const retrieve = (request: HttpServerRequest.HttpServerRequest, taskId: string) =>
        Effect.gen(function* () {
          const principal = yield* callerOf(request)
          const task = yield* store.find(taskId, principal.userId)
          if (task.kind !== "image") return yield* new NotFound({ what: "task", id: taskId.slice(0, 100) })
          return HttpServerResponse.jsonUnsafe(encodeImageTask(taskViewOf(task, ""), task.publicResult))
        }).pipe(respondWith(encodeOpenAiError))

      return ImageTasks.of({ submit, retrieve })
    })
  )
}

/**
 * `POST /v1/images/generations/async` and `GET /v1/images/generations/async/{taskId}`.
 *
 * @category routes
 */
export const TaskImageRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const tasks = yield* ImageTasks
  yield* router.add("POST", "/v1/images/generations/async", tasks.submit)
  yield* router.add(
    "GET",
    "/v1/images/generations/async/:id",
    (request) => Effect.flatMap(HttpRouter.params, (params) => tasks.retrieve(request, params.id ?? ""))
  )
}))
