/**
 * One adapter per channel type: which wire format the channel speaks for a
 * given inbound format, the URL and headers of the upstream call, and how the
 * key is sent. A `Record<ChannelType, Adapter>`, so a new channel type does not
 * compile without its adapter.
 *
 * @since 0.1.0
 */
import { type ChannelType, VERTEX_DEFAULT_LOCATION } from "../domain/ChannelType.ts"
import { DeepSeekChatFormat } from "../formats/deepseek/chat/Format.ts"
import { DeepSeekCompletionsFormat } from "../formats/deepseek/completions/Format.ts"
import { isAnthropicModel } from "../formats/bedrock/converse/RequestEncoder.ts"
import { AnthropicInvokeFormat } from "../formats/bedrock/invoke/AnthropicInvoke.ts"
import type { Format, FormatName, UpstreamWire, WireName } from "../formats/Format.ts"
import { formatOf, upstreamWireOf } from "../formats/Formats.ts"
import { awsCredentialsOf, type CallSigning } from "./auth/CallSigning.ts"
import { AzureChatFormat, AzureCompletionsFormat, AzureResponsesFormat } from "../formats/azure/Dialects.ts"
import { VertexAnthropicFormat } from "../formats/vertex/AnthropicFormat.ts"
import { VertexGeminiFormat } from "../formats/vertex/GeminiFormat.ts"
import { azureAuthHeaders, azureUrl, azureV1 } from "./AzureTarget.ts"
import { isServiceAccountJson } from "./auth/GoogleToken.ts"
import { upstreamUrl } from "./BaseUrl.ts"

export type { ChannelType } from "../domain/ChannelType.ts"

/** What an adapter reads of a channel (the catalog's channel has more). @category models */
export interface Channel {
  readonly type: ChannelType
  /**
   * The vendor's base URL: its API root, with or without the version the wire uses (`/v1`), and with any path
   * prefix of a proxy in front of it (`BaseUrl.ts` has the rule).
   */
  readonly baseUrl: string
  readonly settings: {
    /** The upstream has `/v1/responses` (openai channels). */
    readonly responses_api?: boolean | undefined
    /**
     * A Responses request that came over a client's Responses socket reaches the upstream over its own Responses
     * socket (`wss://<base>/v1/responses`) rather than a `POST` (openai channels with `responses_api`).
     */
    readonly responses_websocket?: boolean | undefined
    /** Extra headers sent with every call. */
    readonly headers?: Readonly<Record<string, string>> | undefined
    /** The AWS region of a `bedrock` channel (its calls are signed for it). */
    readonly region?: string | undefined
    /** A `bedrock` channel's text API: `converse` (default) or `invoke` (Anthropic models through InvokeModel). */
    readonly bedrock_api?: "converse" | "invoke" | undefined
    /** Azure's API version (`azure` channels): a date, or `v1` (`AzureTarget.ts`). */
    readonly api_version?: string | undefined
    /** The Google Cloud project (vertex channels). */
    readonly project?: string | undefined
    /** The Vertex AI location (vertex channels; `us-central1` when unset). */
    readonly location?: string | undefined
  }
}

/** The HTTP call to make, minus the body. @category models */
export interface UpstreamTarget {
  readonly url: string
  readonly headers: Record<string, string>
  /** How the call is signed over its final headers and body (cloud vendors), if it is; `UpstreamClient` applies it. */
  readonly signing?: CallSigning | undefined
}

/** A channel type's adapter. @category models */
export interface Adapter {
  /** The channel type's own wire format (what the health prober asks in). */
  readonly nativeFormat: FormatName
  /**
   * The wire format used upstream for a request that arrived in `inbound` format, for upstream model `model` (the
   * mapped name: a cloud type serves some vendors' models in their own wire).
   */
  readonly wireFormat: (inbound: FormatName, channel: Channel, model: string) => WireName
  /** URL and headers for a call in `wire` format to `model` with `key`. */
  readonly target: (
    channel: Channel,
    key: string,
    wire: WireName,
    model: string,
    stream: boolean
  ) => UpstreamTarget
  /**
   * The upstream socket for a call in `wire` format to `model` with `key`, when the channel takes that wire over a
   * WebSocket as well as over HTTP (openai channels with `settings.responses_websocket`, the Responses wire): its
   * `http(s)://` URL (the transport makes it `ws(s)://`) and the handshake's headers. Absent, or `undefined`: HTTP
   * only.
   */
  readonly socketTarget?: ((channel: Channel, key: string, wire: WireName) => UpstreamTarget | undefined) | undefined
  /**
   * The type's own dialect of a wire format, where it has one (DeepSeek's chat completions): the `Format` used
   * for that wire on a channel of the type instead of the registry's (`wireOf`). Absent: the registry's for all.
   */
  readonly dialects?: Readonly<Partial<Record<FormatName, Format<unknown, unknown>>>> | undefined
}

/**
 * The version suffixes a base URL of an OpenAI-, Anthropic- or Gemini-style
 * API may end in (`https://api.openai.com/v1`, `…googleapis.com/v1beta`): the
 * call paths start with their own version, so one of these at the end of the
 * base URL is not repeated (`BaseUrl.ts`).
 *
 * @category adapters
 */
export const API_VERSIONS: ReadonlyArray<string> = ["/v1", "/v1beta"]

/**
 * Ark's version suffix: its API root is `…/api/v3` (docs.byteplus.com/en/docs/ModelArk/1494384).
 *
 * @category adapters
 */
export const ARK_VERSIONS: ReadonlyArray<string> = ["/api/v3"]

/**
 * Cohere's version suffixes: `/v1` and `/v2` of its own API, and `/compatibility/v1`, the base URL Cohere gives
 * for its OpenAI-compatible API (docs.cohere.com/docs/compatibility-api).
 *
 * @category adapters
 */
export const COHERE_VERSIONS: ReadonlyArray<string> = ["/compatibility/v1", "/v1", "/v2"]

/**
 * The URL of `path` (from the vendor's API root, starting with its version: `/v1/messages`) on `channel`, by the
 * one base URL rule of `BaseUrl.ts`; `versions` are the suffixes the channel's base URL may end in.
 *
 * @category adapters
 */
export const channelUrl = (channel: Channel, path: string, versions: ReadonlyArray<string> = API_VERSIONS): string =>
  upstreamUrl(channel.baseUrl, path, versions)

/**
 * `headers` with the channel's extra headers over them.
 *
 * @category adapters
 */
export const withExtraHeaders = (channel: Channel, headers: Record<string, string>): Record<string, string> =>
  channel.settings.headers === undefined ? headers : { ...headers, ...channel.settings.headers }

const json = { "content-type": "application/json" }

/**
 * The wire of an OpenAI-style upstream for an `inbound` request: chat completions and legacy completions as they
 * came, Responses when the upstream has `/responses` (`responses`), every other format through chat completions.
 */
const openAiWire = (inbound: FormatName, responses: boolean): WireName => {
  switch (inbound) {
    case "openai-chat":
    case "completions":
      return inbound
    case "openai-responses":
      return responses ? "openai-responses" : "openai-chat"
    case "anthropic":
    case "gemini":
      return "openai-chat"
  }
}

/**
 * OpenAI-compatible upstreams: chat completions, Responses (when the channel
 * says it has `/v1/responses`), legacy completions; other inbound formats are
 * served through chat completions. Bearer key (platform.openai.com/docs/api-reference/authentication).
 */
const openai: Adapter = {
  nativeFormat: "openai-chat",
  wireFormat: (inbound, channel) => openAiWire(inbound, channel.settings.responses_api === true),
  target: (channel, key, wire) => {
    const path = wire === "openai-responses"
      ? "/v1/responses"
      : wire === "completions"
      ? "/v1/completions"
      : "/v1/chat/completions"
    return {
      url: channelUrl(channel, path),
      headers: withExtraHeaders(channel, { ...json, authorization: `Bearer ${key}` })
    }
  },
  // OpenAI's WebSocket mode: the same path, Bearer key on the handshake (platform.openai.com/docs/guides/websocket-mode).
  socketTarget: (channel, key, wire) =>
    wire === "openai-responses" && channel.settings.responses_websocket === true
      ? {
        url: channelUrl(channel, "/v1/responses"),
        headers: withExtraHeaders(channel, { authorization: `Bearer ${key}` })
      }
      : undefined
}

/**
 * Messages-format upstreams: `POST /v1/messages` with `x-api-key` and
 * `anthropic-version: 2023-06-01` (docs.anthropic.com/en/api/versioning).
 */
const anthropic: Adapter = {
  nativeFormat: "anthropic",
  wireFormat: () => "anthropic",
  target: (channel, key) => ({
    url: channelUrl(channel, "/v1/messages"),
    headers: withExtraHeaders(channel, { ...json, "x-api-key": key, "anthropic-version": "2023-06-01" })
  })
}

/**
 * Generate-content upstreams: `POST /v1beta/models/{model}:generateContent`, or
 * `:streamGenerateContent?alt=sse`, with `x-goog-api-key`
 * (ai.google.dev/api/generate-content).
 */
const gemini: Adapter = {
  nativeFormat: "gemini",
  wireFormat: () => "gemini",
  target: (channel, key, _wire, model, stream) => ({
    url: channelUrl(
      channel,
      `/v1beta/models/${encodeURIComponent(model)}:${stream ? "streamGenerateContent?alt=sse" : "generateContent"}`
    ),
    headers: withExtraHeaders(channel, { ...json, "x-goog-api-key": key })
  })
}

/**
 * Volcengine Ark / BytePlus ModelArk: an OpenAI-compatible chat completions
 * API at `{root}/api/v3/chat/completions` with a Bearer key
 * (docs.byteplus.com/en/docs/ModelArk/1494384, "Chat API"); every inbound
 * text format is served through it. The base URL may end in `/api/v3`.
 */
const ark: Adapter = {
  nativeFormat: "openai-chat",
  wireFormat: () => "openai-chat",
  target: (channel, key) => ({
    url: channelUrl(channel, "/api/v3/chat/completions", ARK_VERSIONS),
    headers: withExtraHeaders(channel, { ...json, authorization: `Bearer ${key}` })
  })
}

/**
 * Cohere: text through its OpenAI-compatible chat completions at
 * `{root}/compatibility/v1/chat/completions` with a Bearer key
 * (docs.cohere.com/docs/compatibility-api); its rerank wire is in
 * `RerankAdapter.ts`.
 */
const cohere: Adapter = {
  nativeFormat: "openai-chat",
  wireFormat: () => "openai-chat",
  target: (channel, key) => ({
    url: channelUrl(channel, "/compatibility/v1/chat/completions", COHERE_VERSIONS),
    headers: withExtraHeaders(channel, { ...json, authorization: `Bearer ${key}` })
  })
}

/**
 * Jina: a channel for its search foundation APIs (rerank, see
 * `RerankAdapter.ts`). Text, if asked of one, goes to the OpenAI-compatible
 * `{root}/v1/chat/completions` that Jina's DeepSearch serves
 * (jina.ai/deepsearch, "API"), with a Bearer key.
 */
const jina: Adapter = {
  nativeFormat: "openai-chat",
  wireFormat: () => "openai-chat",
  target: (channel, key) => ({
    url: channelUrl(channel, "/v1/chat/completions"),
    headers: withExtraHeaders(channel, { ...json, authorization: `Bearer ${key}` })
  })
}

/**
 * Midjourney-proxy servers: a channel for their task API (`/mj/*`, see
 * `MidjourneyAdapter.ts`). Its `mj_*` models carry no token prices, so no text
 * request is ever sent to one (it fails `ModelNotPriced` first); should one be
 * priced for text, the call goes to the OpenAI-compatible
 * `{root}/v1/chat/completions` that gateway-style proxy hosts serve, with the
 * key as Bearer.
 */
const midjourney: Adapter = {
  nativeFormat: "openai-chat",
  wireFormat: () => "openai-chat",
  target: (channel, key) => ({
    url: channelUrl(channel, "/v1/chat/completions", ["/mj", ...API_VERSIONS]),
    headers: withExtraHeaders(channel, { ...json, authorization: `Bearer ${key}` })
  })
}

/**
 * Kling: a video-only channel (its task API is in `VideoAdapter.ts`; Kling has
 * no text API). A text request routed to one goes to
 * `{root}/v1/chat/completions` without any credential, so the account's
 * access and secret keys are never sent where Kling's API does not take them;
 * Kling answers 404 and the relay fails over.
 */
const kling: Adapter = {
  nativeFormat: "openai-chat",
  wireFormat: () => "openai-chat",
  target: (channel) => ({ url: channelUrl(channel, "/v1/chat/completions"), headers: withExtraHeaders(channel, json) })
}

/**
 * The version suffixes a DeepSeek base URL may end in: `/v1`, which DeepSeek
 * takes "for OpenAI compatibility" and which "has NO relationship with the
 * model's version", and `/beta`, the base URL of its beta features
 * (api-docs.deepseek.com, "Your First API Call"; api-docs.deepseek.com/guides/fim_completion).
 *
 * @category adapters
 */
export const DEEPSEEK_VERSIONS: ReadonlyArray<string> = ["/v1", "/beta"]

/**
 * DeepSeek: its OpenAI-compatible chat completions at `{root}/chat/completions`
 * (api-docs.deepseek.com/api/create-chat-completion) for every inbound text
 * format but legacy completions, which go to its FIM completion at
 * `{root}/beta/completions` (api-docs.deepseek.com/api/create-completion),
 * both with a Bearer key; the root is the base URL (default
 * `https://api.deepseek.com`) without a trailing `/v1` or `/beta`. It speaks
 * its dialects of both wires (`formats/deepseek/`).
 */
const deepseek: Adapter = {
  nativeFormat: "openai-chat",
  wireFormat: (inbound) => inbound === "completions" ? "completions" : "openai-chat",
  target: (channel, key, wire) => ({
    url: channelUrl(channel, wire === "completions" ? "/beta/completions" : "/chat/completions", DEEPSEEK_VERSIONS),
    headers: withExtraHeaders(channel, { ...json, authorization: `Bearer ${key}` })
  }),
  dialects: { "openai-chat": DeepSeekChatFormat, completions: DeepSeekCompletionsFormat }
}

/**
 * The credential of a `bedrock` channel key: `<access key id>|<secret>` or `…|<session token>` signs the call with
 * SigV4 for service `bedrock` in the channel's region (docs.aws.amazon.com/bedrock/latest/userguide/inference-invoke.html
 * "signed with Signature Version 4"); a key without `|` is a Bedrock API key, sent as `Authorization: Bearer`
 * (docs.aws.amazon.com/bedrock/latest/userguide/api-keys-use.html). A key with `|` that is not credentials of either
 * shape (an empty part, four parts) is sent as nothing at all, so no part of it leaves the gateway: Bedrock refuses the
 * call and the key is treated as refused.
 */
const bedrockAuth = (
  channel: Channel,
  key: string
): { readonly headers: Record<string, string>; readonly signing?: CallSigning } => {
  const credentials = awsCredentialsOf(key)
  if (credentials !== undefined) {
    return {
      headers: {},
      signing: { _tag: "SigV4", region: channel.settings.region ?? "", service: "bedrock", credentials }
    }
  }
  return key.includes("|") ? { headers: {} } : { headers: { authorization: `Bearer ${key}` } }
}

/**
 * AWS Bedrock Runtime (docs.aws.amazon.com/bedrock/latest/APIReference/API_Operations_Amazon_Bedrock_Runtime.html): text
 * through Converse (`POST /model/{modelId}/converse`, `/converse-stream`) for every model and inbound format, or, with
 * `settings.bedrock_api: invoke` and an Anthropic model (a mapped id holding `anthropic.`), through InvokeModel with
 * the Messages body (`/model/{modelId}/invoke`, `/invoke-with-response-stream`; `formats/bedrock/invoke/`). The model
 * id or inference profile (an ARN too) is URL-encoded as one path segment, as the SDK writes the `modelId` label. The
 * base URL (default: the region's endpoint, `domain/ChannelType.ts`) has no version suffix; a proxy prefix is kept.
 * Streams answer `application/vnd.amazon.eventstream`. Keys: see `bedrockAuth`.
 */
const bedrock: Adapter = {
  nativeFormat: "anthropic",
  wireFormat: (_inbound, channel, model) =>
    channel.settings.bedrock_api === "invoke" && isAnthropicModel(model) ? "anthropic" : "bedrock-converse",
  target: (channel, key, wire, model, stream) => {
    const action = wire === "anthropic"
      ? (stream ? "invoke-with-response-stream" : "invoke")
      : (stream ? "converse-stream" : "converse")
    const auth = bedrockAuth(channel, key)
    return {
      url: channelUrl(channel, `/model/${encodeURIComponent(model)}/${action}`, []),
      headers: withExtraHeaders(channel, {
        ...json,
        accept: stream ? "application/vnd.amazon.eventstream" : "application/json",
        ...auth.headers
      }),
      ...(auth.signing === undefined ? {} : { signing: auth.signing })
    }
  },
  dialects: { anthropic: AnthropicInvokeFormat }
}

/**
 * Azure OpenAI / Azure AI Foundry (`AzureTarget.ts` has the URLs and keys): chat completions and legacy completions
 * on every API version; Responses only on the v1 API (`settings.api_version: v1`), else served through chat
 * completions, as on an `openai` channel without `responses_api`; Messages and generate-content through chat
 * completions. The mapped model is the deployment. It speaks Azure's dialect of chat completions
 * (`formats/azure/Dialects.ts`: the content filter's refusals).
 */
const azure: Adapter = {
  nativeFormat: "openai-chat",
  wireFormat: (inbound, channel) => openAiWire(inbound, azureV1(channel)),
  target: (channel, key, wire, model) => ({
    url: azureUrl(
      channel,
      model,
      wire === "openai-responses" ? "responses" : wire === "completions" ? "completions" : "chat/completions"
    ),
    headers: withExtraHeaders(channel, { ...json, ...azureAuthHeaders(key) })
  }),
  dialects: {
    "openai-chat": AzureChatFormat,
    "openai-responses": AzureResponsesFormat,
    completions: AzureCompletionsFormat
  }
}

/**
 * Whether a `vertex` channel's upstream model is one of Anthropic's (served by the `anthropic` publisher in the
 * Messages wire): its id starts with `claude` (Vertex AI's Claude ids: `claude-sonnet-4-5@20250929`, …,
 * docs.anthropic.com/en/api/claude-on-vertex-ai, "API model names").
 *
 * @category adapters
 */
export const isVertexClaudeModel = (model: string): boolean => model.toLowerCase().startsWith("claude")

/** A path segment URL-encoded, `@` kept (a path character, RFC 3986; Vertex AI's Claude ids have one: `…@20250929`). */
const segment = (value: string): string => encodeURIComponent(value).replaceAll("%40", "@")

/**
 * The path of a Vertex AI model call, from the API root (`/v1/projects/{project}/locations/{location}/publishers/
 * {publisher}/models/{model}:{method}`), each segment URL-encoded but for `@` (as `@anthropic-ai/vertex-sdk` writes
 * it).
 *
 * @category adapters
 */
export const vertexModelPath = (channel: Channel, publisher: "google" | "anthropic", model: string, method: string) =>
  `/v1/projects/${segment(channel.settings.project ?? "")}/locations/${
    segment(channel.settings.location ?? VERTEX_DEFAULT_LOCATION)
  }/publishers/${publisher}/models/${segment(model)}:${method}`

/**
 * The credentials of a `vertex` call with `key`: a service-account key JSON becomes a `GoogleOAuth` signing (an
 * access token as `Authorization: Bearer`, `auth/GoogleToken.ts`); any other key is a Vertex AI API key (express
 * mode), sent as `x-goog-api-key` (cloud.google.com/vertex-ai/generative-ai/docs/start/api-keys) on the same project
 * and location paths, as `@google/genai` sends an API key when it is given a project and location
 * (`ApiClient.shouldPrependVertexProjectPath`).
 *
 * @category adapters
 */
export const vertexCredentials = (
  channel: Channel,
  key: string
): { readonly headers: Record<string, string>; readonly signing?: CallSigning | undefined } =>
  isServiceAccountJson(key)
    ? { headers: withExtraHeaders(channel, { ...json }), signing: { _tag: "GoogleOAuth", serviceAccount: key } }
    : { headers: withExtraHeaders(channel, { ...json, "x-goog-api-key": key }) }

/**
 * Google Vertex AI: Gemini models through `generateContent` / `streamGenerateContent?alt=sse` of the `google`
 * publisher in the generate-content wire, Claude models (`isVertexClaudeModel`) through `rawPredict` /
 * `streamRawPredict` of the `anthropic` publisher in the Messages wire
 * (cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude), both at
 * `{base}/v1/projects/{project}/locations/{location}/…`; the base URL defaults to the location's endpoint
 * (`domain/ChannelType.ts`) and may end in `/v1`. Each speaks its Vertex dialect (`formats/vertex/`).
 */
const vertex: Adapter = {
  nativeFormat: "gemini",
  wireFormat: (_inbound, _channel, model) => isVertexClaudeModel(model) ? "anthropic" : "gemini",
  target: (channel, key, wire, model, stream) => {
    const path = wire === "anthropic"
      ? vertexModelPath(channel, "anthropic", model, stream ? "streamRawPredict" : "rawPredict")
      : vertexModelPath(channel, "google", model, stream ? "streamGenerateContent?alt=sse" : "generateContent")
    return { url: channelUrl(channel, path, VERTEX_VERSIONS), ...vertexCredentials(channel, key) }
  },
  dialects: { anthropic: VertexAnthropicFormat, gemini: VertexGeminiFormat }
}

/**
 * The version suffix a Vertex AI base URL may end in (`https://us-central1-aiplatform.googleapis.com/v1`, the base
 * URL `@anthropic-ai/vertex-sdk` uses).
 *
 * @category adapters
 */
export const VERTEX_VERSIONS: ReadonlyArray<string> = ["/v1"]

/**
 * Every adapter, by channel type.
 *
 * @category adapters
 */
export const adapters: Record<ChannelType, Adapter> = {
  openai,
  anthropic,
  gemini,
  ark,
  cohere,
  jina,
  midjourney,
  kling,
  deepseek,
  bedrock,
  azure,
  vertex
}

/**
 * The wire a channel of `type` speaks `wire` with: its adapter's dialect of it, else the registry's (an outbound-only
 * wire has no dialects).
 *
 * @category adapters
 */
export const wireOf = (type: ChannelType, wire: WireName): UpstreamWire =>
  wire === "bedrock-converse" ? upstreamWireOf(wire) : adapters[type].dialects?.[wire] ?? formatOf(wire)
