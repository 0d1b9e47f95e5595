/**
 * The emulator's Ark content generation tasks for video (Volcengine Ark
 * volcengine.com/docs/82379/1520758; BytePlus ModelArk
 * docs.byteplus.com/en/docs/ModelArk/1520757 "Video Generation API": create
 * and query a video generation task), over the shared task store of
 * `VideoTasks.ts`, errors in Ark's `{error: {code, message, param, type}}`
 * (docs.byteplus.com/en/docs/ModelArk/1299023):
 *
 * - `POST /api/v3/contents/generations/tasks` → `{id}` (`cgt-<yyyyMMddHHmmss>-<5>`).
 *   `model` required; `content[]` of `{type: "text", text}` (at most one),
 *   `{type: "image_url", image_url: {url}, role?}` with role `first_frame` |
 *   `last_frame` | `reference_image` (a `last_frame` needs a `first_frame`;
 *   frames and reference images do not mix; at most 9 reference images),
 *   `{type: "video_url", video_url: {url}, role: "reference_video"}` (at most
 *   3) and `{type: "audio_url", audio_url: {url}, role: "reference_audio"}`
 *   (at most 3); a URL is `http(s)://`, `asset://<id>` or a Base64 `data:`
 *   URI; text or at least one image. `ratio` `16:9` | `4:3` | `1:1` | `3:4` |
 *   `9:16` | `21:9` | `adaptive`; `duration` a whole 2–15 or -1 (the model
 *   picks; 5); `resolution` `480p` | `720p` | `1080p`; `watermark`,
 *   `generate_audio`, `camera_fixed`, `return_last_frame`, `draft` booleans;
 *   `seed` a whole -1…4294967295; `execution_expires_after` 3600–259200 s.
 *   Other fields are ignored.
 * - `GET /api/v3/contents/generations/tasks/{id}` → `{id, model, status:
 *   queued|running|succeeded|failed|cancelled|expired, error, created_at,
 *   updated_at, content?: {video_url}, usage?: {completion_tokens,
 *   total_tokens}, seed, resolution, ratio, duration, framespersecond,
 *   generate_audio, draft, service_tier, execution_expires_after}`. Tokens are
 *   width × height × frames ÷ 1024 with 24 frames a second plus one (the
 *   vendor's sample: 720p 16:9, 5 s → 108,900). Failures carry `error {code,
 *   message}`: `OutputVideoSensitiveContentDetected` for the `unsafe` marker,
 *   `InternalServiceError` for `broken`; the `expire` marker leaves a task
 *   queued until it is `expired`.
 * - `DELETE /api/v3/contents/generations/tasks/{id}` → `{}`: cancels a queued
 *   task (`cancelled`), deletes the record of a finished one; a running one
 *   cannot be cancelled (400).
 * - `content.video_url` is `GET /_emulator/videos/<token>.mp4` on the emulator,
 *   an unguessable path served without the key (as Ark's signed object URLs
 *   are) for 24 hours after the task finished ("valid for 24 hours").
 *
 * @since 0.1.0
 */
import { mp4For } from "./Mp4.ts"
import { jsonReply, type Reply } from "./Sse.ts"
import { bytesWithRange } from "./VideoContent.ts"
import { randomHex, type VideoTask, type VideoTasks } from "./VideoTasks.ts"
import { KLING_URL_LIFETIME_MS } from "./VideosKling.ts"
import { MAX_VIDEO_PROMPT } from "./VideosOpenAi.ts"
import { isObject, type JsonObject, objectOr, type RouteContext } from "./Wire.ts"

/** How long a finished task's `video_url` serves its bytes, in milliseconds (Ark: 24 hours). @category constants */
export const ARK_URL_LIFETIME_MS = 24 * 3600 * 1000

const bad = (message: string, param: string): Reply =>
  jsonReply({ error: { code: "InvalidParameter", message, param, type: "BadRequest" } }, 400)

const invalid = (param: string): Reply =>
  bad(`The parameter \`${param}\` specified in the request is not valid.`, param)

const RATIOS = ["16:9", "4:3", "1:1", "3:4", "9:16", "21:9"]
const RESOLUTIONS = ["480p", "720p", "1080p"]
const BOOLEANS = ["watermark", "generate_audio", "camera_fixed", "return_last_frame", "draft"]
const MEDIA_URL = /^(https?:\/\/|asset:\/\/|data:(image|video|audio)\/[\w.+-]+;base64,)/

/** Frame sizes per resolution and ratio, `[width, height]`. */
const FRAME: Record<string, Record<string, readonly [number, number]>> = {
  "480p": {
    "16:9": [864, 480],
    "4:3": [736, 544],
    "1:1": [640, 640],
    "3:4": [544, 736],
    "9:16": [480, 864],
    "21:9": [960, 416]
  },
  "720p": {
    "16:9": [1280, 720],
    "4:3": [1112, 834],
    "1:1": [960, 960],
    "3:4": [834, 1112],
    "9:16": [720, 1280],
    "21:9": [1470, 630]
  },
  "1080p": {
    "16:9": [1920, 1080],
    "4:3": [1664, 1248],
    "1:1": [1440, 1440],
    "3:4": [1248, 1664],
    "9:16": [1080, 1920],
    "21:9": [2176, 928]
  }
}

/** An Ark task id: `cgt-` + the UTC time to the second + `-` + five random characters. */
const taskId = (now: Date): string =>
  `cgt-${now.toISOString().replace(/[-:T]/g, "").slice(0, 14)}-${randomHex(3).slice(0, 5)}`

const whole = (value: unknown, low: number, high: number): boolean =>
  typeof value === "number" && Number.isInteger(value) && value >= low && value <= high

/** The media items of `content[]` checked, and the prompt; or an error reply. */
const readContent = (content: unknown): { readonly prompt: string; readonly media: JsonObject } | Reply => {
  if (!Array.isArray(content) || content.length === 0 || content.length > 32) return invalid("content")
  const texts: Array<string> = []
  const roles: Record<string, number> = {}
  for (const item of content) {
    if (!isObject(item)) return invalid("content")
    const type = item.type
    if (type === "text") {
      if (typeof item.text !== "string") return invalid("content.text")
      texts.push(item.text)
      continue
    }
    if (type !== "image_url" && type !== "video_url" && type !== "audio_url") return invalid("content.type")
    const url = objectOr(item[type]).url
    if (typeof url !== "string" || !MEDIA_URL.test(url) || url.length > 10_000_000) {
      return invalid(`content.${type}.url`)
    }
    const role = item.role ?? (type === "image_url" ? "first_frame" : undefined)
    const allowed = type === "image_url"
      ? ["first_frame", "last_frame", "reference_image"]
      : type === "video_url"
      ? ["reference_video"]
      : ["reference_audio"]
    if (typeof role !== "string" || !allowed.includes(role)) return invalid("content.role")
    roles[role] = (roles[role] ?? 0) + 1
  }
  if (texts.length > 1) return invalid("content.text")
  const frames = (roles.first_frame ?? 0) + (roles.last_frame ?? 0)
  if ((roles.first_frame ?? 0) > 1 || (roles.last_frame ?? 0) > 1) return invalid("content.role")
  if (roles.last_frame !== undefined && roles.first_frame === undefined) return invalid("content.role")
  if (frames > 0 && (roles.reference_image ?? 0) > 0) return invalid("content.role")
  if ((roles.reference_image ?? 0) > 9) return invalid("content.image_url")
  if ((roles.reference_video ?? 0) > 3) return invalid("content.video_url")
  if ((roles.reference_audio ?? 0) > 3) return invalid("content.audio_url")
  const prompt = texts[0] ?? ""
  if (prompt.length === 0 && frames + (roles.reference_image ?? 0) === 0) return invalid("content.text")
  if (prompt.length > MAX_VIDEO_PROMPT) return invalid("content.text")
  return { prompt, media: roles }
}

/** `POST /api/v3/contents/generations/tasks`. @category routes */
export const arkVideoCreate = (context: RouteContext): Reply => {
  const body = context.body
  if (typeof body.model !== "string" || body.model.length === 0 || body.model.length > 200) {
    return bad("The request failed because it is missing one or multiple required parameters: model.", "model")
  }
  const read = readContent(body.content)
  if ("_tag" in read) return read
  const ratio = body.ratio ?? "adaptive"
  if (typeof ratio !== "string" || (ratio !== "adaptive" && !RATIOS.includes(ratio))) return invalid("ratio")
  const duration = body.duration ?? 5
  if (duration !== -1 && !whole(duration, 2, 15)) return invalid("duration")
  const resolution = body.resolution ?? "720p"
  if (typeof resolution !== "string" || !RESOLUTIONS.includes(resolution)) return invalid("resolution")
  for (const name of BOOLEANS) {
    if (body[name] !== undefined && typeof body[name] !== "boolean") return invalid(name)
  }
  if (body.seed !== undefined && !whole(body.seed, -1, 4_294_967_295)) return invalid("seed")
  const expiresAfter = body.execution_expires_after ?? 172_800
  if (!whole(expiresAfter, 3600, 259_200)) return invalid("execution_expires_after")
  const actualRatio = ratio === "adaptive" ? "16:9" : ratio
  const [width, height] = FRAME[resolution][actualRatio]
  const seconds = duration === -1 ? 5 : Number(duration)
  const task = context.videos.add({
    id: taskId(new Date()),
    vendor: "ark",
    model: body.model,
    prompt: read.prompt,
    seconds,
    size: `${width}x${height}`,
    extras: {
      ratio: actualRatio,
      resolution,
      seed: typeof body.seed === "number" && body.seed >= 0 ? body.seed : Math.floor(Math.random() * 100_000),
      generate_audio: body.generate_audio ?? true,
      draft: body.draft ?? false,
      service_tier: typeof body.service_tier === "string" ? body.service_tier.slice(0, 20) : "default",
      execution_expires_after: expiresAfter
    }
  })
  return jsonReply({ id: task.id })
}

const STATUS: Record<string, string> = {
  queued: "queued",
  running: "running",
  succeeded: "succeeded",
  failed: "failed",
  cancelled: "cancelled",
  expired: "expired"
}

/** The emulator's URL of `task`'s bytes. */
const videoUrl = (context: RouteContext, task: VideoTask): string =>
  `http://${context.headers.get("host") ?? "127.0.0.1"}/_emulator/videos/${task.contentToken}.mp4`

/**
 * The task object of `task` at `now` (epoch milliseconds), as Ark's query
 * answers it.
 *
 * @category rendering
 */
export const arkTaskObject = (context: RouteContext, task: VideoTask, now: number): JsonObject => {
  const state = context.videos.stateOf(task, now)
  const status = STATUS[state.phase]
  const updated = state.finishedAt ??
    (state.phase === "running" ? task.createdAt + context.videos.stepMs : task.createdAt)
  const [width, height] = task.size.split("x").map(Number)
  const tokens = Math.floor((width * height * (24 * task.seconds + 1)) / 1024)
  return {
    id: task.id,
    model: task.model,
    status,
    error: state.phase !== "failed" ? null : task.outcome === "content_policy"
      ? {
        code: "OutputVideoSensitiveContentDetected",
        message: "The request failed because the output video may contain sensitive information."
      }
      : { code: "InternalServiceError", message: "The service encountered an unexpected internal error." },
    created_at: Math.floor(task.createdAt / 1000),
    updated_at: Math.floor(updated / 1000),
    ...(status === "succeeded"
      ? {
        content: { video_url: videoUrl(context, task) },
        usage: { completion_tokens: tokens, total_tokens: tokens }
      }
      : {}),
    seed: task.extras.seed,
    resolution: task.extras.resolution,
    ratio: task.extras.ratio,
    duration: task.seconds,
    framespersecond: 24,
    generate_audio: task.extras.generate_audio,
    draft: task.extras.draft,
    service_tier: task.extras.service_tier,
    execution_expires_after: task.extras.execution_expires_after
  }
}

const notFound = (id: string): Reply =>
  jsonReply({
    error: {
      code: "ResourceNotFound",
      message: `The specified task ${id.slice(0, 100)} is not found.`,
      param: "id",
      type: "NotFound"
    }
  }, 404)

const idOf = (path: string): string => decodeURIComponent(path.split("/").at(-1) ?? "")

/** `GET /api/v3/contents/generations/tasks/{id}`. @category routes */
export const arkVideoRetrieve = (context: RouteContext): Reply => {
  const id = idOf(context.path)
  const task = context.videos.get("ark", id)
  return task === undefined ? notFound(id) : jsonReply(arkTaskObject(context, task, Date.now()))
}

/** `DELETE /api/v3/contents/generations/tasks/{id}`: cancels a queued task, deletes a finished one. @category routes */
export const arkVideoCancel = (context: RouteContext): Reply => {
  const id = idOf(context.path)
  const task = context.videos.get("ark", id)
  if (task === undefined) return notFound(id)
  const now = Date.now()
  if (context.videos.stateOf(task, now).phase === "running") {
    return jsonReply({
      error: {
        code: "InvalidAction.TaskRunning",
        message: "The task is running and cannot be cancelled.",
        param: "id",
        type: "BadRequest"
      }
    }, 400)
  }
  if (!context.videos.cancel(task, now)) context.videos.remove(task)
  return jsonReply({})
}

/**
 * The bytes behind a `video_url` (`GET /_emulator/videos/<token>.mp4`), with
 * `Range`; `undefined` when the token names no succeeded Ark or Kling task; 403
 * once its URL's lifetime has passed (Ark 24 hours, Kling 30 days).
 *
 * @category routes
 */
export const arkVideoBytes = (
  videos: VideoTasks,
  token: string,
  range: string | null,
  now: number
): Response | undefined => {
  const task = videos.byToken(token)
  if (task === undefined || (task.vendor !== "ark" && task.vendor !== "kling")) return undefined
  const state = videos.stateOf(task, now)
  if (state.phase !== "succeeded") return undefined
  const lifetime = task.vendor === "kling" ? KLING_URL_LIFETIME_MS : ARK_URL_LIFETIME_MS
  if (now > (state.finishedAt ?? now) + lifetime) {
    return new Response("Request has expired", { status: 403, headers: { "content-type": "text/plain" } })
  }
  const reply = bytesWithRange(mp4For(task.seed, task.seconds), "video/mp4", range)
  return new Response(reply.bytes, { status: reply.status, headers: { ...reply.headers, "content-type": "video/mp4" } })
}
