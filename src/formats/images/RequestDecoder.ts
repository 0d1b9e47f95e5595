/**
 * The caller's image request (OpenAI images format: the JSON body of
 * `/v1/images/generations`, or the fields of a `/v1/images/edits` form)
 * checked and decoded into the canonical `ImageRequest`, with the model
 * family's rules applied (`formats/images/ImageFamilies.ts`). Every violation is an
 * `InvalidRequest` (400, code `invalid_request`) naming the field.
 *
 * @since 0.1.0
 */
import { Result } from "effect"
import type { ImageBytes, ImageRequest } from "../../canonical/Image.ts"
import {
  type ImageFamily,
  isViolation,
  maxImages,
  maxPromptLength,
  resolveQuality,
  resolveSize
} from "./ImageFamilies.ts"
import { InvalidRequest } from "../../errors/GatewayError.ts"
import type { Decoded } from "../shared/Decoded.ts"
import { toDataUri } from "../../canonical/DataUri.ts"
import { imageTypeOfBase64, isHttpUrl } from "./ImageData.ts"

const invalid = (
  message: string,
  param: string
): Decoded<ImageRequest> => Result.fail(new InvalidRequest({ message, param }))

/** `text` holds a lone UTF-16 surrogate (not well-formed Unicode). */
const hasLoneSurrogate = (text: string): boolean => !text.isWellFormed()

/** A string field: absent, a string, or (edits: every form field is text) its text. */
const stringField = (raw: Record<string, unknown>, name: string): string | undefined | InvalidRequest => {
  const value = raw[name]
  if (value === undefined || value === null) return undefined
  if (typeof value !== "string") return new InvalidRequest({ message: `${name} must be a string.`, param: name })
  if (hasLoneSurrogate(value) || value.includes("\u0000")) {
    return new InvalidRequest({ message: `${name} holds a NUL character or a lone surrogate.`, param: name })
  }
  return value
}

/** `n` as an integer (a form's digits already made a number by the route); absent, null or 0 → 1. */
const countOf = (number: unknown, family: ImageFamily | undefined): number | InvalidRequest => {
  if (number === undefined || number === null || number === 0) return 1
  const most = maxImages(family)
  if (typeof number !== "number" || !Number.isInteger(number) || number < 0 || number > most) {
    return new InvalidRequest({
      message: `n must be an integer from 1 to ${most}${family === undefined ? "" : ` for a ${family} model`}.`,
      param: "n"
    })
  }
  return number
}

/** `watermark` as a boolean (a form field's `true`/`false` too). */
const booleanOf = (value: unknown): boolean | undefined | "bad" =>
  value === undefined || value === null
    ? undefined
    : typeof value === "boolean"
    ? value
    : value === "true"
    ? true
    : value === "false"
    ? false
    : "bad"

/** A pass-through field that must be a string or an object. */
const stringOrObject = (value: unknown): boolean =>
  value === undefined || value === null || typeof value === "string" ||
  (typeof value === "object" && !Array.isArray(value))

/** The generation's `image`: a string, an array of strings, or an object (its `url` / `b64_json` / `image_url`). */
const referencesOf = (value: unknown): ReadonlyArray<string> | undefined => {
  if (value === undefined || value === null) return []
  if (typeof value === "string") return value.length === 0 ? undefined : [value]
  if (Array.isArray(value)) {
    return value.every((item) => typeof item === "string" && item.length > 0) ? value as Array<string> : undefined
  }
  if (typeof value === "object") {
    const object = value as Record<string, unknown>
    const inner = object.url ?? object.image_url ?? object.b64_json
    return typeof inner === "string" && inner.length > 0 ? [inner] : undefined
  }
  return undefined
}

/**
 * A reference as the vendors take it: a URL, a `data:` URI or an asset URI
 * as sent; bare Base64 (the spec's "usually Base64 or an array of Base64")
 * wrapped as a `data:` URI of the image type its bytes show, since Ark takes
 * only URLs and data URIs. `undefined` when bare text is not an image.
 */
const referenceOf = (reference: string): string | undefined => {
  if (isHttpUrl(reference) || reference.startsWith("data:") || reference.startsWith("asset://")) return reference
  const bare = reference.replace(/\s+/g, "")
  const mediaType = imageTypeOfBase64(bare)
  return mediaType === undefined ? undefined : toDataUri(mediaType, bare)
}

/**
 * Decodes an image request for a model of `family` (`undefined` = no family
 * rules). `edit` carries an edit's uploaded images and mask (the form's files);
 * without it the body is a generation.
 *
 * @category decoding
 */
export const decodeImageRequest = (
  raw: Record<string, unknown>,
  family: ImageFamily | undefined,
  edit?: { readonly images: ReadonlyArray<ImageBytes>; readonly mask?: ImageBytes | undefined }
): Decoded<ImageRequest> => {
  const model = stringField(raw, "model")
  if (model instanceof InvalidRequest) return Result.fail(model)
  if (model === undefined || model.length === 0) return invalid("model is required.", "model")
  const prompt = stringField(raw, "prompt")
  if (prompt instanceof InvalidRequest) return Result.fail(prompt)
  if (prompt === undefined || prompt.trim().length === 0) return invalid("prompt is required.", "prompt")
  const longest = maxPromptLength(family)
  if (prompt.length > longest) {
    return invalid(`prompt is ${prompt.length} characters; at most ${longest} are allowed.`, "prompt")
  }
  const n = countOf(raw.n, family)
  if (n instanceof InvalidRequest) return Result.fail(n)

  const responseFormat = stringField(raw, "response_format")
  if (responseFormat instanceof InvalidRequest) return Result.fail(responseFormat)
  if (responseFormat !== undefined && !["url", "b64_json", "base64"].includes(responseFormat)) {
    return invalid("response_format must be url, b64_json or base64.", "response_format")
  }

  const sizeText = stringField(raw, "size")
  if (sizeText instanceof InvalidRequest) return Result.fail(sizeText)
  const size = sizeText === undefined ? undefined : resolveSize(family, sizeText)
  if (size !== undefined && isViolation(size)) return invalid(size.message, size.param)

  const qualityText = stringField(raw, "quality")
  if (qualityText instanceof InvalidRequest) return Result.fail(qualityText)
  const quality = resolveQuality(family, qualityText)
  if (isViolation(quality)) return invalid(quality.message, quality.param)

  const watermark = booleanOf(raw.watermark)
  if (watermark === "bad") return invalid("watermark must be a boolean.", "watermark")
  if (!stringOrObject(raw.style)) return invalid("style must be a string or an object.", "style")
  if (!stringOrObject(raw.background)) return invalid("background must be a string or an object.", "background")
  const user = stringField(raw, "user")
  if (user instanceof InvalidRequest) return Result.fail(user)

  const given = edit === undefined ? referencesOf(raw.image) : []
  if (given === undefined) {
    return invalid("image must be a non-empty string, an array of strings, or an object with a url.", "image")
  }
  const references = given.map(referenceOf)
  if (references.some((reference) => reference === undefined)) {
    return invalid(
      "image must be an http(s) URL, a data: URI, or Base64 of a PNG, JPEG, GIF, WebP, BMP or TIFF image.",
      "image"
    )
  }
  if (edit !== undefined && edit.images.length === 0) return invalid("image is required for an edit.", "image")
  if (edit !== undefined && family === "dall-e-3") return invalid("dall-e-3 models cannot edit images.", "model")
  if (edit !== undefined && family === "dall-e-2" && edit.images.length > 1) {
    return invalid("A dall-e-2 model edits one image at a time.", "image")
  }

  return Result.succeed({
    model,
    prompt,
    n,
    size: size?.size === "auto" ? undefined : size?.size,
    tier: size?.tier,
    quality: quality.quality,
    // No response_format: what the model's vendor answers by default (GPT image models: b64_json only).
    b64: responseFormat === undefined ? family === "gpt-image" : responseFormat !== "url",
    style: raw.style ?? undefined,
    background: raw.background ?? undefined,
    watermark,
    user,
    references: references as ReadonlyArray<string>,
    edit
  })
}
