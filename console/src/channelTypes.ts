/**
 * The channel types the gateway speaks, as the channel form offers them:
 * the same list as the server's `ChannelType` (`src/config/BootstrapFile.ts`,
 * `src/upstreams/Adapter.ts`); `test/console/ChannelTypes.test.ts` keeps the
 * two equal. `cohere` and `jina` serve rerank only; `midjourney` the `/mj/*` task API only; `kling` video only;
 * `deepseek` text (chat completions, and FIM for legacy completions); `azure` Azure OpenAI deployments; `vertex`
 * Google Vertex AI (Gemini, Claude, embeddings); `bedrock` AWS Bedrock Runtime (its base URL defaults to its
 * region's endpoint, so the form asks for the region).
 */
import { CHANNEL_KEYS } from "./strings.ts"

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
  "bedrock",
  "azure",
  "vertex"
] as const

/**
 * The base URL a type gets when the form leaves it empty, as the server's `DEFAULT_BASE_URLS`
 * (`src/domain/ChannelType.ts`); a type without one needs a base URL.
 */
export const DEFAULT_BASE_URLS: Readonly<Partial<Record<(typeof CHANNEL_TYPES)[number], string>>> = {
  deepseek: "https://api.deepseek.com",
  vertex: "https://us-central1-aiplatform.googleapis.com"
}

/**
 * A vertex channel's default base URL for `location`, as the server's `vertexBaseUrl` (`src/domain/ChannelType.ts`):
 * `global` has no region in its host, `us` and `eu` are multi-region endpoints.
 */
export const vertexBaseUrl = (location: string): string =>
  location === "global"
    ? "https://aiplatform.googleapis.com"
    : location === "us" || location === "eu"
    ? `https://aiplatform.${location}.rep.googleapis.com`
    : `https://${location}-aiplatform.googleapis.com`

/**
 * The keys typed into the keys field of a `type` channel: one a line, but on a vertex channel a service-account
 * key JSON (as Google Cloud's console downloads it, over many lines) is one key, sent compact; a line outside one
 * is a Vertex API key. A JSON object that does not parse is the words of the error.
 */
export const keysOf = (type: string, text: string): Array<string> | string => {
  if (type !== "vertex") return text.split("\n").map((key) => key.trim()).filter((key) => key !== "")
  const keys: Array<string> = []
  let at = 0
  while (at < text.length) {
    const rest = text.slice(at)
    const lead = rest.length - rest.trimStart().length
    at += lead
    if (at >= text.length) break
    if (text[at] !== "{") {
      const end = text.indexOf("\n", at)
      const line = text.slice(at, end < 0 ? text.length : end).trim()
      if (line !== "") keys.push(line)
      at = end < 0 ? text.length : end + 1
      continue
    }
    // The end of the JSON object that starts here: braces counted outside strings.
    let depth = 0
    let inString = false
    let end = -1
    for (let index = at; index < text.length && end < 0; index++) {
      const char = text[index]
      if (inString) {
        if (char === "\\") index++
        else if (char === '"') inString = false
      } else if (char === '"') inString = true
      else if (char === "{") depth++
      else if (char === "}" && --depth === 0) end = index
    }
    if (end < 0) return CHANNEL_KEYS.notClosed
    try {
      keys.push(JSON.stringify(JSON.parse(text.slice(at, end + 1))))
    } catch {
      return CHANNEL_KEYS.notJson
    }
    at = end + 1
  }
  return keys
}

/** What a key entry of a type holds, where it is not a plain API key (shown beside the keys field), in the current language. */
export const keyHint = (type: string): string | undefined =>
  (CHANNEL_KEYS.hints as Readonly<Record<string, string | undefined>>)[type]

/**
 * An Azure API version as the server takes it (`settings.api_version`): a date `YYYY-MM-DD`, optionally with
 * `-preview`, or `v1` (the v1 API); empty is the default, `2024-10-21`.
 */
export const AZURE_API_VERSION = /^(?:\d{4}-\d{2}-\d{2}(?:-preview)?|v1)$/

/** An AWS region as the server takes a bedrock channel's `settings.region` (`AWS_REGION`, `src/domain/ChannelType.ts`). */
export const AWS_REGION = /^[a-z]{2}(-[a-z]+)+-\d{1,2}$/

/** A Google Cloud project id or number, as the server takes a vertex channel's `settings.project`. */
export const VERTEX_PROJECT = /^[A-Za-z0-9][A-Za-z0-9.:-]{0,99}$/

/** A Vertex AI location (`us-central1`, `global`, `us`, `eu`), as the server takes `settings.location`. */
export const VERTEX_LOCATION = /^[a-z0-9][a-z0-9-]{0,62}$/

/**
 * One setting only a channel type reads (the bootstrap file's name under `settings`): a text matching `pattern`,
 * or one of `choices`; `required` where the server refuses the channel without it.
 */
export interface TypeSetting {
  readonly name: "api_version" | "region" | "bedrock_api" | "project" | "location"
  readonly pattern?: RegExp
  readonly choices?: ReadonlyArray<string>
  readonly required?: true
  readonly placeholder?: string
}

/**
 * The settings each type reads beyond the common ones (`src/config/BootstrapFile.ts` `ChannelSettings`): azure's
 * API version (`upstreams/AzureTarget.ts`; the deployment is the model mapping's upstream model), bedrock's region
 * and API (`upstreams/Adapter.ts`; its auth is the key's format), vertex's project and location (its
 * service-account key JSON is a key). The form shows a type's only when that type is chosen.
 */
export const TYPE_SETTINGS: Readonly<Partial<Record<(typeof CHANNEL_TYPES)[number], ReadonlyArray<TypeSetting>>>> = {
  azure: [{ name: "api_version", pattern: AZURE_API_VERSION, placeholder: "2024-10-21" }],
  bedrock: [
    { name: "region", pattern: AWS_REGION, required: true, placeholder: "us-east-1" },
    { name: "bedrock_api", choices: ["converse", "invoke"] }
  ],
  vertex: [
    { name: "project", pattern: VERTEX_PROJECT, required: true },
    { name: "location", pattern: VERTEX_LOCATION, placeholder: "us-central1" }
  ]
}

/**
 * The switches of the common settings that only some types read (`upstreams/Adapter.ts`: the Responses API, its
 * socket and `/v1/responses/compact` are asked of `openai` channels only); a switch not named here applies to
 * every type.
 */
export const SWITCH_TYPES: Readonly<Record<string, ReadonlyArray<string>>> = {
  responses_api: ["openai"],
  responses_websocket: ["openai"],
  responses_compact: ["openai"]
}
