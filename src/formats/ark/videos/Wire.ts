/**
 * Volcengine Ark / BytePlus ModelArk content generation tasks as a video wire
 * (volcengine.com/docs/82379/1520758; docs.byteplus.com/en/docs/ModelArk/1520757,
 * "Video Generation API": create and query a video generation task):
 *
 * - Submit: `POST /api/v3/contents/generations/tasks` with `model`, `content[]`
 *   (the prompt as `{type: "text", text}`, then each reference by role:
 *   images as `{type: "image_url", image_url: {url}, role}` with role
 *   `first_frame` | `last_frame` | `reference_image`, videos as `video_url`
 *   with `reference_video`, audio as `audio_url` with `reference_audio`),
 *   `ratio`, `resolution`, `duration`, `watermark`, `generate_audio`, and the
 *   metadata extras Ark takes (`ARK_EXTRAS`). A `size` `<W>x<H>` with no
 *   ratio or resolution gives the nearest of Ark's ratios and the tier of its
 *   short side. The answer is `{id}`.
 * - Poll: `GET /api/v3/contents/generations/tasks/{id}` → `{status, error:
 *   {code, message} | null, content: {video_url}, duration, framespersecond,
 *   updated_at, …}`; statuses by `ARK_STATUSES`. Ark reports no progress: 0
 *   while queued, 100 once final, none while running.
 * - Content: `GET` of `content.video_url`, a signed object URL fetched without
 *   the key, "valid for 24 hours" (so `expiresAt` is `updated_at` + 24 h).
 * - Errors: `{error: {code, message, param, type}}`, classified by
 *   `classifyArkError` (docs.byteplus.com/en/docs/ModelArk/1299023, "Error
 *   codes").
 *
 * @since 0.1.0
 */
import { Option, Schema } from "effect"
import type { TaskStatus, UpstreamTaskState, VideoReference, VideoRequest } from "../../../canonical/Video.ts"
import { UpstreamFailed, type UpstreamFailureKind } from "../../../errors/GatewayError.ts"
import { classifyOpenAiError } from "../../openai/shared/ErrorBody.ts"
import { CONTENT_POLICY, httpUrl, taskError } from "../../videos/TaskFailure.ts"
import type { VideoCall, VideoWire } from "../../videos/VideoWire.ts"

const TASKS = "/api/v3/contents/generations/tasks"

/**
 * Ark's task statuses and the internal status each maps to: `queued` →
 * `queued`, `running` → `in_progress`, `succeeded` → `completed`, and
 * `failed`, `cancelled` (a queued task cancelled), `expired` (not done
 * within `execution_expires_after`) → `failed`. Another status is a
 * `bad-body` answer.
 *
 * @category models
 */
export const ARK_STATUSES: Readonly<Record<string, TaskStatus>> = {
  queued: "queued",
  running: "in_progress",
  succeeded: "completed",
  failed: "failed",
  cancelled: "failed",
  expired: "failed"
}

/**
 * The request fields Ark takes that a caller may pass through `metadata`
 * (each a string of at most 100 characters, a number or a boolean; anything
 * else is left out): `seed`, `camera_fixed`, `return_last_frame`, `draft`,
 * `frames`, `service_tier`, `execution_expires_after`. Never `callback_url`
 * (Ark would send the task, upstream id included, to an address the caller
 * chose) nor a field the wire sets itself.
 *
 * @category constants
 */
export const ARK_EXTRAS: ReadonlyArray<string> = [
  "seed",
  "camera_fixed",
  "return_last_frame",
  "draft",
  "frames",
  "service_tier",
  "execution_expires_after"
]

/** How long Ark serves a result URL after the task finished, in seconds ("valid for 24 hours"). @category constants */
export const ARK_URL_LIFETIME = 86_400

const RATIOS: ReadonlyArray<readonly [string, number]> = [
  ["21:9", 21 / 9],
  ["16:9", 16 / 9],
  ["4:3", 4 / 3],
  ["1:1", 1],
  ["3:4", 3 / 4],
  ["9:16", 9 / 16]
]

/** Ark's ratio nearest to `width` / `height`, and the resolution tier of the short side. */
const fromSize = (size: string): { readonly ratio: string; readonly resolution: string } | undefined => {
  const match = /^(\d{1,5})x(\d{1,5})$/.exec(size)
  if (match === null) return undefined
  const width = Number(match[1])
  const height = Number(match[2])
  if (width === 0 || height === 0) return undefined
  const wanted = Math.log(width / height)
  const ratio =
    RATIOS.reduce((best, item) =>
      Math.abs(Math.log(item[1]) - wanted) < Math.abs(Math.log(best[1]) - wanted) ? item : best
    )[0]
  const short = Math.min(width, height)
  return { ratio, resolution: short <= 480 ? "480p" : short <= 720 ? "720p" : "1080p" }
}

/** One reference as a `content[]` item. */
const contentItem = (reference: VideoReference): Record<string, unknown> => {
  const type = `${reference.kind}_url`
  return { type, [type]: { url: reference.ref }, role: reference.role }
}

const extrasOf = (metadata: Readonly<Record<string, unknown>> | undefined): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  for (const name of ARK_EXTRAS) {
    const value = metadata?.[name]
    if (
      typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value)) ||
      (typeof value === "string" && value.length <= 100)
    ) out[name] = value
  }
  return out
}

/**
 * The Ark submit body of `request` as the upstream's `model`.
 *
 * @category encoding
 */
export const arkSubmitBody = (request: VideoRequest, model: string): Record<string, unknown> => {
  const content = [
    ...(request.prompt === "" ? [] : [{ type: "text", text: request.prompt }]),
    ...request.references.map(contentItem)
  ]
  const sized = request.size === undefined ? undefined : fromSize(request.size)
  const ratio = request.aspectRatio ?? sized?.ratio
  const resolution = request.resolution ?? sized?.resolution
  return {
    ...extrasOf(request.metadata),
    model,
    content,
    ...(ratio === undefined ? {} : { ratio }),
    ...(resolution === undefined ? {} : { resolution }),
    ...(request.seconds === undefined ? {} : { duration: request.seconds }),
    ...(request.watermark === undefined ? {} : { watermark: request.watermark }),
    ...(request.generateAudio === undefined ? {} : { generate_audio: request.generateAudio })
  }
}

const taskIdPattern = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/

const Submitted = Schema.Struct({ id: Schema.String })
const decodeSubmitted = Schema.decodeUnknownOption(Submitted)

const Optional = <S extends Schema.Top>(schema: S) => Schema.optional(Schema.NullOr(schema))

const Task = Schema.Struct({
  status: Schema.String,
  error: Optional(Schema.Struct({ code: Optional(Schema.String), message: Optional(Schema.String) })),
  content: Optional(Schema.Struct({ video_url: Optional(Schema.String) })),
  updated_at: Optional(Schema.Number),
  duration: Optional(Schema.Number),
  framespersecond: Optional(Schema.Number),
  usage: Optional(Schema.Struct({ completion_tokens: Optional(Schema.Number) }))
})
const decodeTask = Schema.decodeUnknownOption(Task)

const badBody = (message: string): UpstreamFailed => new UpstreamFailed({ kind: "bad-body", status: 200, message })

/** A finite number in a range, else undefined. */
const within = (value: number | null | undefined, low: number, high: number): number | undefined =>
  typeof value === "number" && Number.isFinite(value) && value >= low && value <= high ? value : undefined

/**
 * A poll answer as the task's state (see `ARK_STATUSES`): a failure's code is
 * Ark's own (`content_policy` for its `…SensitiveContentDetected…` codes,
 * `cancelled` and `expired` for those statuses), its message cleaned and
 * bounded; a success needs an `http(s)` `content.video_url`.
 *
 * @category decoding
 */
export const decodeArkTask = (json: unknown): UpstreamTaskState | UpstreamFailed => {
  const decoded = Option.getOrUndefined(decodeTask(json))
  if (decoded === undefined) return badBody("The upstream's task answer could not be read.")
  const status = ARK_STATUSES[decoded.status]
  if (status === undefined) return badBody("The upstream's task answer has an unknown status.")
  const seconds = within(decoded.duration, 0.1, 3600)
  const fps = within(decoded.framespersecond, 1, 240)
  // The vendor's billed usage (tokens), passed through to the first family's video object.
  const tokens = within(decoded.usage?.completion_tokens, 0, Number.MAX_SAFE_INTEGER)
  const usage = tokens !== undefined && Number.isInteger(tokens) ? tokens : undefined
  const facts = {
    ...(seconds === undefined ? {} : { seconds }),
    ...(fps === undefined ? {} : { fps }),
    ...(usage === undefined ? {} : { usage })
  }
  if (status === "queued") return { status, progress: 0 }
  if (status === "in_progress") return { status }
  if (status === "failed") {
    const error = decoded.status === "cancelled"
      ? { code: "cancelled", message: "The upstream task was cancelled." }
      : decoded.status === "expired"
      ? { code: "expired", message: "The upstream task expired before it finished." }
      : /SensitiveContent/.test(decoded.error?.code ?? "")
      ? taskError(CONTENT_POLICY, decoded.error?.message ?? undefined, CONTENT_POLICY, "Refused by content policy.")
      : taskError(
        decoded.error?.code ?? undefined,
        decoded.error?.message ?? undefined,
        "upstream_error",
        "The upstream task failed."
      )
    return { status, progress: 100, error }
  }
  const url = decoded.content?.video_url
  if (typeof url !== "string" || httpUrl(url) === undefined) {
    return badBody("The upstream's finished task names no video URL.")
  }
  const updated = within(decoded.updated_at, 0, 1e11)
  return {
    status,
    progress: 100,
    content: { url, withKey: false, ...(updated === undefined ? {} : { expiresAt: updated + ARK_URL_LIFETIME }) },
    ...facts
  }
}

/**
 * Classifies an Ark error answer from its status and structured `error.code`
 * (docs.byteplus.com/en/docs/ModelArk/1299023): 403 `AccountOverdueError`
 * and 429 `QuotaExceeded` / `SetLimitExceeded` (a spent or capped account)
 * → `quota`; everything else as OpenAI's (400 `rejected`, 401/403
 * `unauthorized`, 429 `throttled`, 5xx `server`, …), whose error body Ark's
 * shares. The message is the vendor's, cleaned and bounded.
 *
 * @category decoding
 */
export const classifyArkError = (
  status: number,
  text: string
): { readonly kind: UpstreamFailureKind; readonly message: string } => {
  const classified = classifyOpenAiError(status, text)
  const code = Option.getOrUndefined(decodeErrorCode(parseJson(text)))?.error.code
  const quota = (status === 403 && code === "AccountOverdueError") ||
    (status === 429 && (code === "QuotaExceeded" || code === "SetLimitExceeded"))
  return quota ? { kind: "quota", message: classified.message } : classified
}

const decodeErrorCode = Schema.decodeUnknownOption(Schema.Struct({ error: Schema.Struct({ code: Schema.String }) }))

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

const taskPath = (upstreamId: string): string => `${TASKS}/${encodeURIComponent(upstreamId)}`

/**
 * The Ark video wire (see the module doc). No remix: Ark has none.
 *
 * @category formats
 */
export const arkVideoWire: VideoWire = {
  name: "ark",
  submit: (request, model): VideoCall => ({
    method: "POST",
    path: TASKS,
    body: { _tag: "json", body: arkSubmitBody(request, model) }
  }),
  remix: undefined,
  decodeSubmit: (json) => {
    const id = Option.getOrUndefined(decodeSubmitted(json))?.id
    return id !== undefined && taskIdPattern.test(id)
      ? { upstreamId: id }
      : badBody("The upstream's submit answer names no task id.")
  },
  poll: (upstreamId): VideoCall => ({ method: "GET", path: taskPath(upstreamId) }),
  decodePoll: (json) => decodeArkTask(json),
  content: (_upstreamId, state): VideoCall => ({ method: "GET", path: state.content?.url ?? "" }),
  classifyError: classifyArkError
}
