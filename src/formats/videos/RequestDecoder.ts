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
 * The fields are `Schema`s (`request/VideoFields.ts`, media references by
 * `request/MediaRefs.ts`), decoded in the order the rules check them; the
 * rules that tie fields together are plain code over the decoded fields. The
 * answer is Effect's `Result`; a form body is read by `VideoForm.ts`.
 *
 * @since 0.1.0
 */
import { Result, Schema } from "effect"
import type { ReferenceRole, VideoReference, VideoRequest } from "../../canonical/Video.ts"
import type { InvalidRequest } from "../../errors/GatewayError.ts"
import type { Decoded } from "../shared/Decoded.ts"
import { type MediaPolicy, mediaProblem, mediaRefOf, quote } from "./request/MediaRefs.ts"
import {
  decodeFields,
  flag,
  flagOf,
  listOf,
  media,
  mediaList,
  metadata,
  MINI_CODE,
  refusal,
  requiredText,
  seconds,
  secondsOf,
  text
} from "./request/VideoFields.ts"
import {
  defaultVideoFamily,
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

/** The body a video route decodes. @category models */
export type VideoRoute = "videos" | "remix" | "unified"

/** The longest model name, in characters. @category rules */
export const MAX_MODEL_NAME = 256

type Refused<A> = Result.Result<A, InvalidRequest>

const refuse = (message: string, param: string, code?: string): Refused<never> =>
  Result.fail(refusal(message, param, code))

/** One schema per key, built on first use (the rules of a family, a route). */
const memo = <K, A>(make: (key: K) => A): (key: K) => A => {
  const made = new Map<K, A>()
  return (key) => {
    if (!made.has(key)) made.set(key, make(key))
    return made.get(key)!
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

/** A reference with the field it came from, which a refusal of the whole request names. */
interface Slot {
  readonly field: string
  readonly reference: VideoReference
}

/** A single-reference field's slot (none when absent). */
const one = (
  field: string,
  value: string | null | undefined,
  kind: VideoReference["kind"],
  role: ReferenceRole,
  policy: MediaPolicy
): ReadonlyArray<Slot> =>
  value === undefined || value === null
    ? []
    : [{ field, reference: { kind, role, ref: mediaRefOf(value, policy), param: field } }]

/** A list field's slots, items named `field[i]` (a plain string: `field`). */
const many = (
  field: string,
  value: unknown,
  kind: VideoReference["kind"],
  role: ReferenceRole,
  policy: MediaPolicy
): ReadonlyArray<Slot> =>
  listOf(value).map((item, index) => ({
    field,
    reference: {
      kind,
      role,
      ref: mediaRefOf(item, policy),
      param: typeof value === "string" ? field : `${field}[${index}]`
    }
  }))

/** The references, at most `MAX_VIDEO_REFERENCES` over the whole request (the first one over names its field). */
const bounded = (slots: ReadonlyArray<Slot>): Refused<ReadonlyArray<VideoReference>> =>
  slots.length > MAX_VIDEO_REFERENCES
    ? refuse(
      `A request may carry at most ${MAX_VIDEO_REFERENCES} media references.`,
      slots[MAX_VIDEO_REFERENCES].field
    )
    : Result.succeed(slots.map((slot) => slot.reference))

/** The duration fields of a family: their code and bounds, and the decoder of both. */
const durationRules = memo((family: VideoFamily) => {
  const mini = family === "mini-2.0"
  const code = mini ? MINI_CODE : undefined
  const { min, max } = mini ? MINI_DURATION : family === "videoa" ? VIDEOA_DURATION : { min: 1, max: MAX_VIDEO_SECONDS }
  const which = mini ? " for mini-2.0" : family === "videoa" ? " for the first video family (its vendor's range)" : ""
  const values = ` from ${min} to ${max}${which}`
  const decode = decodeFields(
    Schema.Struct({ duration: seconds("duration", values), seconds: seconds("seconds", values) }),
    code
  )
  return { code, min, max, values, decode }
})

/** The duration: `duration` if given, else `seconds` (both checked), within the family's bounds. */
const durationOf = (
  raw: Readonly<Record<string, unknown>>,
  family: VideoFamily,
  required: boolean
): Refused<number | undefined> =>
  Result.gen(function* () {
    const { code, min, max, values, decode } = durationRules(family)
    const fields = yield* decode(raw)
    const duration = secondsOf(fields.duration)
    const seconds = secondsOf(fields.seconds)
    if (duration === undefined && seconds === undefined) {
      return required
        ? yield* refuse("duration is required: a whole number of seconds from 4 to 15.", "duration", code)
        : undefined
    }
    for (const [name, value] of [["duration", duration], ["seconds", seconds]] as const) {
      if (value !== undefined && (value < min || value > max)) {
        return yield* refuse(`${name} must be a whole number of seconds${values}; got ${value}.`, name, code)
      }
    }
    return duration ?? seconds
  })

/** The fields every body has. */
interface Base {
  readonly model: string
  readonly prompt: string
  readonly metadata: Readonly<Record<string, unknown>> | undefined
}

const model = requiredText("model", MAX_MODEL_NAME, "model is required.", { blank: true })

/** `POST /v1/videos` and remix: model and prompt required. */
const decodeBase = decodeFields(Schema.Struct({
  model,
  prompt: requiredText("prompt", MAX_VIDEO_PROMPT, "prompt is required.", { blank: true }),
  metadata
}))

/** The unified body: a prompt may be left out when an image is given. */
const decodeUnifiedBase = decodeFields(Schema.Struct({ model, prompt: text("prompt", MAX_VIDEO_PROMPT), metadata }))

const urlsOnly: MediaPolicy = { inline: false }

const videoaFrames = decodeFields(Schema.Struct({
  aspect_ratio: text(
    "aspect_ratio",
    16,
    (value) =>
      (VIDEOA_ASPECT_RATIOS as ReadonlyArray<string>).includes(value)
        ? undefined
        : `Invalid aspect_ratio ${quote(value)}: use one of ${VIDEOA_ASPECT_RATIOS.join(", ")}.`
  ),
  size: text(
    "size",
    32,
    (value) =>
      pixelSize(value) === undefined
        ? `Invalid size ${quote(value)}: use <width>x<height> (a ratio goes in aspect_ratio).`
        : undefined
  ),
  first_image: media("first_image", "image", urlsOnly)
}))

const videoaImage = decodeFields(Schema.Struct({ image: media("image", "image", urlsOnly) }))

const videoaReferences = decodeFields(Schema.Struct({
  last_image: media("last_image", "image", urlsOnly),
  reference_image_urls: mediaList("reference_image_urls", "image", urlsOnly),
  reference_video_url: media("reference_video_url", "video", urlsOnly),
  reference_video_urls: mediaList("reference_video_urls", "video", urlsOnly),
  reference_audios: mediaList("reference_audios", "audio", urlsOnly),
  reference_audio_urls: mediaList("reference_audio_urls", "audio", urlsOnly),
  audio_url: media("audio_url", "audio", urlsOnly),
  generate_audio: flag("generate_audio")
}))

const videoaOutput = decodeFields(Schema.Struct({
  resolution: text(
    "resolution",
    16,
    (value) =>
      /^\d{3,4}p$/.test(value.toLowerCase())
        ? undefined
        : `Invalid resolution ${quote(value)}: use a tier such as 720p.`
  ),
  watermark: flag("watermark")
}))

const present = (value: unknown): boolean => value !== undefined && value !== null

/** The first video family on `POST /v1/videos`. */
const videoaBody = (raw: Readonly<Record<string, unknown>>, base: Base): Refused<VideoRequest> =>
  Result.gen(function* () {
    const frames = yield* videoaFrames(raw)
    const first = present(frames.first_image)
    if (first && present(raw.image)) return yield* refuse("Give first_image or image, not both.", "image")
    // The OpenAI-style `image` is the first frame here too.
    const image = first ? undefined : (yield* videoaImage(raw)).image
    if (present(raw.last_image) && !first && !present(image)) {
      return yield* refuse("last_image is only valid together with first_image.", "last_image")
    }
    const fields = yield* videoaReferences(raw)
    const references = yield* bounded([
      ...one("first_image", frames.first_image, "image", "first_frame", urlsOnly),
      ...one("image", image, "image", "first_frame", urlsOnly),
      ...one("last_image", fields.last_image, "image", "last_frame", urlsOnly),
      ...many("reference_image_urls", fields.reference_image_urls, "image", "reference_image", urlsOnly),
      ...one("reference_video_url", fields.reference_video_url, "video", "reference_video", urlsOnly),
      ...many("reference_video_urls", fields.reference_video_urls, "video", "reference_video", urlsOnly),
      ...many("reference_audios", fields.reference_audios, "audio", "reference_audio", urlsOnly),
      ...many("reference_audio_urls", fields.reference_audio_urls, "audio", "reference_audio", urlsOnly),
      ...one("audio_url", fields.audio_url, "audio", "reference_audio", urlsOnly)
    ])
    const seconds = yield* durationOf(raw, "videoa", false)
    const output = yield* videoaOutput(raw)
    return {
      ...base,
      seconds,
      size: frames.size ?? undefined,
      aspectRatio: frames.aspect_ratio ?? undefined,
      resolution: output.resolution?.toLowerCase(),
      watermark: flagOf(output.watermark),
      generateAudio: flagOf(fields.generate_audio),
      references
    }
  })

const miniFields = decodeFields(
  Schema.Struct({
    ratio: requiredText("ratio", 16, "ratio is required: 16:9 or 9:16.", {
      check: (value) =>
        (MINI_RATIOS as ReadonlyArray<string>).includes(value)
          ? undefined
          : `Invalid ratio ${quote(value)}: use 16:9 or 9:16.`
    }),
    resolution: requiredText("resolution", 16, "resolution is required: 480p.", {
      check: (value) =>
        value.toLowerCase() === MINI_RESOLUTION ? undefined : `Invalid resolution ${quote(value)}: mini-2.0 takes 480p.`
    }),
    images: mediaList("images", "image", urlsOnly, {
      before: (value) =>
        !Array.isArray(value)
          ? "images must be an array of public image URLs."
          : value.length > MINI_MAX_IMAGES
          ? `images has ${value.length} items; mini-2.0 takes at most ${MINI_MAX_IMAGES}.`
          : undefined
    })
  }),
  MINI_CODE
)

/** mini-2.0 on `POST /v1/videos`. */
const miniBody = (raw: Readonly<Record<string, unknown>>, base: Base): Refused<VideoRequest> =>
  Result.gen(function* () {
    const seconds = yield* durationOf(raw, "mini-2.0", true)
    const fields = yield* miniFields(raw)
    const references = yield* bounded(many("images", fields.images, "image", "reference_image", urlsOnly))
    return { ...base, seconds, aspectRatio: fields.ratio ?? undefined, resolution: MINI_RESOLUTION, references }
  })

/** The generic family's media policy: inline images; every other family takes URLs only. */
const openAiPolicy = (family: VideoFamily): MediaPolicy => ({ inline: family === "openai-video" })

const openAiFields = memo((family: VideoFamily) =>
  decodeFields(Schema.Struct({
    size: text("size", 32, (value) =>
      pixelSize(value) !== undefined
        ? undefined
        : family === "videoa"
        ? `Invalid size ${quote(value)}: use <width>x<height>.`
        : ratioOf(value) !== undefined
        ? undefined
        : `Invalid size ${quote(value)}: use <width>x<height> or a ratio such as 16:9.`),
    image: media("image", "image", openAiPolicy(family))
  }))
)

/** `input_reference` as the `openai` SDK sends it: an object with `image_url`, or the reference itself. */
const inputReferenceOf = (input: unknown, policy: MediaPolicy): Refused<ReadonlyArray<Slot>> => {
  const object = typeof input === "object" && input !== null && !Array.isArray(input)
    ? input as Readonly<Record<string, unknown>>
    : undefined
  if (present(object?.file_id)) {
    return refuse("input_reference.file_id is not supported: give image_url (a URL or a data URI).", "input_reference")
  }
  const value = object === undefined ? input : object.image_url
  const problem = mediaProblem(
    value,
    object === undefined ? "input_reference" : "input_reference.image_url",
    "image",
    policy
  )
  return problem !== undefined
    ? refuse(problem, "input_reference")
    : Result.succeed(one("input_reference", value as string, "image", "first_frame", policy))
}

/** The generic (OpenAI-style) family on `POST /v1/videos`, and every family's remix. */
const openAiBody = (
  raw: Readonly<Record<string, unknown>>,
  base: Base,
  family: VideoFamily,
  route: VideoRoute
): Refused<VideoRequest> =>
  Result.gen(function* () {
    const policy = openAiPolicy(family)
    const fields = yield* openAiFields(family)(raw)
    const size = fields.size ?? undefined
    const slots = [...one("image", fields.image, "image", "first_frame", policy)]
    if (route === "videos" && present(raw.input_reference)) {
      if (present(fields.image)) return yield* refuse("Give image or input_reference, not both.", "input_reference")
      slots.push(...yield* inputReferenceOf(raw.input_reference, policy))
    }
    const references = yield* bounded(slots)
    const seconds = yield* durationOf(raw, family, false)
    const pixels = size === undefined ? undefined : pixelSize(size)
    return {
      ...base,
      seconds,
      size: pixels,
      aspectRatio: size !== undefined && pixels === undefined ? size : undefined,
      references
    }
  })

/** Images inline as a data URI or bare Base64 on the unified route, every family. */
const unifiedPolicy: MediaPolicy = { inline: true, bareBase64: true }

/** The family's own name of the ratio on the unified route (mini-2.0's `ratio`, the first family's `aspect_ratio`). */
const ratioFieldOf = (family: VideoFamily): string | undefined =>
  family === "mini-2.0" ? "ratio" : family === "videoa" ? "aspect_ratio" : undefined

const unifiedFields = memo((family: VideoFamily) => {
  const code = family === "mini-2.0" ? MINI_CODE : undefined
  const ratioField = ratioFieldOf(family)
  // Read under the key `ratio`, reported under the family's own name.
  const decodeRatio = decodeFields(Schema.Struct({ ratio: text(ratioField ?? "ratio", 16) }), code)
  return {
    image: decodeFields(Schema.Struct({ image: media("image", "image", unifiedPolicy) }), code),
    lists: decodeFields(
      Schema.Struct({
        images: mediaList("images", "image", unifiedPolicy),
        input_reference: mediaList("input_reference", "image", unifiedPolicy, { single: true })
      }),
      code
    ),
    /** The family's ratio field, reported under its own name. */
    ratio: (raw: Readonly<Record<string, unknown>>): Refused<string | undefined> => {
      if (ratioField === undefined) return Result.succeed(undefined)
      return Result.mapBoth(decodeRatio({ ratio: raw[ratioField] }), {
        onSuccess: (fields) => fields.ratio ?? undefined,
        onFailure: (error) => refusal(error.message, ratioField, code)
      })
    },
    size: decodeFields(Schema.Struct({ size: text("size", 32) }), code)
  }
})

/** The size or ratio of a unified body: `[size, aspectRatio]`, checked against the family. */
const unifiedShape = (
  raw: Readonly<Record<string, unknown>>,
  family: VideoFamily
): Refused<readonly [string | undefined, string | undefined]> =>
  Result.gen(function* () {
    const mini = family === "mini-2.0"
    const code = mini ? MINI_CODE : undefined
    const ratioField = ratioFieldOf(family)
    const decoders = unifiedFields(family)
    const familyRatio = yield* decoders.ratio(raw)
    const givenSize = (yield* decoders.size(raw)).size ?? undefined
    if (familyRatio !== undefined && givenSize !== undefined && givenSize !== familyRatio) {
      return yield* refuse(`Give size or ${ratioField}, not two different values.`, ratioField!, code)
    }
    const sizeText = givenSize ?? familyRatio
    const sizeParam = givenSize !== undefined ? "size" : ratioField ?? "size"
    if (sizeText === undefined) {
      return mini
        ? yield* refuse("size (or ratio) is required for mini-2.0: the ratio 16:9 or 9:16.", "size", code)
        : [undefined, undefined] as const
    }
    const size = pixelSize(sizeText)
    const aspectRatio = size === undefined ? ratioOf(sizeText) : undefined
    if (size === undefined && aspectRatio === undefined) {
      return yield* refuse(
        `Invalid ${sizeParam} ${quote(sizeText)}: use <width>x<height> or a ratio such as 16:9.`,
        sizeParam,
        code
      )
    }
    if (
      family === "videoa" && aspectRatio !== undefined &&
      !(VIDEOA_ASPECT_RATIOS as ReadonlyArray<string>).includes(aspectRatio)
    ) {
      return yield* refuse(
        `Invalid ${sizeParam} ${quote(sizeText)}: use <width>x<height> or one of ${VIDEOA_ASPECT_RATIOS.join(", ")}.`,
        sizeParam
      )
    }
    if (mini && !(MINI_RATIOS as ReadonlyArray<string | undefined>).includes(aspectRatio)) {
      return yield* refuse(
        `Invalid ${sizeParam} ${quote(sizeText)}: mini-2.0 takes the ratio 16:9 or 9:16.`,
        sizeParam,
        code
      )
    }
    return [size, aspectRatio] as const
  })

/** The unified body, every family. */
const unifiedBody = (raw: Readonly<Record<string, unknown>>, base: Base, family: VideoFamily): Refused<VideoRequest> =>
  Result.gen(function* () {
    const mini = family === "mini-2.0"
    const code = mini ? MINI_CODE : undefined
    const decoders = unifiedFields(family)
    const { image } = yield* decoders.image(raw)
    if (family === "videoa" && present(image) && present(raw.images)) {
      return yield* refuse(
        "Give image (the first frame) or images (references), not both: the first video family cannot mix them.",
        "images"
      )
    }
    const lists = yield* decoders.lists(raw)
    const references = yield* bounded([
      ...one("image", image, "image", "first_frame", unifiedPolicy),
      ...many("images", lists.images, "image", "reference_image", unifiedPolicy),
      ...many("input_reference", lists.input_reference, "image", "reference_image", unifiedPolicy)
    ])
    if (mini && references.length > MINI_MAX_IMAGES) {
      return yield* refuse(
        `mini-2.0 takes at most ${MINI_MAX_IMAGES} images over image, images and input_reference.`,
        "images",
        code
      )
    }
    if (base.prompt.length === 0 && references.length === 0) {
      return yield* refuse("prompt is required (or an image to animate).", "prompt")
    }
    const [size, aspectRatio] = yield* unifiedShape(raw, family)
    return {
      ...base,
      seconds: yield* durationOf(raw, family, mini),
      size,
      aspectRatio,
      resolution: mini ? MINI_RESOLUTION : undefined,
      references
    }
  })

const decode = (raw: unknown, family: VideoFamily | undefined, route: VideoRoute): Refused<VideoRequest> =>
  Result.gen(function* () {
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
      return yield* refuse("The request body must be a JSON object.", "")
    }
    const body = raw as Readonly<Record<string, unknown>>
    const fields = yield* (route === "unified" ? decodeUnifiedBase : decodeBase)(body)
    const model = fields.model ?? ""
    const rules = family ?? defaultVideoFamily(model)
    const base: Base = { model, prompt: fields.prompt ?? "", metadata: fields.metadata ?? undefined }
    if (route === "unified") return yield* unifiedBody(body, base, rules)
    if (route === "remix") return yield* openAiBody(body, base, rules, route)
    return yield* rules === "videoa"
      ? videoaBody(body, base)
      : rules === "mini-2.0"
      ? miniBody(body, base)
      : openAiBody(body, base, rules, route)
  })

/**
 * Decodes a video request body for a model of `family` (`undefined`: the
 * default for the body's model name) on `route`. Never throws: any input,
 * however hostile (not an object, NUL, lone surrogates, megabytes of
 * prompt), gives `Result.succeed(VideoRequest)` (only the fields the request
 * has: an absent field is absent, not `undefined`) or
 * `Result.fail(InvalidRequest)`.
 *
 * @category decoding
 */
export const decodeVideoRequest = (
  raw: Record<string, unknown>,
  family: VideoFamily | undefined,
  route: VideoRoute
): Decoded<VideoRequest> =>
  Result.map(
    decode(raw, family, route),
    (value) => Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined)) as VideoRequest
  )
