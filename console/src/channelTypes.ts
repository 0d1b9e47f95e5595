/**
 * The channel types the gateway speaks, as the channel form offers them:
 * the same list as the server's `ChannelType` (`src/config/BootstrapFile.ts`,
 * `src/upstreams/Adapter.ts`); `test/console/ChannelTypes.test.ts` keeps the
 * two equal. `cohere` and `jina` serve rerank only; `midjourney` the `/mj/*` task API only; `kling` video only;
 * `deepseek` text (chat completions, and FIM for legacy completions).
 */
export const CHANNEL_TYPES = [
  "openai",
  "anthropic",
  "gemini",
  "ark",
  "cohere",
  "jina",
  "midjourney",
  "kling",
  "deepseek"
] as const

/**
 * The base URL a type gets when the form leaves it empty, as the server's `DEFAULT_BASE_URLS`
 * (`src/domain/ChannelType.ts`); a type without one needs a base URL.
 */
export const DEFAULT_BASE_URLS: Readonly<Partial<Record<(typeof CHANNEL_TYPES)[number], string>>> = {
  deepseek: "https://api.deepseek.com"
}
