/**
 * The channel types the gateway speaks, as the channel form offers them:
 * the same list as the server's `ChannelType` (`src/config/BootstrapFile.ts`,
 * `src/upstreams/Adapter.ts`); `test/console/ChannelTypes.test.ts` keeps the
 * two equal. `cohere` and `jina` serve rerank only; `midjourney` the `/mj/*` task API only; `kling` video only.
 */
export const CHANNEL_TYPES = ["openai", "anthropic", "gemini", "ark", "cohere", "jina", "midjourney", "kling"] as const
