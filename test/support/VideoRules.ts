/**
 * The video validation table: one row per rule of the spec about a video
 * request body — every line of the "Limits" table about video, every field
 * line of the video "Endpoints" tables (first video family, mini-2.0,
 * OpenAI-style create and remix bodies, unified body), and every variant of
 * "Errors" about the request body — plus the hostile inputs every route must
 * refuse cleanly (non-objects, NUL, lone surrogates, an oversized prompt).
 *
 * Each row says what the gateway answers: the status, the envelope (`gateway`
 * `{error: {message, type, param, code}}` or `flat` `{code, message}`, the
 * first video family's variant), the code, and the `param` named (for `flat`
 * rows it is the decoder's `param`; the flat body has none). The decoder test
 * (`test/formats/videos/RequestDecoder.test.ts`) checks every row against
 * `decodeVideoRequest`; the route test posts every row through the routes.
 * Bodies are JSON; the multipart rules (uploads) are tested beside
 * `videoFormFields`.
 */

/** A video route a body is posted to. */
export type VideoRuleRoute = "POST /v1/videos" | "POST /v1/video/generations" | "POST /v1/videos/{id}/remix"

/** One rule: a body that breaks it and what the gateway answers. */
export interface VideoRule {
  readonly name: string
  readonly route: VideoRuleRoute
  /** The JSON body (not always an object: hostile rows send arrays, strings, `null`). */
  readonly body: unknown
  readonly status: 400
  readonly envelope: "gateway" | "flat"
  readonly code: "invalid_request" | "invalid_request_error"
  readonly param: string
}

const VIDEOS = "POST /v1/videos" as const
const UNIFIED = "POST /v1/video/generations" as const
const REMIX = "POST /v1/videos/{id}/remix" as const

/** A public image URL and an asset URI that every family accepts. */
export const IMAGE_URL = "https://media.example.com/frame.png"
/** An asset URI of the gateway's id shape. */
export const ASSET_URI = "asset://asset-1764000000000-abcdefghij012345"
/** A small PNG as a data URI (1×1). */
export const PNG_DATA_URI =
  "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

const VIDEOA = { model: "videoa-2-0-260128", prompt: "a lighthouse at dusk" }
const MINI = { model: "mini-2.0", prompt: "a paper boat", duration: 5, ratio: "16:9", resolution: "480p" }
const GENERIC = { model: "sora-2", prompt: "a red kite" }

/** A first-family row on `POST /v1/videos`: flat `{code: invalid_request, message}`. */
const videoa = (
  name: string,
  body: Record<string, unknown>,
  param: string,
  route: VideoRuleRoute = VIDEOS
): VideoRule => ({
  name: `videoa: ${name}`,
  route,
  body: { ...VIDEOA, ...body },
  status: 400,
  envelope: "flat",
  code: "invalid_request",
  param
})

/** A mini-2.0 parameter row: gateway envelope, code `invalid_request_error`. */
const mini = (
  name: string,
  body: Record<string, unknown>,
  param: string,
  route: VideoRuleRoute = VIDEOS
): VideoRule => ({
  name: `mini-2.0: ${name}`,
  route,
  body: { ...MINI, ...body },
  status: 400,
  envelope: "gateway",
  code: "invalid_request_error",
  param
})

/** A gateway-envelope `invalid_request` row. */
const gateway = (name: string, route: VideoRuleRoute, body: unknown, param: string): VideoRule => ({
  name,
  route,
  body,
  status: 400,
  envelope: "gateway",
  code: "invalid_request",
  param
})

const without = (body: Record<string, unknown>, field: string): Record<string, unknown> => {
  const copy = { ...body }
  delete copy[field]
  return copy
}

const urls = (count: number): ReadonlyArray<string> =>
  Array.from({ length: count }, (_, index) => `https://media.example.com/${index}.png`)

/** Every rule, in the order of the spec. */
export const VIDEO_RULES: ReadonlyArray<VideoRule> = [
  // Limits: mini-2.0 duration, ratio, resolution, images.
  mini("duration below 4", { duration: 3 }, "duration"),
  mini("duration above 15", { duration: 16 }, "duration"),
  mini("duration not an integer", { duration: 5.5 }, "duration"),
  mini("duration not a number", { duration: "five" }, "duration"),
  mini("duration missing (required)", { duration: undefined }, "duration"),
  mini("seconds used for duration, out of range", { duration: undefined, seconds: "20" }, "seconds"),
  mini("ratio other than 16:9 or 9:16", { ratio: "1:1" }, "ratio"),
  mini("ratio missing (required)", { ratio: undefined }, "ratio"),
  mini("ratio not a string", { ratio: 16 }, "ratio"),
  mini("resolution other than 480p", { resolution: "720p" }, "resolution"),
  mini("resolution missing (required)", { resolution: undefined }, "resolution"),
  mini("more than 9 images", { images: urls(10) }, "images"),
  mini("an image as a data URI", { images: [PNG_DATA_URI] }, "images"),
  mini("an image not an http(s) URL", { images: ["ftp://media.example.com/a.png"] }, "images"),
  mini("images as a content array (objects)", { images: [{ type: "image_url", image_url: IMAGE_URL }] }, "images"),
  mini("images not an array", { images: IMAGE_URL }, "images"),
  gateway("mini-2.0: prompt missing", VIDEOS, without(MINI, "prompt"), "prompt"),
  mini("unified: duration above 15", { duration: 20, size: "16:9" }, "duration", UNIFIED),
  mini("unified: size not 16:9 or 9:16", { ratio: undefined, size: "1:1" }, "size", UNIFIED),
  mini("unified: ratio (mini-2.0's own name) not 16:9 or 9:16", { ratio: "1:1" }, "ratio", UNIFIED),
  mini("unified: size and ratio disagree", { size: "9:16", ratio: "16:9" }, "ratio", UNIFIED),
  mini("unified: neither size nor ratio", { ratio: undefined }, "size", UNIFIED),
  mini(
    "unified: more than 9 images in all",
    { ratio: undefined, size: "9:16", image: IMAGE_URL, images: urls(9) },
    "images",
    UNIFIED
  ),
  mini("remix: seconds above 15", { seconds: "16" }, "seconds", REMIX),

  // Limits and "Video: first video family": aspect_ratio, size, last_image, media fields, the flat variant.
  videoa("prompt missing (flat invalid_request)", { prompt: undefined }, "prompt"),
  videoa("prompt blank", { prompt: "   " }, "prompt"),
  videoa("aspect_ratio outside the six", { aspect_ratio: "2:1" }, "aspect_ratio"),
  videoa("aspect_ratio not a string", { aspect_ratio: 1.5 }, "aspect_ratio"),
  videoa("size as a ratio (WxH only)", { size: "16:9" }, "size"),
  videoa("size not WxH", { size: "large" }, "size"),
  videoa("duration not a number", { duration: "long" }, "duration"),
  videoa("duration not whole", { duration: 4.5 }, "duration"),
  videoa("duration 5.5: the vendor takes whole seconds", { duration: 5.5 }, "duration"),
  videoa("duration below the vendor's 4", { duration: 3 }, "duration"),
  videoa("duration above the vendor's 15", { duration: 16 }, "duration"),
  videoa("seconds above the vendor's 15", { duration: undefined, seconds: "20" }, "seconds"),
  videoa("duration zero", { duration: 0 }, "duration"),
  videoa("duration above the gateway's bound", { duration: 61 }, "duration"),
  videoa("resolution not a tier", { resolution: "ultra" }, "resolution"),
  videoa("watermark not a boolean", { watermark: "yes" }, "watermark"),
  videoa("generate_audio not a boolean", { generate_audio: 1 }, "generate_audio"),
  videoa("last_image without first_image", { last_image: IMAGE_URL }, "last_image"),
  videoa("first_image as a data URI (no binary)", { first_image: PNG_DATA_URI }, "first_image"),
  videoa("first_image over ftp", { first_image: "ftp://media.example.com/a.png" }, "first_image"),
  videoa("first_image with credentials", { first_image: "https://user:pw@media.example.com/a.png" }, "first_image"),
  videoa("first_image a malformed asset URI", { first_image: "asset://../../etc/passwd" }, "first_image"),
  videoa("first_image not a URL", { first_image: "frame.png" }, "first_image"),
  videoa("last_image as a data URI", { first_image: IMAGE_URL, last_image: PNG_DATA_URI }, "last_image"),
  videoa("reference_image_urls not an array", { reference_image_urls: IMAGE_URL }, "reference_image_urls"),
  videoa(
    "reference_image_urls with a data URI",
    { reference_image_urls: [IMAGE_URL, PNG_DATA_URI] },
    "reference_image_urls"
  ),
  videoa("reference_video_url as an array", { reference_video_url: [IMAGE_URL] }, "reference_video_url"),
  videoa(
    "reference_video_urls with a file path",
    { reference_video_urls: ["file:///etc/passwd"] },
    "reference_video_urls"
  ),
  videoa("reference_audios with a data URI", { reference_audios: ["data:audio/mpeg;base64,AAAA"] }, "reference_audios"),
  videoa("reference_audio_urls with a number", { reference_audio_urls: [7] }, "reference_audio_urls"),
  videoa("audio_url over ftp", { audio_url: "ftp://media.example.com/a.mp3" }, "audio_url"),
  videoa("more media references than the gateway's bound", { reference_image_urls: urls(17) }, "reference_image_urls"),
  videoa("metadata not an object", { metadata: "style=noir" }, "metadata"),
  videoa("remix: size as a ratio", { size: "16:9" }, "size", REMIX),
  videoa("remix: image as a data URI", { image: PNG_DATA_URI }, "image", REMIX),

  // "Video: OpenAI-style routes": create and remix bodies.
  gateway("create: model missing", VIDEOS, { prompt: "a red kite" }, "model"),
  gateway("create: model not a string", VIDEOS, { model: 42, prompt: "a red kite" }, "model"),
  gateway("create: prompt missing", VIDEOS, without(GENERIC, "prompt"), "prompt"),
  gateway("create: prompt not a string", VIDEOS, { ...GENERIC, prompt: ["a", "b"] }, "prompt"),
  gateway("create: image not a string", VIDEOS, { ...GENERIC, image: 12 }, "image"),
  gateway(
    "create: image a data URI that is not an image",
    VIDEOS,
    { ...GENERIC, image: "data:text/plain;base64,QUJD" },
    "image"
  ),
  gateway("create: seconds not digits", VIDEOS, { ...GENERIC, seconds: "eight" }, "seconds"),
  gateway("create: seconds zero", VIDEOS, { ...GENERIC, seconds: "0" }, "seconds"),
  gateway("create: seconds above the gateway's bound", VIDEOS, { ...GENERIC, seconds: "999" }, "seconds"),
  gateway("create: size neither WxH nor a ratio", VIDEOS, { ...GENERIC, size: "huge" }, "size"),
  gateway("create: metadata an array", VIDEOS, { ...GENERIC, metadata: ["a"] }, "metadata"),
  gateway("create: input_reference by file_id (not supported)", VIDEOS, {
    ...GENERIC,
    input_reference: { file_id: "file_1" }
  }, "input_reference"),
  gateway("create: image and input_reference both", VIDEOS, {
    ...GENERIC,
    image: IMAGE_URL,
    input_reference: { image_url: IMAGE_URL }
  }, "input_reference"),
  gateway("remix: model missing", REMIX, { prompt: "make it night" }, "model"),
  gateway("remix: prompt missing", REMIX, { model: "sora-2" }, "prompt"),
  gateway("remix: seconds not digits", REMIX, { ...GENERIC, seconds: "x" }, "seconds"),

  // "Video: unified routes".
  gateway("unified: model missing", UNIFIED, { prompt: "a red kite" }, "model"),
  gateway("unified: prompt missing and no image", UNIFIED, { model: "sora-2" }, "prompt"),
  gateway("unified: image not a string", UNIFIED, { ...GENERIC, image: { url: IMAGE_URL } }, "image"),
  gateway("unified: images not an array", UNIFIED, { ...GENERIC, images: IMAGE_URL }, "images"),
  gateway("unified: input_reference a number", UNIFIED, { ...GENERIC, input_reference: 3 }, "input_reference"),
  gateway("unified: duration not whole", UNIFIED, { ...GENERIC, duration: 2.5 }, "duration"),
  gateway("unified: seconds not digits", UNIFIED, { ...GENERIC, seconds: "ten" }, "seconds"),
  gateway("unified: size neither WxH nor a ratio", UNIFIED, { ...GENERIC, size: "wide" }, "size"),
  gateway("unified: metadata a string", UNIFIED, { ...GENERIC, metadata: "x" }, "metadata"),
  gateway("unified: videoa with image and images (two modes)", UNIFIED, {
    ...VIDEOA,
    image: IMAGE_URL,
    images: [IMAGE_URL]
  }, "images"),
  gateway("unified: videoa with aspect_ratio and a different size", UNIFIED, {
    ...VIDEOA,
    size: "16:9",
    aspect_ratio: "9:16"
  }, "aspect_ratio"),
  gateway("unified: videoa with a data URI that is no image", UNIFIED, {
    ...VIDEOA,
    image: "data:text/plain;base64,aGVsbG8="
  }, "image"),
  gateway("unified: videoa with a ratio outside the six", UNIFIED, { ...VIDEOA, size: "2:1" }, "size"),

  // Hostile input, every route.
  gateway("hostile: body an array", VIDEOS, [GENERIC], ""),
  gateway("hostile: body a string", UNIFIED, "model=sora-2", ""),
  gateway("hostile: body null", VIDEOS, null, ""),
  gateway("hostile: NUL in the prompt", VIDEOS, { ...GENERIC, prompt: "a\u0000b" }, "prompt"),
  gateway("hostile: lone surrogate in the model", UNIFIED, { ...GENERIC, model: "sora\uD800" }, "model"),
  gateway("hostile: model name of 10,000 characters", VIDEOS, { ...GENERIC, model: "m".repeat(10_000) }, "model"),
  gateway("hostile: prompt over 32,000 characters", VIDEOS, { ...GENERIC, prompt: "p".repeat(32_001) }, "prompt"),
  gateway(
    "hostile: a megabyte prompt on the unified route",
    UNIFIED,
    { ...GENERIC, prompt: "p".repeat(1 << 20) },
    "prompt"
  ),
  gateway(
    "hostile: NUL in an image URL",
    VIDEOS,
    { ...GENERIC, image: "https://media.example.com/a\u0000.png" },
    "image"
  ),
  gateway("hostile: metadata over 16 KiB", UNIFIED, { ...GENERIC, metadata: { blob: "x".repeat(20_000) } }, "metadata"),
  videoa(
    "hostile: lone surrogate in first_image",
    { first_image: "https://media.example.com/\uDC00.png" },
    "first_image"
  )
]

/** The routes' `route` argument of `decodeVideoRequest` for a table route. */
export const decoderRoute = (route: VideoRuleRoute): "videos" | "unified" | "remix" =>
  route === "POST /v1/videos" ? "videos" : route === "POST /v1/video/generations" ? "unified" : "remix"
