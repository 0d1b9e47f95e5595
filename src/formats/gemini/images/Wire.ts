/**
 * Image output through generate-content as an upstream wire
 * (ai.google.dev/gemini-api/docs/image-generation;
 * ai.google.dev/api/generate-content): `POST
 * /v1beta/models/{model}:generateContent` with the prompt as a text part and
 * input images as `inlineData` parts (`{mimeType, data}` in Base64) or
 * `fileData` parts (`{fileUri}`) for URLs, `generationConfig.responseModalities`
 * `["TEXT", "IMAGE"]` and `generationConfig.imageConfig` (`aspectRatio` one of
 * 1:1, 2:3, 3:2, 3:4, 4:3, 4:5, 5:4, 9:16, 16:9, 21:9; `imageSize` `1K` /
 * `2K` / `4K`). Images come back as `candidates[].content.parts[].inlineData`
 * (Base64, or a URL in `data` on some deployments). One call makes one image,
 * so `n` images are `n` calls.
 *
 * @since 0.1.0
 */
import type { GeneratedImage, ImageRequest } from "../../../canonical/Image.ts"
import { UpstreamFailed } from "../../../errors/GatewayError.ts"
import { classifyGeminiError } from "../generate-content/ErrorBody.ts"
import { parseDataUri } from "../../../canonical/DataUri.ts"
import { isHttpUrl, isRecord, sniffMediaType } from "../../images/ImageData.ts"
import type { ImageCallBody, ImageWire } from "../../images/ImageWire.ts"

/** The aspect ratios `imageConfig.aspectRatio` takes. */
const ASPECT_RATIOS = ["1:1", "2:3", "3:2", "3:4", "4:3", "4:5", "5:4", "9:16", "16:9", "21:9"]

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b))

/** `WxH` → its reduced ratio when generate-content has it (2560x1712 is near enough 3:2). */
const aspectRatioOf = (size: string): string | undefined => {
  const match = /^(\d+)x(\d+)$/.exec(size)
  if (match === null) return undefined
  const width = Number(match[1])
  const height = Number(match[2])
  const divisor = gcd(width, height)
  const exact = `${width / divisor}:${height / divisor}`
  if (ASPECT_RATIOS.includes(exact)) return exact
  return ASPECT_RATIOS.find((ratio) => {
    const [w, h] = ratio.split(":").map(Number)
    return Math.abs(w / h - width / height) < 0.01
  })
}

/** A reference (data URI, URL, or bare Base64) as a part. */
const referencePart = (reference: string): Record<string, unknown> => {
  const data = parseDataUri(reference)
  if (data !== undefined) return { inlineData: { mimeType: data.mediaType, data: data.data } }
  if (isHttpUrl(reference)) return { fileData: { fileUri: reference } }
  return { inlineData: { mimeType: sniffMediaType(reference), data: reference } }
}

/** The body of one call (each call makes one image). */
const body = (request: ImageRequest): Record<string, unknown> => {
  const images = request.edit === undefined
    ? request.references.map(referencePart)
    : request.edit.images.map((image) => ({ inlineData: { mimeType: image.mediaType, data: image.base64 } }))
  const imageConfig: Record<string, unknown> = {}
  const ratio = request.size === undefined ? undefined : aspectRatioOf(request.size)
  if (ratio !== undefined) imageConfig.aspectRatio = ratio
  if (request.tier !== undefined) imageConfig.imageSize = request.tier
  const generationConfig: Record<string, unknown> = { responseModalities: ["TEXT", "IMAGE"] }
  if (Object.keys(imageConfig).length > 0) generationConfig.imageConfig = imageConfig
  return { contents: [{ role: "user", parts: [{ text: request.prompt }, ...images] }], generationConfig }
}

/** The images of a generate-content answer. */
const decode = (json: unknown): { readonly images: ReadonlyArray<GeneratedImage> } | UpstreamFailed => {
  const candidates = isRecord(json) && Array.isArray(json.candidates) ? json.candidates : []
  const images: Array<GeneratedImage> = []
  for (const candidate of candidates) {
    const content = isRecord(candidate) && isRecord(candidate.content) ? candidate.content : undefined
    const parts = content !== undefined && Array.isArray(content.parts) ? content.parts : []
    for (const part of parts) {
      const inline = isRecord(part) ? part.inlineData : undefined
      if (!isRecord(inline) || typeof inline.data !== "string" || inline.data.length === 0) continue
      const mediaType = typeof inline.mimeType === "string" ? inline.mimeType : sniffMediaType(inline.data)
      images.push(isHttpUrl(inline.data) ? { url: inline.data } : { base64: inline.data, mediaType })
    }
  }
  if (images.length === 0) {
    const blocked = isRecord(json) && isRecord(json.promptFeedback) ? json.promptFeedback.blockReason : undefined
    return new UpstreamFailed({
      kind: blocked === undefined ? "bad-body" : "rejected",
      status: blocked === undefined ? 200 : 400,
      message: typeof blocked === "string" ? `The prompt was blocked (${blocked}).` : "The upstream answered no image."
    })
  }
  return { images }
}

/** The generate-content image wire. @category formats */
export const geminiImageWire: ImageWire = {
  name: "gemini",
  encodeCalls: (request): ReadonlyArray<ImageCallBody> =>
    Array.from({ length: request.n }, () => ({ _tag: "json", body: body(request) })),
  decodeResponse: decode,
  classifyError: classifyGeminiError
}
