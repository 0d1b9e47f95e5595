/**
 * Where an `azure` channel's calls go and how its key is sent (Azure OpenAI / Azure AI Foundry), for every
 * modality: text (`Adapter.ts`), embeddings, images and audio.
 *
 * Two URL families (learn.microsoft.com/azure/ai-foundry/openai/reference, "Data plane – inference";
 * learn.microsoft.com/azure/ai-foundry/openai/api-version-lifecycle, "API evolution" / "v1 API"):
 * - a dated API version (`settings.api_version` unset, `2024-10-21` by default, or any `YYYY-MM-DD[-preview]`):
 *   `{base}/openai/deployments/{deployment}/{operation}?api-version={version}`, the deployment URL-encoded; the
 *   `openai` SDK's `AzureOpenAI` builds the same paths for the same operations (`azure.ts`,
 *   `_deployments_endpoints`) and keeps `model` in the body, which Azure reads no further (the path names the
 *   deployment);
 * - `settings.api_version: v1`: `{base}/openai/v1/{operation}` with no `api-version` (Azure's v1 API refuses a dated
 *   one: 400 `{"error":{"code":"BadRequest","message":"API version not supported"}}`), the deployment as the body's
 *   `model`. Only this family has Responses (`/openai/v1/responses`).
 *
 * The base URL is the resource endpoint (`https://<resource>.openai.azure.com`, or a proxy's URL with a path), by the
 * one rule of `BaseUrl.ts`; one ending in `/openai` or `/openai/v1` (the `baseURL` forms of the SDK) is not doubled.
 *
 * Keys: an API key goes in the `api-key` header; an entry `entra:<token>` is a Microsoft Entra ID access token, sent
 * as `Authorization: Bearer <token>` (learn.microsoft.com/azure/ai-foundry/openai/reference, "Authentication").
 *
 * @since 0.1.0
 */
import { upstreamUrl } from "./BaseUrl.ts"

/**
 * What the URLs of an `azure` channel depend on: its base URL and its `settings.api_version` (an adapter's
 * `Channel` is one).
 *
 * @category models
 */
export interface AzureChannel {
  readonly baseUrl: string
  readonly settings: { readonly api_version?: string | undefined }
}

/**
 * The API version a dated `azure` channel uses when its settings name none: `2024-10-21`, Azure OpenAI's latest
 * GA data-plane version before the v1 API (learn.microsoft.com/azure/ai-foundry/openai/api-version-lifecycle).
 *
 * @category constants
 */
export const AZURE_DEFAULT_API_VERSION = "2024-10-21"

/**
 * The suffixes an `azure` base URL may end in and that the call paths repeat: `/openai/v1` and `/openai`.
 *
 * @category constants
 */
export const AZURE_VERSIONS: ReadonlyArray<string> = ["/openai/v1", "/openai"]

/** The prefix of an `entra:` key entry: the rest is a Microsoft Entra ID bearer token. @category constants */
export const ENTRA_PREFIX = "entra:"

/**
 * The Azure operations the gateway calls, as the path after the deployment (dated) or after `/openai/v1` (v1).
 *
 * @category models
 */
export type AzureOperation =
  | "chat/completions"
  | "completions"
  | "responses"
  | "embeddings"
  | "images/generations"
  | "images/edits"
  | "audio/speech"
  | "audio/transcriptions"
  | "audio/translations"

/**
 * Whether `channel` speaks Azure's v1 API (`settings.api_version: v1`) rather than a dated one.
 *
 * @category urls
 */
export const azureV1 = (channel: AzureChannel): boolean => channel.settings.api_version === "v1"

/**
 * The URL of `operation` on deployment `deployment` of an `azure` channel (see the module's two families). Pure.
 *
 * @category urls
 */
export const azureUrl = (channel: AzureChannel, deployment: string, operation: AzureOperation): string =>
  azureV1(channel) ? upstreamUrl(channel.baseUrl, `/openai/v1/${operation}`, AZURE_VERSIONS) : upstreamUrl(
    channel.baseUrl,
    `/openai/deployments/${encodeURIComponent(deployment)}/${operation}?api-version=${
      encodeURIComponent(channel.settings.api_version ?? AZURE_DEFAULT_API_VERSION)
    }`,
    AZURE_VERSIONS
  )

/**
 * The header that carries `key`: `authorization: Bearer <token>` for an `entra:<token>` entry, else `api-key`.
 *
 * @category headers
 */
export const azureAuthHeaders = (key: string): Record<string, string> =>
  key.startsWith(ENTRA_PREFIX)
    ? { authorization: `Bearer ${key.slice(ENTRA_PREFIX.length).trim()}` }
    : { "api-key": key }
