/**
 * Which channel types can embed, and how: the wire format of their embedding
 * endpoint and its URL and headers. A `Record<ChannelType, …>`, so a new
 * channel type does not compile until it says whether it embeds.
 *
 * @since 0.1.0
 */
import type { EmbeddingFormatName } from "../formats/embeddings/Wires.ts"
import {
  adapters,
  type Channel,
  type ChannelType,
  channelUrl,
  type UpstreamTarget,
  VERTEX_VERSIONS,
  vertexCredentials,
  vertexModelPath,
  withExtraHeaders
} from "./Adapter.ts"
import { azureAuthHeaders, azureUrl } from "./AzureTarget.ts"
import { mapUrlPath } from "./BaseUrl.ts"

/** A channel type's embedding endpoint. @category models */
export interface EmbeddingAdapter {
  /**
   * The wire of the type's embedding calls, or, where it depends on the upstream model (Bedrock's model families),
   * the wire for a model (`undefined`: that model does not embed here).
   */
  readonly wire: EmbeddingFormatName | ((model: string) => EmbeddingFormatName | undefined)
  /** URL and headers of an embedding call to `model` with `key` (the channel's extra headers included). */
  readonly target: (channel: Channel, key: string, model: string) => UpstreamTarget
}

/**
 * OpenAI-compatible upstreams: `POST /v1/embeddings`, with the same root,
 * bearer key and extra headers as the chat call
 * (platform.openai.com/docs/api-reference/embeddings/create).
 */
const openai: EmbeddingAdapter = {
  wire: "openai",
  target: (channel, key, model) => {
    const chat = adapters.openai.target(channel, key, "openai-chat", model, false)
    return { url: channelUrl(channel, "/v1/embeddings"), headers: chat.headers }
  }
}

/**
 * Generate-content upstreams: `POST /v1beta/models/{model}:batchEmbedContents`
 * with `x-goog-api-key` (ai.google.dev/api/embeddings), derived from the
 * `:generateContent` call so root, model encoding and headers stay one.
 */
const gemini: EmbeddingAdapter = {
  wire: "gemini",
  target: (channel, key, model) => {
    const generate = adapters.gemini.target(channel, key, "gemini", model, false)
    return {
      url: mapUrlPath(generate.url, (path) => path.replace(/:generateContent$/, ":batchEmbedContents")),
      headers: generate.headers
    }
  }
}

/**
 * Bedrock: `POST /model/{modelId}/invoke` (InvokeModel, signed or with a Bearer API key as the text calls are), in
 * the body of the mapped model's family: Titan Text Embeddings for `amazon.titan-embed-text…`, Cohere Embed for
 * `cohere.embed…` (`formats/bedrock/embeddings/Wire.ts`); other models do not embed on a bedrock channel.
 */
const bedrock: EmbeddingAdapter = {
  wire: (model) =>
    model.includes("amazon.titan-embed-text")
      ? "bedrock-titan"
      : model.includes("cohere.embed")
      ? "bedrock-cohere"
      : undefined,
  // The text adapter's InvokeModel call (its `anthropic` wire is the one sent to `/invoke`), not streamed.
  target: (channel, key, model) => adapters.bedrock.target(channel, key, "anthropic", model, false)
}

/**
 * Azure OpenAI: OpenAI's embeddings wire at the deployment's `embeddings` (dated API version) or
 * `/openai/v1/embeddings` (v1), with the channel's `api-key` or Entra token (`AzureTarget.ts`;
 * learn.microsoft.com/azure/ai-foundry/openai/reference, "Embeddings").
 */
const azure: EmbeddingAdapter = {
  wire: "openai",
  target: (channel, key, model) => ({
    url: azureUrl(channel, model, "embeddings"),
    headers: withExtraHeaders(channel, { "content-type": "application/json", ...azureAuthHeaders(key) })
  })
}

/**
 * Vertex AI: `POST {base}/v1/projects/{project}/locations/{location}/publishers/google/models/{model}:predict`
 * (cloud.google.com/vertex-ai/generative-ai/docs/model-reference/text-embeddings-api), with the key as the text
 * calls send it (a service-account token or an API key).
 */
const vertex: EmbeddingAdapter = {
  wire: "vertex",
  target: (channel, key, model) => ({
    url: channelUrl(channel, vertexModelPath(channel, "google", model, "predict"), VERTEX_VERSIONS),
    ...vertexCredentials(channel, key)
  })
}

/**
 * The embedding endpoint of each channel type; `undefined` for a type that
 * cannot embed (`anthropic`: the Messages API has no embeddings; `ark`: not wired yet; `deepseek`: its API has
 * chat and FIM completions only, api-docs.deepseek.com), which is
 * never a candidate for an embedding request.
 *
 * @category adapters
 */
export const embeddingAdapters: Record<ChannelType, EmbeddingAdapter | undefined> = {
  openai,
  anthropic: undefined,
  gemini,
  ark: undefined,
  cohere: undefined,
  jina: undefined,
  midjourney: undefined,
  kling: undefined,
  deepseek: undefined,
  bedrock,
  azure,
  vertex
}
