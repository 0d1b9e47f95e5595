/**
 * The video routes (spec "Endpoints: Video"): `POST /v1/videos` (JSON, or
 * `multipart/form-data` as the official `openai` SDK's `videos.create` sends
 * it), `GET /v1/videos/{task_id}`, `POST /v1/videos/{video_id}/remix`,
 * `GET /v1/videos` and `DELETE /v1/videos/{video_id}` (the caller's own
 * video tasks, as the `openai` SDK's `videos.list` and `videos.delete` reach
 * them),
 * `GET /v1/videos/{task_id}/content` (the bytes streamed from the vendor,
 * `Range` honoured, by the `VideoContentRelay`, served as the type they are
 * sniffed to be with `safeMediaHeaders`; `HEAD` answers the same status and headers without a body), `POST /v1/video/generations`
 * and `GET /v1/video/generations/{task_id}` (the unified shapes). Every route
 * takes a Bearer key or, when none is sent, the browser session (the console
 * playground: `SessionCaller.ts`, same-origin proof on a submit, billed to the
 * playground token; the content route reads the session's own tasks). Thin: the
 * body is decoded with the model family's rules, the `VideoRelay` submits,
 * `CallerTasks` reads, lists and deletes (the caller's own tasks only: anyone
 * else's id is 404 `task_not_exist`; a stale task is polled on read).
 * Errors leave in the envelope the spec gives each route and family.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Result } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { DEFAULT_VIDEO_SECONDS, videoErrorEnvelope, type VideoFamily } from "../formats/videos/VideoFamilies.ts"
import type { Problem } from "../domain/Problem.ts"
import { encodeOpenAiError } from "../formats/openai/shared/ErrorBody.ts"
import {
  encodeUnifiedError,
  encodeUnifiedSubmit,
  encodeUnifiedTask,
  encodeVideoObject,
  type TaskView
} from "../formats/videos/VideoObject.ts"
import { decodeVideoListQuery, encodeVideoDeleted, encodeVideoList } from "../formats/videos/VideoList.ts"
import { decodeVideoRequest, type VideoRoute } from "../formats/videos/RequestDecoder.ts"
import { videoFormFields } from "../formats/videos/VideoForm.ts"
import { encodeVideoError } from "../formats/videos/ErrorBody.ts"
import { readFormData, readJsonObject } from "../http/Body.ts"
import { gatewayOriginOf } from "../http/ClientAddress.ts"
import { headerOf } from "../http/Credentials.ts"
import { respondWith } from "../http/Respond.ts"
import { safeMediaHeaders } from "../http/SafeMedia.ts"
import { type VideoContent, VideoContentRelay } from "../relay/videos/VideoContentRelay.ts"
import { VideoRelay } from "../relay/videos/VideoRelay.ts"
import { Auth } from "../services/Auth.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"
import { Sessions } from "../accounts/Sessions.ts"
import { Tokens } from "../accounts/Tokens.ts"
import { CallerTasks } from "../tasks/CallerTasks.ts"
import { taskViewOf } from "../tasks/TaskView.ts"
import type { Task } from "../tasks/TaskStore.ts"
import { Catalog, videoFamilyOf } from "../storage/Catalog.ts"
import { UserCaps } from "../services/UserCaps.ts"
import { bearerOrSession, bearerOrSessionUser, makeSessionCaller } from "./SessionCaller.ts"

/** A single `bytes=` range as the caller sent it, when it is one we forward. */
const rangeOf = (request: HttpServerRequest.HttpServerRequest): string | undefined => {
  const range = headerOf(request, "range")
  return range !== undefined && /^bytes=\d{0,15}-\d{0,15}$/.test(range.trim()) && range.trim() !== "bytes=-"
    ? range.trim()
    : undefined
}

/**
 * The content answer as the caller gets it: the vendor's status and byte
 * headers, the type the relay sniffed with the safe media headers
 * (`safeMediaHeaders`: `nosniff`, a sandboxing CSP, an attachment unless it
 * is a video type), never cached by a shared cache; for a `HEAD`, the same
 * status and headers without a body (the upstream's answer is aborted once
 * its first bytes are sniffed).
 */
const contentResponse = (answer: VideoContent, head: boolean): HttpServerResponse.HttpServerResponse => {
  const headers = {
    ...answer.headers,
    ...safeMediaHeaders("video", answer.mediaType),
    "cache-control": "private, no-store"
  }
  if (head) {
    answer.abort()
    return HttpServerResponse.empty({ status: answer.status, headers })
  }
  return HttpServerResponse.stream(answer.body, {
    status: answer.status,
    headers,
    contentLength: answer.contentLength
  })
}

/**
 * The submit body as the raw record the decoder reads: JSON, or (when
 * `allowForm`, on `POST /v1/videos`) a `multipart/form-data` form read with
 * the rules of its model's family (`familyOf`), within `maxBytes`.
 */
const rawBodyOf = (
  request: HttpServerRequest.HttpServerRequest,
  maxBytes: number,
  allowForm: boolean,
  familyOf: (model: unknown) => VideoFamily | undefined
) =>
  Effect.gen(function* () {
    if (allowForm && /^multipart\/form-data/i.test(headerOf(request, "content-type") ?? "")) {
      const form = yield* readFormData(request, maxBytes)
      return yield* videoFormFields(form, familyOf(form.get("model")))
    }
    return yield* readJsonObject(request, maxBytes)
  })

/**
 * A submit's error body: in the family's envelope (`videoErrorEnvelope`) once
 * the body named a model, the gateway's before; the unified submit's rate
 * limit in the flat `{code, message, data: null}` (spec "Errors").
 */
const submitErrorBody = (problem: Problem, family: VideoFamily | undefined, route: VideoRoute): unknown =>
  route === "unified" && problem.status === 429
    ? encodeUnifiedError(problem)
    : encodeVideoError(videoErrorEnvelope(family, route))(problem)

/** @category services */
export class Videos extends Context.Service<Videos, {
  /** `POST /v1/videos`: the video object of the new task. Never fails: errors in the family's envelope. */
  readonly create: (
    request: HttpServerRequest.HttpServerRequest
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  /** `GET /v1/videos/{task_id}`: the caller's task as the video object (404 `task_not_exist` otherwise). */
  readonly retrieve: (
    request: HttpServerRequest.HttpServerRequest,
    taskId: string
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  /** `POST /v1/videos/{video_id}/remix`: a new task on the original's channel; the video object. */
  readonly remix: (
    request: HttpServerRequest.HttpServerRequest,
    videoId: string
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  /** `GET /v1/videos/{task_id}/content`: the bytes streamed from the vendor (Bearer or browser session). */
  readonly content: (
    request: HttpServerRequest.HttpServerRequest,
    taskId: string
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  /** `GET /v1/videos`: the caller's video tasks as the `openai` SDK's `videos.list` pages them. */
  readonly list: (request: HttpServerRequest.HttpServerRequest) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  /** `DELETE /v1/videos/{video_id}`: deletes the caller's finished video task. */
  readonly remove: (
    request: HttpServerRequest.HttpServerRequest,
    videoId: string
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  /** `POST /v1/video/generations`: the unified submit response. */
  readonly unifiedSubmit: (
    request: HttpServerRequest.HttpServerRequest
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  /** `GET /v1/video/generations/{task_id}`: the unified wrapper; errors flat `{code, message, data: null}`. */
  readonly unifiedRetrieve: (
    request: HttpServerRequest.HttpServerRequest,
    taskId: string
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
}>()("sluice/routes/VideoRoutes/Videos") {
  /**
   * Needs Auth, Sessions, Tokens, GatewaySettings, Catalog, UserCaps, VideoRelay, VideoContentRelay and
   * CallerTasks.
   */
  static readonly layer = Layer.effect(
    Videos,
    Effect.gen(function* () {
      const auth = yield* Auth
      const sessions = yield* Sessions
      const settings = yield* GatewaySettings
      const catalog = yield* Catalog
      const relay = yield* VideoRelay
      const tasks = yield* CallerTasks
      const caps = yield* UserCaps
      const contentRelay = yield* VideoContentRelay
      const principalOf = bearerOrSession(auth, makeSessionCaller(sessions, yield* Tokens, auth))
      const userOf = bearerOrSessionUser(auth, sessions)
      const originOf = (request: HttpServerRequest.HttpServerRequest) => gatewayOriginOf(request, settings.publicUrl)
      const familyOf = (model: unknown): VideoFamily | undefined =>
        typeof model === "string" ? videoFamilyOf(catalog.snapshot(), model) : undefined

      /**
       * Authenticates, reads and decodes a submit body, and hands the request
       * to the relay with `respond` for the task made; errors by `submitErrorBody`.
       */
      const submitting = (
        request: HttpServerRequest.HttpServerRequest,
        route: VideoRoute,
        respond: (view: TaskView) => unknown,
        videoId?: string
      ) => {
        let family: VideoFamily | undefined
        return Effect.gen(function* () {
          const principal = yield* principalOf(request)
          const raw = yield* rawBodyOf(request, settings.maxBodyBytes, route === "videos", familyOf)
          // The `openai` SDK's `videos.remix` sends only `prompt`: the model is then the original task's (and an
          // original that is not the caller's is 404 `task_not_exist`, as with a model given).
          if (videoId !== undefined && raw.model === undefined) {
            raw.model = yield* tasks.modelOf(principal.userId, videoId)
          }
          family = familyOf(raw.model)
          const decoded = decodeVideoRequest(raw, family, route)
          if (Result.isFailure(decoded)) return yield* decoded.failure
          const input = {
            request: decoded.success,
            defaultSeconds: DEFAULT_VIDEO_SECONDS[family ?? "openai-video"],
            principal,
            respond: (task: Task) => HttpServerResponse.jsonUnsafe(respond(taskViewOf(task, originOf(request))))
          }
          return yield* caps.task(
            principal.userId,
            videoId === undefined ? relay.submit(input) : relay.remix(videoId, input)
          )
        }).pipe(respondWith((problem) => submitErrorBody(problem, family, route)))
      }

      /** The caller's video task `taskId` (polled when due) encoded by `encode`; errors by `encodeError`. */
      const reading = (
        request: HttpServerRequest.HttpServerRequest,
        taskId: string,
        encode: (view: TaskView) => unknown,
        encodeError: (problem: Problem) => unknown
      ) =>
        Effect.gen(function* () {
          const principal = yield* principalOf(request)
          const task = yield* tasks.read(principal.userId, taskId, "video")
          return HttpServerResponse.jsonUnsafe(encode(taskViewOf(task, originOf(request))))
        }).pipe(respondWith(encodeError))

      return Videos.of({
        create: (request) => submitting(request, "videos", encodeVideoObject),
        remix: (request, videoId) => submitting(request, "remix", encodeVideoObject, videoId),
        unifiedSubmit: (request) => submitting(request, "unified", encodeUnifiedSubmit),
        retrieve: (request, taskId) => reading(request, taskId, encodeVideoObject, encodeOpenAiError),
        unifiedRetrieve: (request, taskId) => reading(request, taskId, encodeUnifiedTask, encodeUnifiedError),
        content: (request, taskId) =>
          Effect.gen(function* () {
            const task = yield* tasks.read(yield* userOf(request), taskId, "video")
            return contentResponse(yield* contentRelay.open(task, rangeOf(request)), request.method === "HEAD")
          }).pipe(respondWith(encodeOpenAiError)),
        list: (request) =>
          Effect.gen(function* () {
            const principal = yield* principalOf(request)
            const query = decodeVideoListQuery(new URL(request.url, "http://gateway").searchParams)
            if (Result.isFailure(query)) return yield* query.failure
            const page = yield* tasks.videoPage(principal.userId, query.success)
            const origin = originOf(request)
            const views = page.tasks.map((task) => taskViewOf(task, origin))
            return HttpServerResponse.jsonUnsafe(encodeVideoList(views, page.hasMore))
          }).pipe(respondWith(encodeOpenAiError)),
        remove: (request, videoId) =>
          Effect.gen(function* () {
            const principal = yield* principalOf(request)
            yield* tasks.removeVideo(principal.userId, videoId)
            return HttpServerResponse.jsonUnsafe(encodeVideoDeleted(videoId))
          }).pipe(respondWith(encodeOpenAiError))
      })
    })
  )
}

/**
 * The video routes.
 *
 * @category routes
 */
export const VideoRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const videos = yield* Videos
  const param = Effect.map(HttpRouter.params, (params) => params.id ?? "")
  yield* router.add("POST", "/v1/videos", videos.create)
  yield* router.add("GET", "/v1/videos", videos.list)
  yield* router.add("DELETE", "/v1/videos/:id", (request) => Effect.flatMap(param, (id) => videos.remove(request, id)))
  yield* router.add("GET", "/v1/videos/:id", (request) => Effect.flatMap(param, (id) => videos.retrieve(request, id)))
  yield* router.add(
    "POST",
    "/v1/videos/:id/remix",
    (request) => Effect.flatMap(param, (id) => videos.remix(request, id))
  )
  yield* router.add(
    "GET",
    "/v1/videos/:id/content",
    (request) => Effect.flatMap(param, (id) => videos.content(request, id))
  )
  // HEAD is routed explicitly: the gateway's catch-all (`FallbackRoutes`) would answer it before the router's
  // HEAD-as-GET fallback.
  yield* router.addAll([
    HttpRouter.route(
      "HEAD",
      "/v1/videos/:id/content",
      (request) => Effect.flatMap(param, (id) => videos.content(request, id))
    )
  ])
  yield* router.add("POST", "/v1/video/generations", videos.unifiedSubmit)
  yield* router.add(
    "GET",
    "/v1/video/generations/:id",
    (request) => Effect.flatMap(param, (id) => videos.unifiedRetrieve(request, id))
  )
}))
