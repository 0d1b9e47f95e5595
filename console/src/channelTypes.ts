/**
 * The channel types the gateway speaks, as the channel form offers them:
 * the same list as the server's `ChannelType` (`src/config/BootstrapFile.ts`,
 * `src/upstreams/Adapter.ts`); `test/console/ChannelTypes.test.ts` keeps the
 * two equal. `cohere` and `jina` serve rerank only; `midjourney` the `/mj/*` task API only; `kling` video only;
 * `deepseek` text (chat completions, and FIM for legacy completions); `azure` Azure OpenAI deployments.
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
  "azure"
] as const

/**
 * The base URL a type gets when the form leaves it empty, as the server's `DEFAULT_BASE_URLS`
 * (`src/domain/ChannelType.ts`); a type without one needs a base URL.
 */
export const DEFAULT_BASE_URLS: Readonly<Partial<Record<(typeof CHANNEL_TYPES)[number], string>>> = {
  deepseek: "https://api.deepseek.com"
}

/** What a key entry of a type holds, where it is not a plain API key (shown beside the keys field). */
export const KEY_HINTS: Readonly<Partial<Record<(typeof CHANNEL_TYPES)[number], string>>> = {
  kling: "a kling key is accessKey|secretKey",
  azure:
    "an azure key is an API key (sent as api-key), or entra:<token> for a Microsoft Entra ID token (sent as Bearer)"
}

/**
 * An Azure API version as the server takes it (`settings.api_version`): a date `YYYY-MM-DD`, optionally with
 * `-preview`, or `v1` (the v1 API); empty is the default, `2024-10-21`.
 */
export const AZURE_API_VERSION = /^(?:\d{4}-\d{2}-\d{2}(?:-preview)?|v1)$/
