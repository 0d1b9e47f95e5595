/**
 * A Kling-shaped video request (`POST /kling/v1/videos/text2video` and
 * `…/image2video`, the bodies of Kling's own API, see `Wire.ts`) checked and
 * decoded into the canonical `VideoRequest`, so it runs on any video channel:
 *
 * - `model_name` (Kling's; its older `model` is taken too; default
 *   `kling-v1`, as Kling's), `prompt` (required on text2video; at most 2,500
 *   characters, Kling's bound), `negative_prompt` (at most 2,500),
 *   `cfg_scale` (a number 0–1) → `negativePrompt`, `cfgScale`;
 * - `mode` `std` | `pro` → `resolution` `720p` | `1080p` (Kling's tiers);
 * - `aspect_ratio` `16:9` | `9:16` | `1:1` (text2video) → `aspectRatio`;
 * - `duration` `"5"` | `"10"` (a string, or the number) → `seconds`, 5 when
 *   absent (Kling's default, and what is billed);
 * - `image` → the first frame, `image_tail` → the last frame (image2video:
 *   at least one): a public `http(s)://` URL, `asset://<id>`, or Base64
 *   (bare, as Kling takes it, or a data URI);
 * - `sound` `on` | `off` → `generateAudio`; `watermark_info.enabled` →
 *   `watermark`; `camera_control`, `static_mask`, `dynamic_masks` → kept in
 *   `metadata` for a Kling upstream only (`KLING_PASS_THROUGH`);
 * - `external_task_id` → `externalTaskId`: the caller's own id (at most 64
 *   printable characters), echoed in `task_info`; never sent upstream.
 * - `callback_url`: absent or empty; the gateway does not call a caller's URL
 *   (the task is polled), so any other value is refused naming the field.
 *
 * Every violation is an `InvalidRequest` whose `param` names the field.
 * Other fields are ignored.
 *
 * @since 0.1.0
 */
import { Result } from "effect"
import { parseDataUri } from "../../../canonical/DataUri.ts"
import type { VideoReference, VideoRequest } from "../../../canonical/Video.ts"
import { ASSET_URI_PREFIX, assetIdOf, isAssetId } from "../../../domain/AssetId.ts"
import { InvalidRequest } from "../../../errors/GatewayError.ts"
import type { Decoded } from "../../shared/Decoded.ts"
import { MAX_MODEL_NAME } from "../../videos/RequestDecoder.ts"
import { BASE64, MAX_MEDIA_URL, quote, sniffBase64 } from "../../videos/request/MediaRefs.ts"
import { MAX_METADATA_CHARS } from "../../videos/request/VideoFields.ts"
import { MAX_INLINE_IMAGE_CHARS } from "../../videos/VideoFamilies.ts"
import {
  KLING_ASPECT_RATIOS,
  KLING_DEFAULT_SECONDS,
  KLING_DURATIONS,
  KLING_PASS_THROUGH,
  type KlingAction
} from "./Wire.ts"

/** Kling's bound on `prompt` and `negative_prompt`, in characters. @category rules */
export const KLING_MAX_PROMPT = 2500

/** The longest `external_task_id`, in characters. @category rules */
export const MAX_EXTERNAL_TASK_ID = 64

/** The model Kling uses when a request names none. @category rules */
export const KLING_DEFAULT_MODEL = "kling-v1"

type Refused<A> = Result.Result<A, InvalidRequest>

const refuse = (message: string, param: string): Refused<never> => Result.fail(new InvalidRequest({ message, param }))

const text = (raw: Record<string, unknown>, name: string, max: number): Refused<string | undefined> => {
  const value = raw[name]
  if (value === undefined || value === null) return Result.succeed(undefined)
  if (typeof value !== "string") return refuse(`${name} must be a string.`, name)
  if (value.length > max) return refuse(`${name} is ${value.length} characters; at most ${max} are allowed.`, name)
  if (!value.isWellFormed() || value.includes("\u0000")) {
    return refuse(`${name} holds a NUL character or a lone surrogate.`, name)
  }
  return Result.succeed(value)
}

/** `image` / `image_tail`: a public URL, an asset URI, or a Base64 image (made a data URI). */
const imageRef = (raw: Record<string, unknown>, name: string): Refused<string | undefined> => {
  const value = raw[name]
  if (value === undefined || value === null || value === "") return Result.succeed(undefined)
  if (typeof value !== "string") return refuse(`${name} must be a string.`, name)
  if (value.length > MAX_INLINE_IMAGE_CHARS) {
    return refuse(`${name} is larger than ${MAX_INLINE_IMAGE_CHARS} characters.`, name)
  }
  if (value.startsWith("data:")) {
    const parsed = parseDataUri(value)
    if (parsed === undefined || !/^image\/[a-z0-9.+-]{1,64}$/i.test(parsed.mediaType) || !BASE64.test(parsed.data)) {
      return refuse(`${name} must be a Base64 image (data:image/<type>;base64,… or bare Base64).`, name)
    }
    return Result.succeed(value)
  }
  const sniffed = sniffBase64(value)
  if (sniffed !== undefined && BASE64.test(value)) return Result.succeed(`data:${sniffed};base64,${value}`)
  if (value.length > MAX_MEDIA_URL) return refuse(`${name} is longer than ${MAX_MEDIA_URL} characters.`, name)
  if (!value.isWellFormed() || value.includes("\u0000")) {
    return refuse(`${name} holds a NUL character or a lone surrogate.`, name)
  }
  const asset = assetIdOf(value)
  if (asset !== undefined) {
    return isAssetId(asset) ? Result.succeed(value) : refuse(`${name} names no valid asset id: ${quote(asset)}.`, name)
  }
  const url = URL.canParse(value) ? new URL(value) : undefined
  if (
    url === undefined || (url.protocol !== "https:" && url.protocol !== "http:") || url.hostname === "" ||
    url.username !== "" || url.password !== ""
  ) {
    return refuse(
      `${name} must be a public http(s):// URL (without credentials), ${ASSET_URI_PREFIX}<id>, or a Base64 PNG, JPEG, GIF or WebP image.`,
      name
    )
  }
  return Result.succeed(value)
}

const durationOf = (raw: Record<string, unknown>): Refused<number> => {
  const value = raw.duration
  if (value === undefined || value === null || value === "") return Result.succeed(KLING_DEFAULT_SECONDS)
  const seconds = typeof value === "number"
    ? value
    : typeof value === "string" && /^\d{1,2}$/.test(value)
    ? Number(value)
    : NaN
  if (!(KLING_DURATIONS as ReadonlyArray<number>).includes(seconds)) {
    return refuse(`duration must be "5" or "10" (seconds), not ${quote(String(value))}.`, "duration")
  }
  return Result.succeed(seconds)
}

const decode = (raw: unknown, action: KlingAction): Refused<VideoRequest> =>
  Result.gen(function* () {
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
      return yield* refuse("The request body must be a JSON object.", "")
    }
    const body = raw as Record<string, unknown>
    const model = (yield* text(body, "model_name", MAX_MODEL_NAME)) ?? (yield* text(body, "model", MAX_MODEL_NAME)) ??
      KLING_DEFAULT_MODEL
    if (model.trim() === "") return yield* refuse("model_name must not be empty.", "model_name")
    const prompt = (yield* text(body, "prompt", KLING_MAX_PROMPT)) ?? ""
    if (action === "text2video" && prompt.trim() === "") return yield* refuse("prompt is required.", "prompt")
    const negativePrompt = yield* text(body, "negative_prompt", KLING_MAX_PROMPT)
    let cfgScale: number | undefined
    if (body.cfg_scale !== undefined && body.cfg_scale !== null) {
      if (
        typeof body.cfg_scale !== "number" || !Number.isFinite(body.cfg_scale) || body.cfg_scale < 0 ||
        body.cfg_scale > 1
      ) {
        return yield* refuse("cfg_scale must be a number from 0 to 1.", "cfg_scale")
      }
      cfgScale = body.cfg_scale as number
    }
    const mode = yield* text(body, "mode", 16)
    if (mode !== undefined && mode !== "std" && mode !== "pro") {
      return yield* refuse(`mode must be "std" or "pro", not ${quote(mode)}.`, "mode")
    }
    let aspectRatio: string | undefined
    if (action === "text2video") {
      aspectRatio = yield* text(body, "aspect_ratio", 16)
      if (aspectRatio !== undefined && !(KLING_ASPECT_RATIOS as ReadonlyArray<string>).includes(aspectRatio)) {
        return yield* refuse(
          `aspect_ratio must be one of ${KLING_ASPECT_RATIOS.join(", ")}, not ${quote(aspectRatio)}.`,
          "aspect_ratio"
        )
      }
    }
    const seconds = yield* durationOf(body)
    const references: Array<VideoReference> = []
    if (action === "image2video") {
      const image = yield* imageRef(body, "image")
      const tail = yield* imageRef(body, "image_tail")
      if (image === undefined && tail === undefined) return yield* refuse("image (or image_tail) is required.", "image")
      if (image !== undefined) references.push({ kind: "image", role: "first_frame", ref: image, param: "image" })
      if (tail !== undefined) references.push({ kind: "image", role: "last_frame", ref: tail, param: "image_tail" })
    }
    const sound = yield* text(body, "sound", 8)
    if (sound !== undefined && sound !== "on" && sound !== "off") {
      return yield* refuse(`sound must be "on" or "off".`, "sound")
    }
    let watermark: boolean | undefined
    if (body.watermark_info !== undefined && body.watermark_info !== null) {
      const info = body.watermark_info
      if (
        typeof info !== "object" || Array.isArray(info) ||
        typeof (info as Record<string, unknown>).enabled !== "boolean"
      ) {
        return yield* refuse("watermark_info must be an object {enabled: boolean}.", "watermark_info")
      }
      watermark = (info as Record<string, unknown>).enabled as boolean
    }
    const callback = yield* text(body, "callback_url", MAX_MEDIA_URL)
    if (callback !== undefined && callback !== "") {
      return yield* refuse(
        "callback_url is not supported: the gateway does not call back; poll GET /kling/v1/videos/<action>/<task_id>.",
        "callback_url"
      )
    }
    const externalTaskId = yield* text(body, "external_task_id", MAX_EXTERNAL_TASK_ID)
    if (externalTaskId !== undefined && !/^[\x21-\x7e]*$/.test(externalTaskId)) {
      return yield* refuse("external_task_id must be printable ASCII without spaces.", "external_task_id")
    }
    const extras: Record<string, unknown> = {}
    for (const name of KLING_PASS_THROUGH) {
      if (body[name] !== undefined && body[name] !== null) {
        extras[name] = body[name]
      }
    }
    const extrasJson = JSON.stringify(extras)
    if (extrasJson.length > MAX_METADATA_CHARS) {
      return yield* refuse(
        `camera_control and the masks are ${extrasJson.length} characters of JSON; at most ${MAX_METADATA_CHARS} are allowed.`,
        "camera_control"
      )
    }
    const value: VideoRequest = {
      model,
      prompt,
      negativePrompt,
      cfgScale,
      seconds,
      aspectRatio,
      resolution: mode === undefined ? undefined : mode === "pro" ? "1080p" : "720p",
      watermark,
      generateAudio: sound === undefined ? undefined : sound === "on",
      references,
      metadata: Object.keys(extras).length === 0 ? undefined : extras,
      externalTaskId: externalTaskId === "" ? undefined : externalTaskId
    }
    // Only the fields the request has: an absent field is absent, not `undefined`.
    return Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined)) as VideoRequest
  })

/**
 * Decodes a Kling-shaped body for `action`. Never throws: any input, however
 * hostile, gives the request or an `InvalidRequest` naming the field.
 *
 * @category decoding
 */
export const decodeKlingRequest = (raw: unknown, action: KlingAction): Decoded<VideoRequest> => decode(raw, action)
