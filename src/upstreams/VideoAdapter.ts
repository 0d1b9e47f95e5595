/**
 * Which channel types can make videos, and where: the wire format of their
 * video task API, the root its call paths hang from, and how the key is sent.
 * A `Record<ChannelType, …>`, so a new channel type does not compile until it
 * says whether it makes videos.
 *
 * @since 0.1.0
 */
import { Clock, Effect } from "effect"
import { SignJWT } from "jose"
import { UpstreamFailed } from "../errors/GatewayError.ts"
import type { VideoCall, VideoFormatName } from "../formats/videos/VideoWire.ts"
import {
  API_VERSIONS,
  ARK_VERSIONS,
  type Channel,
  type ChannelType,
  channelUrl,
  type UpstreamTarget,
  withExtraHeaders
} from "./Adapter.ts"
import { AZURE_VERSIONS, azureAuthHeaders } from "./AzureTarget.ts"
import { upstreamUrl } from "./BaseUrl.ts"

/** A channel type's video task API. @category models */
export interface VideoAdapter {
  readonly wire: VideoFormatName
  /**
   * URL and headers of `call` on `channel` with `key`. A call whose path is an
   * absolute URL (a vendor-given content URL) gets the key only when
   * `withKey`; the content type is set for a JSON body (a form's carries its
   * boundary and is set by the caller).
   */
  readonly target: (channel: Channel, key: string, call: VideoCall, withKey: boolean) => UpstreamTarget
  /**
   * For a type whose credential is made per call rather than sent as stored (Kling's signed token): the
   * headers that carry it, added to a call sent with the key. Fails with `UpstreamFailed` (`unauthorized`)
   * when the stored key cannot make one; the message never quotes the key.
   */
  readonly authorize?: ((key: string) => Effect.Effect<Record<string, string>, UpstreamFailed>) | undefined
  /**
   * For a video-only type (no text API to ask): a cheap, free call that answers 2xx for a working key, which the
   * health prober and the admin channel test send instead of a chat message.
   */
  readonly probe?: VideoCall | undefined
}

/** How long a Kling token is valid, in seconds (Kling's own sample: now + 1800). @category constants */
export const KLING_TOKEN_SECONDS = 1800

/** How far back a Kling token's `nbf` is set, in seconds, for clock skew (Kling's sample: now - 5). @category constants */
export const KLING_TOKEN_SKEW_SECONDS = 5

/**
 * A Kling API token for a channel key `accessKey|secretKey`: a JWT signed
 * HS256 with the secret key, `iss` the access key, `exp` now + 1800 s, `nbf`
 * now − 5 s, header `{alg: HS256, typ: JWT}` (Kling AI API reference,
 * "General Information: API Authentication"). `now` in epoch seconds.
 * Fails with `UpstreamFailed` (`unauthorized`) when the key is not of that
 * shape; the message does not quote it.
 *
 * @category adapters
 */
export const klingToken = (
  key: string,
  now: number
): Effect.Effect<string, UpstreamFailed> => {
  const bar = key.indexOf("|")
  const accessKey = bar < 0 ? "" : key.slice(0, bar).trim()
  const secretKey = bar < 0 ? "" : key.slice(bar + 1).trim()
  if (accessKey === "" || secretKey === "" || secretKey.includes("|")) {
    return Effect.fail(
      new UpstreamFailed({
        kind: "unauthorized",
        status: 0,
        message: "The kling channel key must be accessKey|secretKey."
      })
    )
  }
  return Effect.tryPromise({
    try: () =>
      new SignJWT({})
        .setProtectedHeader({ alg: "HS256", typ: "JWT" })
        .setIssuer(accessKey)
        .setExpirationTime(now + KLING_TOKEN_SECONDS)
        .setNotBefore(now - KLING_TOKEN_SKEW_SECONDS)
        .sign(new TextEncoder().encode(secretKey)),
    catch: () =>
      new UpstreamFailed({ kind: "unauthorized", status: 0, message: "The kling channel key could not sign a token." })
  })
}

/** A call's URL: a vendor-given absolute URL as it is, else its path on the channel by the base URL rule. */
const urlOf = (channel: Channel, call: VideoCall, versions: ReadonlyArray<string>): string =>
  /^https?:\/\//.test(call.path) ? call.path : channelUrl(channel, call.path, versions)

const contentType = (call: VideoCall): Record<string, string> =>
  call.body?._tag === "json" ? { "content-type": "application/json" } : {}

const bearer = (versions: ReadonlyArray<string>): VideoAdapter["target"] => (channel, key, call, withKey) => ({
  url: urlOf(channel, call, versions),
  headers: withExtraHeaders(channel, { ...contentType(call), ...(withKey ? { authorization: `Bearer ${key}` } : {}) })
})

/**
 * The video task API of each channel type; `undefined` for a type that cannot
 * make videos (`anthropic`), which is never a candidate for a video request.
 *
 * - `openai`: `POST /v1/videos`, `GET /v1/videos/{id}`, `POST /v1/videos/{id}/remix`,
 *   `GET /v1/videos/{id}/content`, Bearer key (platform.openai.com/docs/api-reference/videos).
 * - `ark`: `POST /api/v3/contents/generations/tasks`, `GET …/tasks/{id}`, Bearer key
 *   (volcengine.com/docs/82379/1520758,
 *   "Create a video generation task"); the result's `video_url` is fetched without the key.
 * - `gemini`: `POST /v1beta/models/{model}:predictLongRunning`, `GET /v1beta/{operation}`,
 *   `x-goog-api-key` (ai.google.dev/gemini-api/docs/video); the video `uri` is fetched with the key.
 * - `kling`: `POST /v1/videos/{text2video|image2video}`, `GET …/{task_id}`, `Authorization: Bearer` a token
 *   signed per call from the channel key `accessKey|secretKey` (`klingToken`); the base URL is the API's
 *   root (`https://api-singapore.klingai.com`), with or without `/v1`; the result's URL is fetched without it.
 * - `azure`: OpenAI's video wire on Azure's v1 API, whatever the channel's `api_version` (Sora 2 "uses the Azure
 *   OpenAI v1 API, aligning with OpenAI's native Sora 2 schema", learn.microsoft.com/azure/ai-foundry/openai/concepts/
 *   video-generation): `POST {base}/openai/v1/videos`, `GET …/videos/{id}`, `POST …/videos/{id}/remix`,
 *   `GET …/videos/{id}/content`, with the channel's `api-key` or Entra token (`AzureTarget.ts`); the deployment is
 *   the body's `model`.
 *
 * @category adapters
 */
export const videoAdapters: Record<ChannelType, VideoAdapter | undefined> = {
  openai: { wire: "openai", target: bearer(API_VERSIONS) },
  anthropic: undefined,
  gemini: {
    wire: "gemini",
    target: (channel, key, call, withKey) => ({
      url: urlOf(channel, call, API_VERSIONS),
      headers: withExtraHeaders(channel, { ...contentType(call), ...(withKey ? { "x-goog-api-key": key } : {}) })
    })
  },
  ark: { wire: "ark", target: bearer(ARK_VERSIONS) },
  cohere: undefined,
  jina: undefined,
  midjourney: undefined,
  kling: {
    wire: "kling",
    target: (channel, _key, call) => ({
      url: urlOf(channel, call, API_VERSIONS),
      headers: withExtraHeaders(channel, contentType(call))
    }),
    authorize: (key) =>
      Clock.currentTimeMillis.pipe(
        Effect.flatMap((millis) => klingToken(key, Math.floor(millis / 1000))),
        Effect.map((token) => ({ authorization: `Bearer ${token}` }))
      ),
    // Kling's task list ("Query Task (List)"), one item: free, and refused without a valid token.
    probe: { method: "GET", path: "/v1/videos/text2video?pageNum=1&pageSize=1" }
  },
  deepseek: undefined,
  bedrock: undefined,
  azure: {
    wire: "openai",
    target: (channel, key, call, withKey) => ({
      // The wire's paths start `/v1/videos`; Azure's v1 API has them under `/openai`.
      url: /^https?:\/\//.test(call.path)
        ? call.path
        : upstreamUrl(channel.baseUrl, `/openai${call.path}`, AZURE_VERSIONS),
      headers: withExtraHeaders(channel, { ...contentType(call), ...(withKey ? azureAuthHeaders(key) : {}) })
    })
  },
  vertex: undefined
}
