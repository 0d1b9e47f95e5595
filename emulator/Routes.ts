/**
 * The vendor emulator's route table: which vendor and handler serve a method +
 * path, how each vendor carries its API key, and whether the request streams.
 *
 * @since 0.1.0
 */
import { anthropicCountTokens, anthropicMessages } from "./Anthropic.ts"
import { openAiModerations, openAiSpeech, openAiTranscriptions, openAiTranslations } from "./Audio.ts"
import { geminiEmbed, openAiEmbeddings } from "./Embeddings.ts"
import { type Vendor, vendorErrorBody } from "./Faults.ts"
import { geminiCountTokens, geminiGenerate, geminiModels } from "./Gemini.ts"
import { arkImageGenerations, openAiImageEdits, openAiImageGenerations } from "./Images.ts"
import {
  mjAction,
  mjBlend,
  mjChange,
  mjDescribe,
  mjFetch,
  mjImagine,
  mjListByCondition,
  mjModal
} from "./Midjourney.ts"
import { DEEPSEEK_PREFIX, deepseekChat, deepseekFim } from "./DeepSeek.ts"
import { bedrockConverse } from "./BedrockConverse.ts"
import { bedrockInvoke } from "./BedrockInvoke.ts"
import { BEDROCK_PREFIX, EVENT_STREAM_CONTENT_TYPE } from "./BedrockWire.ts"
import { bedrockRequestKey } from "./BedrockAuth.ts"
import { AZURE_PREFIX, AZURE_UNAUTHORIZED_MESSAGE, azureRoute } from "./Azure.ts"
import { anthropicModels, openAiModels } from "./Models.ts"
import { chatCompletions } from "./OpenAiChat.ts"
import { legacyCompletions } from "./OpenAiCompletions.ts"
import { compactResponse, createResponse } from "./OpenAiResponses.ts"
import { cohereRerank, jinaRerank } from "./Rerank.ts"
import { dataFrame, eventFrame } from "./Sse.ts"
import { arkVideoCancel, arkVideoCreate, arkVideoRetrieve } from "./VideosArk.ts"
import { geminiFileDownload, geminiOperationGet, geminiVideoCreate } from "./VideosGemini.ts"
import { klingVideoCreate, klingVideoList, klingVideoRetrieve } from "./VideosKling.ts"
import { openAiVideoContent, openAiVideoCreate, openAiVideoRemix, openAiVideoRetrieve } from "./VideosOpenAi.ts"
import { VERTEX_PREFIX, vertexCallOf, vertexHandler } from "./Vertex.ts"
import { type Handler, type JsonObject, objectOr } from "./Wire.ts"

/** A resolved route. @category models */
export interface Route {
  readonly vendor: Vendor
  readonly handler: Handler
  /** Whether the answer is streamed (drives the shape of a `malformed` fault). */
  readonly stream: boolean
  /** Gemini streams without `alt=sse` as a JSON array rather than SSE. */
  readonly jsonArray: boolean
  /** Model named in the path (Gemini, Bedrock), else undefined. */
  readonly pathModel: string | undefined
  /** Whether the route takes a JSON body (POST). */
  readonly hasBody: boolean
}

const geminiPath =
  /^\/v1(?:beta|alpha)?\/models\/([^/:]+):(generateContent|streamGenerateContent|countTokens|embedContent|batchEmbedContents|predictLongRunning)$/

/** Ark's video task by id (`GET`, `DELETE`). */
const arkTaskPath = /^\/api\/v3\/contents\/generations\/tasks\/[^/]+$/

/** A Midjourney-proxy task (`GET /mj/task/{id}/fetch`). */
const mjFetchPath = /^\/mj\/task\/[^/]+\/fetch$/

/** A Veo operation (`GET /v1beta/models/{model}/operations/{id}`). */
const geminiOperationPath = /^\/v1(?:beta|alpha)?\/models\/[^/:]+\/operations\/[^/]+$/

/** A generated file's bytes (`GET /v1beta/files/{id}:download`). */
const geminiDownloadPath = /^\/v1(?:beta|alpha)?\/files\/[^/:]+:download$/

/** Kling's task by its creation path (`GET /v1/videos/{text2video|image2video}/{task_id}`). */
const klingTaskPath = /^\/v1\/videos\/(?:text2video|image2video)\/[^/]+$/

/** `/v1/videos/{id}` with an optional `/remix` or `/content` (OpenAI videos). */
const openAiVideoPath = /^\/v1\/videos\/([^/]+)(\/remix|\/content)?$/

/** Bedrock Runtime's model operations under its prefix, the model id URL-encoded in the path. */
const bedrockPath = new RegExp(
  `^${BEDROCK_PREFIX}/model/([^/]{1,4096})/(converse|converse-stream|invoke|invoke-with-response-stream)$`
)

const bedrockHandlers: Record<string, Handler> = {
  converse: (context) => bedrockConverse(context, false),
  "converse-stream": (context) => bedrockConverse(context, true),
  invoke: (context) => bedrockInvoke(context, false),
  "invoke-with-response-stream": (context) => bedrockInvoke(context, true)
}

/** A path segment decoded once, or as it is when it is not valid percent-encoding. */
const decodeSegment = (segment: string): string => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

/** Vendor of a `GET /v1/models` call, told apart by its auth headers. */
const modelsVendor = (headers: Headers, query: Record<string, string>): Vendor =>
  headers.has("anthropic-version") || headers.has("x-api-key")
    ? "anthropic"
    : headers.has("x-goog-api-key") || query.key !== undefined
    ? "gemini"
    : "openai"

const route = (vendor: Vendor, handler: Handler, hasBody: boolean, stream = false): Route => ({
  vendor,
  handler,
  stream,
  jsonArray: false,
  pathModel: undefined,
  hasBody
})

/**
 * Resolves a request to a route; `body` decides `stream` for OpenAI/Anthropic.
 * Returns undefined for unknown paths.
 *
 * @category routing
 */
export const resolveRoute = (
  method: string,
  path: string,
  query: Record<string, string>,
  headers: Headers,
  body: JsonObject
): Route | undefined => {
  const stream = body.stream === true
  if (path.startsWith(`${AZURE_PREFIX}/openai/`)) {
    // Azure OpenAI under its prefix (`Azure.ts`): deployment paths and the v1 API (videos' GETs included).
    const azure = azureRoute(method, path, query, body)
    return azure === undefined ? undefined : {
      vendor: "azure",
      handler: azure.handler,
      stream: azure.stream,
      jsonArray: false,
      pathModel: azure.deployment,
      hasBody: method === "POST"
    }
  }
  if (method === "POST" && path.startsWith(`${VERTEX_PREFIX}/`)) {
    // Vertex AI (`Vertex.ts`): the method in the path decides streaming; its credentials are checked by the emulator.
    const call = vertexCallOf(path)
    const served = call === undefined ? undefined : vertexHandler(call)
    if (call === undefined || served === undefined) return undefined
    return {
      vendor: served.vendor,
      handler: served.handler,
      stream: served.stream,
      jsonArray: served.stream && served.vendor === "gemini" && query.alt !== "sse",
      pathModel: call.model,
      hasBody: true
    }
  }
  if (method === "POST") {
    switch (path) {
      case "/v1/chat/completions":
        return route("openai", chatCompletions, true, stream)
      case "/v1/completions":
        return route("openai", legacyCompletions, true, stream)
      case "/v1/responses":
        return route("openai", createResponse, true, stream)
      case "/v1/responses/compact":
        return route("openai", compactResponse, true)
      case "/v1/messages":
        return route("anthropic", anthropicMessages, true, stream)
      case "/v1/messages/count_tokens":
        return route("anthropic", anthropicCountTokens, true)
      case "/v1/embeddings":
        return route("openai", openAiEmbeddings, true)
      case "/v1/images/generations":
        return route("openai", openAiImageGenerations, true)
      case "/v1/audio/speech":
        return route("openai", openAiSpeech, true, body.stream_format === "sse")
      case "/v1/audio/transcriptions":
        // A multipart form: its `stream` field is the text "true".
        return route("openai", openAiTranscriptions, true, body.stream === "true")
      case "/v1/audio/translations":
        return route("openai", openAiTranslations, true)
      case "/v1/moderations":
        return route("openai", openAiModerations, true)
      // Cohere's and Jina's rerank (Bearer keys, as OpenAI's).
      case "/v2/rerank":
        return route("openai", cohereRerank, true)
      case "/v1/rerank":
        return route("openai", jinaRerank, true)
      case "/v1/images/edits":
        return route("openai", openAiImageEdits, true)
      // Ark's OpenAI-compatible chat, and its image generation (errors in the same `{error: {…}}` shape).
      case "/api/v3/chat/completions":
        return route("openai", chatCompletions, true, stream)
      // Cohere's OpenAI-compatible chat (docs.cohere.com/docs/compatibility-api), a Bearer key as OpenAI's.
      case "/compatibility/v1/chat/completions":
        return route("openai", chatCompletions, true, stream)
      // DeepSeek under its prefix (`DeepSeek.ts`): chat with or without `/v1`, and FIM under `/beta`.
      case `${DEEPSEEK_PREFIX}/chat/completions`:
      case `${DEEPSEEK_PREFIX}/v1/chat/completions`:
        return route("openai", deepseekChat, true, stream)
      case `${DEEPSEEK_PREFIX}/beta/completions`:
        return route("openai", deepseekFim, true, stream)
      case "/api/v3/images/generations":
        return route("openai", arkImageGenerations, true)
      case "/v1/videos":
        return route("openai", openAiVideoCreate, true)
      case "/api/v3/contents/generations/tasks":
        return route("openai", arkVideoCreate, true)
      // Midjourney-proxy (`mj-api-secret`).
      case "/mj/submit/imagine":
        return route("midjourney", mjImagine, true)
      case "/mj/submit/change":
        return route("midjourney", mjChange, true)
      case "/mj/submit/action":
        return route("midjourney", mjAction, true)
      case "/mj/submit/modal":
        return route("midjourney", mjModal, true)
      case "/mj/submit/blend":
        return route("midjourney", mjBlend, true)
      case "/mj/submit/describe":
        return route("midjourney", mjDescribe, true)
      case "/mj/task/list-by-condition":
        return route("midjourney", mjListByCondition, true)
      case "/v1/videos/text2video":
      case "/v1/videos/image2video":
        return route("kling", klingVideoCreate, true)
    }
    if (openAiVideoPath.test(path) && path.endsWith("/remix")) return route("openai", openAiVideoRemix, true)
    const bedrock = bedrockPath.exec(path)
    if (bedrock !== null) {
      return {
        vendor: "bedrock",
        handler: bedrockHandlers[bedrock[2]],
        stream: bedrock[2].endsWith("stream"),
        jsonArray: false,
        pathModel: decodeSegment(bedrock[1]),
        hasBody: true
      }
    }
    const gemini = geminiPath.exec(path)
    if (gemini !== null) {
      const streaming = gemini[2] === "streamGenerateContent"
      return {
        vendor: "gemini",
        handler: gemini[2] === "predictLongRunning"
          ? geminiVideoCreate
          : gemini[2] === "countTokens"
          ? geminiCountTokens
          : gemini[2] === "embedContent" || gemini[2] === "batchEmbedContents"
          ? geminiEmbed
          : geminiGenerate,
        stream: streaming,
        jsonArray: streaming && query.alt !== "sse",
        pathModel: decodeURIComponent(gemini[1]),
        hasBody: true
      }
    }
    return undefined
  }
  if (method === "GET") {
    if (path === "/v1/models") {
      const vendor = modelsVendor(headers, query)
      return route(
        vendor,
        vendor === "anthropic" ? anthropicModels : vendor === "gemini" ? geminiModels : openAiModels,
        false
      )
    }
    if (path === "/v1beta/models" || path === "/v1alpha/models") return route("gemini", geminiModels, false)
    if (klingTaskPath.test(path)) return route("kling", klingVideoRetrieve, false)
    if (path === "/v1/videos/text2video" || path === "/v1/videos/image2video") {
      return route("kling", klingVideoList, false)
    }
    const video = openAiVideoPath.exec(path)
    if (video !== null && video[2] === undefined) return route("openai", openAiVideoRetrieve, false)
    if (video !== null && video[2] === "/content") return route("openai", openAiVideoContent, false)
    if (arkTaskPath.test(path)) return route("openai", arkVideoRetrieve, false)
    if (mjFetchPath.test(path)) return route("midjourney", mjFetch, false)
    if (geminiOperationPath.test(path)) return route("gemini", geminiOperationGet, false)
    if (geminiDownloadPath.test(path)) return route("gemini", geminiFileDownload, false)
  }
  if (method === "DELETE" && arkTaskPath.test(path)) return route("openai", arkVideoCancel, false)
  return undefined
}

/**
 * The API key a request carries, per vendor: OpenAI `Authorization: Bearer`, Anthropic `x-api-key`
 * (or a bearer token), Gemini `x-goog-api-key` or `?key=`, Midjourney-proxy `mj-api-secret`, Kling a Bearer token
 * (checked by the emulator with `verifyKlingToken`, then recorded as its access key), Bedrock the access key id of
 * its SigV4 credential or its Bearer API key (checked by the emulator with `BedrockAuth.verifyBedrockRequest`), Azure
 * `api-key` or a Bearer (Entra ID) token.
 *
 * @category routing
 */
export const requestKey = (vendor: Vendor, headers: Headers, query: Record<string, string>): string | undefined => {
  const bearer = headers.get("authorization")?.replace(/^Bearer\s+/i, "") ?? undefined
  switch (vendor) {
    case "openai":
    case "kling":
      return bearer
    case "anthropic":
      return headers.get("x-api-key") ?? bearer
    case "gemini":
      return headers.get("x-goog-api-key") ?? query.key
    case "midjourney":
      return headers.get("mj-api-secret") ?? undefined
    case "bedrock":
      return bedrockRequestKey(headers)
    case "azure":
      return headers.get("api-key") ?? bearer
  }
}

/** The 401 message each vendor gives for a bad key. @category routing */
export const unauthorizedMessage: Record<Vendor, string> = {
  openai: "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.",
  anthropic: "invalid x-api-key",
  gemini: "API key not valid. Please pass a valid API key.",
  midjourney: "Unauthorized: mj-api-secret is wrong.",
  kling: "Authentication failed",
  bedrock: "The security token included in the request is invalid.",
  azure: AZURE_UNAUTHORIZED_MESSAGE
}

/** A `malformed` fault's 200 body for a route: broken JSON, or a broken stream with no end marker. @category faults */
export const malformedBody = (route: Route): { readonly contentType: string; readonly text: string } => {
  if (!route.stream) return { contentType: "application/json", text: '{"id": "malformed", "choices": [' }
  if (route.jsonArray) return { contentType: "application/json", text: '[{"candidates": [{"content": ' }
  // A prelude announcing a 64-byte message whose CRC is wrong, then nothing: no event-stream decoder accepts it.
  if (route.vendor === "bedrock") {
    return { contentType: EVENT_STREAM_CONTENT_TYPE, text: "\u0000\u0000\u0000@\u0000\u0000\u0000\u0000broken" }
  }
  switch (route.vendor) {
    case "anthropic":
      return {
        contentType: "text/event-stream; charset=utf-8",
        text: 'event: message_start\ndata: {"type": "message_start", "message": {\n\n'
      }
    default:
      return { contentType: "text/event-stream; charset=utf-8", text: 'data: {"id": "malformed", "choices": [\n\n' }
  }
}

/**
 * The in-band error event a vendor sends inside an already-started stream (fault `status` together with
 * `breakAfterEvents` on a stream request). OpenAI chat/completions: `data: {"error": {…}}`; Responses:
 * `event: error` with `{type: "error", code, message, param, sequence_number}` (SDK `ResponseErrorEvent`);
 * Anthropic: `event: error` with `{type: "error", error: {type, message}}`
 * (https://docs.anthropic.com/en/docs/build-with-claude/streaming#error-events); Gemini: a `data:` chunk
 * (or array element) `{"error": {code, message, status}}`.
 *
 * @category faults
 */
export const inBandErrorFrame = (
  route: Route,
  path: string,
  status: number,
  message: string | undefined,
  body: unknown,
  sequenceNumber: number
): string => {
  const errorBody = body ?? vendorErrorBody(route.vendor, status, message)
  if (route.vendor === "gemini") {
    return route.jsonArray
      ? `${sequenceNumber === 0 ? "[" : ",\r\n"}${JSON.stringify(errorBody)}]`
      : dataFrame(errorBody)
  }
  if (route.vendor === "anthropic") {
    const { request_id: _, ...event } = objectOr(errorBody)
    return eventFrame("error", event)
  }
  if (path === "/v1/responses" || path === `${AZURE_PREFIX}/openai/v1/responses`) {
    const error = objectOr(objectOr(errorBody).error)
    return eventFrame("error", {
      type: "error",
      code: error.code ?? error.type ?? null,
      message: error.message ?? message ?? "",
      param: error.param ?? null,
      sequence_number: sequenceNumber
    })
  }
  return dataFrame(errorBody)
}
