/**
 * Which channel types speak the Midjourney-proxy task API, and where: the
 * root its `/mj/...` paths hang from and how the key is sent. A
 * `Record<ChannelType, …>`, so a new channel type does not compile until it
 * says whether it runs Midjourney tasks.
 *
 * The API is the one novicezk/midjourney-proxy serves under its `/mj` context
 * path (`POST /mj/submit/{imagine,change,blend,describe}`,
 * `GET /mj/task/{id}/fetch`, `POST /mj/task/list-by-condition`) and the
 * "plus" servers extend (`POST /mj/submit/action`, `POST /mj/submit/modal`;
 * trueai-org/midjourney-proxy); the key is the server's `mj-api-secret`
 * header (novicezk `ApiAuthorizeInterceptor`; new-api's relay sends the
 * channel key there too).
 *
 * @since 0.1.0
 */
import { type Channel, type ChannelType, channelUrl, type UpstreamTarget, withExtraHeaders } from "./Adapter.ts"

/** A channel type's Midjourney task API. @category models */
export interface MidjourneyAdapter {
  /** URL and headers of `path` (`/mj/...`) on `channel` with `key`; `json` adds the JSON content type. */
  readonly target: (channel: Channel, key: string, path: string, json: boolean) => UpstreamTarget
}

/**
 * The suffix a Midjourney channel's base URL may end in: `/mj`, the proxy's
 * context path, which every call path starts with (`BaseUrl.ts`).
 *
 * @category adapters
 */
export const MIDJOURNEY_VERSIONS: ReadonlyArray<string> = ["/mj"]

/**
 * The Midjourney task API of each channel type; `undefined` for a type that
 * has none, which is never a candidate for a `/mj/*` request.
 *
 * @category adapters
 */
export const midjourneyAdapters: Record<ChannelType, MidjourneyAdapter | undefined> = {
  openai: undefined,
  anthropic: undefined,
  gemini: undefined,
  ark: undefined,
  cohere: undefined,
  jina: undefined,
  midjourney: {
    target: (channel, key, path, json) => ({
      url: channelUrl(channel, path, MIDJOURNEY_VERSIONS),
      headers: withExtraHeaders(channel, {
        ...(json ? { "content-type": "application/json" } : {}),
        "mj-api-secret": key
      })
    })
  },
  kling: undefined,
  deepseek: undefined,
  bedrock: undefined,
  azure: undefined,
  vertex: undefined
}
