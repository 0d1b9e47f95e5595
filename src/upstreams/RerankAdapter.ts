/**
 * Which channel types rerank, and how: the wire of their rerank endpoint and
 * its URL and headers. A `Record<ChannelType, …>`, so a new channel type does
 * not compile until it says whether it reranks.
 *
 * @since 0.1.0
 */
import type { RerankWireName } from "../formats/rerank/Codec.ts"
import {
  type Channel,
  type ChannelType,
  channelUrl,
  COHERE_VERSIONS,
  type UpstreamTarget,
  withExtraHeaders
} from "./Adapter.ts"

/** A channel type's rerank endpoint. @category models */
export interface RerankAdapter {
  readonly wire: RerankWireName
  /**
   * What the vendor bills a rerank by: Cohere per search unit
   * (docs.cohere.com/docs/how-does-cohere-pricing-work), so a model priced by tokens on its channel is a chat model;
   * Jina per token (jina.ai/reranker, "API": `usage.total_tokens`), so its token-priced models may rerank.
   */
  readonly billedBy: "search-units" | "tokens"
  /** URL and headers of a rerank call with `key` (the channel's extra headers included). */
  readonly target: (channel: Channel, key: string) => UpstreamTarget
}

const bearer = (url: string, channel: Channel, key: string): UpstreamTarget => ({
  url,
  headers: withExtraHeaders(channel, { "content-type": "application/json", authorization: `Bearer ${key}` })
})

/**
 * Cohere: `POST {root}/v2/rerank` with a Bearer key (docs.cohere.com/v2/reference/rerank); the base URL may end in
 * `/v1`, `/v2` or `/compatibility/v1`.
 */
const cohere: RerankAdapter = {
  wire: "cohere",
  billedBy: "search-units",
  target: (channel, key) => bearer(channelUrl(channel, "/v2/rerank", COHERE_VERSIONS), channel, key)
}

/** Jina: `POST {root}/v1/rerank` with a Bearer key (jina.ai/reranker, "API"). */
const jina: RerankAdapter = {
  wire: "jina",
  billedBy: "tokens",
  target: (channel, key) => bearer(channelUrl(channel, "/v1/rerank"), channel, key)
}

/**
 * The rerank endpoint of each channel type; `undefined` for a type without
 * one, which is never a candidate for a rerank request.
 *
 * @category adapters
 */
export const rerankAdapters: Record<ChannelType, RerankAdapter | undefined> = {
  openai: undefined,
  anthropic: undefined,
  gemini: undefined,
  ark: undefined,
  cohere,
  jina,
  midjourney: undefined,
  kling: undefined,
  deepseek: undefined,
  bedrock: undefined,
  azure: undefined,
  vertex: undefined
}
