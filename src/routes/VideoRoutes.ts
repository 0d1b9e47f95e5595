/**
 * The video routes (spec "Endpoints: Video"): `POST /v1/videos` (JSON, or
 * `multipart/form-data` as the official `openai` SDK's `videos.create` sends
 * it), `GET /v1/videos/{task_id}`, `POST /v1/videos/{video_id}/remix`,
 * `GET /v1/videos` and `DELETE /v1/videos/{video_id}` (the caller's own
 * video tasks, as the `openai` SDK's `videos.list` and `videos.delete` reach
 * them, `VideoListing`),
 * `GET /v1/videos/{task_id}/content` (the bytes streamed from the vendor,
 * `Range` honoured, by the `VideoContentRelay`; `HEAD` answers the same status and headers without a body), `POST /v1/video/generations`
 * and `GET /v1/video/generations/{task_id}` (the unified shapes). Every route
 * takes a Bearer key or, when none is sent, the browser session (the console
 * playground: `SessionCaller.ts`, same-origin proof on a submit, billed to the
 * playground token; the content route reads the session's own tasks). Thin: the
 * body is decoded with the model family's rules, the `VideoRelay` submits,
 * the `TaskStore` reads (the caller's own tasks only: anyone else's id is
 * 404 `task_not_exist`), the `TaskPoller` refreshes a stale task on read.
 * Errors leave in the envelope the spec gives each route and family.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { DEFAULT_VIDEO_SECONDS, videoErrorEnvelope, type VideoFamily } from "../formats/videos/VideoFamilies.ts"
import { InvalidApiKey, InvalidRequest, NotFound } from "../errors/GatewayError.ts"
import { encodeOpenAiError } from "../formats/openai/shared/ErrorBody.ts"
import {
  encodeUnifiedError,
  encodeUnifiedSubmit,
  encodeUnifiedTask,
  encodeVideoObject,
  type TaskView
} from "../formats/videos/VideoObject.ts"
import { decodeVideoRequest, videoFormFields, type VideoRoute } from "../formats/videos/RequestDecoder.ts"
import { encodeVideoError } from "../formats/videos/ErrorBody.ts"
import { readFormData, readJsonObject } from "../http/Body.ts"
import { clientAddressOf, hostOf, schemeOf } from "../http/ClientAddress.ts"
import { credentialOf, headerOf } from "../http/Credentials.ts"
import { respondWith } from "../http/Respond.ts"
import { VideoContentRelay } from "../relay/VideoContentRelay.ts"
import { VideoRelay } from "../relay/VideoRelay.ts"
import { Auth } from "../services/Auth.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"
import { Sessions } from "../accounts/Sessions.ts"
import { Tokens } from "../accounts/Tokens.ts"
import { TaskPoller } from "../tasks/TaskPoller.ts"
import type { Task } from "../tasks/TaskStore.ts"
import { TaskStore } from "../tasks/TaskStore.ts"
import { VideoListing } from "../tasks/VideoListing.ts"
import { Catalog, videoFamilyOf } from "../storage/Catalog.ts"
import { sessionCookieOf } from "./api/Api.ts"
import { UserCaps } from "../services/UserCaps.ts"
import { bearerOrSession, makeSessionCaller } from "./SessionCaller.ts"

/**
 * The gateway's base address for the content URL: the configured public URL
 * (`settings.public_url`, for a gateway behind a proxy), else the scheme and
 * host a trusted proxy forwarded, else the request's own origin.
 *
 * @category views
 */
export const originOf = (request: HttpServerRequest.HttpServerRequest, publicUrl: string | undefined): string => {
  if (publicUrl !== undefined) return publicUrl
  const host = hostOf(request)
  if (host !== undefined && /^[A-Za-z0-9.:[\]-]{1,255}$/.test(host)) return `${schemeOf(request)}://${host}`
  try {
    return request.source instanceof Request ? new URL(request.source.url).origin : ""
  } catch {
    return ""
  }
}

/**
 * A stored task as the public shapes read it; the URL is this gateway's
 * content route (never the vendor's).
 *
 * @category views
 */
export const taskViewOf = (task: Task, origin: string): TaskView => {
  const request = task.request
  return {
    id: task.publicId,
    model: task.model,
    status: task.status,
    progress: task.progress,
    createdAt: Math.floor(task.createdAt / 1000),
    completedAt: task.completedAt === null ? null : Math.floor(task.completedAt / 1000),
    seconds: typeof request.seconds === "number" ? request.seconds : undefined,
    size: typeof request.size === "string"
      ? request.size
      : typeof request.aspectRatio === "string"
      ? request.aspectRatio
      : undefined,
    prompt: typeof request.prompt === "string" ? request.prompt : undefined,
    url: task.status === "completed" ? `${origin}/v1/videos/${task.publicId}/content` : null,
    error: task.errorCode === null ? null : { code: task.errorCode, message: task.errorMessage ?? "" },
    actual: {
      seconds: task.result?.seconds,
      width: task.result?.width,
      height: task.result?.height,
      fps: task.result?.fps,
      usage: task.result?.usage
    },
    remixOf: typeof request.remixOf === "string" ? request.remixOf : undefined,
    mini: task.model === "mini-2.0" || task.publicId.startsWith("mini-2.0_")
  }
}

/** A single `bytes=` range as the caller sent it, when it is one we forward. */
const rangeOf = (request: HttpServerRequest.HttpServerRequest): string | undefined => {
  const range = headerOf(request, "range")
  return range !== undefined && /^bytes=\d{0,15}-\d{0,15}$/.test(range.trim()) && range.trim() !== "bytes=-"
    ? range.trim()
    : undefined
}

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
  /** Needs Auth, Sessions, Tokens, GatewaySettings, Catalog, VideoRelay, VideoContentRelay, TaskStore and TaskPoller. */
  static readonly layer = Layer.effect(
    Videos,
    Effect.gen(function* () {
      const auth = yield* Auth
      const sessions = yield* Sessions
      const settings = yield* GatewaySettings
      const catalog = yield* Catalog
      const relay = yield* VideoRelay
      const store = yield* TaskStore
      const caps = yield* UserCaps
      const poller = yield* TaskPoller
      const contentRelay = yield* VideoContentRelay

      const familyOf = (model: unknown): VideoFamily | undefined =>
        typeof model === "string" ? videoFamilyOf(catalog.snapshot(), model) : undefined

      /** The body as the raw record the decoder reads (JSON, or a form on `POST /v1/videos`). */
      const rawBody = (request: HttpServerRequest.HttpServerRequest, allowForm: boolean) =>
        Effect.gen(function* () {
          const contentType = headerOf(request, "content-type") ?? ""
          if (allowForm && /^multipart\/form-data/i.test(contentType)) {
            const form = yield* readFormData(request, settings.maxBodyBytes)
            const model = form.get("model")
            return yield* videoFormFields(form, familyOf(typeof model === "string" ? model : undefined))
          }
          return yield* readJsonObject(request, settings.maxBodyBytes)
        })

      const principalOf = bearerOrSession(auth, makeSessionCaller(sessions, yield* Tokens, auth))

      /**
       * Authenticates, reads and decodes a submit body, and hands the request
       * to the relay with `respond` for the task made. Errors leave in the
       * route's envelope: the family's (`videoErrorEnvelope`) once the body
       * names a model, the gateway's before; the unified submit's rate limit
       * in the flat `{code, message, data: null}` (spec "Errors").
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
          const raw = yield* rawBody(request, route === "videos")
          // The `openai` SDK's `videos.remix` sends only `prompt`: the model is then the original task's (and an
          // original that is not the caller's is 404 `task_not_exist`, as with a model given).
          if (videoId !== undefined && raw.model === undefined) {
            raw.model = (yield* store.find(videoId, principal.userId)).model
          }
          family = familyOf(raw.model)
          const decoded = decodeVideoRequest(raw, family, route)
          if (!decoded.ok) return yield* decoded.error
          const origin = originOf(request, settings.publicUrl)
          const input = {
            request: decoded.value,
            defaultSeconds: DEFAULT_VIDEO_SECONDS[family ?? "openai-video"],
            principal,
            respond: (task: Task) => HttpServerResponse.jsonUnsafe(respond(taskViewOf(task, origin)))
          }
          return yield* caps.task(
            principal.userId,
            videoId === undefined ? relay.submit(input) : relay.remix(videoId, input)
          )
        }).pipe(
          respondWith((problem) =>
            route === "unified" && problem.status === 429
              ? encodeUnifiedError(problem)
              : encodeVideoError(videoErrorEnvelope(family, route))(problem)
          )
        )
      }

      const create = (request: HttpServerRequest.HttpServerRequest) => submitting(request, "videos", encodeVideoObject)

      const remix = (request: HttpServerRequest.HttpServerRequest, videoId: string) =>
        submitting(request, "remix", encodeVideoObject, videoId)

      const unifiedSubmit = (request: HttpServerRequest.HttpServerRequest) =>
        submitting(request, "unified", encodeUnifiedSubmit)

      /** The caller's video task `taskId`, polled first when its poll is due. */
      const readTask = (userId: bigint, taskId: string) =>
        Effect.gen(function* () {
          const task = yield* store.find(taskId, userId)
          if (task.kind !== "video") return yield* new NotFound({ what: "task", id: taskId.slice(0, 100) })
          return yield* poller.refresh(task)
        })

      const retrieve = (request: HttpServerRequest.HttpServerRequest, taskId: string) =>
        Effect.gen(function* () {
          const principal = yield* principalOf(request)
          const task = yield* readTask(principal.userId, taskId)
          return HttpServerResponse.jsonUnsafe(
            encodeVideoObject(taskViewOf(task, originOf(request, settings.publicUrl)))
          )
        }).pipe(respondWith(encodeOpenAiError))

      const unifiedRetrieve = (request: HttpServerRequest.HttpServerRequest, taskId: string) =>
        Effect.gen(function* () {
          const principal = yield* principalOf(request)
          const task = yield* readTask(principal.userId, taskId)
          return HttpServerResponse.jsonUnsafe(
            encodeUnifiedTask(taskViewOf(task, originOf(request, settings.publicUrl)))
          )
        }).pipe(respondWith((problem) => encodeUnifiedError(problem)))

      /** The caller of the content route: the Bearer key's user, else the browser session's. */
      const ownerOf = (request: HttpServerRequest.HttpServerRequest) =>
        Effect.gen(function* () {
          const key = credentialOf("bearer", request)
          if (key !== undefined) return (yield* auth.authenticate(key, clientAddressOf(request))).userId
          const cookie = sessionCookieOf(request)
          if (cookie === "") return yield* new InvalidApiKey({ reason: "missing" })
          const session = yield* sessions.resolve(cookie)
          if (session._tag === "None") return yield* new InvalidApiKey({ reason: "expired" })
          return session.value.id
        })

      const content = (request: HttpServerRequest.HttpServerRequest, taskId: string) =>
        Effect.gen(function* () {
          // HEAD: the GET's answer without its body (which is not read upstream either).
          const head = request.method === "HEAD"
          const userId = yield* ownerOf(request)
          const task = yield* readTask(userId, taskId)
          const answer = yield* contentRelay.open(task, rangeOf(request))
          if (head) {
            // HEAD: the same status and headers, no body; the upstream's answer is not read.
            answer.abort()
            return HttpServerResponse.empty({
              status: answer.status,
              headers: { ...answer.headers, "cache-control": "private, no-store" }
            })
          }
          return HttpServerResponse.stream(answer.body, {
            status: answer.status,
            headers: { ...answer.headers, "cache-control": "private, no-store" },
            contentType: answer.headers["content-type"],
            contentLength: answer.contentLength
          })
        }).pipe(respondWith(encodeOpenAiError))

      const listing = yield* VideoListing

      const list = (request: HttpServerRequest.HttpServerRequest) =>
        Effect.gen(function* () {
          const principal = yield* principalOf(request)
          const query = new URL(request.url, "http://gateway").searchParams
          const limitText = query.get("limit") ?? "20"
          const limit = /^\d{1,3}$/.test(limitText) ? Number(limitText) : NaN
          if (!(limit >= 1 && limit <= 100)) {
            return yield* new InvalidRequest({ message: "limit must be a whole number from 1 to 100.", param: "limit" })
          }
          const order = query.get("order") ?? "desc"
          if (order !== "asc" && order !== "desc") {
            return yield* new InvalidRequest({ message: "order must be asc or desc.", param: "order" })
          }
          const after = query.get("after") ?? undefined
          const page = yield* listing.page(principal.userId, { after, limit, order })
          const origin = originOf(request, settings.publicUrl)
          const data = yield* Effect.forEach(page.ids, (id) =>
            store.find(id, principal.userId).pipe(Effect.map((task) =>
              encodeVideoObject(taskViewOf(task, origin))
            )))
          return HttpServerResponse.jsonUnsafe({
            object: "list",
            data,
            first_id: page.ids[0] ?? null,
            last_id: page.ids.at(-1) ?? null,
            has_more: page.hasMore
          })
        }).pipe(respondWith(encodeOpenAiError))

      const remove = (request: HttpServerRequest.HttpServerRequest, videoId: string) =>
        Effect.gen(function* () {
          const principal = yield* principalOf(request)
          yield* listing.remove(principal.userId, videoId)
          return HttpServerResponse.jsonUnsafe({ id: videoId, object: "video.deleted", deleted: true })
        }).pipe(respondWith(encodeOpenAiError))

      return Videos.of({ create, retrieve, remix, content, list, remove, unifiedSubmit, unifiedRetrieve })
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
