/**
 * The caller's video request checked and decoded into the canonical
 * `VideoRequest`, with the model family's rules applied
 * (`formats/videos/VideoFamilies.ts`). Three bodies (spec "Endpoints"):
 *
 * - `videos`: `POST /v1/videos`. The OpenAI-style create body (model, prompt,
 *   image, seconds, size, metadata; task_id and video_id ignored) for the
 *   generic family, plus `input_reference` as the `openai` SDK sends it; the
 *   first video family's table (duration, aspect_ratio, size `WxH` only,
 *   resolution, watermark, generate_audio, first_image, last_image,
 *   reference_image_urls, reference_video_url(s), reference_audios,
 *   reference_audio_urls, audio_url); mini-2.0's table (duration, ratio,
 *   resolution, images).
 * - `remix`: `POST /v1/videos/{video_id}/remix`: model and prompt (required),
 *   image, seconds, size, metadata.
 * - `unified`: `POST /v1/video/generations`: model, prompt, image, images,
 *   input_reference, duration, seconds, size (`WxH` or a ratio), metadata;
 *   `image` and the other references a URL or Base64 (bare or a data URI)
 *   for every family, as the unified table has it; and each family's own
 *   name of the ratio (mini-2.0's `ratio`, the first family's
 *   `aspect_ratio`), which must agree with a ratio `size`. On the first
 *   family `image` (the first frame) and `images` (references) are two modes
 *   its vendor cannot mix: both is a 400 naming `images`.
 *
 * Where both `duration` and `seconds` are given, `duration` wins (both must be
 * valid): it is the first family's recommended field and the canonical
 * request's rule; the spec leaves the choice to the adapter.
 *
 * Every violation is an `InvalidRequest` naming the field in `param`; code
 * `invalid_request` (spec "Errors"), or `invalid_request_error` for
 * mini-2.0's own parameters (duration, ratio, resolution, images). Fields a
 * family does not know are ignored (spec "What the service does", 8).
 *
 * @since 0.1.0
 */
import { Effect, Result } from "effect"
import { parseDataUri } from "../../canonical/DataUri.ts"
import type { MediaRef, ReferenceRole, VideoReference, VideoRequest } from "../../canonical/Video.ts"
import { ASSET_URI_PREFIX, assetIdOf, isAssetId } from "../../domain/AssetId.ts"
import {
  defaultVideoFamily,
  MAX_INLINE_IMAGE_CHARS,
  MAX_VIDEO_PROMPT,
  MAX_VIDEO_REFERENCES,
  MAX_VIDEO_SECONDS,
  MINI_DURATION,
  MINI_MAX_IMAGES,
  MINI_RATIOS,
  MINI_RESOLUTION,
  VIDEOA_ASPECT_RATIOS,
  VIDEOA_DURATION,
  type VideoFamily
} from "./VideoFamilies.ts"
import { InvalidRequest } from "../../errors/GatewayError.ts"
import type { Decoded } from "../shared/Decoded.ts"

/** The body a video route decodes. @category models */
export type VideoRoute = "videos" | "remix" | "unified"

/** The longest model name, in characters. @category rules */
export const MAX_MODEL_NAME = 256

/** The longest media URL, in characters. @category rules */
export const MAX_MEDIA_URL = 4096

/** The largest `metadata` object, in characters of its JSON. @category rules */
export const MAX_METADATA_CHARS = 16_384

/** mini-2.0's own parameter errors carry this code (spec "Errors"). */
const MINI_CODE = "invalid_request_error"

/** Thrown inside the decoder only; `decodeVideoRequest` turns it into its answer. */
class Rejected {
  constructor(readonly error: InvalidRequest) {}
}

const reject = (message: string, param: string, code?: string): never => {
  throw new Rejected(new InvalidRequest({ message, param, ...(code === undefined ? {} : { code }) }))
}

/** A caller's value quoted for a message: at most 24 characters, control characters escaped. */
const quote = (value: string): string => JSON.stringify(value.length > 24 ? `${value.slice(0, 24)}…` : value)

/** A string field: absent (`undefined` or `null`), or a well-formed string without NUL of at most `max` characters. */
const text = (raw: Record<string, unknown>, name: string, max: number, code?: string): string | undefined => {
  const value = raw[name]
  if (value === undefined || value === null) return undefined
  if (typeof value !== "string") return reject(`${name} must be a string.`, name, code)
  if (value.length > max) {
    return reject(`${name} is ${value.length} characters; at most ${max} are allowed.`, name, code)
  }
  if (!value.isWellFormed() || value.includes("\u0000")) {
    return reject(`${name} holds a NUL character or a lone surrogate.`, name, code)
  }
  return value
}

/**
 * A whole number of seconds: a JSON integer, or (forms, OpenAI's `seconds`) a
 * string of digits. `values` says which values the family takes, for the message.
 */
const secondsField = (
  raw: Record<string, unknown>,
  name: string,
  code?: string,
  values = ""
): number | undefined => {
  const value = raw[name]
  if (value === undefined || value === null) return undefined
  if (typeof value === "number" && Number.isSafeInteger(value)) return value
  if (typeof value === "string" && /^\s*\d{1,6}\s*$/.test(value)) return Number(value)
  return reject(`${name} must be a whole number of seconds${values}.`, name, code)
}

/** A boolean field (a form's `true` / `false` too). */
const booleanField = (raw: Record<string, unknown>, name: string): boolean | undefined => {
  const value = raw[name]
  if (value === undefined || value === null) return undefined
  if (typeof value === "boolean") return value
  if (value === "true") return true
  if (value === "false") return false
  return reject(`${name} must be a boolean.`, name)
}

/** `metadata`: absent, or a plain object whose JSON is at most `MAX_METADATA_CHARS`. */
const metadataField = (raw: Record<string, unknown>): Readonly<Record<string, unknown>> | undefined => {
  const value = raw.metadata
  if (value === undefined || value === null) return undefined
  if (typeof value !== "object" || Array.isArray(value)) return reject("metadata must be an object.", "metadata")
  const json = JSON.stringify(value)
  if (json.length > MAX_METADATA_CHARS) {
    return reject(
      `metadata is ${json.length} characters of JSON; at most ${MAX_METADATA_CHARS} are allowed.`,
      "metadata"
    )
  }
  return value as Record<string, unknown>
}

/** What a media field of a family accepts besides public `http(s)://` URLs and asset URIs. */
interface MediaPolicy {
  /** Images inline as a `data:image/…;base64,` URI (or, on the unified route, bare Base64). */
  readonly inline: boolean
  readonly code?: string | undefined
}

/** A bare Base64 image's media type from its first bytes (PNG, JPEG, GIF, WebP), else `undefined`. */
const sniffBase64 = (value: string): string | undefined =>
  value.startsWith("iVBORw0KGgo")
    ? "image/png"
    : value.startsWith("/9j/")
    ? "image/jpeg"
    : value.startsWith("R0lGOD")
    ? "image/gif"
    : value.startsWith("UklGR")
    ? "image/webp"
    : undefined

/**
 * One media reference checked: a public `http://` or `https://` URL (no
 * credentials; the spec's "public URL"; its host is checked against
 * non-public addresses by `Assets.resolveRequest` before any vendor call), an
 * asset URI `asset://<id>`, or, where `policy.inline`, an image data URI
 * (bare Base64 when `bareBase64`, made a data URI). `name` is the field,
 * `label` how the message names the item.
 */
const mediaRef = (
  value: unknown,
  name: string,
  label: string,
  kind: VideoReference["kind"],
  policy: MediaPolicy,
  bareBase64 = false
): MediaRef => {
  const { code } = policy
  if (typeof value !== "string" || value.length === 0) return reject(`${label} must be a non-empty string.`, name, code)
  if (!value.isWellFormed() || value.includes("\u0000")) {
    return reject(`${label} holds a NUL character or a lone surrogate.`, name, code)
  }
  if (value.startsWith("data:") || (bareBase64 && sniffBase64(value) !== undefined)) {
    if (!policy.inline || kind !== "image") {
      return reject(
        `${label} must be a public http(s):// URL or ${ASSET_URI_PREFIX}<id>; data URIs and uploads are not accepted.`,
        name,
        code
      )
    }
    if (value.length > MAX_INLINE_IMAGE_CHARS) {
      return reject(`${label} is larger than ${MAX_INLINE_IMAGE_CHARS} characters.`, name, code)
    }
    if (value.startsWith("data:")) {
      const parsed = parseDataUri(value)
      if (parsed === undefined || !/^image\/[a-z0-9.+-]{1,64}$/i.test(parsed.mediaType)) {
        return reject(`${label} must be a Base64 image data URI (data:image/<type>;base64,…).`, name, code)
      }
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(parsed.data)) return reject(`${label} is not valid Base64.`, name, code)
      return value
    }
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(value)) return reject(`${label} is not valid Base64.`, name, code)
    return `data:${sniffBase64(value)};base64,${value}`
  }
  if (value.length > MAX_MEDIA_URL) return reject(`${label} is longer than ${MAX_MEDIA_URL} characters.`, name, code)
  const asset = assetIdOf(value)
  if (asset !== undefined) {
    return isAssetId(asset) ? value : reject(`${label} names no valid asset id: ${quote(asset)}.`, name, code)
  }
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return reject(`${label} must be a public http(s):// URL or ${ASSET_URI_PREFIX}<id>.`, name, code)
  }
  const web = url.protocol === "https:" || url.protocol === "http:"
  if (!web || url.hostname === "" || url.username !== "" || url.password !== "") {
    return reject(
      `${label} must be a public http(s):// URL (without credentials) or ${ASSET_URI_PREFIX}<id>.`,
      name,
      code
    )
  }
  return value
}

/** Collects references, bounded by `MAX_VIDEO_REFERENCES` over the whole request. */
class References {
  readonly list: Array<VideoReference> = []
  add(reference: VideoReference, name: string): void {
    if (this.list.length >= MAX_VIDEO_REFERENCES) {
      reject(`A request may carry at most ${MAX_VIDEO_REFERENCES} media references.`, name)
    }
    this.list.push(reference)
  }
  /** A single-reference field. */
  one(
    raw: Record<string, unknown>,
    name: string,
    kind: VideoReference["kind"],
    role: ReferenceRole,
    policy: MediaPolicy,
    bareBase64 = false
  ): boolean {
    const value = raw[name]
    if (value === undefined || value === null) return false
    this.add({ kind, role, ref: mediaRef(value, name, name, kind, policy, bareBase64), param: name }, name)
    return true
  }
  /** An array field (or, where `single`, a string too). */
  many(
    raw: Record<string, unknown>,
    name: string,
    kind: VideoReference["kind"],
    role: ReferenceRole,
    policy: MediaPolicy,
    options: { readonly single?: boolean; readonly bareBase64?: boolean } = {}
  ): number {
    const value = raw[name]
    if (value === undefined || value === null) return 0
    if (options.single === true && typeof value === "string") {
      this.add({ kind, role, ref: mediaRef(value, name, name, kind, policy, options.bareBase64), param: name }, name)
      return 1
    }
    if (!Array.isArray(value)) {
      return reject(
        `${name} must be an array of strings${options.single === true ? " or a string" : ""}.`,
        name,
        policy.code
      )
    }
    if (value.length > MAX_VIDEO_REFERENCES) {
      return reject(
        `${name} has ${value.length} items; at most ${MAX_VIDEO_REFERENCES} are allowed.`,
        name,
        policy.code
      )
    }
    value.forEach((item, index) =>
      this.add({
        kind,
        role,
        ref: mediaRef(item, name, `${name}[${index}]`, kind, policy, options.bareBase64),
        param: `${name}[${index}]`
      }, name)
    )
    return value.length
  }
}

/** `WxH` with each side 1–8192, else `undefined`. */
const pixelSize = (value: string): string | undefined => {
  const match = /^(\d{1,4})x(\d{1,4})$/.exec(value)
  return match !== null && Number(match[1]) >= 1 && Number(match[2]) >= 1 && Number(match[1]) <= 8192 &&
      Number(match[2]) <= 8192
    ? value
    : undefined
}

/** A ratio `W:H` with each side 1–99, else `undefined`. */
const ratioOf = (value: string): string | undefined => {
  const match = /^(\d{1,2}):(\d{1,2})$/.exec(value)
  return match !== null && Number(match[1]) >= 1 && Number(match[2]) >= 1 ? value : undefined
}

/** `resolution`: a tier such as `720p` (any case), made lower case. */
const resolutionOf = (value: string | undefined): string | undefined => {
  if (value === undefined) return undefined
  const lower = value.toLowerCase()
  return /^\d{3,4}p$/.test(lower)
    ? lower
    : reject(`Invalid resolution ${quote(value)}: use a tier such as 720p.`, "resolution")
}

/** The duration: `duration` if given, else `seconds` (both checked), within the family's bounds. */
const durationOf = (
  raw: Record<string, unknown>,
  family: VideoFamily,
  required: boolean
): number | undefined => {
  const mini = family === "mini-2.0"
  const code = mini ? MINI_CODE : undefined
  const [min, max] = mini
    ? [MINI_DURATION.min, MINI_DURATION.max]
    : family === "videoa"
    ? [VIDEOA_DURATION.min, VIDEOA_DURATION.max]
    : [1, MAX_VIDEO_SECONDS]
  const which = mini ? " for mini-2.0" : family === "videoa" ? " for the first video family (its vendor's range)" : ""
  const values = ` from ${min} to ${max}${which}`
  const duration = secondsField(raw, "duration", code, values)
  const seconds = secondsField(raw, "seconds", code, values)
  const chosen = duration ?? seconds
  const param = duration !== undefined ? "duration" : "seconds"
  if (chosen === undefined) {
    return required
      ? reject("duration is required: a whole number of seconds from 4 to 15.", "duration", code)
      : undefined
  }
  for (const [name, value] of [["duration", duration], ["seconds", seconds]] as const) {
    if (value !== undefined && (value < min || value > max)) {
      reject(`${name} must be a whole number of seconds${values}; got ${value}.`, name, code)
    }
  }
  return param === "duration" ? duration : seconds
}

/** The first video family on `POST /v1/videos`. */
const videoaBody = (raw: Record<string, unknown>, base: Base): VideoRequest => {
  const policy: MediaPolicy = { inline: false }
  const references = new References()
  const aspectRatio = text(raw, "aspect_ratio", 16)
  if (aspectRatio !== undefined && !(VIDEOA_ASPECT_RATIOS as ReadonlyArray<string>).includes(aspectRatio)) {
    reject(
      `Invalid aspect_ratio ${quote(aspectRatio)}: use one of ${VIDEOA_ASPECT_RATIOS.join(", ")}.`,
      "aspect_ratio"
    )
  }
  const size = text(raw, "size", 32)
  if (size !== undefined && pixelSize(size) === undefined) {
    reject(`Invalid size ${quote(size)}: use <width>x<height> (a ratio goes in aspect_ratio).`, "size")
  }
  const first = references.one(raw, "first_image", "image", "first_frame", policy)
  if (first && raw.image !== undefined && raw.image !== null) reject("Give first_image or image, not both.", "image")
  // The OpenAI-style `image` is the first frame here too.
  const hasFirst = first || references.one(raw, "image", "image", "first_frame", policy)
  if (raw.last_image !== undefined && raw.last_image !== null && !hasFirst) {
    reject("last_image is only valid together with first_image.", "last_image")
  }
  references.one(raw, "last_image", "image", "last_frame", policy)
  references.many(raw, "reference_image_urls", "image", "reference_image", policy)
  references.one(raw, "reference_video_url", "video", "reference_video", policy)
  references.many(raw, "reference_video_urls", "video", "reference_video", policy)
  references.many(raw, "reference_audios", "audio", "reference_audio", policy)
  references.many(raw, "reference_audio_urls", "audio", "reference_audio", policy)
  references.one(raw, "audio_url", "audio", "reference_audio", policy)
  const generateAudio = booleanField(raw, "generate_audio")
  return {
    ...base,
    seconds: durationOf(raw, "videoa", false),
    size,
    aspectRatio,
    resolution: resolutionOf(text(raw, "resolution", 16)),
    watermark: booleanField(raw, "watermark"),
    generateAudio,
    references: references.list
  }
}

/** mini-2.0 on `POST /v1/videos`. */
const miniBody = (raw: Record<string, unknown>, base: Base): VideoRequest => {
  const seconds = durationOf(raw, "mini-2.0", true)
  const ratio = text(raw, "ratio", 16, MINI_CODE)
  if (ratio === undefined) reject("ratio is required: 16:9 or 9:16.", "ratio", MINI_CODE)
  if (!(MINI_RATIOS as ReadonlyArray<string | undefined>).includes(ratio)) {
    reject(`Invalid ratio ${quote(ratio ?? "")}: use 16:9 or 9:16.`, "ratio", MINI_CODE)
  }
  const resolution = text(raw, "resolution", 16, MINI_CODE)
  if (resolution === undefined) reject("resolution is required: 480p.", "resolution", MINI_CODE)
  if (resolution?.toLowerCase() !== MINI_RESOLUTION) {
    reject(`Invalid resolution ${quote(resolution ?? "")}: mini-2.0 takes 480p.`, "resolution", MINI_CODE)
  }
  const references = new References()
  const images = raw.images
  if (images !== undefined && images !== null) {
    if (!Array.isArray(images)) reject("images must be an array of public image URLs.", "images", MINI_CODE)
    if ((images as Array<unknown>).length > MINI_MAX_IMAGES) {
      reject(
        `images has ${(images as Array<unknown>).length} items; mini-2.0 takes at most ${MINI_MAX_IMAGES}.`,
        "images",
        MINI_CODE
      )
    }
    references.many(raw, "images", "image", "reference_image", { inline: false, code: MINI_CODE })
  }
  return { ...base, seconds, aspectRatio: ratio, resolution: MINI_RESOLUTION, references: references.list }
}

/** The generic (OpenAI-style) family on `POST /v1/videos`, and every family's remix. */
const openAiBody = (raw: Record<string, unknown>, base: Base, family: VideoFamily, route: VideoRoute): VideoRequest => {
  const policy: MediaPolicy = { inline: family === "openai-video" }
  const references = new References()
  const sizeText = text(raw, "size", 32)
  let size: string | undefined
  let aspectRatio: string | undefined
  if (sizeText !== undefined) {
    size = pixelSize(sizeText)
    if (size === undefined && family === "videoa") {
      reject(`Invalid size ${quote(sizeText)}: use <width>x<height>.`, "size")
    }
    if (size === undefined) {
      aspectRatio = ratioOf(sizeText) ??
        reject(`Invalid size ${quote(sizeText)}: use <width>x<height> or a ratio such as 16:9.`, "size")
    }
  }
  const image = references.one(raw, "image", "image", "first_frame", policy)
  if (route === "videos") {
    const input = raw.input_reference
    if (input !== undefined && input !== null) {
      if (image) reject("Give image or input_reference, not both.", "input_reference")
      if (typeof input === "object" && !Array.isArray(input)) {
        const object = input as Record<string, unknown>
        if (object.file_id !== undefined && object.file_id !== null) {
          reject("input_reference.file_id is not supported: give image_url (a URL or a data URI).", "input_reference")
        }
        references.add(
          {
            kind: "image",
            role: "first_frame",
            ref: mediaRef(object.image_url, "input_reference", "input_reference.image_url", "image", policy),
            param: "input_reference"
          },
          "input_reference"
        )
      } else {
        references.one(raw, "input_reference", "image", "first_frame", policy)
      }
    }
  }
  const seconds = durationOf(raw, family, false)
  return { ...base, seconds, size, aspectRatio, references: references.list }
}

/** The unified body, every family. */
const unifiedBody = (raw: Record<string, unknown>, base: Base, family: VideoFamily): VideoRequest => {
  const mini = family === "mini-2.0"
  const code = mini ? MINI_CODE : undefined
  const policy: MediaPolicy = { inline: true, code }
  const references = new References()
  const hasImage = references.one(raw, "image", "image", "first_frame", policy, true)
  if (family === "videoa" && hasImage && raw.images !== undefined && raw.images !== null) {
    reject(
      "Give image (the first frame) or images (references), not both: the first video family cannot mix them.",
      "images"
    )
  }
  references.many(raw, "images", "image", "reference_image", policy, { bareBase64: true })
  references.many(raw, "input_reference", "image", "reference_image", policy, { single: true, bareBase64: true })
  if (mini && references.list.length > MINI_MAX_IMAGES) {
    reject(`mini-2.0 takes at most ${MINI_MAX_IMAGES} images over image, images and input_reference.`, "images", code)
  }
  if (base.prompt.length === 0 && references.list.length === 0) {
    reject("prompt is required (or an image to animate).", "prompt")
  }
  // The family's own ratio field (mini-2.0's `ratio`, the first family's `aspect_ratio`) stands for a ratio `size`.
  const ratioField = mini ? "ratio" : family === "videoa" ? "aspect_ratio" : undefined
  const familyRatio = ratioField === undefined ? undefined : text(raw, ratioField, 16, code)
  const givenSize = text(raw, "size", 32, code)
  if (familyRatio !== undefined && givenSize !== undefined && givenSize !== familyRatio) {
    reject(`Give size or ${ratioField}, not two different values.`, ratioField!, code)
  }
  const sizeText = givenSize ?? familyRatio
  const sizeParam = givenSize !== undefined ? "size" : ratioField ?? "size"
  let size: string | undefined
  let aspectRatio: string | undefined
  if (sizeText !== undefined) {
    size = pixelSize(sizeText)
    if (size === undefined) {
      aspectRatio = ratioOf(sizeText) ??
        reject(
          `Invalid ${sizeParam} ${quote(sizeText)}: use <width>x<height> or a ratio such as 16:9.`,
          sizeParam,
          code
        )
    }
    if (family === "videoa" && aspectRatio !== undefined) {
      if (!(VIDEOA_ASPECT_RATIOS as ReadonlyArray<string>).includes(aspectRatio)) {
        reject(
          `Invalid ${sizeParam} ${quote(sizeText)}: use <width>x<height> or one of ${VIDEOA_ASPECT_RATIOS.join(", ")}.`,
          sizeParam
        )
      }
    }
    if (mini && !(MINI_RATIOS as ReadonlyArray<string | undefined>).includes(aspectRatio)) {
      reject(`Invalid ${sizeParam} ${quote(sizeText)}: mini-2.0 takes the ratio 16:9 or 9:16.`, sizeParam, code)
    }
  }
  if (mini && aspectRatio === undefined) {
    reject("size (or ratio) is required for mini-2.0: the ratio 16:9 or 9:16.", "size", code)
  }
  return {
    ...base,
    seconds: durationOf(raw, family, mini),
    size,
    aspectRatio,
    resolution: mini ? MINI_RESOLUTION : undefined,
    references: references.list
  }
}

/** The fields every body has. */
interface Base {
  readonly model: string
  readonly prompt: string
  readonly metadata: Readonly<Record<string, unknown>> | undefined
}

const decode = (raw: unknown, family: VideoFamily | undefined, route: VideoRoute): VideoRequest => {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    return reject("The request body must be a JSON object.", "")
  }
  const body = raw as Record<string, unknown>
  const model = text(body, "model", MAX_MODEL_NAME)
  if (model === undefined || model.trim().length === 0) return reject("model is required.", "model")
  const rules = family ?? defaultVideoFamily(model)
  const prompt = text(body, "prompt", MAX_VIDEO_PROMPT) ?? ""
  if (prompt.trim().length === 0 && route !== "unified") return reject("prompt is required.", "prompt")
  const base: Base = { model, prompt, metadata: metadataField(body) }
  if (route === "unified") return unifiedBody(body, base, rules)
  if (route === "remix") return openAiBody(body, base, rules, route)
  return rules === "videoa"
    ? videoaBody(body, base)
    : rules === "mini-2.0"
    ? miniBody(body, base)
    : openAiBody(body, base, rules, route)
}

/**
 * Decodes a video request body for a model of `family` (`undefined`: the
 * default for the body's model name) on `route`. Never throws: any input,
 * however hostile (not an object, NUL, lone surrogates, megabytes of
 * prompt), gives either the request or an `InvalidRequest`.
 *
 * @category decoding
 */
export const decodeVideoRequest = (
  raw: Record<string, unknown>,
  family: VideoFamily | undefined,
  route: VideoRoute
): Decoded<VideoRequest> => {
  try {
    const value = decode(raw, family, route)
    // Only the fields the request has: an absent field is absent, not `undefined`.
    return Result.succeed(
      Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined)) as VideoRequest
    )
  } catch (error) {
    if (error instanceof Rejected) return Result.fail(error.error)
    throw error
  }
}

/** The most entries a video form may have. @category rules */
export const MAX_FORM_FIELDS = 256

/** Image types an uploaded reference may have (the `openai` videos API takes JPEG, PNG and WebP). */
const UPLOAD_TYPES = ["image/png", "image/jpeg", "image/webp"]

/** The fields a generic-family upload may come in (`input_reference`, as the SDK sends it; `image`). */
const UPLOAD_FIELDS = ["input_reference", "image"]

/** `name[a][]` → `["name", "a", ""]`, or `undefined` for a name that is not of that shape. */
const keyPath = (name: string): ReadonlyArray<string> | undefined => {
  const match = /^([A-Za-z0-9_.-]{1,64})((?:\[[A-Za-z0-9_.-]{0,64}\]){0,3})$/.exec(name)
  if (match === null) return undefined
  return [match[1], ...Array.from(match[2].matchAll(/\[([^\]]*)\]/g), (m) => m[1])]
}

const FORBIDDEN_KEYS = new Set(["__proto__", "constructor", "prototype"])

/** Sets `value` at `path` in `target` (`""` appends to an array). */
const setPath = (target: Record<string, unknown>, path: ReadonlyArray<string>, value: unknown, name: string) => {
  let node: Record<string, unknown> | Array<unknown> = target
  for (let index = 0; index < path.length; index++) {
    const key = path[index]
    const last = index === path.length - 1
    const nextIsAppend = !last && path[index + 1] === ""
    if (Array.isArray(node)) {
      if (key !== "") reject(`The form field ${quote(name)} mixes list and object keys.`, path[0])
      if (last) node.push(value)
      else reject(`The form field ${quote(name)} nests too deep.`, path[0])
      return
    }
    if (key === "" || FORBIDDEN_KEYS.has(key)) reject(`The form field ${quote(name)} is not a valid name.`, path[0])
    if (last) {
      if (Object.hasOwn(node, key)) reject(`The form field ${quote(name)} is given twice.`, path[0])
      node[key] = value
      return
    }
    const existing: unknown = Object.hasOwn(node, key) ? node[key] : undefined
    if (existing === undefined) {
      const created: Record<string, unknown> | Array<unknown> = nextIsAppend ? [] : {}
      node[key] = created
      node = created
    } else if (typeof existing === "object" && existing !== null && Array.isArray(existing) === nextIsAppend) {
      node = existing as Record<string, unknown> | Array<unknown>
    } else {
      return reject(`The form field ${quote(name)} conflicts with another field.`, path[0])
    }
  }
}

/** An uploaded image as a data URI. */
const dataUriOfFile = async (file: File): Promise<string> => {
  const bytes = new Uint8Array(await file.arrayBuffer())
  let binary = ""
  for (let start = 0; start < bytes.length; start += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(start, start + 0x8000))
  }
  return `data:${file.type};base64,${btoa(binary)}`
}

/**
 * A `multipart/form-data` video body (as the official `openai` SDK's
 * `videos.create` sends it: text fields, nested keys `input_reference[image_url]`
 * and `metadata[key]`, lists `images[]`, and `input_reference` as a file)
 * turned into the raw record `decodeVideoRequest` reads. Text fields stay
 * text (`seconds` stays the string the SDK sends). A file is accepted only
 * for the generic family (`openai-video`) in `input_reference` or `image`,
 * as a PNG, JPEG or WebP image of at most 3/4 of `MAX_INLINE_IMAGE_CHARS`
 * bytes, and becomes a `data:` URI; any other file is an `InvalidRequest`
 * naming its field (the first and mini families take public URLs only).
 * `family` is the family of the form's `model` (`undefined`: its default).
 *
 * @category decoding
 */
export const videoFormFields = (
  form: FormData,
  family: VideoFamily | undefined
): Effect.Effect<Record<string, unknown>, InvalidRequest> =>
  Effect.gen(function* () {
    const entries = Array.from(form.entries())
    const modelEntry = form.get("model")
    const rules = family ?? defaultVideoFamily(typeof modelEntry === "string" ? modelEntry : "")
    const checked = (() => {
      try {
        if (entries.length > MAX_FORM_FIELDS) {
          reject(`The form has ${entries.length} fields; at most ${MAX_FORM_FIELDS} are allowed.`, "")
        }
        const fields: Record<string, unknown> = {}
        const files: Array<{ readonly path: ReadonlyArray<string>; readonly name: string; readonly file: File }> = []
        for (const [name, value] of entries) {
          const path = keyPath(name)
          if (path === undefined) reject(`The form field ${quote(name)} is not a valid name.`, name.slice(0, 64))
          const field = path![0]
          if (typeof value === "string") {
            setPath(fields, path!, value, name)
            continue
          }
          if (rules !== "openai-video" || !UPLOAD_FIELDS.includes(field) || path!.length > 1) {
            reject(
              `${field} cannot be an uploaded file${
                rules === "openai-video" ? "" : ": give a public http(s):// URL or asset://<id>"
              }.`,
              field,
              rules === "mini-2.0" ? MINI_CODE : undefined
            )
          }
          if (!UPLOAD_TYPES.includes(value.type)) {
            reject(`${field} must be a PNG, JPEG or WebP image; got ${quote(value.type || "no type")}.`, field)
          }
          const most = Math.floor(MAX_INLINE_IMAGE_CHARS * 3 / 4) - 64
          if (value.size > most) reject(`${field} is ${value.size} bytes; at most ${most} are allowed.`, field)
          setPath(fields, path!, "", name)
          files.push({ path: path!, name, file: value })
        }
        return Result.succeed({ fields, files })
      } catch (error) {
        if (error instanceof Rejected) return Result.fail(error.error)
        throw error
      }
    })()
    if (Result.isFailure(checked)) return yield* checked.failure
    const { fields, files } = checked.success
    for (const { path, file } of files) {
      const uri = yield* Effect.tryPromise({
        try: () => dataUriOfFile(file),
        catch: () => new InvalidRequest({ message: `${path[0]} could not be read.`, param: path[0] })
      })
      fields[path[0]] = uri
    }
    return fields
  })
