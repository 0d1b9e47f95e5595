/**
 * The emulator's Kling video API (Kling AI API reference: "General
 * Information" for the token and the error table, "Video Generation" for
 * Text to Video and Image to Video), over the shared task store of
 * `VideoTasks.ts`:
 *
 * - Every call carries `Authorization: Bearer <token>`, a JWT signed HS256
 *   with an account's secret key, `iss` its access key, valid between `nbf`
 *   and `exp`; `verifyKlingToken` checks it with `jose` (401 1001 none, 1002
 *   invalid, 1003 not yet valid, 1004 expired).
 * - `POST /v1/videos/text2video`: `prompt` required (at most 2,500
 *   characters), `model_name` (or `model`; default `kling-v1`),
 *   `negative_prompt` (at most 2,500), `cfg_scale` 0–1, `mode` `std` | `pro`,
 *   `aspect_ratio` `16:9` | `9:16` | `1:1`, `duration` `"5"` | `"10"` (a
 *   string), `sound` `on` | `off`, `watermark_info {enabled}`,
 *   `callback_url`, `external_task_id`; other fields ignored.
 *   `POST /v1/videos/image2video`: the same without `aspect_ratio`, plus
 *   `image` and `image_tail` (at least one): an `http(s)://` URL or Base64
 *   without a `data:` prefix (a prefixed one is refused, as Kling does).
 *   Both answer `{code: 0, message: "SUCCEED", request_id, data: {task_id
 *   (18 digits), task_status: "submitted", task_info: {external_task_id?},
 *   created_at, updated_at}}` (epoch ms). Bad fields: 400 code 1201.
 * - `GET /v1/videos/{text2video|image2video}/{task_id}`: the task, only on
 *   the path it was made on (else 404 code 1203): `task_status`
 *   `submitted | processing | succeed | failed`, `task_status_msg`, and once
 *   `succeed` `task_result.videos[{id, url, duration}]`, `duration` the
 *   requested whole seconds as a string, `url`
 *   `GET /_emulator/videos/<token>.mp4` (no key, as Kling's CDN URLs).
 *   The prompt word `unsafe` fails a task as Kling's risk control does,
 *   `broken` with a generic failure.
 * - `GET /v1/videos/{text2video|image2video}?pageNum=&pageSize=` (Kling's
 *   "Query Task (List)"): `data` the account's tasks of that path, newest
 *   first, `pageSize` 1–500 (default 30), `pageNum` from 1.
 *
 * @since 0.1.0
 */
import { errors, jwtVerify } from "jose"
import { jsonReply, type Reply } from "./Sse.ts"
import { randomHex, type VideoTask } from "./VideoTasks.ts"
import { isObject, type JsonObject, type RouteContext } from "./Wire.ts"

/** The test account's access key (the channel key is `<access key>|<secret key>`). @category constants */
export const KLING_TEST_ACCESS_KEY = "ak-test-kling-0001"

/** The test account's secret key. @category constants */
export const KLING_TEST_SECRET_KEY = "sk-test-kling-secret-0001"

/** How long a finished task's URL serves its bytes (Kling keeps generated videos 30 days). @category constants */
export const KLING_URL_LIFETIME_MS = 30 * 24 * 3600 * 1000

const MAX_PROMPT = 2500

/** A fresh Kling request id. */
const requestId = (): string => crypto.randomUUID()

/** Kling's error body for `code` with `message`. @category errors */
export const klingErrorBody = (code: number, message: string): JsonObject => ({
  code,
  message,
  request_id: requestId()
})

/**
 * Kling's service code for an HTTP status the emulator is asked to fail with
 * (a fault): 400 1201, 401 1000, 403 1100, 404 1203, 429 1302, 500 5000,
 * 503 5001, 504 5002; others 5000 from 500 up, else 1200.
 *
 * @category errors
 */
export const klingCodeOf = (status: number): number =>
  ({ 400: 1201, 401: 1000, 403: 1100, 404: 1203, 429: 1302, 500: 5000, 503: 5001, 504: 5002 } as Record<
    number,
    number
  >)[status] ?? (status >= 500 ? 5000 : 1200)

const bad = (message: string): Reply => jsonReply(klingErrorBody(1201, message), 400)

/** The outcome of checking a request's token. @category auth */
export type KlingAuth =
  | { readonly ok: true; readonly accessKey: string }
  | { readonly ok: false; readonly code: 1001 | 1002 | 1003 | 1004; readonly message: string }

/**
 * Checks `authorization` (the header) against `accounts` (access key →
 * secret key): a Bearer JWT, HS256, whose `iss` names an account and whose
 * signature its secret key makes, inside its `nbf` … `exp` window.
 *
 * @category auth
 */
export const verifyKlingToken = async (
  authorization: string | null,
  accounts: Readonly<Record<string, string>>
): Promise<KlingAuth> => {
  const token = authorization?.replace(/^Bearer\s+/i, "").trim() ?? ""
  if (token === "") return { ok: false, code: 1001, message: "Authorization is empty" }
  let issuer: unknown
  try {
    const [, payload] = token.split(".")
    issuer =
      JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(payload.replace(/-/g, "+").replace(/_/g, "/")), (c) =>
        c.charCodeAt(0)))).iss
  } catch {
    return { ok: false, code: 1002, message: "Authorization is invalid" }
  }
  const secret = typeof issuer === "string" && Object.hasOwn(accounts, issuer) ? accounts[issuer] : undefined
  if (secret === undefined || typeof issuer !== "string") {
    return { ok: false, code: 1002, message: "Authorization is invalid" }
  }
  try {
    await jwtVerify(token, new TextEncoder().encode(secret), {
      algorithms: ["HS256"],
      issuer,
      requiredClaims: ["exp", "nbf"]
    })
    return { ok: true, accessKey: issuer }
  } catch (error) {
    if (error instanceof errors.JWTExpired) return { ok: false, code: 1004, message: "Authorization has expired" }
    if (error instanceof errors.JWTClaimValidationFailed && error.claim === "nbf") {
      return { ok: false, code: 1003, message: "Authorization is not yet valid" }
    }
    return { ok: false, code: 1002, message: "Authorization is invalid" }
  }
}

/** Frame sizes by mode and aspect ratio, `[width, height]` (std 720p, pro 1080p). */
const FRAME: Record<string, Record<string, readonly [number, number]>> = {
  std: { "16:9": [1280, 720], "9:16": [720, 1280], "1:1": [720, 720] },
  pro: { "16:9": [1920, 1080], "9:16": [1080, 1920], "1:1": [1080, 1080] }
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/

/** `image` / `image_tail`: an `http(s)://` URL or prefix-less Base64; `undefined` when absent; `false` when bad. */
const imageOf = (value: unknown): string | undefined | false => {
  if (value === undefined || value === null || value === "") return undefined
  if (typeof value !== "string") return false
  if (/^https?:\/\/[^/\s]+/.test(value)) return value
  return BASE64.test(value) && value.length >= 16 ? value : false
}

const actionOfPath = (path: string): "text2video" | "image2video" =>
  path.includes("/image2video") ? "image2video" : "text2video"

/** An 18-digit task id, as Kling's. */
const taskId = (): string => `8${Array.from(crypto.getRandomValues(new Uint8Array(17)), (b) => b % 10).join("")}`

/** `POST /v1/videos/text2video` and `POST /v1/videos/image2video`. @category routes */
export const klingVideoCreate = (context: RouteContext): Reply => {
  const body = context.body
  const action = actionOfPath(context.path)
  const model = body.model_name ?? body.model ?? "kling-v1"
  if (typeof model !== "string" || model.length === 0 || model.length > 200) return bad("model_name is invalid")
  const prompt = body.prompt ?? ""
  if (typeof prompt !== "string" || prompt.length > MAX_PROMPT) return bad("prompt is invalid")
  if (action === "text2video" && prompt.trim() === "") return bad("prompt is required")
  const negative = body.negative_prompt
  if (negative !== undefined && (typeof negative !== "string" || negative.length > MAX_PROMPT)) {
    return bad("negative_prompt is invalid")
  }
  const cfg = body.cfg_scale
  if (cfg !== undefined && (typeof cfg !== "number" || !(cfg >= 0 && cfg <= 1))) return bad("cfg_scale is invalid")
  const mode = body.mode ?? "std"
  if (mode !== "std" && mode !== "pro") return bad("mode is invalid")
  const ratio = action === "text2video" ? body.aspect_ratio ?? "16:9" : "16:9"
  if (typeof ratio !== "string" || FRAME.std[ratio] === undefined) return bad("aspect_ratio is invalid")
  const duration = body.duration ?? "5"
  if (duration !== "5" && duration !== "10") return bad("duration is invalid")
  if (body.sound !== undefined && body.sound !== "on" && body.sound !== "off") return bad("sound is invalid")
  if (
    body.watermark_info !== undefined &&
    (!isObject(body.watermark_info) || typeof body.watermark_info.enabled !== "boolean")
  ) {
    return bad("watermark_info is invalid")
  }
  for (const name of ["callback_url", "external_task_id"]) {
    if (body[name] !== undefined && typeof body[name] !== "string") return bad(`${name} is invalid`)
  }
  if (action === "image2video") {
    const image = imageOf(body.image)
    const tail = imageOf(body.image_tail)
    if (image === false) return bad("image is invalid")
    if (tail === false) return bad("image_tail is invalid")
    if (image === undefined && tail === undefined) return bad("image is required")
  }
  const [width, height] = FRAME[mode][ratio]
  const now = Date.now()
  const task = context.videos.add({
    id: taskId(),
    vendor: "kling",
    model,
    prompt,
    seconds: Number(duration),
    size: `${width}x${height}`,
    extras: {
      action,
      mode,
      ...(typeof body.external_task_id === "string" && body.external_task_id !== ""
        ? { external_task_id: body.external_task_id }
        : {})
    }
  })
  return jsonReply({
    code: 0,
    message: "SUCCEED",
    request_id: requestId(),
    data: {
      task_id: task.id,
      task_status: "submitted",
      task_info: task.extras.external_task_id === undefined ? {} : { external_task_id: task.extras.external_task_id },
      created_at: now,
      updated_at: now
    }
  })
}

const STATUS: Record<string, string> = {
  queued: "submitted",
  running: "processing",
  succeeded: "succeed",
  failed: "failed",
  cancelled: "failed",
  expired: "failed"
}

/** The task envelope of `task` at `now` (epoch milliseconds), as Kling's query answers it. @category rendering */
export const klingTaskObject = (context: RouteContext, task: VideoTask, now: number): JsonObject => {
  const state = context.videos.stateOf(task, now)
  const status = STATUS[state.phase]
  const updated = state.finishedAt ??
    (state.phase === "running" ? task.createdAt + context.videos.stepMs : task.createdAt)
  return {
    code: 0,
    message: "SUCCEED",
    request_id: requestId(),
    data: {
      task_id: task.id,
      task_status: status,
      task_status_msg: status !== "failed"
        ? ""
        : task.outcome === "content_policy"
        ? "Failure to pass the risk control system"
        : "Video generation failed due to an internal error",
      task_info: task.extras.external_task_id === undefined ? {} : { external_task_id: task.extras.external_task_id },
      created_at: task.createdAt,
      updated_at: updated,
      ...(status === "succeed"
        ? {
          task_result: {
            videos: [{
              id: `${task.contentToken.slice(0, 8)}-${randomHex(2)}`,
              url: `http://${context.headers.get("host") ?? "127.0.0.1"}/_emulator/videos/${task.contentToken}.mp4`,
              duration: String(task.seconds)
            }]
          }
        }
        : {})
    }
  }
}

/** `GET /v1/videos/{text2video|image2video}/{task_id}`. @category routes */
export const klingVideoRetrieve = (context: RouteContext): Reply => {
  const id = decodeURIComponent(context.path.split("/").at(-1) ?? "")
  const task = context.videos.get("kling", id)
  if (task === undefined || task.extras.action !== actionOfPath(context.path)) {
    return jsonReply(klingErrorBody(1203, "The requested task does not exist"), 404)
  }
  return jsonReply(klingTaskObject(context, task, Date.now()))
}

/** `GET /v1/videos/{text2video|image2video}` (the task list, paged). @category routes */
export const klingVideoList = (context: RouteContext): Reply => {
  const action = actionOfPath(context.path)
  const pageNum = Number(context.query.pageNum ?? "1")
  const pageSize = Number(context.query.pageSize ?? "30")
  if (!Number.isInteger(pageNum) || pageNum < 1 || pageNum > 1000) return bad("pageNum is invalid")
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 500) return bad("pageSize is invalid")
  const now = Date.now()
  const tasks = context.videos.list("kling").filter((task) => task.extras.action === action).reverse()
  const page = tasks.slice((pageNum - 1) * pageSize, pageNum * pageSize)
  return jsonReply({
    code: 0,
    message: "SUCCEED",
    request_id: requestId(),
    data: page.map((task) => klingTaskObject(context, task, now).data)
  })
}
