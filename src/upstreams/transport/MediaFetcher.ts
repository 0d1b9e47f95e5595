/**
 * Makes URL images and files inline for upstreams that only take inline data: each
 * URL-sourced image of a request (in message content and in tool results)
 * and each URL-sourced file (a PDF, say) is downloaded by the gateway through
 * the SSRF guard of `upstreams/transport/SafeFetch.ts` and replaced by a Base64 source with
 * the media type of the download (a file keeps its name, or takes the last
 * segment of the URL's path).
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
 * bytes (`file-type`); anything else is refused as not an image. The file
 * check: the declared type, or the sniffed one when it is missing or
 * octet-stream; a web page (`text/html`) or bytes of no known type are
 * refused as not a document.
 *
 * Which files: on channels whose wire format is chat completions always (a
 * chat `file` part holds `file_data` or a `file_id`, never a URL,
 * platform.openai.com/docs/guides/pdf-files), on gemini channels as for
 * images; Messages (document `url` sources) and Responses (`file_url`) take
 * file URLs themselves.
 *
 * Per caller request (across its failover attempts): at most
 * `media_max_count` distinct downloads, checked before any starts, and at
 * most `media_max_total_bytes` downloaded in all, drawn chunk by chunk so the
 * download that crosses it stops there. A failure names the canonical place
 * of the first media item it concerns (`MediaLocation`); the inbound format
 * turns that into the caller's field (`formats/shared/MediaParam.ts`).
 *
 * @since 0.1.0
 */
import { Context, Data, Effect, Layer } from "effect"
import { Base64 } from "effect/encoding"
import { fileTypeFromBuffer } from "../../domain/FileType.ts"
import type { FilePart, ImagePart, MediaSource, Part } from "../../canonical/Content.ts"
import { base64ByteLength } from "../../canonical/Estimate.ts"
import type { Request } from "../../canonical/Request.ts"
import { InvalidRequest } from "../../errors/GatewayError.ts"
import type { FormatName, WireName } from "../../formats/Format.ts"
import type { MediaLocation } from "../../formats/shared/MediaLocation.ts"
import { mediaParam } from "../../formats/shared/MediaParam.ts"
import { upstreamWireOf } from "../../formats/Formats.ts"
import {
  type ByteBudget,
  byteBudget,
  displayUrl,
  type Resolver,
  safeFetch,
  type SafeFetchFailure
} from "./SafeFetch.ts"
import type { Channel } from "../../storage/Catalog.ts"

/** An image or file made inline: its media type (`image/png`, `application/pdf`) and Base64 data. @category models */
export interface InlineMedia {
  readonly mediaType: string
  readonly data: string
}

/**
 * Download limits (from the bootstrap file's `settings`): bytes of one
 * download, milliseconds, host names trusted although they resolve to
 * non-public addresses, and per caller request the count of distinct
 * downloads and their bytes in total.
 *
 * @category models
 */
export interface MediaSettings {
  readonly mediaMaxBytes: number
  readonly mediaTimeoutMs: number
  readonly mediaAllowHosts: ReadonlyArray<string>
  readonly mediaMaxCount: number
  readonly mediaMaxTotalBytes: number
}

/**
 * An image or file URL could not be made inline. `reason` is the download
 * failure (`over-budget`: past the request's total bytes), `not-an-image`,
 * `not-a-document`, or `too-many-downloads` (past the request's count);
 * `message` is safe to show the caller; `url` is the URL as the request held
 * it; `medium` says which kind of part held it; `location` is the first
 * canonical place of that URL (set by `prepare`).
 *
 * @category errors
 */
export class MediaFetchFailed extends Data.TaggedError("MediaFetchFailed")<{
  readonly url: string
  readonly reason: SafeFetchFailure | "not-an-image" | "not-a-document" | "too-many-downloads"
  readonly message: string
  readonly medium: "image" | "file"
  readonly location?: MediaLocation | undefined
}> {}

/**
 * Whether a channel gets URL images inline (see the module doc for defaults).
 *
 * @category predicates
 */
export const inlinesImages = (channel: Pick<Channel, "type" | "settings">): boolean =>
  channel.settings.inline_images ?? (channel.type === "gemini" || channel.type === "bedrock")

/**
 * Whether URL files go inline for a channel called in `wire` format (see the
 * module doc).
 *
 * @category predicates
 */
export const inlinesFiles = (channel: Pick<Channel, "type" | "settings">, wire: WireName): boolean =>
  upstreamWireOf(wire).inlinesFiles(inlinesImages(channel))

/** `gs://…` or a Files-API URI (`https://generativelanguage.googleapis.com/v1beta/files/…`). */
const isGeminiFileReference = (url: string): boolean =>
  url.startsWith("gs://") || /^https:\/\/generativelanguage\.googleapis\.com\/[^?#]*\/files\//.test(url)

/** Whether a source is a URL the gateway must download for a channel of `channelType`. */
const needsDownload = (
  source: MediaSource,
  channelType: Channel["type"]
): source is MediaSource & { readonly kind: "url" } =>
  source.kind === "url" && !source.url.startsWith("data:") &&
  !(channelType === "gemini" && isGeminiFileReference(source.url))

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
      if (needsDownload(image.source, channelType)) urls.add(image.source.url)
    }
  }
  return [...urls]
}

/**
 * The distinct URLs a request's files must be downloaded from for a channel
 * of `channelType`, in order of appearance: URL sources that are not `data:`
 * URIs (nor Gemini file references, on gemini channels), in message content
 * (tool results hold text and images only).
 *
 * @category inlining
 */
export const fileUrlsToInline = (request: Request, channelType: Channel["type"]): ReadonlyArray<string> => {
  const urls = new Set<string>()
  for (const message of request.messages) {
    for (const part of message.content) {
      if (part.type === "file" && needsDownload(part.source, channelType)) urls.add(part.source.url)
    }
  }
  return [...urls]
}

/**
 * One download a request needs for a channel: what is checked (`image` or
 * `file`), the URL, and the first canonical place that holds it.
 *
 * @category models
 */
export interface MediaDownload {
  readonly medium: "image" | "file"
  readonly url: string
  readonly location: MediaLocation
}

/**
 * The distinct downloads `request` needs for `channel` called in `wire`
 * format, in order of appearance (images of message content and tool
 * results when the channel inlines images, files when it inlines files; one
 * per kind and URL).
 *
 * @category inlining
 */
export const downloadsFor = (
  request: Request,
  channel: Pick<Channel, "type" | "settings">,
  wire: WireName
): ReadonlyArray<MediaDownload> => {
  const images = inlinesImages(channel)
  const files = inlinesFiles(channel, wire)
  const seen = new Set<string>()
  const out: Array<MediaDownload> = []
  const add = (medium: "image" | "file", source: MediaSource, location: MediaLocation) => {
    if (!needsDownload(source, channel.type) || seen.has(`${medium} ${source.url}`)) return
    seen.add(`${medium} ${source.url}`)
    out.push({ medium, url: source.url, location })
  }
  for (const [message, { content }] of request.messages.entries()) {
    for (const [part, item] of content.entries()) {
      if (item.type === "image" && images) add("image", item.source, { message, part })
      else if (item.type === "file" && files) add("file", item.source, { message, part })
      else if (item.type === "tool-result" && images) {
        for (const [inner, nested] of item.content.entries()) {
          if (nested.type === "image") add("image", nested.source, { message, part, inner })
        }
      }
    }
  }
  return out
}

/** The last segment of a URL's path, decoded, when it looks like a file name (`report.pdf`). */
const fileNameOf = (url: string): string | undefined => {
  try {
    const segment = decodeURIComponent(new URL(url).pathname.split("/").pop() ?? "")
    return /^[^\\/]+\.[A-Za-z0-9]{1,8}$/.test(segment) ? segment : undefined
  } catch {
    return undefined
  }
}

const inlineFile = (file: FilePart, files: ReadonlyMap<string, InlineMedia>): FilePart => {
  if (file.source.kind !== "url") return file
  const inline = files.get(file.source.url)
  if (inline === undefined) return file
  const filename = file.filename ?? fileNameOf(file.source.url)
  return {
    ...file,
    source: { kind: "base64", mediaType: inline.mediaType, data: inline.data },
    ...(filename === undefined ? {} : { filename })
  }
}

/**
 * The request with every file whose URL is in `files` replaced by its Base64
 * source (keeping its name, or naming it after the URL); other parts kept.
 *
 * @category inlining
 */
export const withInlineFiles = (request: Request, files: ReadonlyMap<string, InlineMedia>): Request => ({
  ...request,
  messages: request.messages.map((message) => ({
    ...message,
    content: message.content.map((part): Part => part.type === "file" ? inlineFile(part, files) : part)
  }))
})

const inlineImage = (image: ImagePart, images: ReadonlyMap<string, InlineMedia>): ImagePart => {
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
export const withInlineImages = (request: Request, images: ReadonlyMap<string, InlineMedia>): Request => ({
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
 * A download failure as the caller's 400: the failure's message, `param` the
 * field of the caller's body `raw` (sent in format `inbound`) that holds the
 * media item at the failure's location (`messages[3].content[1].image_url.url`),
 * or none when it cannot be told.
 *
 * @category errors
 */
export const toInvalidRequest = (error: MediaFetchFailed, raw: unknown, inbound: FormatName): InvalidRequest => {
  const param = error.location === undefined ? undefined : mediaParam(inbound, raw, error.location)
  return new InvalidRequest({ message: error.message, ...(param === undefined ? {} : { param }) })
}

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
 * The media type of a downloaded file: the declared type, else (missing or
 * octet-stream) the sniffed one; `undefined` for a web page or unknown bytes.
 */
const documentTypeOf = async (contentType: string | undefined, bytes: Uint8Array): Promise<string | undefined> => {
  const declared = (contentType ?? "").split(";")[0].trim().toLowerCase()
  if (declared === "text/html" || declared === "application/xhtml+xml") return undefined
  if (!octetStream.has(declared)) return declared
  const sniffed = await fileTypeFromBuffer(bytes).catch(() => undefined)
  return sniffed?.mime
}

/**
 * Image and file downloads for inline-only channels, under the gateway's media
 * settings (`media_max_bytes`, `media_timeout_ms`, `media_allow_hosts`).
 *
 * @category services
 */
export class MediaFetcher extends Context.Service<MediaFetcher, {
  /** Downloads one image URL: its media type and Base64 data, or why not. */
  readonly fetchImage: (url: string) => Effect.Effect<InlineMedia, MediaFetchFailed>
  /** Downloads one file URL: its media type and Base64 data, or why not. */
  readonly fetchFile: (url: string) => Effect.Effect<InlineMedia, MediaFetchFailed>
  /**
   * The request to encode for `channel`, called in `wire` format: `undefined`
   * when nothing changes (the channel takes URLs, or nothing needs
   * downloading), else the request with its URL images and files inline.
   * `cache` (one per caller request) keeps downloads across failover attempts,
   * so each distinct URL is downloaded once.
   */
  readonly prepare: (
    request: Request,
    channel: Pick<Channel, "type" | "settings">,
    wire: WireName,
    cache: Map<string, InlineMedia>
  ) => Effect.Effect<Request | undefined, MediaFetchFailed>
  /**
   * `prepare` for downloads already listed (`downloadsFor`, not empty): the
   * request with those URLs inline, under the same per-request caps and cache.
   */
  readonly inline: (
    request: Request,
    downloads: ReadonlyArray<MediaDownload>,
    cache: Map<string, InlineMedia>
  ) => Effect.Effect<Request, MediaFetchFailed>
}>()("sluice/upstreams/transport/MediaFetcher") {
  /** Downloads through `safeFetch` with `settings`; `resolve` replaces the system resolver (tests). */
  static readonly layer = (settings: MediaSettings, resolve?: Resolver) => {
    const download = (url: string, medium: "image" | "file", budget: ByteBudget | undefined) =>
      safeFetch(url, {
        maxBytes: settings.mediaMaxBytes,
        budget,
        timeoutMs: settings.mediaTimeoutMs,
        allowHosts: settings.mediaAllowHosts,
        accept: medium === "image" ? "image/*" : "*/*",
        resolve
      }).pipe(
        Effect.mapError((error) => new MediaFetchFailed({ url, reason: error.reason, message: error.message, medium }))
      )

    /** How each kind of download is checked, and what a failed check is called. */
    const checks = {
      image: { typeOf: imageTypeOf, reason: "not-an-image", what: "an image" },
      file: { typeOf: documentTypeOf, reason: "not-a-document", what: "a document" }
    } as const

    const fetchMedia = (medium: "image" | "file") =>
      Effect.fn(`MediaFetcher.fetch ${medium}`)(function* (url: string, budget?: ByteBudget) {
        const fetched = yield* download(url, medium, budget)
        const check = checks[medium]
        const mediaType = yield* Effect.promise(() => check.typeOf(fetched.contentType, fetched.bytes))
        if (mediaType === undefined) {
          const declared = fetched.contentType === undefined ? "none" : `"${fetched.contentType}"`
          return yield* new MediaFetchFailed({
            url,
            reason: check.reason,
            message: `The URL ${displayUrl(url)} is not ${check.what} (content type ${declared}).`,
            medium
          })
        }
        return { mediaType, data: Base64.encode(fetched.bytes) }
      })
    const fetchers = { image: fetchMedia("image"), file: fetchMedia("file") }
    const fetchImage = (url: string) => fetchers.image(url)
    const fetchFile = (url: string) => fetchers.file(url)
    const keyOf = (job: MediaDownload) => `${job.medium} ${job.url}`

    const inlineAll = Effect.fnUntraced(
      function* (request: Request, downloads: ReturnType<typeof downloadsFor>, cache: Map<string, InlineMedia>) {
        // The count covers every distinct download of the caller's request, earlier attempts' included.
        const counted = new Set(cache.keys())
        for (const job of downloads) {
          counted.add(keyOf(job))
          if (counted.size > settings.mediaMaxCount) {
            return yield* new MediaFetchFailed({
              url: job.url,
              reason: "too-many-downloads",
              message: `The request has more than ${settings.mediaMaxCount} images and files to download ` +
                `(the limit per request); ${displayUrl(job.url)} is past it.`,
              medium: job.medium,
              location: job.location
            })
          }
        }
        const spent = [...cache.values()].reduce((sum, media) => sum + base64ByteLength(media.data), 0)
        const budget = byteBudget(settings.mediaMaxTotalBytes, spent)
        yield* Effect.forEach(
          downloads.filter((job) => !cache.has(keyOf(job))),
          (job) =>
            fetchers[job.medium](job.url, budget).pipe(
              Effect.tap((media) => Effect.sync(() => cache.set(keyOf(job), media))),
              Effect.mapError((error) =>
                new MediaFetchFailed({
                  url: error.url,
                  reason: error.reason,
                  message: error.message,
                  medium: error.medium,
                  location: job.location
                })
              )
            ),
          { concurrency: 4, discard: true }
        )
        const byUrl = (kind: string) =>
          new Map([...cache].flatMap(([key, media]) => key.startsWith(kind) ? [[key.slice(kind.length), media]] : []))
        return withInlineFiles(withInlineImages(request, byUrl("image ")), byUrl("file "))
      }
    )

    // Synchronous when nothing needs downloading (the usual request): no generator runs.
    const prepare = (
      request: Request,
      channel: Pick<Channel, "type" | "settings">,
      wire: WireName,
      cache: Map<string, InlineMedia>
    ) => {
      const downloads = downloadsFor(request, channel, wire)
      return downloads.length === 0 ? Effect.undefined : inlineAll(request, downloads, cache)
    }

    return Layer.succeed(MediaFetcher, MediaFetcher.of({ fetchImage, fetchFile, prepare, inline: inlineAll }))
  }
}
