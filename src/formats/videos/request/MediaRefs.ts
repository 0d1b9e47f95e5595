/**
 * The rules of one media reference in a video request (spec "Endpoints"): a
 * public `http://` or `https://` URL without credentials (its host is checked
 * against non-public addresses by `Assets.resolveRequest` before any vendor
 * call), an asset URI `asset://<id>`, or, where the field takes inline
 * images, a Base64 image data URI (on the unified route bare Base64 too,
 * made a data URI). Used by the field schemas of `VideoFields.ts`.
 *
 * @since 0.1.0
 */
import { parseDataUri } from "../../../canonical/DataUri.ts"
import type { MediaRef, VideoReference } from "../../../canonical/Video.ts"
import { ASSET_URI_PREFIX, assetIdOf, isAssetId } from "../../../domain/AssetId.ts"
import { MAX_INLINE_IMAGE_CHARS } from "../VideoFamilies.ts"

/** The longest media URL, in characters. @category rules */
export const MAX_MEDIA_URL = 4096

/**
 * What a media field of a family accepts besides public `http(s)://` URLs
 * and asset URIs: `inline`, images as a `data:image/…;base64,` URI (or, with
 * `bareBase64`, bare Base64 in PNG, JPEG, GIF or WebP).
 *
 * @category models
 */
export interface MediaPolicy {
  readonly inline: boolean
  readonly bareBase64?: boolean | undefined
}

/** A caller's value quoted for a message: at most 24 characters, control characters escaped. @category formatting */
export const quote = (value: string): string => JSON.stringify(value.length > 24 ? `${value.slice(0, 24)}…` : value)

/** A bare Base64 image's media type from its first bytes (PNG, JPEG, GIF, WebP), else `undefined`. @category rules */
export const sniffBase64 = (value: string): string | undefined =>
  value.startsWith("iVBORw0KGgo")
    ? "image/png"
    : value.startsWith("/9j/")
    ? "image/jpeg"
    : value.startsWith("R0lGOD")
    ? "image/gif"
    : value.startsWith("UklGR")
    ? "image/webp"
    : undefined

/** Base64 text (the standard alphabet, optional padding). @category rules */
export const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

/** An inline image's problem (a data URI, or bare Base64 when `bare`), or `undefined`. */
const inlineProblem = (value: string, label: string): string | undefined => {
  if (value.length > MAX_INLINE_IMAGE_CHARS) return `${label} is larger than ${MAX_INLINE_IMAGE_CHARS} characters.`
  if (!value.startsWith("data:")) return BASE64.test(value) ? undefined : `${label} is not valid Base64.`
  const parsed = parseDataUri(value)
  if (parsed === undefined || !/^image\/[a-z0-9.+-]{1,64}$/i.test(parsed.mediaType)) {
    return `${label} must be a Base64 image data URI (data:image/<type>;base64,…).`
  }
  return BASE64.test(parsed.data) ? undefined : `${label} is not valid Base64.`
}

/** A URL's or an asset URI's problem, or `undefined`. */
const locationProblem = (value: string, label: string): string | undefined => {
  if (value.length > MAX_MEDIA_URL) return `${label} is longer than ${MAX_MEDIA_URL} characters.`
  const asset = assetIdOf(value)
  if (asset !== undefined) return isAssetId(asset) ? undefined : `${label} names no valid asset id: ${quote(asset)}.`
  if (!URL.canParse(value)) return `${label} must be a public http(s):// URL or ${ASSET_URI_PREFIX}<id>.`
  const url = new URL(value)
  const web = url.protocol === "https:" || url.protocol === "http:"
  return web && url.hostname !== "" && url.username === "" && url.password === ""
    ? undefined
    : `${label} must be a public http(s):// URL (without credentials) or ${ASSET_URI_PREFIX}<id>.`
}

/**
 * Why `value` is not a media reference of `kind` under `policy`, in words
 * naming it as `label` (`images[2]`), or `undefined` when it is one.
 *
 * @category rules
 */
export const mediaProblem = (
  value: unknown,
  label: string,
  kind: VideoReference["kind"],
  policy: MediaPolicy
): string | undefined => {
  if (typeof value !== "string" || value.length === 0) return `${label} must be a non-empty string.`
  if (!value.isWellFormed() || value.includes("\u0000")) return `${label} holds a NUL character or a lone surrogate.`
  if (value.startsWith("data:") || (policy.bareBase64 === true && sniffBase64(value) !== undefined)) {
    return policy.inline && kind === "image"
      ? inlineProblem(value, label)
      : `${label} must be a public http(s):// URL or ${ASSET_URI_PREFIX}<id>; data URIs and uploads are not accepted.`
  }
  return locationProblem(value, label)
}

/**
 * A media reference accepted by `mediaProblem` under `policy` as the
 * canonical request holds it: bare Base64 (under `bareBase64`) becomes a data
 * URI, every other value is kept.
 *
 * @category rules
 */
export const mediaRefOf = (value: string, policy: MediaPolicy): MediaRef => {
  const type = policy.bareBase64 === true && !value.startsWith("data:") ? sniffBase64(value) : undefined
  return type === undefined ? value : `data:${type};base64,${value}`
}
