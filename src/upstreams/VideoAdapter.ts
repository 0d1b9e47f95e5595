/**
 * Which channel types can make videos, and where: the wire format of their
 * video task API, the root its call paths hang from, and how the key is sent.
 * A `Record<ChannelType, …>`, so a new channel type does not compile until it
 * says whether it makes videos.
 *
 * @since 0.1.0
 */
import type { VideoCall, VideoFormatName } from "../formats/videos/VideoWire.ts"
import { arkRoot, type Channel, type ChannelType, root, type UpstreamTarget, withExtraHeaders } from "./Adapter.ts"

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
}

const urlOf = (base: string, call: VideoCall): string => /^https?:\/\//.test(call.path) ? call.path : base + call.path

const contentType = (call: VideoCall): Record<string, string> =>
  call.body?._tag === "json" ? { "content-type": "application/json" } : {}

const bearer = (base: (channel: Channel) => string): VideoAdapter["target"] => (channel, key, call, withKey) => ({
  url: urlOf(base(channel), call),
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
 *
 * @category adapters
 */
export const videoAdapters: Record<ChannelType, VideoAdapter | undefined> = {
  openai: { wire: "openai", target: bearer(root) },
  anthropic: undefined,
  gemini: {
    wire: "gemini",
    target: (channel, key, call, withKey) => ({
      url: urlOf(root(channel), call),
      headers: withExtraHeaders(channel, { ...contentType(call), ...(withKey ? { "x-goog-api-key": key } : {}) })
    })
  },
  ark: { wire: "ark", target: bearer(arkRoot) },
  cohere: undefined,
  jina: undefined,
  midjourney: undefined
}
