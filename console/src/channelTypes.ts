/**
 * The channel types the gateway speaks, as the channel form offers them:
 * the same list as the server's `ChannelType` (`src/config/BootstrapFile.ts`,
 * `src/upstreams/Adapter.ts`); `test/console/ChannelTypes.test.ts` keeps the
 * two equal. `cohere` and `jina` serve rerank only; `midjourney` the `/mj/*` task API only; `kling` video only;
 * `deepseek` text (chat completions, and FIM for legacy completions); `bedrock` text on AWS Bedrock Runtime (its
 * base URL defaults to its region's endpoint, so the form asks for the region instead).
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
  "deepseek",
  "bedrock"
] as const

/**
 * The base URL a type gets when the form leaves it empty, as the server's `DEFAULT_BASE_URLS`
 * (`src/domain/ChannelType.ts`); a type without one needs a base URL.
 */
export const DEFAULT_BASE_URLS: Readonly<Partial<Record<(typeof CHANNEL_TYPES)[number], string>>> = {
  deepseek: "https://api.deepseek.com"
}

/**
 * What the form explains of a type's keys, where they are not one plain API key: `kling` and `bedrock` (AWS access
 * keys signed with SigV4, or a Bedrock API key sent as Bearer; `src/upstreams/Adapter.ts`).
 */
export const KEY_FORMATS: Readonly<Partial<Record<(typeof CHANNEL_TYPES)[number], string>>> = {
  kling: "; a kling key is accessKey|secretKey",
  bedrock: "; a bedrock key is accessKeyId|secretAccessKey or accessKeyId|secretAccessKey|sessionToken " +
    "(signed with SigV4), or a Bedrock API key (no |, sent as Bearer)"
}
