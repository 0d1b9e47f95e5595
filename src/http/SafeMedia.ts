/**
 * How the gateway serves media bytes it did not make: an image an upstream
 * answered (kept for `GET /v1/images/content/{id}`), a video relayed from the
 * vendor (`GET /v1/videos/{id}/content`), a Midjourney image relayed from the
 * proxy (`GET /mj/image/{id}`). Those bytes come from an upstream the gateway
 * does not control (a channel an admin points at any server, or a compromised
 * vendor) and are served from the gateway's own origin, where the browser
 * session of every console user lives: an upstream answering an "image" of
 * type `text/html` that holds a script must not have that script run with the
 * session of whoever opens the link.
 *
 * So:
 *
 * - the served type is sniffed from the bytes (`file-type`, loaded on first
 *   use), never taken from the upstream's `Content-Type`, a vendor field such
 *   as Gemini's `inlineData.mimeType`, or a stored row: images are served as
 *   `image/png`, `image/jpeg`, `image/webp` or `image/gif`, videos as
 *   `video/mp4`, `video/webm` or `video/quicktime`; anything else as
 *   `application/octet-stream` with `Content-Disposition: attachment` (a
 *   download, never a page);
 * - every such answer carries `X-Content-Type-Options: nosniff` (the browser
 *   takes the type as given, MDN "X-Content-Type-Options") and
 *   `Content-Security-Policy: default-src 'none'; sandbox` (were it rendered
 *   anyway: no script, no subresource, an opaque origin; MDN "CSP: sandbox").
 *
 * `safeMediaHeaders` is the one place these headers are made.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { concatBytes } from "../domain/Bytes.ts"
import { fileTypeFromBuffer } from "../domain/FileType.ts"

/** What the bytes are meant to be: an image or a video. @category models */
export type MediaKind = "image" | "video"

/** The type served for bytes that are none of the types of their kind. @category constants */
export const OCTET_STREAM = "application/octet-stream"

/**
 * The media types served as themselves, by kind; anything else is served as
 * `OCTET_STREAM`, as an attachment.
 *
 * @category constants
 */
export const SERVED_MEDIA_TYPES: Readonly<Record<MediaKind, ReadonlyArray<string>>> = {
  image: ["image/png", "image/jpeg", "image/webp", "image/gif"],
  video: ["video/mp4", "video/webm", "video/quicktime"]
}

/** Sniffed types that are one of the served types under another name (an APNG is a PNG, an M4V an MP4). */
const ALIASES: Readonly<Record<string, string>> = { "image/apng": "image/png", "video/x-m4v": "video/mp4" }

/**
 * The bytes the sniffer needs from the start of a file to tell its type:
 * `file-type`'s `reasonableDetectionSizeInBytes` (4100).
 *
 * @category constants
 */
export const SNIFF_BYTES = 4100

/** `type` (no parameters, lower case) when it is a served type of `kind`, else `OCTET_STREAM`. */
const servedAs = (kind: MediaKind, type: string): string => {
  const bare = type.split(";")[0].trim().toLowerCase()
  const named = ALIASES[bare] ?? bare
  return SERVED_MEDIA_TYPES[kind].includes(named) ? named : OCTET_STREAM
}

/**
 * The type to serve `bytes` (the start of a file, at least `SNIFF_BYTES` of
 * it when it is longer) as: the type `file-type` reads from them when it is a
 * served type of `kind`, else `OCTET_STREAM`. Never fails.
 *
 * @category sniffing
 */
export const sniffMediaType = (kind: MediaKind, bytes: Uint8Array): Effect.Effect<string> =>
  Effect.promise(() =>
    fileTypeFromBuffer(bytes).then(
      (found) => found === undefined ? OCTET_STREAM : servedAs(kind, found.mime),
      () => OCTET_STREAM
    )
  )

/**
 * The type to serve bytes as that cannot be sniffed because they are not the
 * start of the file (a `Range` answer from an offset past 0): the declared
 * type when it is a served type of `kind`, else `OCTET_STREAM`. Script cannot
 * ride on a served media type, so the declared one is safe to keep there.
 *
 * @category sniffing
 */
export const declaredMediaType = (kind: MediaKind, declared: string | undefined): string =>
  declared === undefined ? OCTET_STREAM : servedAs(kind, declared)

/**
 * The headers of an answer that serves media bytes of `kind` typed
 * `mediaType` (sniffed: `sniffMediaType`, `sniffRead`): `content-type` (the
 * type when it is a served type of `kind`, else `OCTET_STREAM` with
 * `content-disposition: attachment`), `x-content-type-options: nosniff` and
 * `content-security-policy: default-src 'none'; sandbox`.
 *
 * @category headers
 */
export const safeMediaHeaders = (kind: MediaKind, mediaType: string): Record<string, string> => {
  const served = servedAs(kind, mediaType)
  return {
    "content-type": served,
    "x-content-type-options": "nosniff",
    "content-security-policy": "default-src 'none'; sandbox",
    ...(served === OCTET_STREAM ? { "content-disposition": "attachment" } : {})
  }
}

/**
 * Sniffs a body that is read chunk by chunk (`read` answers the next chunk,
 * `undefined` at the end) before anything of it is sent: reads chunks until
 * `SNIFF_BYTES` came or the body ended, sniffs them (`sniffMediaType`), and
 * hands back the type with a `read` that answers those chunks first, then the
 * rest of the body. Fails as `read` fails.
 *
 * @category sniffing
 */
export const sniffRead = <E>(
  kind: MediaKind,
  read: Effect.Effect<Uint8Array | undefined, E>
): Effect.Effect<{ readonly mediaType: string; readonly read: Effect.Effect<Uint8Array | undefined, E> }, E> =>
  Effect.gen(function* () {
    const head: Array<Uint8Array> = []
    let size = 0
    let ended = false
    while (size < SNIFF_BYTES) {
      const chunk = yield* read
      if (chunk === undefined) {
        ended = true
        break
      }
      head.push(chunk)
      size += chunk.byteLength
    }
    const mediaType = yield* sniffMediaType(kind, concatBytes(head))
    const replay: Effect.Effect<Uint8Array | undefined, E> = Effect.suspend(() => {
      const next = head.shift()
      return next !== undefined ? Effect.succeed(next) : ended ? Effect.undefined : read
    })
    return { mediaType, read: replay }
  })
