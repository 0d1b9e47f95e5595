/**
 * The video wire formats by name (`VideoWire.ts`); a channel type's
 * `VideoAdapter` names the one it speaks.
 *
 * @since 0.1.0
 */
import { arkVideoWire } from "../ark/videos/Wire.ts"
import { geminiVideoWire } from "../gemini/videos/Wire.ts"
import { klingVideoWire } from "../kling/videos/Wire.ts"
import { openAiVideoWire } from "../openai/videos/Wire.ts"
import type { VideoFormatName, VideoWire } from "./VideoWire.ts"

export type { VideoCall, VideoFormatName, VideoWire } from "./VideoWire.ts"

/**
 * Every video wire format that is built; a channel whose type names a
 * missing one is never a candidate for a video request.
 *
 * @category formats
 */
export const videoWires: { readonly [Name in VideoFormatName]?: VideoWire } = {
  openai: openAiVideoWire,
  ark: arkVideoWire,
  gemini: geminiVideoWire,
  kling: klingVideoWire
}
