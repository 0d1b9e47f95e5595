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
