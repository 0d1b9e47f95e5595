/**
 * The OpenAI videos API as an upstream wire
 * (platform.openai.com/docs/api-reference/videos): `POST /v1/videos` creates a
 * job (JSON `{model, prompt, seconds, size, input_reference: {image_url}}`,
 * the API's JSON form of the create body), `GET /v1/videos/{id}` reads the
 * video object (`status` `queued | in_progress | completed | failed`,
 * `progress` 0–100, `seconds` a string, `size` `<W>x<H>`, `error {code,
 * message}` — `moderation_blocked` when its moderation stopped the video, shown
 * as the shared `content_policy` — `expires_at` epoch seconds),
 * `POST /v1/videos/{id}/remix` remixes
 * a completed video with a new `prompt`, and `GET /v1/videos/{id}/content`
 * returns the MP4 bytes (the object carries no URL; the call needs the key).
 * Errors are OpenAI's `{error: {message, type, code}}`.
 *
 * @since 0.1.0
 */
import type { TaskStatus, UpstreamTaskState, VideoRequest } from "../../../canonical/Video.ts"
import { UpstreamFailed } from "../../../errors/GatewayError.ts"
import { classifyOpenAiError } from "../shared/ErrorBody.ts"
import { CONTENT_POLICY, taskError } from "../../videos/TaskFailure.ts"
import type { VideoWire } from "../../videos/VideoWire.ts"

/** The longest upstream task id accepted (the vendor's are about 60 characters). @category constants */
export const MAX_UPSTREAM_ID = 256

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * A vendor's task id when it is one we can put in a path: 1 to `MAX_UPSTREAM_ID`
 * characters of letters, digits and `-_.:/`, else `undefined`.
 *
 * @category decoding
 */
export const upstreamIdOf = (value: unknown): string | undefined =>
  typeof value === "string" && value.length <= MAX_UPSTREAM_ID && /^[A-Za-z0-9][A-Za-z0-9._:/-]*$/.test(value)
    ? value
    : undefined

/** The video object's statuses onto the internal ones (identical names; anything else is still running). */
const statusOf = (value: unknown): TaskStatus | undefined => {
  switch (value) {
    case "queued":
    case "in_progress":
    case "completed":
    case "failed":
      return value
    default:
      return undefined
  }
}

/** A whole number of seconds from the object's `seconds` ("8") or a number, when it is one. */
const secondsOf = (value: unknown): number | undefined => {
  const number = typeof value === "string" && /^\d{1,5}(\.\d+)?$/.test(value)
    ? Number(value)
    : typeof value === "number"
    ? value
    : NaN
  return Number.isFinite(number) && number > 0 && number < 100_000 ? Math.ceil(number) : undefined
}

const sizeOf = (value: unknown): { width?: number; height?: number } => {
  const match = typeof value === "string" ? /^(\d{1,5})x(\d{1,5})$/.exec(value) : null
  return match === null ? {} : { width: Number(match[1]), height: Number(match[2]) }
}

/**
 * The create body. The caller's `metadata` is not forwarded: OpenAI refuses
 * parameters it does not know (spec "What the service does", 8: a channel
 * may ignore a field).
 */
const createBody = (request: VideoRequest, model: string): Record<string, unknown> => {
  const body: Record<string, unknown> = { model, prompt: request.prompt }
  if (request.seconds !== undefined) body.seconds = String(request.seconds)
  if (request.size !== undefined) body.size = request.size
  const image = request.references.find((reference) =>
    reference.kind === "image" && (reference.role === "first_frame" || reference.role === "reference_image")
  )
  if (image !== undefined) body.input_reference = { image_url: image.ref }
  return body
}

const path = (upstreamId: string) => `/v1/videos/${encodeURIComponent(upstreamId)}`

/**
 * The OpenAI video wire.
 *
 * @category formats
 */
export const openAiVideoWire: VideoWire = {
  name: "openai",
  submit: (request, model) => ({
    method: "POST",
    path: "/v1/videos",
    body: { _tag: "json", body: createBody(request, model) }
  }),
  remix: (upstreamId, request) => ({
    method: "POST",
    path: `${path(upstreamId)}/remix`,
    body: { _tag: "json", body: { prompt: request.prompt } }
  }),
  decodeSubmit: (json) => {
    const upstreamId = isRecord(json) ? upstreamIdOf(json.id) : undefined
    return upstreamId === undefined
      ? new UpstreamFailed({ kind: "bad-body", status: 200, message: "The video job answer has no usable id." })
      : { upstreamId }
  },
  poll: (upstreamId) => ({ method: "GET", path: path(upstreamId) }),
  decodePoll: (json): UpstreamTaskState | UpstreamFailed => {
    const status = isRecord(json) ? statusOf(json.status) : undefined
    if (!isRecord(json) || status === undefined) {
      return new UpstreamFailed({ kind: "bad-body", status: 200, message: "The video object has no known status." })
    }
    const progress = typeof json.progress === "number" && Number.isFinite(json.progress)
      ? Math.max(0, Math.min(100, Math.round(json.progress)))
      : undefined
    const expiresAt = typeof json.expires_at === "number" && Number.isFinite(json.expires_at)
      ? json.expires_at
      : undefined
    const error = isRecord(json.error) ? json.error : undefined
    return {
      status,
      progress,
      seconds: secondsOf(json.seconds),
      ...sizeOf(json.size),
      content: status === "completed" ? { withKey: true, expiresAt } : undefined,
      error: status === "failed"
        ? taskError(
          error?.code === "moderation_blocked"
            ? CONTENT_POLICY
            : typeof error?.code === "string"
            ? error.code
            : undefined,
          typeof error?.message === "string" ? error.message : undefined,
          "video_generation_failed",
          "The upstream could not make the video."
        )
        : undefined
    }
  },
  content: (upstreamId) => ({ method: "GET", path: `${path(upstreamId)}/content` }),
  classifyError: classifyOpenAiError
}
