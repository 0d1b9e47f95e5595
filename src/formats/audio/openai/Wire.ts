/**
 * OpenAI's audio wire (`AudioWire`): speech passed on and streamed, the
 * transcription form passed on, errors read as OpenAI's error body.
 *
 * @since 0.1.0
 */
import { classifyOpenAiError } from "../../openai/shared/ErrorBody.ts"
import type { AudioWire } from "../AudioWire.ts"
import { openAiSpeechBody } from "./Speech.ts"
import { openAiTranscriptionForm, transcriptionUsage } from "./Transcription.ts"

/** @category formats */
export const openAiAudioWire: AudioWire = {
  name: "openai",
  speech: { _tag: "stream", body: openAiSpeechBody },
  transcription: { _tag: "form", form: openAiTranscriptionForm, usage: transcriptionUsage },
  classifyError: classifyOpenAiError
}
