/**
 * Volcengine Ark / BytePlus ModelArk image generation as an upstream wire
 * (docs.byteplus.com/en/docs/ModelArk/1541523, "Image generation API";
 * www.volcengine.com/docs/82379/1541523): `POST /api/v3/images/generations`
 * with `model`, `prompt`, `image` (a URL or `data:image/<type>;base64,…` data
 * URI, or an array of them, for image-to-image), `size` (`WxH`, or `1K` /
 * `2K` / `4K`), `response_format` (`url` | `b64_json`), `watermark` (default
 * true), and `sequential_image_generation` (`auto` with
 * `sequential_image_generation_options.max_images` for a group of images,
 * else `disabled`). The answer is `{model, created, data: [{url | b64_json,
 * size} | {error}], usage: {generated_images, output_tokens, total_tokens}}`;
 * errors are `{error: {code, message, param, type}}`, read like OpenAI's.
 * An edit is sent as a generation with its uploads as data-URI references.
 *
 * @since 0.1.0
 */
import type { ImageRequest } from "../../../canonical/Image.ts"
import { classifyOpenAiError } from "../../openai/shared/ErrorBody.ts"
import { toDataUri as dataUri } from "../../../canonical/DataUri.ts"
import type { ImageCallBody, ImageWire } from "../../images/ImageWire.ts"
import { decodeImagesAnswer } from "../../openai/images/Wire.ts"

/** The one call of `request`. */
const body = (request: ImageRequest, model: string): Record<string, unknown> => {
  const images = request.edit === undefined
    ? request.references
    : request.edit.images.map((image) => dataUri(image.mediaType, image.base64))
  const out: Record<string, unknown> = {
    model,
    prompt: request.prompt,
    response_format: request.b64 ? "b64_json" : "url"
  }
  if (images.length === 1) out.image = images[0]
  else if (images.length > 1) out.image = images
  if (request.size !== undefined) out.size = request.size
  if (request.watermark !== undefined) out.watermark = request.watermark
  if (request.n > 1) {
    out.sequential_image_generation = "auto"
    out.sequential_image_generation_options = { max_images: request.n }
  } else {
    out.sequential_image_generation = "disabled"
  }
  return out
}

/** The Ark image generation wire. @category formats */
export const arkImageWire: ImageWire = {
  name: "ark",
  encodeCalls: (request, model): ReadonlyArray<ImageCallBody> => [{ _tag: "json", body: body(request, model) }],
  decodeResponse: decodeImagesAnswer,
  classifyError: classifyOpenAiError
}
