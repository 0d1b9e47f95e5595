/**
 * Azure OpenAI for the vendor emulator, served under the path prefix `/azure` (a gateway channel of type `azure`
 * has `base_url: <emulator>/azure`, a base URL with a path), in both of Azure's URL families
 * (learn.microsoft.com/azure/ai-foundry/openai/reference; …/openai/api-version-lifecycle):
 *
 * - deployments: `POST /azure/openai/deployments/{deployment}/{chat/completions|completions|embeddings|
 *   images/generations|audio/speech|audio/transcriptions|audio/translations}?api-version=…`. The deployment in the
 *   path is the model answered (the body's `model` is not required, and not read); `api-version` is required:
 *   missing, or not one of `AZURE_API_VERSIONS`, is Azure's 404 `{"error":{"code":"404","message":"Resource not
 *   found"}}` (MicrosoftDocs/azure-docs#114602). A deployment whose name starts with `missing` does not exist:
 *   404 `DeploymentNotFound`.
 * - v1: `POST /azure/openai/v1/{chat/completions|completions|responses|embeddings|images/generations|audio/…}`, the
 *   deployment as the body's `model`, and the videos of Sora 2 on OpenAI's schema (`POST /azure/openai/v1/videos`,
 *   `GET …/videos/{id}`, `POST …/videos/{id}/remix`, `GET …/videos/{id}/content`; learn.microsoft.com/azure/
 *   ai-foundry/openai/concepts/video-generation), served by the emulator's OpenAI video tasks; an `api-version` other than `preview` / `latest` is Azure's 400
 *   `{"error":{"code":"BadRequest","message":"API version not supported"}}` (openai/codex#3725).
 *
 * Keys: `api-key` (an API key), or `Authorization: Bearer` (a Microsoft Entra ID token); neither is Azure's 401
 * `{"error":{"code":"401","message":"Access denied due to invalid subscription key or wrong API endpoint. …"}}`,
 * as is a key outside the emulator's valid keys (`vendorErrorBody("azure", 401)`).
 *
 * Answers are the emulator's OpenAI ones (`OpenAiChat.ts`, `OpenAiCompletions.ts`, `OpenAiResponses.ts`,
 * `Embeddings.ts`, `Images.ts`, `Audio.ts`, so usage is read back as OpenAI's, `ReportedUsage.ts`) with Azure's
 * content filter over them (learn.microsoft.com/azure/ai-foundry/openai/concepts/content-filter):
 * - annotations: chat and completions answers carry `prompt_filter_results: [{prompt_index: 0,
 *   content_filter_results}]` and, on each choice, `content_filter_results` (`hate`, `self_harm`, `sexual`,
 *   `violence`, each `{filtered, severity}`); a stream starts with a chunk of only `prompt_filter_results` (empty
 *   `choices`, `id`, `model` and `object`, `created: 0`), and its content chunks carry `content_filter_results`;
 * - a prompt holding the word `unsafe` is filtered: HTTP 400, `code: "content_filter"`, `param: "prompt"`,
 *   `innererror: {code: "ResponsibleAIPolicyViolation", content_filter_result}` (violence `high`, filtered), on
 *   chat, completions and Responses; nothing is generated, so no usage is reported;
 * - an answer whose text holds the word `violent` (a prompt with it is echoed) is cut by the completion filter:
 *   `finish_reason: "content_filter"`, violence `medium` filtered; a JSON answer has no `content`, a stream stops
 *   before the flagged word and its last choice chunk has the finish; usage is reported as generated.
 *
 * @since 0.1.0
 */
import { openAiSpeech, openAiTranscriptions, openAiTranslations } from "./Audio.ts"
import { openAiEmbeddings } from "./Embeddings.ts"
import { openAiImageEdits, openAiImageGenerations } from "./Images.ts"
import { chatCompletions } from "./OpenAiChat.ts"
import { legacyCompletions } from "./OpenAiCompletions.ts"
import { createResponse } from "./OpenAiResponses.ts"
import { openAiVideoContent, openAiVideoCreate, openAiVideoRemix, openAiVideoRetrieve } from "./VideosOpenAi.ts"
import { dataFrame, jsonReply, type Reply } from "./Sse.ts"
import { arrayOr, type Handler, isObject, type JsonObject, objectOr, type RouteContext, stringOr } from "./Wire.ts"

/** The path prefix Azure is served under. @category routing */
export const AZURE_PREFIX = "/azure"

/**
 * The dated API versions the emulator's deployment paths take: Azure OpenAI's GA data-plane versions and recent
 * previews (learn.microsoft.com/azure/ai-foundry/openai/api-version-lifecycle).
 *
 * @category routing
 */
export const AZURE_API_VERSIONS: ReadonlySet<string> = new Set([
  "2022-12-01",
  "2023-05-15",
  "2024-02-01",
  "2024-06-01",
  "2024-10-21",
  "2024-12-01-preview",
  "2025-01-01-preview",
  "2025-03-01-preview",
  "2025-04-01-preview"
])

/** Azure's 401 message for a missing or wrong key. @category errors */
export const AZURE_UNAUTHORIZED_MESSAGE = "Access denied due to invalid subscription key or wrong API endpoint. " +
  "Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your " +
  "resource."

/** Azure's message for a prompt its content filter blocked. @category errors */
export const AZURE_PROMPT_FILTERED_MESSAGE = "The response was filtered due to the prompt triggering Azure OpenAI's " +
  "content management policy. Please modify your prompt and retry. To learn more about our content filtering " +
  "policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766"

/** An Azure gateway error (`{error: {code, message}}`, the code a string). @category errors */
export const azureError = (status: number, code: string, message: string): Reply =>
  jsonReply({ error: { code, message } }, status)

/** The four harm categories of a filter result, each `{filtered, severity}`. */
const filterResults = (violence: "safe" | "medium" | "high" = "safe"): JsonObject => ({
  hate: { filtered: false, severity: "safe" },
  self_harm: { filtered: false, severity: "safe" },
  sexual: { filtered: false, severity: "safe" },
  violence: { filtered: violence !== "safe", severity: violence }
})

/** The prompt's annotation (one prompt, index 0). */
const promptFilterResults = (): ReadonlyArray<JsonObject> => [
  { prompt_index: 0, content_filter_results: { ...filterResults(), jailbreak: { filtered: false, detected: false } } }
]

/** The text a request's prompt is read from: its messages, `input` or `prompt`, as one string. */
const promptText = (body: JsonObject): string => JSON.stringify([body.messages, body.input, body.prompt])

/** Whether the content filter blocks the prompt (the word `unsafe`). */
const promptFiltered = (body: JsonObject): boolean => /\bunsafe\b/i.test(promptText(body))

/** The content filter's 400 for a blocked prompt. */
const promptFilteredReply = (): Reply =>
  jsonReply({
    error: {
      message: AZURE_PROMPT_FILTERED_MESSAGE,
      type: null,
      param: "prompt",
      code: "content_filter",
      status: 400,
      innererror: {
        code: "ResponsibleAIPolicyViolation",
        content_filter_result: { ...filterResults("high"), jailbreak: { filtered: false, detected: false } }
      }
    }
  }, 400)

const FLAGGED = /\bviolent\b/i

/** A chat or completions choice with Azure's annotation, cut by the completion filter when its text is flagged. */
const annotateChoice = (choice: unknown): unknown => {
  if (!isObject(choice)) return choice
  const message = objectOr(choice.message)
  const text = stringOr(message.content) ?? stringOr(choice.text) ?? ""
  if (!FLAGGED.test(text)) return { ...choice, content_filter_results: filterResults() }
  const { content: _content, ...rest } = message
  return {
    ...choice,
    ...(isObject(choice.message) ? { message: rest } : { text: "" }),
    finish_reason: "content_filter",
    content_filter_results: filterResults("medium")
  }
}

/** A JSON chat or completions answer with Azure's annotations. */
const annotateJson = (body: JsonObject): JsonObject => ({
  ...body,
  prompt_filter_results: promptFilterResults(),
  choices: arrayOr(body.choices).map(annotateChoice)
})

/** The JSON payload of an SSE `data:` frame, or `undefined` (`[DONE]`, not JSON, a binary frame). */
const payloadOf = (frame: string | Uint8Array<ArrayBuffer>): JsonObject | undefined => {
  if (typeof frame !== "string") return undefined
  const line = frame.split("\n").find((text) => text.startsWith("data:"))
  if (line === undefined) return undefined
  try {
    const parsed: unknown = JSON.parse(line.slice(5).trim())
    return isObject(parsed) ? parsed : undefined
  } catch {
    return undefined
  }
}

/** The text a stream chunk's first choice adds (chat delta content or completions text). */
const chunkText = (chunk: JsonObject): string => {
  const choice = objectOr(arrayOr(chunk.choices)[0])
  return stringOr(objectOr(choice.delta).content) ?? stringOr(choice.text) ?? ""
}

/**
 * A chat or completions stream with Azure's annotations: the `prompt_filter_results` chunk first, then the chunks
 * with `content_filter_results` on their choices; from a chunk whose text is flagged on, the choice chunks are
 * replaced by one finishing with `content_filter` (the usage chunk and `[DONE]` are kept).
 */
const annotateFrames = (
  frames: ReadonlyArray<string | Uint8Array<ArrayBuffer>>
): ReadonlyArray<string | Uint8Array<ArrayBuffer>> => {
  const first = frames.map(payloadOf).find((chunk) => chunk !== undefined)
  const out: Array<string | Uint8Array<ArrayBuffer>> = [
    dataFrame({
      choices: [],
      created: 0,
      id: "",
      model: "",
      object: "",
      prompt_filter_results: promptFilterResults()
    })
  ]
  let cut = false
  for (const frame of frames) {
    const chunk = payloadOf(frame)
    if (chunk === undefined || arrayOr(chunk.choices).length === 0) {
      out.push(frame)
      continue
    }
    if (cut) continue
    if (FLAGGED.test(chunkText(chunk))) {
      cut = true
      const choice = objectOr(arrayOr(chunk.choices)[0])
      const finish = isObject(choice.delta)
        ? { index: 0, delta: {}, logprobs: null, finish_reason: "content_filter" }
        : { index: 0, text: "", logprobs: null, finish_reason: "content_filter" }
      out.push(dataFrame({ ...chunk, choices: [{ ...finish, content_filter_results: filterResults("medium") }] }))
      continue
    }
    out.push(dataFrame({
      ...chunk,
      choices: arrayOr(chunk.choices).map((choice) =>
        isObject(choice) ? { ...choice, content_filter_results: filterResults() } : choice
      )
    }))
  }
  return first === undefined ? frames : out
}

/** `handler`'s chat or completions answer with Azure's content filter over it (see the module). */
const filtered = (handler: Handler) => (context: RouteContext): Reply | Promise<Reply> => {
  if (promptFiltered(context.body)) return promptFilteredReply()
  const reply = handler(context)
  return reply instanceof Promise ? reply.then(annotated) : annotated(reply)
}

/** A chat or completions reply with the content filter's annotations. */
const annotated = (reply: Reply): Reply => {
  if (reply._tag === "Json" && reply.status === 200 && isObject(reply.body)) {
    return jsonReply(annotateJson(reply.body))
  }
  if (reply._tag === "Events") return { ...reply, frames: annotateFrames(reply.frames) }
  return reply
}

/** `handler` with the prompt filter only (Responses: the filter's 400; no annotations). */
const promptChecked = (handler: Handler) => (context: RouteContext): Reply | Promise<Reply> =>
  promptFiltered(context.body) ? promptFilteredReply() : handler(context)

/** An Azure operation: its handler, and how its body says it streams. */
interface Operation {
  readonly handler: Handler
  readonly stream: (body: JsonObject) => boolean
}

const streams = (body: JsonObject): boolean => body.stream === true
const never = (): boolean => false

/** The operations after the deployment (dated) or after `/openai/v1` (v1). */
const OPERATIONS: Record<string, Operation> = {
  "chat/completions": { handler: filtered(chatCompletions), stream: streams },
  "completions": { handler: filtered(legacyCompletions), stream: streams },
  "embeddings": { handler: openAiEmbeddings, stream: never },
  "images/generations": { handler: openAiImageGenerations, stream: never },
  "images/edits": { handler: openAiImageEdits, stream: never },
  "audio/speech": { handler: openAiSpeech, stream: (body) => body.stream_format === "sse" },
  "audio/transcriptions": { handler: openAiTranscriptions, stream: (body) => body.stream === "true" },
  "audio/translations": { handler: openAiTranslations, stream: never }
}

/** The v1 API's operations: the deployment ones, and Responses. */
const V1_OPERATIONS: Record<string, Operation> = {
  ...OPERATIONS,
  "responses": { handler: promptChecked(createResponse), stream: streams }
}

/** The v1 API's video paths after `/openai` (`/v1/videos/{id}[/remix|/content]`), as OpenAI's. */
const videoPath = /^\/v1\/videos\/[^/]+(\/remix|\/content)?$/

/**
 * The v1 API's videos (Sora 2 on OpenAI's video schema): OpenAI's handlers on the path without `/azure/openai`,
 * behind the same api-version and key checks. `undefined` for a path that is none of them.
 */
const v1Video = (method: string, path: string): Handler | undefined => {
  const rest = path.slice(`${AZURE_PREFIX}/openai`.length)
  const handler = method === "POST" && rest === "/v1/videos"
    ? openAiVideoCreate
    : method === "POST" && videoPath.exec(rest)?.[1] === "/remix"
    ? openAiVideoRemix
    : method === "GET" && videoPath.test(rest)
    ? (videoPath.exec(rest)?.[1] === "/content" ? openAiVideoContent : openAiVideoRetrieve)
    : undefined
  return handler === undefined ? undefined : (context) => handler({ ...context, path: rest })
}

/** An Azure request resolved: its handler (checks included), the deployment of a deployment path, streaming. */
export interface AzureRoute {
  readonly handler: Handler
  /** The deployment named in a deployment path; `undefined` on the v1 API (the body's `model`). */
  readonly deployment: string | undefined
  readonly stream: boolean
}

const deploymentPath = /^\/azure\/openai\/deployments\/([^/]+)\/(.+)$/
const v1Path = /^\/azure\/openai\/v1\/(.+)$/

/** `handler` behind Azure's key check: an `api-key` or a Bearer token, else its 401. */
const withKey = (handler: Handler): Handler => (context) => {
  const bearer = /^Bearer\s+\S/i.test(context.headers.get("authorization") ?? "")
  if ((context.headers.get("api-key") ?? "") === "" && !bearer) {
    return azureError(401, "401", AZURE_UNAUTHORIZED_MESSAGE)
  }
  return handler(context)
}

/**
 * The Azure route of `POST path` (under `AZURE_PREFIX`), or `undefined` when it is none of Azure's: the handler
 * answers Azure's 404 / 400 for a missing or unsupported `api-version`, `DeploymentNotFound`, and the 401 of a
 * request without a key, before the operation itself.
 *
 * @category routing
 */
export const azureRoute = (
  method: string,
  path: string,
  query: Record<string, string>,
  body: JsonObject
): AzureRoute | undefined => {
  const video = v1Path.test(path) ? v1Video(method, path) : undefined
  if (video !== undefined) {
    const version = query["api-version"]
    const handler: Handler = (context) =>
      version !== undefined && version !== "preview" && version !== "latest"
        ? azureError(400, "BadRequest", "API version not supported")
        : withKey(video)(context)
    return { handler, deployment: undefined, stream: false }
  }
  if (method !== "POST") return undefined
  const deployment = deploymentPath.exec(path)
  if (deployment !== null) {
    const operation = OPERATIONS[deployment[2]]
    if (operation === undefined) return undefined
    const name = decodeURIComponent(deployment[1])
    const version = query["api-version"]
    const handler: Handler = (context) => {
      if (version === undefined || !AZURE_API_VERSIONS.has(version)) return azureError(404, "404", "Resource not found")
      if (name.startsWith("missing")) {
        return azureError(
          404,
          "DeploymentNotFound",
          "The API deployment for this resource does not exist. If you created the deployment within the last 5 " +
            "minutes, please wait a moment and try again."
        )
      }
      // The path names the deployment; the body's `model`, if any, is not read.
      return withKey(operation.handler)({ ...context, model: name, body: { ...context.body, model: name } })
    }
    return { handler, deployment: name, stream: operation.stream(body) }
  }
  const v1 = v1Path.exec(path)
  if (v1 !== null) {
    const operation = V1_OPERATIONS[v1[1]]
    if (operation === undefined) return undefined
    const version = query["api-version"]
    const handler: Handler = (context) =>
      version !== undefined && version !== "preview" && version !== "latest"
        ? azureError(400, "BadRequest", "API version not supported")
        : withKey(operation.handler)(context)
    return { handler, deployment: undefined, stream: operation.stream(body) }
  }
  return undefined
}
