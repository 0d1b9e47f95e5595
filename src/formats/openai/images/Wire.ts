/**
 * The OpenAI images API as an upstream wire and as the caller's answer
 * (platform.openai.com/docs/api-reference/images): `POST /v1/images/generations`
 * (JSON) and `POST /v1/images/edits` (multipart: `image`, or `image[]` for
 * several, `mask`, `prompt`, …); the answer `{created, data: [{url} |
 * {b64_json, revised_prompt}], usage?}`. Per the reference: `response_format`
 * is refused by the GPT image models (they always answer `b64_json`), `style`
 * is a dall-e-3 field and `background` a GPT image one, so a field reaches the
 * upstream only where the model's family has it (every field for a model with
 * no family).
 *
 * @since 0.1.0
 */
import type { GeneratedImage, ImageBytes, ImageRequest, ImageResponse } from "../../../canonical/Image.ts"
import type { ImageFamily } from "../../images/ImageFamilies.ts"
import { UpstreamFailed } from "../../../errors/GatewayError.ts"
import { classifyOpenAiError } from "../shared/ErrorBody.ts"
import { toDataUri as dataUri } from "../../../canonical/DataUri.ts"
import { isRecord } from "../../images/ImageData.ts"
import type { ImageCallBody, ImageWire } from "../../images/ImageWire.ts"

/** The body fields of one generation or edit, as the family allows them. */
const fields = (request: ImageRequest, model: string, family: ImageFamily | undefined): Record<string, unknown> => {
  const body: Record<string, unknown> = { model, prompt: request.prompt, n: request.n }
  if (request.size !== undefined) body.size = request.size
  if (request.quality !== undefined) body.quality = request.quality
  if (family !== "gpt-image") body.response_format = request.b64 ? "b64_json" : "url"
  if (request.style !== undefined && (family === undefined || family === "dall-e-3")) body.style = request.style
  if (request.background !== undefined && (family === undefined || family === "gpt-image")) {
    body.background = request.background
  }
  if (request.user !== undefined) body.user = request.user
  return body
}

const fileOf = (image: ImageBytes, fallbackName: string): File => {
  const bytes = Uint8Array.from(atob(image.base64), (char) => char.charCodeAt(0))
  return new File([bytes], image.filename ?? fallbackName, { type: image.mediaType })
}

/** The edit form: the JSON fields as text, the images as files (`image`, or `image[]` for several). */
const editForm = (request: ImageRequest, model: string, family: ImageFamily | undefined): FormData => {
  const form = new FormData()
  for (const [name, value] of Object.entries(fields(request, model, family))) {
    form.append(name, typeof value === "string" ? value : JSON.stringify(value))
  }
  const images = request.edit?.images ?? []
  const name = images.length > 1 ? "image[]" : "image"
  images.forEach((image, index) => form.append(name, fileOf(image, `image-${index}.png`)))
  if (request.edit?.mask !== undefined) form.append("mask", fileOf(request.edit.mask, "mask.png"))
  return form
}

/** A `data[]` item of an answer as a generated image, or `undefined` when it is neither. */
const imageOf = (item: unknown): GeneratedImage | undefined => {
  if (!isRecord(item)) return undefined
  const revisedPrompt = typeof item.revised_prompt === "string" ? item.revised_prompt : undefined
  if (typeof item.b64_json === "string" && item.b64_json.length > 0) {
    return { base64: item.b64_json, mediaType: "image/png", revisedPrompt }
  }
  if (typeof item.url === "string" && item.url.length > 0) return { url: item.url, revisedPrompt }
  return undefined
}

/**
 * Reads an images answer (`data[]` of `url` or `b64_json` items; Ark's answer
 * has the same shape, with failed items carrying `error` instead); an answer
 * with no image is a `bad-body` failure.
 *
 * @category decoding
 */
export const decodeImagesAnswer = (json: unknown): ImageResponse | UpstreamFailed => {
  const data = isRecord(json) && Array.isArray(json.data) ? json.data : undefined
  const images = (data ?? []).map(imageOf).filter((image): image is GeneratedImage => image !== undefined)
  if (images.length === 0) {
    return new UpstreamFailed({ kind: "bad-body", status: 200, message: "The upstream answered no image." })
  }
  return { images }
}

/**
 * The caller's answer: `data[]` with `url` (Base64 the upstream sent becomes a
 * `data:` URI) or `b64_json` (a URL the upstream sent stays a `url`: the
 * gateway does not fetch it), `created` in epoch seconds.
 *
 * @category encoding
 */
export const encodeImagesAnswer = (
  response: ImageResponse,
  b64: boolean,
  created: number
): Record<string, unknown> => ({
  created,
  data: response.images.map((image) => {
    const revised = image.revisedPrompt === undefined ? {} : { revised_prompt: image.revisedPrompt }
    if ("url" in image) return { url: image.url, ...revised }
    return b64 ? { b64_json: image.base64, ...revised } : { url: dataUri(image.mediaType, image.base64), ...revised }
  })
})

/** The OpenAI images wire. @category formats */
export const openAiImageWire: ImageWire = {
  name: "openai",
  encodeCalls: (request, model, family): ReadonlyArray<ImageCallBody> =>
    request.edit === undefined
      ? [{ _tag: "json", body: fields(request, model, family) }]
      : [{ _tag: "form", form: editForm(request, model, family) }],
  decodeResponse: decodeImagesAnswer,
  classifyError: classifyOpenAiError
}
