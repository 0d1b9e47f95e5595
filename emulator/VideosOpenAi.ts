/**
 * The emulator's OpenAI videos API (platform.openai.com/docs/api-reference/videos;
 * shapes as the `openai` SDK's `resources/videos` types them), over the shared
 * task store of `VideoTasks.ts`:
 *
 * - `POST /v1/videos`: JSON or `multipart/form-data` (the SDK's `videos.create`
 *   always sends a form). `prompt` required (at most 32,000 characters, the
 *   emulator's bound); `model` default `sora-2`; `seconds` `"4"` | `"8"` |
 *   `"12"` (default 4) and `size` `720x1280` | `1280x720` (default
 *   `720x1280`), plus `1024x1792` | `1792x1024` on `sora-2-pro*`; a model not
 *   named `sora-*` stands in for an OpenAI-compatible video vendor and takes
 *   any whole `seconds` 1–60 and any `<W>x<H>`. `input_reference` an image
 *   file (JPEG, PNG, WebP) or `{image_url}` / `{file_id}`. Any other field is
 *   refused, as OpenAI refuses unknown parameters.
 * - `GET /v1/videos/{id}`: the video object `{id, object: "video", model,
 *   status: queued|in_progress|completed|failed, progress, created_at,
 *   completed_at, expires_at, error, prompt, remixed_from_video_id, seconds,
 *   size}`. A failed video carries `error {code, message}`: `moderation_blocked`
 *   for the `unsafe` marker (the code OpenAI reports for a generation its
 *   moderation stopped), `video_generation_failed` otherwise.
 * - `POST /v1/videos/{id}/remix` (`{prompt}`, JSON or a form): a new video
 *   with `remixed_from_video_id`, the source's model, seconds and size; the
 *   source must be completed.
 * - `GET /v1/videos/{id}/content` (`variant` `video` default | `thumbnail` |
 *   `spritesheet`): the MP4 bytes (`Mp4.ts`, `Content-Type: video/mp4`,
 *   `Range` honoured), or a PNG for the image variants; 404 until completed.
 *   Completed videos' assets expire an hour after completion (`expires_at`).
 *
 * Unknown ids answer 404 in OpenAI's error shape.
 *
 * @since 0.1.0
 */
import { vendorErrorBody } from "./Faults.ts"
import { mp4For } from "./Mp4.ts"
import { pngFor } from "./Png.ts"
import { bytesReply, jsonReply, type Reply } from "./Sse.ts"
import { bytesWithRange } from "./VideoContent.ts"
import { randomHex, type VideoTask } from "./VideoTasks.ts"
import { isObject, type JsonObject, type RouteContext } from "./Wire.ts"

/** The longest prompt the emulator keeps, in UTF-16 units. @category constants */
export const MAX_VIDEO_PROMPT = 32_000

/** How long a completed video's assets stay downloadable, in seconds. */
const ASSET_LIFETIME = 3600

const bad = (message: string, param: string | null): Reply =>
  jsonReply(vendorErrorBody("openai", 400, message, param ?? undefined), 400)

const notFound = (id: string): Reply =>
  jsonReply({
    error: {
      message: `Video with id '${id.slice(0, 200)}' not found.`,
      type: "invalid_request_error",
      param: null,
      code: "video_not_found"
    }
  }, 404)

const KNOWN_FIELDS = new Set(["prompt", "model", "seconds", "size", "input_reference"])
const SORA_SIZES = ["720x1280", "1280x720"]
const SORA_PRO_SIZES = [...SORA_SIZES, "1024x1792", "1792x1024"]
const IMAGE_TYPES = ["image/jpeg", "image/png", "image/webp"]

/** A video id from a request path (`/v1/videos/{id}[/…]`). */
const idOf = (path: string): string => decodeURIComponent(path.split("/")[3] ?? "")

/** The `seconds` of a create body, or an error reply. */
const secondsOf = (value: unknown, sora: boolean): number | Reply => {
  if (value === undefined) return 4
  const text = typeof value === "number" ? String(value) : value
  if (sora) {
    return text === "4" || text === "8" || text === "12"
      ? Number(text)
      : bad(`Invalid value: '${String(value).slice(0, 50)}'. Supported values are: '4', '8', and '12'.`, "seconds")
  }
  const seconds = typeof text === "string" && /^\d{1,2}$/.test(text) ? Number(text) : NaN
  return seconds >= 1 && seconds <= 60
    ? seconds
    : bad(`Invalid 'seconds': a whole number of seconds from 1 to 60 expected.`, "seconds")
}

/** Checks `input_reference`: a parsed form file, or `{image_url}` / `{file_id}`. */
const referenceError = (value: unknown): Reply | undefined => {
  if (value === undefined) return undefined
  if (isObject(value) && typeof value.filename === "string") {
    return IMAGE_TYPES.includes(String(value.type)) ? undefined : bad(
      "Invalid 'input_reference': expected an image of type image/jpeg, image/png or image/webp.",
      "input_reference"
    )
  }
  if (isObject(value) && (typeof value.image_url === "string" || typeof value.file_id === "string")) return undefined
  return bad("Invalid 'input_reference': expected a file upload, {image_url} or {file_id}.", "input_reference")
}

/**
 * The video object of `task` at `now` (epoch milliseconds), as OpenAI returns
 * it.
 *
 * @category rendering
 */
export const openAiVideoObject = (context: RouteContext, task: VideoTask, now: number): JsonObject => {
  const state = context.videos.stateOf(task, now)
  const status = state.phase === "queued"
    ? "queued"
    : state.phase === "running"
    ? "in_progress"
    : state.phase === "succeeded"
    ? "completed"
    : "failed"
  const finished = state.finishedAt === undefined ? null : Math.floor(state.finishedAt / 1000)
  return {
    id: task.id,
    object: "video",
    model: task.model,
    status,
    progress: state.progress,
    created_at: Math.floor(task.createdAt / 1000),
    completed_at: finished,
    expires_at: status === "completed" && finished !== null ? finished + ASSET_LIFETIME : null,
    error: status !== "failed"
      ? null
      : task.outcome === "content_policy"
      ? { code: "moderation_blocked", message: "Your request was blocked by our moderation system." }
      : { code: "video_generation_failed", message: "Video generation failed." },
    prompt: task.prompt,
    remixed_from_video_id: task.remixedFrom ?? null,
    seconds: String(task.seconds),
    size: task.size
  }
}

/** `POST /v1/videos`. @category routes */
export const openAiVideoCreate = (context: RouteContext): Reply => {
  const body = context.body
  const unknown = Object.keys(body).find((name) => !KNOWN_FIELDS.has(name))
  if (unknown !== undefined) return bad(`Unknown parameter: '${unknown.slice(0, 100)}'.`, unknown.slice(0, 100))
  const prompt = body.prompt
  if (typeof prompt !== "string" || prompt.length === 0) {
    return bad("Missing required parameter: 'prompt'.", "prompt")
  }
  if (prompt.length > MAX_VIDEO_PROMPT) {
    return bad(`Invalid 'prompt': string too long. Expected at most ${MAX_VIDEO_PROMPT} characters.`, "prompt")
  }
  const model = body.model ?? "sora-2"
  if (typeof model !== "string" || model.length === 0 || model.length > 200) {
    return bad("Invalid 'model': a model name expected.", "model")
  }
  const sora = model.startsWith("sora-")
  const seconds = secondsOf(body.seconds, sora)
  if (typeof seconds !== "number") return seconds
  const size = body.size ?? "720x1280"
  const sizes = model.startsWith("sora-2-pro") ? SORA_PRO_SIZES : SORA_SIZES
  if (typeof size !== "string" || (sora ? !sizes.includes(size) : !/^\d{2,5}x\d{2,5}$/.test(size))) {
    return bad(
      `Invalid value: '${String(size).slice(0, 50)}'. Supported values are: ${
        sizes.map((item) => `'${item}'`).join(", ")
      }.`,
      "size"
    )
  }
  const referenceProblem = referenceError(body.input_reference)
  if (referenceProblem !== undefined) return referenceProblem
  const task = context.videos.add({
    id: `video_${randomHex(24)}`,
    vendor: "openai",
    model,
    prompt,
    seconds,
    size,
    extras: {}
  })
  return jsonReply(openAiVideoObject(context, task, Date.now()))
}

/** `GET /v1/videos/{id}`. @category routes */
export const openAiVideoRetrieve = (context: RouteContext): Reply => {
  const id = idOf(context.path)
  const task = context.videos.get("openai", id)
  return task === undefined ? notFound(id) : jsonReply(openAiVideoObject(context, task, Date.now()))
}

/** `POST /v1/videos/{id}/remix`. @category routes */
export const openAiVideoRemix = (context: RouteContext): Reply => {
  const id = idOf(context.path)
  const source = context.videos.get("openai", id)
  if (source === undefined) return notFound(id)
  const unknown = Object.keys(context.body).find((name) => name !== "prompt")
  if (unknown !== undefined) return bad(`Unknown parameter: '${unknown.slice(0, 100)}'.`, unknown.slice(0, 100))
  const prompt = context.body.prompt
  if (typeof prompt !== "string" || prompt.length === 0) {
    return bad("Missing required parameter: 'prompt'.", "prompt")
  }
  if (prompt.length > MAX_VIDEO_PROMPT) {
    return bad(`Invalid 'prompt': string too long. Expected at most ${MAX_VIDEO_PROMPT} characters.`, "prompt")
  }
  const now = Date.now()
  if (context.videos.stateOf(source, now).phase !== "succeeded") {
    return bad(`Video '${id}' is not completed: only a completed video can be remixed.`, null)
  }
  const task = context.videos.add({
    id: `video_${randomHex(24)}`,
    vendor: "openai",
    model: source.model,
    prompt,
    seconds: source.seconds,
    size: source.size,
    remixedFrom: source.id,
    extras: {}
  })
  return jsonReply(openAiVideoObject(context, task, now))
}

/** `GET /v1/videos/{id}/content`. @category routes */
export const openAiVideoContent = (context: RouteContext): Reply => {
  const id = idOf(context.path)
  const task = context.videos.get("openai", id)
  if (task === undefined) return notFound(id)
  const variant = context.query.variant ?? "video"
  if (variant !== "video" && variant !== "thumbnail" && variant !== "spritesheet") {
    return bad(
      `Invalid value: '${variant.slice(0, 50)}'. Supported values are: 'video', 'thumbnail', and 'spritesheet'.`,
      "variant"
    )
  }
  const phase = context.videos.stateOf(task, Date.now()).phase
  if (phase !== "succeeded") {
    return jsonReply({
      error: {
        message: `Video '${id}' has no content: it is ${phase === "running" ? "in progress" : phase}.`,
        type: "invalid_request_error",
        param: null,
        code: "video_not_ready"
      }
    }, 404)
  }
  return variant === "video"
    ? bytesWithRange(mp4For(task.seed, task.seconds), "video/mp4", context.headers.get("range"))
    : bytesReply(pngFor(task.seed), "image/png")
}
