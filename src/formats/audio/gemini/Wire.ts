/**
 * Audio on a generate-content channel (`AudioWire`): speech and
 * transcription made as generate-content requests of their own, answered
 * whole; errors read as Gemini's error body.
 *
 * @since 0.1.0
 */
import { classifyGeminiError } from "../../gemini/generate-content/ErrorBody.ts"
import type { AudioWire } from "../AudioWire.ts"
import { geminiSpeechAudio, geminiSpeechBody, geminiSpeechRefusal } from "./Speech.ts"
import { geminiTranscriptionBody, geminiTranscriptionRefusal, geminiTranscriptText } from "./Transcription.ts"

/** @category formats */
export const geminiAudioWire: AudioWire = {
  name: "gemini",
  speech: { _tag: "whole", refusal: geminiSpeechRefusal, body: geminiSpeechBody, decode: geminiSpeechAudio },
  transcription: {
    _tag: "whole",
    refusal: geminiTranscriptionRefusal,
    body: geminiTranscriptionBody,
    decode: geminiTranscriptText
  },
  classifyError: classifyGeminiError
}
