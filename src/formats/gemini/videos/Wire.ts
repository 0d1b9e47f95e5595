/**
 * Veo through the Gemini API as a video wire (ai.google.dev/gemini-api/docs/video,
 * REST; long-running operations: ai.google.dev/api/operations):
 *
 * - Submit: `POST /v1beta/models/{model}:predictLongRunning` with `instances:
 *   [{prompt, image?, lastFrame?, referenceImages?, video?}]` and
 *   `parameters: {aspectRatio?, durationSeconds?, resolution?, …}`. References
 *   by role: `first_frame` → `image`, `last_frame` → `lastFrame`,
 *   `reference_image` → `referenceImages[{image, referenceType: "asset"}]`,
 *   `reference_video` → `video: {uri}` (a video to extend). The Gemini API
 *   takes images only inline: a `data:` URI becomes `{bytesBase64Encoded,
 *   mimeType}`; any other reference is sent as `{uri}`, which the API refuses
 *   (400, `rejected` before any task exists), so the relay should hand this
 *   wire images as data URIs. Veo takes no audio reference, and neither
 *   `watermark` (its output is always SynthID-marked) nor `generateAudio`
 *   (not a Gemini API parameter; Veo 3 makes sound anyway): those are not
 *   sent. A `size` `<W>x<H>` with no ratio or resolution gives `16:9` or
 *   `9:16` by orientation and the tier of its short side (`720p`, `1080p`,
 *   `4k`). Metadata extras: `GEMINI_EXTRAS`. The answer is an operation
 *   `{name: "models/{model}/operations/{id}"}`.
 * - Poll: `GET /v1beta/{name}` → `{name, done?, error?: {code, message},
 *   response?: {generateVideoResponse: {generatedSamples: [{video: {uri}}],
 *   raiMediaFilteredCount?, raiMediaFilteredReasons?}}}`; statuses by
 *   `geminiStatusOf`. Veo reports no progress: 100 once done, none before.
 * - Content: `GET` of the sample's `uri`, with the key (`x-goog-api-key`):
 *   the gateway proxies it, so the key never reaches the caller, and a URI on
 *   another origin than the channel's is refused (`bad-body`).
 * - Errors: Google's `{error: {code, message, status, details}}`, classified by
 *   `classifyGeminiError`.
 *
 * @since 0.1.0
 */
import { Option, Schema } from "effect"
import { parseDataUri } from "../../../canonical/DataUri.ts"
import type { TaskStatus, UpstreamTaskState, VideoRequest } from "../../../canonical/Video.ts"
import { UpstreamFailed } from "../../../errors/GatewayError.ts"
import { classifyGeminiError } from "../generate-content/ErrorBody.ts"
import { CONTENT_POLICY, httpUrl, taskError } from "../../videos/TaskFailure.ts"
import type { VideoCall, VideoWire } from "../../videos/VideoWire.ts"

/**
 * The `parameters` a caller may pass through `metadata` (a string of at most
 * 2,000 characters, a number or a boolean; anything else is left out):
 * `negativePrompt`, `personGeneration`, `seed`. Not `sampleCount`: one task
 * makes one video, billed once.
 *
 * @category constants
 */
export const GEMINI_EXTRAS: ReadonlyArray<string> = ["negativePrompt", "personGeneration", "seed"]

/**
 * The google.rpc codes an operation's `error.code` may carry, by number
 * (googleapis `google/rpc/code.proto`), as the task error code in lower case.
 *
 * @category constants
 */
export const RPC_CODES: Readonly<Record<number, string>> = {
  1: "cancelled",
  2: "unknown",
  3: "invalid_argument",
  4: "deadline_exceeded",
  5: "not_found",
  6: "already_exists",
  7: "permission_denied",
  8: "resource_exhausted",
  9: "failed_precondition",
  10: "aborted",
  11: "out_of_range",
  12: "unimplemented",
  13: "internal",
  14: "unavailable",
  15: "data_loss",
  16: "unauthenticated"
}

/** An image reference in the Gemini API's inline form, or `{uri}` (refused by the API) when it is no data URI. */
const image = (ref: string): Record<string, unknown> => {
  const inline = parseDataUri(ref)
  return inline === undefined ? { uri: ref } : { bytesBase64Encoded: inline.data, mimeType: inline.mediaType }
}

const fromSize = (size: string): { readonly aspectRatio: string; readonly resolution: string } | undefined => {
  const match = /^(\d{1,5})x(\d{1,5})$/.exec(size)
  if (match === null) return undefined
  const width = Number(match[1])
  const height = Number(match[2])
  const short = Math.min(width, height)
  return {
    aspectRatio: width >= height ? "16:9" : "9:16",
    resolution: short <= 720 ? "720p" : short <= 1080 ? "1080p" : "4k"
  }
}

const extrasOf = (metadata: Readonly<Record<string, unknown>> | undefined): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  for (const name of GEMINI_EXTRAS) {
    const value = metadata?.[name]
    if (
      typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value)) ||
      (typeof value === "string" && value.length <= 2000)
    ) out[name] = value
  }
  return out
}

/**
 * The `predictLongRunning` body of `request`.
 *
 * @category encoding
 */
export const geminiSubmitBody = (request: VideoRequest): Record<string, unknown> => {
  const instance: Record<string, unknown> = {}
  if (request.prompt !== "") instance.prompt = request.prompt
  const references: Array<Record<string, unknown>> = []
  for (const reference of request.references) {
    switch (reference.role) {
      case "first_frame":
        instance.image = image(reference.ref)
        break
      case "last_frame":
        instance.lastFrame = image(reference.ref)
        break
      case "reference_image":
        references.push({ image: image(reference.ref), referenceType: "asset" })
        break
      case "reference_video":
        instance.video = { uri: reference.ref }
        break
      case "reference_audio":
        break
    }
  }
  if (references.length > 0) instance.referenceImages = references
  const sized = request.size === undefined ? undefined : fromSize(request.size)
  const aspectRatio = request.aspectRatio ?? sized?.aspectRatio
  const resolution = request.resolution ?? sized?.resolution
  return {
    instances: [instance],
    parameters: {
      ...extrasOf(request.metadata),
      ...(request.negativePrompt === undefined ? {} : { negativePrompt: request.negativePrompt }),
      ...(aspectRatio === undefined ? {} : { aspectRatio }),
      ...(resolution === undefined ? {} : { resolution }),
      ...(request.seconds === undefined ? {} : { durationSeconds: request.seconds })
    }
  }
}

const operationPattern = /^(models\/[A-Za-z0-9._-]{1,128}\/)?operations\/[A-Za-z0-9._-]{1,128}$/

const Submitted = Schema.Struct({ name: Schema.String })
const decodeSubmitted = Schema.decodeUnknownOption(Submitted)

const Optional = <S extends Schema.Top>(schema: S) => Schema.optional(Schema.NullOr(schema))

const Operation = Schema.Struct({
  done: Optional(Schema.Boolean),
  error: Optional(Schema.Struct({ code: Optional(Schema.Number), message: Optional(Schema.String) })),
  response: Optional(Schema.Struct({
    generateVideoResponse: Optional(Schema.Struct({
      generatedSamples: Optional(
        Schema.Array(Schema.Struct({ video: Optional(Schema.Struct({ uri: Optional(Schema.String) })) }))
      ),
      raiMediaFilteredCount: Optional(Schema.Number),
      raiMediaFilteredReasons: Optional(Schema.Array(Schema.String))
    }))
  }))
})
const decodeOperation = Schema.decodeUnknownOption(Operation)

/** An operation answer as the wire reads it (other fields are ignored). @category models */
export type GeminiOperation = typeof Operation.Type

const badBody = (message: string): UpstreamFailed => new UpstreamFailed({ kind: "bad-body", status: 200, message })

/**
 * The internal status of an operation, Veo's synonym table: `done` absent or
 * false → `in_progress` (an operation does not tell queued from running);
 * `done` with `error` → `failed`; `done` with a `raiMediaFilteredCount` above
 * 0 and no sample → `failed` (`content_policy`); `done` with a sample →
 * `completed`; `undefined` for a done operation with none of these (a
 * `bad-body` answer).
 *
 * @category decoding
 */
export const geminiStatusOf = (operation: GeminiOperation): TaskStatus | undefined => {
  if (operation.done !== true) return "in_progress"
  if (operation.error !== undefined && operation.error !== null) return "failed"
  const answer = operation.response?.generateVideoResponse
  if ((answer?.generatedSamples ?? []).length > 0) return "completed"
  return (answer?.raiMediaFilteredCount ?? 0) > 0 ? "failed" : undefined
}

/**
 * A poll answer as the task's state (see `geminiStatusOf`); a completed
 * task's content is its first sample's `uri`, fetched with the key, and only
 * when that URI is `http(s)` on `channelUrl`'s origin.
 *
 * @category decoding
 */
export const decodeGeminiOperation = (json: unknown, channelUrl: string): UpstreamTaskState | UpstreamFailed => {
  const operation = Option.getOrUndefined(decodeOperation(json))
  if (operation === undefined) return badBody("The upstream's operation answer could not be read.")
  const status = geminiStatusOf(operation)
  if (status === undefined) return badBody("The upstream's finished operation holds no video.")
  if (status === "in_progress") return { status }
  if (status === "failed") {
    const error = operation.error
    if (error !== undefined && error !== null) {
      const code = typeof error.code === "number" ? RPC_CODES[error.code] : undefined
      return {
        status,
        progress: 100,
        error: taskError(code, error.message ?? undefined, "upstream_error", "The upstream task failed.")
      }
    }
    const reason = operation.response?.generateVideoResponse?.raiMediaFilteredReasons?.[0]
    return {
      status,
      progress: 100,
      error: taskError(CONTENT_POLICY, reason, CONTENT_POLICY, "Refused by content policy.")
    }
  }
  const uri = operation.response?.generateVideoResponse?.generatedSamples?.[0]?.video?.uri
  const location = typeof uri === "string" ? httpUrl(uri) : undefined
  if (location === undefined || uri === undefined || uri === null) {
    return badBody("The upstream's finished operation names no video URI.")
  }
  const channel = httpUrl(channelUrl)
  if (channel === undefined || location.origin !== channel.origin) {
    return badBody("The upstream named a video on another host than its own; it is not fetched with the key.")
  }
  return { status, progress: 100, content: { url: uri, withKey: true } }
}

/**
 * The Veo video wire (see the module doc). No remix: the Gemini API has none
 * (a video is extended by a new submit with `reference_video`).
 *
 * @category formats
 */
export const geminiVideoWire: VideoWire = {
  name: "gemini",
  submit: (request, model): VideoCall => ({
    method: "POST",
    path: `/v1beta/models/${encodeURIComponent(model)}:predictLongRunning`,
    body: { _tag: "json", body: geminiSubmitBody(request) }
  }),
  remix: undefined,
  decodeSubmit: (json) => {
    const name = Option.getOrUndefined(decodeSubmitted(json))?.name
    return name !== undefined && operationPattern.test(name)
      ? { upstreamId: name }
      : badBody("The upstream's submit answer names no operation.")
  },
  poll: (upstreamId): VideoCall => ({
    method: "GET",
    path: `/v1beta/${upstreamId.split("/").map(encodeURIComponent).join("/")}`
  }),
  decodePoll: decodeGeminiOperation,
  content: (_upstreamId, state): VideoCall => ({ method: "GET", path: state.content?.url ?? "" }),
  classifyError: classifyGeminiError
}
