/**
 * The emulator's generate-content video API (Veo through the Gemini API:
 * ai.google.dev/gemini-api/docs/video, REST tab; operations:
 * ai.google.dev/api/operations), over the shared task store of
 * `VideoTasks.ts`, errors in Google's `{error: {code, message, status}}`:
 *
 * - `POST /v1beta/models/{model}:predictLongRunning` with `instances: [{prompt,
 *   image?, lastFrame?, referenceImages?, video?}]` (exactly one instance; an
 *   image is `{bytesBase64Encoded, mimeType}` or `{inlineData: {mimeType,
 *   data}}`, the Gemini API taking no image URL; `lastFrame` needs `image`; at
 *   most 3 `referenceImages` of `{image, referenceType: "asset" | "style"}`;
 *   `video` is `{uri}` of a video to extend) and `parameters: {aspectRatio
 *   "16:9" | "9:16", durationSeconds 4–8 (a number or its digits),
 *   resolution "720p" | "1080p" | "4k", negativePrompt, personGeneration
 *   "allow_all" | "allow_adult" | "dont_allow", sampleCount 1–4, seed}`; any
 *   other parameter is refused ("isn't supported by this model": the Gemini
 *   API does not take `generateAudio`, `fps` or `enhancePrompt`, which
 *   `@google/genai` 1.x refused for it before sending) → an
 *   operation `{name: "models/{model}/operations/{id}"}`.
 * - `GET /v1beta/models/{model}/operations/{id}` → `{name}` while running (a
 *   false `done` is left out, as proto3 JSON leaves defaults out), then `{name,
 *   done: true, response: {"@type", generateVideoResponse: {generatedSamples:
 *   [{video: {uri}}]}}}`. A content-policy stop (`unsafe` marker) is done with
 *   `raiMediaFilteredCount` and `raiMediaFilteredReasons` and no samples; a
 *   failure (`broken`, `expire`) is done with `error {code: 13 | 4, message}`
 *   (google.rpc.Code INTERNAL, DEADLINE_EXCEEDED).
 * - `GET /v1beta/files/{id}:download?alt=media`: the video's bytes (`Range`
 *   honoured), only with an API key (`x-goog-api-key` or `key=`): a wrong one
 *   is refused as on every route, and a missing one even when the emulator
 *   checks no keys (403 `PERMISSION_DENIED`, as Google answers unregistered
 *   callers).
 *
 * @since 0.1.0
 */
import { mp4For } from "./Mp4.ts"
import { jsonReply, type Reply } from "./Sse.ts"
import { bytesWithRange } from "./VideoContent.ts"
import { randomHex, type VideoTask } from "./VideoTasks.ts"
import { MAX_VIDEO_PROMPT } from "./VideosOpenAi.ts"
import { isObject, type JsonObject, type RouteContext } from "./Wire.ts"

const bad = (message: string): Reply => jsonReply({ error: { code: 400, message, status: "INVALID_ARGUMENT" } }, 400)

const notFound = (what: string): Reply =>
  jsonReply({ error: { code: 404, message: `${what} not found.`, status: "NOT_FOUND" } }, 404)

const KNOWN_PARAMETERS = new Set([
  "aspectRatio",
  "durationSeconds",
  "resolution",
  "negativePrompt",
  "personGeneration",
  "sampleCount",
  "seed"
])

const SIZES: Record<string, Record<string, string>> = {
  "720p": { "16:9": "1280x720", "9:16": "720x1280" },
  "1080p": { "16:9": "1920x1080", "9:16": "1080x1920" },
  "4k": { "16:9": "3840x2160", "9:16": "2160x3840" }
}

/** Whether `value` is an image as the Gemini API takes it for Veo (inline bytes only). */
const isImage = (value: unknown): boolean => {
  if (!isObject(value)) return false
  if (typeof value.bytesBase64Encoded === "string") return typeof value.mimeType === "string"
  const inline = value.inlineData
  return isObject(inline) && typeof inline.data === "string" && typeof inline.mimeType === "string"
}

/** The instance's problem, if any. */
const instanceError = (instance: JsonObject): Reply | undefined => {
  if (typeof instance.prompt !== "string" || instance.prompt.length === 0) {
    return instance.image === undefined ? bad("* instances[0].prompt: a prompt or an image is required.") : undefined
  }
  if (instance.prompt.length > MAX_VIDEO_PROMPT) return bad("* instances[0].prompt: the prompt is too long.")
  return undefined
}

const mediaError = (instance: JsonObject): Reply | undefined => {
  if (instance.image !== undefined && !isImage(instance.image)) {
    return bad(
      "* instances[0].image: an image is {bytesBase64Encoded, mimeType} or {inlineData}; URLs are not supported."
    )
  }
  if (instance.lastFrame !== undefined) {
    if (!isImage(instance.lastFrame)) return bad("* instances[0].lastFrame: not a valid image.")
    if (instance.image === undefined) return bad("* instances[0].lastFrame: lastFrame requires image.")
  }
  if (instance.referenceImages !== undefined) {
    const references = instance.referenceImages
    if (
      !Array.isArray(references) || references.length > 3 ||
      !references.every((item) =>
        isObject(item) && isImage(item.image) && (item.referenceType === "asset" || item.referenceType === "style")
      )
    ) return bad("* instances[0].referenceImages: at most 3 of {image, referenceType: asset | style}.")
  }
  if (instance.video !== undefined && !(isObject(instance.video) && typeof instance.video.uri === "string")) {
    return bad("* instances[0].video: a video is {uri}.")
  }
  return undefined
}

/** `POST /v1beta/models/{model}:predictLongRunning`. @category routes */
export const geminiVideoCreate = (context: RouteContext): Reply => {
  const body = context.body
  const instances = body.instances
  if (!Array.isArray(instances) || instances.length !== 1 || !isObject(instances[0])) {
    return bad("* instances: exactly one instance is required.")
  }
  const instance = instances[0]
  const problem = instanceError(instance) ?? mediaError(instance)
  if (problem !== undefined) return problem
  const parameters = body.parameters ?? {}
  if (!isObject(parameters)) return bad("* parameters: must be an object.")
  const unknown = Object.keys(parameters).find((name) => !KNOWN_PARAMETERS.has(name))
  if (unknown !== undefined) return bad(`\`${unknown.slice(0, 100)}\` isn't supported by this model.`)
  const ratio = parameters.aspectRatio ?? "16:9"
  if (ratio !== "16:9" && ratio !== "9:16") return bad("* parameters.aspectRatio: must be 16:9 or 9:16.")
  const duration = Number(parameters.durationSeconds ?? 8)
  if (!Number.isInteger(duration) || duration < 4 || duration > 8 || typeof parameters.durationSeconds === "boolean") {
    return bad("* parameters.durationSeconds: must be a whole number of seconds from 4 to 8.")
  }
  const resolution = parameters.resolution ?? "720p"
  if (typeof resolution !== "string" || SIZES[resolution] === undefined) {
    return bad("* parameters.resolution: must be 720p, 1080p or 4k.")
  }
  const person = parameters.personGeneration
  if (person !== undefined && person !== "allow_all" && person !== "allow_adult" && person !== "dont_allow") {
    return bad("* parameters.personGeneration: must be allow_all, allow_adult or dont_allow.")
  }
  const count = parameters.sampleCount ?? 1
  if (typeof count !== "number" || !Number.isInteger(count) || count < 1 || count > 4) {
    return bad("* parameters.sampleCount: must be 1 to 4.")
  }
  if (parameters.negativePrompt !== undefined && typeof parameters.negativePrompt !== "string") {
    return bad("* parameters.negativePrompt: must be a string.")
  }
  if (parameters.seed !== undefined && !Number.isInteger(parameters.seed)) {
    return bad("* parameters.seed: must be whole.")
  }
  const model = context.model
  const task = context.videos.add({
    id: `models/${model}/operations/${randomHex(6)}`,
    vendor: "gemini",
    model,
    prompt: typeof instance.prompt === "string" ? instance.prompt : "",
    seconds: duration,
    size: SIZES[resolution][ratio],
    extras: { sampleCount: count }
  })
  return jsonReply({ name: task.id })
}

/** The emulator's download URI of `task`'s bytes, sample `index`. */
const fileUri = (context: RouteContext, task: VideoTask, index: number): string =>
  `http://${context.headers.get("host") ?? "127.0.0.1"}/v1beta/files/${task.contentToken}${
    index === 0 ? "" : `-${index}`
  }:download?alt=media`

/**
 * The operation of `task` at `now` (epoch milliseconds), as the operations
 * API answers it.
 *
 * @category rendering
 */
export const geminiOperation = (context: RouteContext, task: VideoTask, now: number): JsonObject => {
  const state = context.videos.stateOf(task, now)
  if (state.phase === "queued" || state.phase === "running") return { name: task.id }
  if (state.phase === "succeeded") {
    const count = typeof task.extras.sampleCount === "number" ? task.extras.sampleCount : 1
    return {
      name: task.id,
      done: true,
      response: {
        "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse",
        generateVideoResponse: {
          generatedSamples: Array.from({ length: count }, (_, index) => ({
            video: { uri: fileUri(context, task, index) }
          }))
        }
      }
    }
  }
  if (task.outcome === "content_policy") {
    return {
      name: task.id,
      done: true,
      response: {
        "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse",
        generateVideoResponse: {
          raiMediaFilteredCount: 1,
          raiMediaFilteredReasons: [
            "We encountered an issue with the audio or video for your prompt. You have not been charged."
          ]
        }
      }
    }
  }
  return {
    name: task.id,
    done: true,
    error: task.outcome === "expire"
      ? { code: 4, message: "The video generation timed out." }
      : { code: 13, message: "Video generation failed due to an internal error." }
  }
}

/** `GET /v1beta/models/{model}/operations/{id}`. @category routes */
export const geminiOperationGet = (context: RouteContext): Reply => {
  const name = decodeURIComponent(context.path.replace(/^\/v1(beta|alpha)?\//, ""))
  const task = context.videos.get("gemini", name)
  return task === undefined
    ? notFound(`Operation ${name.slice(0, 200)}`)
    : jsonReply(geminiOperation(context, task, Date.now()))
}

/** `GET /v1beta/files/{id}:download?alt=media`: a generated video's bytes, with a key only. @category routes */
export const geminiFileDownload = (context: RouteContext): Reply => {
  const key = context.headers.get("x-goog-api-key") ?? context.query.key
  if (key === undefined || key.length === 0) {
    return jsonReply({
      error: {
        code: 403,
        message:
          "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
        status: "PERMISSION_DENIED"
      }
    }, 403)
  }
  const match = /^\/v1(?:beta|alpha)?\/files\/([0-9a-f]{32})(?:-(\d))?:download$/.exec(context.path)
  const task = match === null ? undefined : context.videos.byToken(match[1])
  if (match === null || task === undefined || task.vendor !== "gemini") return notFound("File")
  if (context.videos.stateOf(task, Date.now()).phase !== "succeeded") return notFound("File")
  const index = Number(match[2] ?? 0)
  return bytesWithRange(mp4For(task.seed + index, task.seconds), "video/mp4", context.headers.get("range"))
}
