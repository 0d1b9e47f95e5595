/**
 * The audio wire formats by name (`AudioWire.ts`); a channel type's
 * `AudioAdapter` (`upstreams/AudioAdapter.ts`) names the one it speaks.
 *
 * @since 0.1.0
 */
import { geminiAudioWire } from "./gemini/Wire.ts"
import { openAiAudioWire } from "./openai/Wire.ts"
import type { AudioFormatName, AudioWire } from "./AudioWire.ts"

export type {
  AudioFormatName,
  AudioWire,
  HeardText,
  ReportedUsage,
  SpeechAudio,
  SpeechWire,
  TranscriptionWire
} from "./AudioWire.ts"

/**
 * Every audio wire format, by the name an `AudioAdapter` gives.
 *
 * @category formats
 */
export const audioWires: { readonly [Name in AudioFormatName]: AudioWire } = {
  openai: openAiAudioWire,
  gemini: geminiAudioWire
}
