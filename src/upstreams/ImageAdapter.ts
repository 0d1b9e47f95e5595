/**
 * Which channel types can make images, and how: the wire format of their
 * image endpoint and its URL and headers. A `Record<ChannelType, …>`, so a
 * new channel type does not compile until it says whether it makes images.
 *
 * @since 0.1.0
 */
import type { ImageFormatName } from "../formats/images/Wires.ts"
import { adapters, ARK_VERSIONS, type Channel, type ChannelType, channelUrl, type UpstreamTarget } from "./Adapter.ts"
import { azureAuthHeaders, azureUrl } from "./AzureTarget.ts"

/** A channel type's image endpoint. @category models */
export interface ImageAdapter {
  readonly wire: ImageFormatName
  /**
   * URL and headers of an image call to `model` with `key`; `edit` for an
   * edit, `form` when the body is a multipart form (its content type is set by
   * the caller of the adapter, with its boundary).
   */
  readonly target: (channel: Channel, key: string, model: string, edit: boolean, form: boolean) => UpstreamTarget
}

const headersOf = (channel: Channel, key: string, form: boolean): Record<string, string> => ({
  ...(form ? {} : { "content-type": "application/json" }),
  authorization: `Bearer ${key}`,
  ...channel.settings.headers
})

/**
 * OpenAI-compatible upstreams: `POST /v1/images/generations` (JSON) and
 * `POST /v1/images/edits` (multipart), Bearer key
 * (platform.openai.com/docs/api-reference/images).
 */
const openai: ImageAdapter = {
  wire: "openai",
  target: (channel, key, _model, edit, form) => ({
    url: channelUrl(channel, edit ? "/v1/images/edits" : "/v1/images/generations"),
    headers: headersOf(channel, key, form)
  })
}

/**
 * Ark: `POST {root}/api/v3/images/generations`, Bearer key, for generations
 * and edits alike (docs.byteplus.com/en/docs/ModelArk/1541523).
 */
const ark: ImageAdapter = {
  wire: "ark",
  target: (channel, key, _model, _edit, form) => ({
    url: channelUrl(channel, "/api/v3/images/generations", ARK_VERSIONS),
    headers: headersOf(channel, key, form)
  })
}

/**
 * Generate-content upstreams: the `:generateContent` call of the text path
 * (same root, model encoding and `x-goog-api-key`), asked for image output
 * (ai.google.dev/gemini-api/docs/image-generation).
 */
const gemini: ImageAdapter = {
  wire: "gemini",
  target: (channel, key, model) => adapters.gemini.target(channel, key, "gemini", model, false)
}

/**
 * Azure OpenAI: OpenAI's images wire at the deployment's `images/generations` and `images/edits` (dated API version)
 * or `/openai/v1/images/…` (v1), with the channel's `api-key` or Entra token (`AzureTarget.ts`;
 * learn.microsoft.com/azure/ai-foundry/openai/reference, "Image generation").
 */
const azure: ImageAdapter = {
  wire: "openai",
  target: (channel, key, model, edit, form) => ({
    url: azureUrl(channel, model, edit ? "images/edits" : "images/generations"),
    headers: {
      ...(form ? {} : { "content-type": "application/json" }),
      ...azureAuthHeaders(key),
      ...channel.settings.headers
    }
  })
}

/**
 * The image endpoint of each channel type; `undefined` for a type that
 * cannot make images (`anthropic`: the Messages API has no image output;
 * `deepseek`: its API has chat and FIM completions only),
 * which is never a candidate for an image request.
 *
 * @category adapters
 */
export const imageAdapters: Record<ChannelType, ImageAdapter | undefined> = {
  openai,
  anthropic: undefined,
  gemini,
  ark,
  cohere: undefined,
  jina: undefined,
  midjourney: undefined,
  kling: undefined,
  deepseek: undefined,
  bedrock: undefined,
  azure,
  vertex: undefined
}
