/**
 * The channel types: which vendor API a channel's upstream speaks. Each has
 * an adapter in `upstreams/` (`Record<ChannelType, Adapter>`, so a new type
 * does not compile without one); the catalog, the bootstrap file and the
 * admin API name channels by it.
 *
 * @since 0.1.0
 */

/** The channel types Sluice has adapters for. @category models */
export type ChannelType =
  | "openai"
  | "anthropic"
  | "gemini"
  | "ark"
  | "cohere"
  | "jina"
  | "midjourney"
  | "kling"
  | "deepseek"
  | "azure"
  | "vertex"

/**
 * The `base_url` a channel of a type gets when its bootstrap entry or admin
 * request names none; a type without an entry needs one. `deepseek`: DeepSeek's
 * API root, `https://api.deepseek.com` (api-docs.deepseek.com, "Your First API
 * Call": `base_url` `https://api.deepseek.com`).
 *
 * @category models
 */
export const DEFAULT_BASE_URLS: Readonly<Partial<Record<ChannelType, string>>> = {
  deepseek: "https://api.deepseek.com",
  // The default location's; a channel's own `settings.location` decides (`vertexBaseUrl`).
  vertex: "https://us-central1-aiplatform.googleapis.com"
}

/**
 * The location a `vertex` channel calls when its `settings.location` is unset.
 *
 * @category models
 */
export const VERTEX_DEFAULT_LOCATION = "us-central1"

/**
 * Vertex AI's service endpoint for `location`: `https://aiplatform.googleapis.com` for `global`,
 * `https://aiplatform.{us|eu}.rep.googleapis.com` for the multi-region locations `us` and `eu`, else
 * `https://{location}-aiplatform.googleapis.com` (cloud.google.com/vertex-ai/docs/reference/rest, "Service
 * endpoint"; the same choice as `@google/genai` and `@anthropic-ai/vertex-sdk` make for their default base URL).
 *
 * @category models
 */
export const vertexBaseUrl = (location: string): string =>
  location === "global"
    ? "https://aiplatform.googleapis.com"
    : location === "us" || location === "eu"
    ? `https://aiplatform.${location}.rep.googleapis.com`
    : `https://${location}-aiplatform.googleapis.com`

/**
 * The base URL of a channel of `type` given `baseUrl` (a given one as it is,
 * else the type's default: for `vertex`, the endpoint of `settings.location`,
 * `VERTEX_DEFAULT_LOCATION` when unset); `undefined` when none is given and the
 * type has no default.
 *
 * @category models
 */
export const baseUrlOf = (
  type: ChannelType,
  baseUrl: string | undefined,
  settings?: { readonly location?: string | undefined } | undefined
): string | undefined =>
  baseUrl ??
    (type === "vertex" ? vertexBaseUrl(settings?.location ?? VERTEX_DEFAULT_LOCATION) : DEFAULT_BASE_URLS[type])
