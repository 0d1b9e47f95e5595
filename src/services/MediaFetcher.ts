/**
 * Makes URL images inline for upstreams that only take inline data: each
 * URL-sourced image of a request (in message content and in tool results) is
 * downloaded by the gateway through the SSRF guard of `http/SafeFetch.ts` and
 * replaced by a Base64 source with the media type of the download.
 *
 * Which channels: `settings.inline_images` when the channel sets it; else
 * `true` for `gemini` channels (generate-content takes `fileData.fileUri` for
 * Files-API uploads and, since 2026-01, public https URLs only, so a gateway
 * caller's URL cannot be relied on there) and `false` for `openai` and
 * `anthropic` (both fetch image URLs themselves). Data URIs are inline already;
 * on gemini channels, Gemini file references (`gs://…`, Files-API URIs) are
 * left as they are.
 *
 * The image check: a `Content-Type` of `image/*` is taken as is; a missing or
 * `application/octet-stream` one is replaced by the type sniffed from the
 * bytes (`file-type`); anything else is refused as not an image.
 *
 * @since 0.1.0
 */
import { Context, Data, Effect, Layer } from "effect"
import { Base64 } from "effect/encoding"
import { fileTypeFromBuffer } from "file-type"
import type { ImagePart, Part } from "../canonical/Content.ts"
import type { Request } from "../canonical/Request.ts"
import { InvalidRequest } from "../errors/GatewayError.ts"
import type { FormatName } from "../formats/Format.ts"
import { displayUrl, type Resolver, safeFetch, type SafeFetchFailure } from "../http/SafeFetch.ts"
import type { Channel } from "../storage/Catalog.ts"

/** An image made inline: its media type (`image/png`) and Base64 data. @category models */
export interface InlineImage {
  readonly mediaType: string
  readonly data: string
}

/**
 * Download limits (from the bootstrap file's `settings`): bytes, milliseconds,
 * host names trusted although they resolve to non-public addresses.
 *
 * @category models
 */
export interface MediaSettings {
  readonly mediaMaxBytes: number
  readonly mediaTimeoutMs: number
  readonly mediaAllowHosts: ReadonlyArray<string>
}

/**
 * An image URL could not be made inline. `reason` is the download failure or
 * `not-an-image`; `message` is safe to show the caller; `url` is the URL as
 * the request held it (to find the field it came from).
 *
 * @category errors
 */
export class MediaFetchFailed extends Data.TaggedError("MediaFetchFailed")<{
  readonly url: string
  readonly reason: SafeFetchFailure | "not-an-image"
  readonly message: string
}> {}

/**
 * Whether a channel gets URL images inline (see the module doc for defaults).
 *
 * @category predicates
 */
export const inlinesImages = (channel: Pick<Channel, "type" | "settings">): boolean =>
  channel.settings.inline_images ?? channel.type === "gemini"

/** `gs://…` or a Files-API URI (`https://generativelanguage.googleapis.com/v1beta/files/…`). */
const isGeminiFileReference = (url: string): boolean =>
  url.startsWith("gs://") || /^https:\/\/generativelanguage\.googleapis\.com\/[^?#]*\/files\//.test(url)

const imagesOf = (parts: ReadonlyArray<Part>): Array<ImagePart> =>
  parts.flatMap((part) =>
    part.type === "image"
      ? [part]
      : part.type === "tool-result"
      ? part.content.filter((inner): inner is ImagePart => inner.type === "image")
      : []
  )

/**
 * The distinct URLs a request's images must be downloaded from for a channel
 * of `channelType`, in order of appearance: URL sources that are not `data:`
 * URIs (nor Gemini file references, on gemini channels).
 *
 * @category inlining
 */
export const imageUrlsToInline = (request: Request, channelType: Channel["type"]): ReadonlyArray<string> => {
  const urls = new Set<string>()
  for (const message of request.messages) {
    for (const image of imagesOf(message.content)) {
      if (image.source.kind !== "url") continue
      const url = image.source.url
      if (url.startsWith("data:")) continue
      if (channelType === "gemini" && isGeminiFileReference(url)) continue
      urls.add(url)
    }
  }
  return [...urls]
}

const inlineImage = (image: ImagePart, images: ReadonlyMap<string, InlineImage>): ImagePart => {
  if (image.source.kind !== "url") return image
  const inline = images.get(image.source.url)
  return inline === undefined
    ? image
    : { ...image, source: { kind: "base64", mediaType: inline.mediaType, data: inline.data } }
}

/**
 * The request with every image whose URL is in `images` replaced by its
 * Base64 source (message content and tool-result content); other parts kept.
 *
 * @category inlining
 */
export const withInlineImages = (request: Request, images: ReadonlyMap<string, InlineImage>): Request => ({
  ...request,
  messages: request.messages.map((message) => ({
    ...message,
    content: message.content.map((part): Part =>
      part.type === "image" ? inlineImage(part, images) : part.type === "tool-result"
        ? {
          ...part,
          content: part.content.map((inner) => inner.type === "image" ? inlineImage(inner, images) : inner)
        }
        : part
    )
  }))
})

/**
 * The JSON path of the first string in `value` equal to `target`
 * (`messages[1].content[0].image_url.url`), or `undefined`.
 *
 * @category errors
 */
export const pathOfString = (value: unknown, target: string, path = ""): string | undefined => {
  if (typeof value === "string") return value === target ? path : undefined
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) {
      const found = pathOfString(item, target, `${path}[${index}]`)
      if (found !== undefined) return found
    }
    return undefined
  }
  if (typeof value === "object" && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      const found = pathOfString(item, target, path === "" ? key : `${path}.${key}`)
      if (found !== undefined) return found
    }
  }
  return undefined
}

/** The image URL field of each inbound format, for when the URL is not found in the body. */
const imageUrlField: Readonly<Record<FormatName, string>> = {
  "openai-chat": "image_url",
  "openai-responses": "image_url",
  anthropic: "source.url",
  gemini: "fileData.fileUri",
  completions: "image_url"
}

/**
 * A download failure as the caller's 400: the failure's message, `param` the
 * path of the URL in the caller's body `raw` (else the format's image URL
 * field name).
 *
 * @category errors
 */
export const toInvalidRequest = (error: MediaFetchFailed, raw: unknown, inbound: FormatName): InvalidRequest =>
  new InvalidRequest({
    message: error.message,
    param: pathOfString(raw, error.url) ?? imageUrlField[inbound]
  })

const octetStream: ReadonlySet<string> = new Set(["", "application/octet-stream", "binary/octet-stream"])

/**
 * The image media type of a download: an `image/*` header, else the sniffed
 * type when the header is missing or octet-stream; `undefined` when not an image.
 */
const imageTypeOf = async (contentType: string | undefined, bytes: Uint8Array): Promise<string | undefined> => {
  const declared = (contentType ?? "").split(";")[0].trim().toLowerCase()
  if (declared.startsWith("image/")) return declared
  if (!octetStream.has(declared)) return undefined
  const sniffed = await fileTypeFromBuffer(bytes).catch(() => undefined)
  return sniffed?.mime.startsWith("image/") === true ? sniffed.mime : undefined
}

/**
 * Image downloads for inline-only channels, under the gateway's media
 * settings (`media_max_bytes`, `media_timeout_ms`, `media_allow_hosts`).
 *
 * @category services
 */
export class MediaFetcher extends Context.Service<MediaFetcher, {
  /** Downloads one image URL: its media type and Base64 data, or why not. */
  readonly fetchImage: (url: string) => Effect.Effect<InlineImage, MediaFetchFailed>
  /**
   * The request to encode for `channel`: `undefined` when nothing changes (the
   * channel takes URLs, or no image needs downloading), else the request with
   * its URL images inline. `cache` (one per caller request) keeps downloads
   * across failover attempts, so each distinct URL is downloaded once.
   */
  readonly prepare: (
    request: Request,
    channel: Pick<Channel, "type" | "settings">,
    cache: Map<string, InlineImage>
  ) => Effect.Effect<Request | undefined, MediaFetchFailed>
}>()("sluice/services/MediaFetcher") {
  /** Downloads through `safeFetch` with `settings`; `resolve` replaces the system resolver (tests). */
  static readonly layer = (settings: MediaSettings, resolve?: Resolver) => {
    const fetchImage = Effect.fn("MediaFetcher.fetchImage")(function* (url: string) {
      const fetched = yield* safeFetch(url, {
        maxBytes: settings.mediaMaxBytes,
        timeoutMs: settings.mediaTimeoutMs,
        allowHosts: settings.mediaAllowHosts,
        accept: "image/*",
        resolve
      }).pipe(Effect.mapError((error) => new MediaFetchFailed({ url, reason: error.reason, message: error.message })))
      const mediaType = yield* Effect.promise(() => imageTypeOf(fetched.contentType, fetched.bytes))
      if (mediaType === undefined) {
        const declared = fetched.contentType === undefined ? "none" : `"${fetched.contentType}"`
        return yield* new MediaFetchFailed({
          url,
          reason: "not-an-image",
          message: `The URL ${displayUrl(url)} is not an image (content type ${declared}).`
        })
      }
      return { mediaType, data: Base64.encode(fetched.bytes) }
    })

    const prepare = Effect.fnUntraced(
      function* (request: Request, channel: Pick<Channel, "type" | "settings">, cache: Map<string, InlineImage>) {
        if (!inlinesImages(channel)) return undefined
        const urls = imageUrlsToInline(request, channel.type)
        if (urls.length === 0) return undefined
        yield* Effect.forEach(
          urls.filter((url) => !cache.has(url)),
          (url) => fetchImage(url).pipe(Effect.tap((image) => Effect.sync(() => cache.set(url, image)))),
          { concurrency: 4, discard: true }
        )
        return withInlineImages(request, cache)
      }
    )

    return Layer.succeed(MediaFetcher, MediaFetcher.of({ fetchImage, prepare }))
  }
}
