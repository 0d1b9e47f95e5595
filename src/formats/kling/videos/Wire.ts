/**
 * Kling's video API as an upstream wire (Kling AI API reference,
 * app.klingai.com/global/dev/document-api: "General Information" for the
 * token and the error table, "Video Generation" for Text to Video and Image
 * to Video; the same task shape new-api reads in `relay/channel/task/kling`):
 *
 * - `POST /v1/videos/text2video` with `{model_name, prompt, negative_prompt,
 *   cfg_scale, mode: std|pro, aspect_ratio: 16:9|9:16|1:1, duration: "5"|"10",
 *   sound: on|off, watermark_info: {enabled}, camera_control}`;
 *   `POST /v1/videos/image2video` with `image` (a URL, or Base64 without a
 *   `data:` prefix) and `image_tail` (the last frame) instead of
 *   `aspect_ratio`. Both answer `{code: 0, message, request_id, data:
 *   {task_id, task_status: submitted, task_info, created_at, updated_at}}`
 *   (times epoch milliseconds).
 * - `GET /v1/videos/{text2video|image2video}/{task_id}`: the same envelope,
 *   `data.task_status` `submitted | processing | succeed | failed`,
 *   `task_status_msg` (why it failed), and once `succeed`
 *   `task_result.videos[{id, url, duration}]` (`duration` seconds as a
 *   string; `url` a CDN address served without the key, kept 30 days).
 * - Errors: `{code, message, request_id}` with an HTTP status per code (401
 *   1000–1004 authentication; 429 1100–1102 account, 1101/1102 arrears or no
 *   resource pack; 400 1200/1201 request parameters; 404 1203 resource; 400
 *   1301 content safety; 429 1302/1303 rate and concurrency; 5000–5002 the
 *   vendor's own failures), read by `classifyKlingError`. The 1000–1102
 *   rows are checked against the published table; for the others the HTTP
 *   status decides as well whenever a code is not one listed here.
 *
 * A task id is only readable on the path it was made on, so the upstream id
 * the gateway keeps is `<action>:<task_id>` (`text2video:8672…`).
 *
 * @since 0.1.0
 */
import type { TaskStatus, UpstreamTaskState, VideoRequest } from "../../../canonical/Video.ts"
import { safeVendorText } from "../../../domain/Redact.ts"
import { UpstreamFailed, type UpstreamFailureKind } from "../../../errors/GatewayError.ts"
import { upstreamIdOf } from "../../openai/videos/Wire.ts"
import { httpUrl, taskError } from "../../videos/TaskFailure.ts"
import type { VideoWire } from "../../videos/VideoWire.ts"

/** Kling's two video creation endpoints. @category models */
export type KlingAction = "text2video" | "image2video"

/** The aspect ratios Kling's text2video takes. @category constants */
export const KLING_ASPECT_RATIOS = ["16:9", "9:16", "1:1"] as const

/** The durations, in seconds, Kling takes (as strings on its wire). @category constants */
export const KLING_DURATIONS = [5, 10] as const

/** Kling's default duration in seconds when a request names none. @category constants */
export const KLING_DEFAULT_SECONDS = 5

/**
 * The request fields only Kling has that a caller may pass through
 * `metadata` (or a Kling-shaped request carries there); each is sent only to
 * a Kling upstream.
 *
 * @category constants
 */
export const KLING_PASS_THROUGH = ["camera_control", "static_mask", "dynamic_masks"] as const

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** A `data:` URI's Base64 payload (Kling takes Base64 without the prefix), else the reference as it is. */
const klingImage = (ref: string): string => {
  const comma = ref.indexOf(",")
  return ref.startsWith("data:") && comma > 0 ? ref.slice(comma + 1) : ref
}

/** `W x H` reduced to the Kling ratio it is, when it is one of them. */
const ratioOfSize = (size: string | undefined): string | undefined => {
  const match = size === undefined ? null : /^(\d{1,5})x(\d{1,5})$/.exec(size)
  if (match === null) return undefined
  const [width, height] = [Number(match[1]), Number(match[2])]
  return width === height ? "1:1" : width * 9 === height * 16 ? "16:9" : width * 16 === height * 9 ? "9:16" : undefined
}

/**
 * The Kling action and body of `request` as upstream model `model`:
 * `image2video` when the request has a first frame or a reference image
 * (the first one is Kling's `image`) or a last frame (`image_tail`), else
 * `text2video`. `mode` is `pro` for a `1080p` resolution, else `std`;
 * `duration` the requested seconds; `sound` from `generateAudio`;
 * `watermark_info` from `watermark`; Kling's own fields (`camera_control`,
 * masks) from `metadata`.
 *
 * @category encoding
 */
export const encodeKlingSubmit = (
  request: VideoRequest,
  model: string
): { readonly action: KlingAction; readonly body: Record<string, unknown> } => {
  const images = request.references.filter((reference) => reference.kind === "image")
  const first = images.find((reference) => reference.role === "first_frame") ??
    images.find((reference) => reference.role === "reference_image")
  const last = images.find((reference) => reference.role === "last_frame")
  const action: KlingAction = first !== undefined || last !== undefined ? "image2video" : "text2video"
  const body: Record<string, unknown> = { model_name: model }
  if (request.prompt !== "") body.prompt = request.prompt
  if (request.negativePrompt !== undefined) body.negative_prompt = request.negativePrompt
  if (request.cfgScale !== undefined) body.cfg_scale = request.cfgScale
  if (request.resolution !== undefined) body.mode = request.resolution === "1080p" ? "pro" : "std"
  if (action === "text2video") {
    const ratio = request.aspectRatio ?? ratioOfSize(request.size)
    if (ratio !== undefined) body.aspect_ratio = ratio
  }
  if (request.seconds !== undefined) body.duration = String(request.seconds)
  if (first !== undefined) body.image = klingImage(first.ref)
  if (last !== undefined) body.image_tail = klingImage(last.ref)
  if (request.generateAudio !== undefined) body.sound = request.generateAudio ? "on" : "off"
  if (request.watermark !== undefined) body.watermark_info = { enabled: request.watermark }
  const metadata = request.metadata ?? {}
  for (const name of KLING_PASS_THROUGH) {
    if (metadata[name] !== undefined) body[name] = metadata[name]
  }
  return { action, body }
}

/** Kling's task statuses onto the internal ones. @category decoding */
export const klingStatusOf = (value: unknown): TaskStatus | undefined => {
  switch (value) {
    case "submitted":
      return "queued"
    case "processing":
      return "in_progress"
    case "succeed":
      return "completed"
    case "failed":
      return "failed"
    default:
      return undefined
  }
}

/** A video's `duration` ("5", "5.041", or a number) as whole seconds, rounded up, when it is one. */
const secondsOf = (value: unknown): number | undefined => {
  const number = typeof value === "string" && /^\d{1,5}(\.\d{1,6})?$/.test(value)
    ? Number(value)
    : typeof value === "number"
    ? value
    : NaN
  return Number.isFinite(number) && number > 0 && number < 100_000 ? Math.ceil(number) : undefined
}

const actionOf = (path: string): KlingAction | undefined =>
  path.endsWith("/image2video") ? "image2video" : path.endsWith("/text2video") ? "text2video" : undefined

/** `<action>:<task_id>` split, when it is one. */
const splitId = (upstreamId: string): { readonly action: KlingAction; readonly taskId: string } => {
  const colon = upstreamId.indexOf(":")
  const action = upstreamId.slice(0, colon)
  return action === "image2video" || action === "text2video"
    ? { action, taskId: upstreamId.slice(colon + 1) }
    : { action: "text2video", taskId: upstreamId }
}

const badBody = (message: string) => new UpstreamFailed({ kind: "bad-body", status: 200, message })

/**
 * A Kling error answer's failure kind and caller-safe message, from its
 * structured `code` (and the HTTP status when the body has none): 1000–1004
 * → `unauthorized`; 1101 (arrears) and 1102 (no resource pack) → `quota`;
 * 1100 (account exception) → `unauthorized`; 1302/1303/1304 → `throttled`;
 * 1200–1203 and 1300/1301 → `rejected`; 5000–5002 → `server`; any other code
 * (or none) by the HTTP status. The message is the vendor's `message` through
 * `safeVendorText`.
 *
 * @category errors
 */
export const classifyKlingError = (
  status: number,
  text: string
): { readonly kind: UpstreamFailureKind; readonly message: string } => {
  let body: Record<string, unknown> = {}
  try {
    const parsed: unknown = JSON.parse(text.slice(0, 65_536))
    if (isRecord(parsed)) body = parsed
  } catch {
    // Not JSON: the status decides.
  }
  const code = typeof body.code === "number" && Number.isInteger(body.code) ? body.code : undefined
  const message = typeof body.message === "string" && body.message.trim() !== ""
    ? safeVendorText(body.message)
    : `Upstream answered HTTP ${status}`
  const byStatus: UpstreamFailureKind = status === 401 || status === 403
    ? "unauthorized"
    : status === 429
    ? "throttled"
    : status === 408
    ? "timeout"
    : status >= 500
    ? "server"
    : "rejected"
  const kind: UpstreamFailureKind = code === undefined
    ? byStatus
    : code >= 1000 && code <= 1004
    ? "unauthorized"
    : code === 1101 || code === 1102
    ? "quota"
    : code === 1100
    ? "unauthorized"
    : code >= 1302 && code <= 1304
    ? "throttled"
    : (code >= 1200 && code <= 1203) || code === 1300 || code === 1301
    ? "rejected"
    : code >= 5000 && code <= 5002
    ? "server"
    : byStatus
  return { kind, message }
}

/**
 * The Kling video wire.
 *
 * @category formats
 */
export const klingVideoWire: VideoWire = {
  name: "kling",
  submit: (request, model) => {
    const { action, body } = encodeKlingSubmit(request, model)
    return { method: "POST", path: `/v1/videos/${action}`, body: { _tag: "json", body } }
  },
  decodeSubmit: (json, call) => {
    const data = isRecord(json) && json.code === 0 && isRecord(json.data) ? json.data : undefined
    const taskId = upstreamIdOf(data?.task_id)
    const action = call === undefined ? "text2video" : actionOf(call.path)
    return taskId === undefined || action === undefined || taskId.includes(":")
      ? badBody("The Kling task answer has no usable task_id.")
      : { upstreamId: `${action}:${taskId}` }
  },
  poll: (upstreamId) => {
    const { action, taskId } = splitId(upstreamId)
    return { method: "GET", path: `/v1/videos/${action}/${encodeURIComponent(taskId)}` }
  },
  decodePoll: (json): UpstreamTaskState | UpstreamFailed => {
    if (!isRecord(json) || json.code !== 0 || !isRecord(json.data)) {
      return badBody("The Kling task answer is not a success envelope.")
    }
    const data = json.data
    const status = klingStatusOf(data.task_status)
    if (status === undefined) return badBody("The Kling task has no known task_status.")
    if (status === "failed") {
      return {
        status,
        progress: 100,
        error: taskError(
          undefined,
          typeof data.task_status_msg === "string" ? data.task_status_msg : undefined,
          "video_generation_failed",
          "The upstream could not make the video."
        )
      }
    }
    if (status !== "completed") return { status }
    const result = isRecord(data.task_result) ? data.task_result : {}
    const video = Array.isArray(result.videos) && isRecord(result.videos[0]) ? result.videos[0] : undefined
    const url = typeof video?.url === "string" ? httpUrl(video.url) : undefined
    if (url === undefined) return badBody("The finished Kling task has no video URL.")
    return { status, progress: 100, seconds: secondsOf(video?.duration), content: { url: url.href, withKey: false } }
  },
  content: (_upstreamId, state) => ({ method: "GET", path: state.content?.url ?? "" }),
  classifyError: classifyKlingError
}
