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
  | "bedrock"
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
 * An AWS region name as Bedrock Runtime's endpoints spell it (`us-east-1`, `eu-central-2`, `us-gov-west-1`,
 * `ap-southeast-7`: docs.aws.amazon.com/general/latest/gr/bedrock.html, "Bedrock Runtime endpoints"); a channel's
 * `settings.region` must match it, since it becomes part of the default host name.
 *
 * @category models
 */
export const AWS_REGION = /^[a-z]{2}(-[a-z]+)+-\d{1,2}$/

/**
 * The default base URL of a `bedrock` channel in `region`: Bedrock Runtime's regional endpoint,
 * `https://bedrock-runtime.{region}.amazonaws.com` (docs.aws.amazon.com/general/latest/gr/bedrock.html);
 * `undefined` for a region that is not one (`AWS_REGION`).
 *
 * @category models
 */
export const bedrockRuntimeUrl = (region: string): string | undefined =>
  AWS_REGION.test(region) ? `https://bedrock-runtime.${region}.amazonaws.com` : undefined

/**
 * The base URL of a channel of `type` given `baseUrl` (a given one as it is,
 * else the type's default: for `vertex`, the endpoint of `settings.location`,
 * `VERTEX_DEFAULT_LOCATION` when unset; for `bedrock`, the endpoint of its
 * `settings.region`); `undefined` when none is given and the type has no
 * default (a `bedrock` channel without a valid region).
 *
 * @category models
 */
export const baseUrlOf = (
  type: ChannelType,
  baseUrl: string | undefined,
  settings?: { readonly location?: string | undefined; readonly region?: string | undefined } | undefined
): string | undefined =>
  baseUrl ??
    (type === "vertex"
      ? vertexBaseUrl(settings?.location ?? VERTEX_DEFAULT_LOCATION)
      : type === "bedrock"
      ? settings?.region === undefined ? undefined : bedrockRuntimeUrl(settings.region)
      : DEFAULT_BASE_URLS[type])

/**
 * Why a channel of `type` (a `ChannelType`; any other name has no setting to check) with `settings` cannot be used, naming the setting: a `bedrock` channel needs
 * `settings.region` (its calls are signed for that region, and its default base URL is that region's endpoint), an
 * AWS region name (`AWS_REGION`). `undefined` when nothing is wrong.
 *
 * @category models
 */
export const settingsProblem = (
  type: string,
  settings: { readonly region?: string | undefined } | undefined
): { readonly message: string; readonly param: string } | undefined => {
  if (type !== "bedrock") return undefined
  const region = settings?.region
  if (region === undefined) {
    return { message: "settings.region is missing (a bedrock channel needs its AWS region).", param: "settings.region" }
  }
  return AWS_REGION.test(region) ? undefined : {
    message: `settings.region "${region.slice(0, 40)}" is not an AWS region (like us-east-1).`,
    param: "settings.region"
  }
}
