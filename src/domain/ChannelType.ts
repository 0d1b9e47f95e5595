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

/**
 * The `base_url` a channel of a type gets when its bootstrap entry or admin
 * request names none; a type without an entry needs one. `deepseek`: DeepSeek's
 * API root, `https://api.deepseek.com` (api-docs.deepseek.com, "Your First API
 * Call": `base_url` `https://api.deepseek.com`).
 *
 * @category models
 */
export const DEFAULT_BASE_URLS: Readonly<Partial<Record<ChannelType, string>>> = {
  deepseek: "https://api.deepseek.com"
}

/**
 * The base URL of a channel of `type` given `baseUrl` (a given one as it is,
 * else the type's default); `undefined` when none is given and the type has no
 * default.
 *
 * @category models
 */
export const baseUrlOf = (type: ChannelType, baseUrl: string | undefined): string | undefined =>
  baseUrl ?? DEFAULT_BASE_URLS[type]
