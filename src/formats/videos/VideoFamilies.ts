/**
 * The video model families and their rules (spec "Endpoints: Video: first
 * video family", "Video: mini-2.0", "Video: OpenAI-style routes", "Video:
 * unified routes", and "Limits"). A model's family comes from the bootstrap
 * file's `models.<name>.family`, else from its name (`defaultVideoFamily`).
 *
 * - `videoa` (the first video family; `videoa-2-0-260128`,
 *   `videoa-2-0-fast-260128`): `aspect_ratio` one of 21:9, 16:9, 4:3, 1:1,
 *   3:4, 9:16; `size` only `<W>x<H>`; `last_image` only with `first_image`;
 *   every media field a public `https://` URL or `asset://<id>` (no upload, no
 *   data URI); its request-body errors in the flat envelope
 *   `{code: invalid_request, message}` (spec "Errors", first-video-family
 *   variants).
 * - `mini-2.0`: `duration` an integer 4–15, `ratio` 16:9 or 9:16, `resolution`
 *   480p (any case), `images` at most 9 public URLs, no data URIs; its
 *   parameter errors carry code `invalid_request_error` and `param`; task ids
 *   `mini-2.0_<32 characters>`.
 * - `openai-video` (every other model): the OpenAI videos API body
 *   (platform.openai.com/docs/api-reference/videos/create): `seconds` as a
 *   string, `size` as `WxH` or a ratio hint, an image reference by URL or
 *   data URI (or an uploaded file, made a data URI).
 *
 * @since 0.1.0
 */

/** The video families. @category models */
export const VIDEO_FAMILIES = ["videoa", "mini-2.0", "openai-video"] as const

/** @category models */
export type VideoFamily = typeof VIDEO_FAMILIES[number]

/**
 * The family of a model named `name` when the bootstrap file gives none:
 * `videoa` for names starting `videoa-`, `mini-2.0` for `mini-2.0`, else the
 * generic `openai-video`.
 *
 * @category rules
 */
export const defaultVideoFamily = (name: string): VideoFamily =>
  name.startsWith("videoa-") ? "videoa" : name === "mini-2.0" ? "mini-2.0" : "openai-video"

/** Whether `value` names a video family. @category rules */
export const isVideoFamily = (value: string | undefined): value is VideoFamily =>
  (VIDEO_FAMILIES as ReadonlyArray<string | undefined>).includes(value)

/** Spec "Limits": the first video family's `aspect_ratio` values. @category rules */
export const VIDEOA_ASPECT_RATIOS = ["21:9", "16:9", "4:3", "1:1", "3:4", "9:16"] as const

/** Spec "Limits": mini-2.0's `ratio` values. @category rules */
export const MINI_RATIOS = ["16:9", "9:16"] as const

/** Spec "Limits": mini-2.0's `resolution` (compared in lower case). @category rules */
export const MINI_RESOLUTION = "480p"

/** Spec "Limits": mini-2.0's `duration` bounds, in whole seconds (inclusive). @category rules */
export const MINI_DURATION = { min: 4, max: 15 } as const

/**
 * The first video family's `duration` bounds, in whole seconds (inclusive):
 * the spec types the field "number" and shows no bounds, so the gateway takes
 * what the vendor takes. The family is Seedance 2.0 (`videoa-2-0-260128` is
 * `doubao-seedance-2-0-260128` on Volcengine Ark / BytePlus ModelArk), whose
 * `duration` is an integer from 4 to 15 ("Video Generation API",
 * docs.byteplus.com/en/docs/ModelArk/1520757; -1, "the model chooses", is not
 * taken, since the hold needs a length). A fractional number is refused with
 * these values named, not rounded (the bill would not be the asked length).
 *
 * @category rules
 */
export const VIDEOA_DURATION = { min: 4, max: 15 } as const

/** Spec "Limits": the most reference images a mini-2.0 request may name. @category rules */
export const MINI_MAX_IMAGES = 9

/**
 * The longest duration, in whole seconds, a request of a family without a
 * spec bound (`videoa`, `openai-video`) may ask for: the gateway's bound on
 * what one request can hold in quota (spec "Limits": bounds for these models
 * are not shown). Ark's Seedance 2.0 takes 4–15 s and OpenAI's videos API
 * 4, 8 or 12 s, so no real request comes near it.
 *
 * @category rules
 */
export const MAX_VIDEO_SECONDS = 60

/**
 * The longest prompt, in characters, any video request may carry: the
 * gateway's bound (no vendor limit is given by the spec).
 *
 * @category rules
 */
export const MAX_VIDEO_PROMPT = 32_000

/**
 * The most media references one request may carry, over all its media
 * fields: the gateway's bound on the work a request can cause (each is
 * checked, maybe fetched, by the upstream).
 *
 * @category rules
 */
export const MAX_VIDEO_REFERENCES = 16

/**
 * The largest inline (data URI) image a request may carry, in characters of
 * its `data:` URI (about 7.5 MB of image); where a family takes one at all
 * (`openai-video`).
 *
 * @category rules
 */
export const MAX_INLINE_IMAGE_CHARS = 10 * 1024 * 1024

/**
 * The duration, in whole seconds, billed at submit when a request names none
 * (the outer contract's video cost: ratio × seconds × `per_second`):
 * - `openai-video`: 4, OpenAI's default `seconds`
 *   (platform.openai.com/docs/api-reference/videos/create: "Defaults to 4
 *   seconds"; the `openai` SDK's `VideoCreateParams.seconds` says the same);
 * - `videoa`: 5, Ark's default `duration` for its content generation tasks
 *   (BytePlus ModelArk "Video Generation API", `POST
 *   /api/v3/contents/generations/tasks`, docs.byteplus.com/en/docs/ModelArk/1520757:
 *   `duration` default 5);
 * - `mini-2.0`: its `duration` is required (spec "Video: mini-2.0"), so no
 *   request reaches billing without one; 4, its minimum, stands here only so
 *   the table is total.
 *
 * @category rules
 */
export const DEFAULT_VIDEO_SECONDS: Record<VideoFamily, number> = {
  videoa: 5,
  "mini-2.0": 4,
  "openai-video": 4
}

/**
 * The whole seconds billed at submit for a request of `family` that asked for
 * `seconds` (`undefined`: none named, so the family's default,
 * `DEFAULT_VIDEO_SECONDS`).
 *
 * @category rules
 */
export const billedSeconds = (family: VideoFamily, seconds: number | undefined): number =>
  seconds ?? DEFAULT_VIDEO_SECONDS[family]

/**
 * The envelope a video route renders a request error of `family` in (spec
 * "Errors"): `flat` (`{code, message}`) for the first video family on the
 * OpenAI-style routes (`POST /v1/videos` and its remix: "First-video-family
 * variants"), else `gateway` (`{error: {message, type, param, code}}`),
 * including every family on the unified route. A request whose model is
 * missing has no family, so `undefined` gives `gateway`.
 *
 * @category rules
 */
export const videoErrorEnvelope = (
  family: VideoFamily | undefined,
  route: "videos" | "remix" | "unified"
): "gateway" | "flat" => family === "videoa" && route !== "unified" ? "flat" : "gateway"

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

/**
 * `length` characters drawn uniformly from `[A-Za-z0-9]` with
 * `crypto.getRandomValues` (bytes of 248 and above are drawn again, so no
 * character is likelier than another).
 *
 * @category rules
 */
export const randomToken = (length: number): string => {
  let text = ""
  while (text.length < length) {
    const bytes = crypto.getRandomValues(new Uint8Array(length * 2))
    for (const byte of bytes) {
      if (byte < 248 && text.length < length) text += ALPHABET[byte % 62]
    }
  }
  return text
}

/** The prefix of a public task id, by family. @category rules */
export const TASK_ID_PREFIX: Record<VideoFamily, string> = {
  videoa: "video_",
  "mini-2.0": "mini-2.0_",
  "openai-video": "video_"
}

/**
 * A new public task id for a task of `family`: its prefix and 32 random
 * characters (`mini-2.0_<32 characters>`, spec "Resources"; `video_<32
 * characters>` otherwise). Random, never derived from the upstream's id, so
 * the upstream id cannot be read from it.
 *
 * @category rules
 */
export const newVideoTaskId = (family: VideoFamily): string => `${TASK_ID_PREFIX[family]}${randomToken(32)}`

/**
 * Whether `text` has the shape of a public video task id (a prefix above and
 * 32 characters of `[A-Za-z0-9]`): a cheap check before a path id reaches the
 * task store.
 *
 * @category rules
 */
export const isVideoTaskId = (text: string): boolean => /^(?:video_|mini-2\.0_)[A-Za-z0-9]{32}$/.test(text)
