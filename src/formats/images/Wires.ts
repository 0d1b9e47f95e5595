/**
 * The image wire formats by name, and the caller-side halves the image routes
 * use whatever the upstream: the answer (OpenAI's images shape) and the
 * request decoder.
 *
 * @since 0.1.0
 */
import { arkImageWire } from "../ark/images/Wire.ts"
import { geminiImageWire } from "../gemini/images/Wire.ts"
import type { ImageFormatName, ImageWire } from "./ImageWire.ts"
import { openAiImageWire } from "../openai/images/Wire.ts"

export type { ImageCallBody, ImageFormatName, ImageWire } from "./ImageWire.ts"
export { decodeImageRequest } from "./RequestDecoder.ts"
export { encodeImagesAnswer } from "../openai/images/Wire.ts"

/**
 * Every image wire format.
 *
 * @category formats
 */
export const imageWires: Record<ImageFormatName, ImageWire> = {
  openai: openAiImageWire,
  ark: arkImageWire,
  gemini: geminiImageWire
}
