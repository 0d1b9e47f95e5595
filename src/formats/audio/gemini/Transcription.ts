/**
 * Transcription on a generate-content channel (ai.google.dev/gemini-api/docs/audio,
 * "Get a transcript"): the caller's OpenAI form as a generate-content body
 * with the audio inline, the forms it cannot send by field, and the text of
 * its answer.
 *
 * @since 0.1.0
 */
import type { Usage } from "../../../canonical/Usage.ts"
import { InvalidRequest, UpstreamFailed } from "../../../errors/GatewayError.ts"
import type { HeardText } from "../AudioWire.ts"

/** Inline data Gemini takes in one request (20 MB, base64 included: ai.google.dev/gemini-api/docs/audio). */
const GEMINI_INLINE_FILE_LIMIT = Math.floor(20 * 1024 * 1024 * 3 / 4) - 64 * 1024

/**
 * Why a transcription cannot go to a generate-content channel, by field, or
 * `undefined` when it can: Gemini answers plain text without timestamps
 * (so json and text only, no `timestamp_granularities[]`), streams nothing
 * here, and takes at most 20 MB of inline data.
 *
 * @category decoding
 */
export const geminiTranscriptionRefusal = (form: FormData): InvalidRequest | undefined => {
  const format = form.get("response_format") ?? "json"
  if (format !== "json" && format !== "text") {
    return new InvalidRequest({
      message: `\`response_format\` ${
        JSON.stringify(format)
      } needs timestamps, which a gemini channel does not give; ask for json or text.`,
      param: "response_format"
    })
  }
  if (form.get("stream") === "true") {
    return new InvalidRequest({ message: "A gemini channel does not stream transcripts here.", param: "stream" })
  }
  if (form.has("timestamp_granularities[]")) {
    return new InvalidRequest({
      message: "A gemini channel gives no timestamps.",
      param: "timestamp_granularities[]"
    })
  }
  const file = form.get("file")
  if (file instanceof File && file.size > GEMINI_INLINE_FILE_LIMIT) {
    return new InvalidRequest({
      message: `A gemini channel takes audio of at most ${GEMINI_INLINE_FILE_LIMIT} bytes inline.`,
      param: "file"
    })
  }
  return undefined
}

/** Base64 of `bytes`. */
const base64Of = (bytes: Uint8Array): string => {
  let binary = ""
  for (let index = 0; index < bytes.length; index += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(index, index + 0x8000))
  }
  return btoa(binary)
}

/**
 * The generate-content body of a transcription: an instruction (with the
 * caller's `language` and `prompt` as context) and the form's `file` (of
 * media type `mimeType`) as inline data.
 *
 * @category encoding
 */
export const geminiTranscriptionBody = async (form: FormData, mimeType: string): Promise<Record<string, unknown>> => {
  const file = form.get("file") as File
  const language = form.get("language")
  const context = form.get("prompt")
  const instruction = "Generate a verbatim transcript of the speech in this audio. Answer with the transcript only." +
    (typeof language === "string" && language.length > 0 ? ` The speech is in the language "${language}".` : "") +
    (typeof context === "string" && context.length > 0 ? ` Context for spelling: ${context}` : "")
  return {
    contents: [{
      role: "user",
      parts: [
        { text: instruction },
        { inlineData: { mimeType, data: base64Of(new Uint8Array(await file.arrayBuffer())) } }
      ]
    }]
  }
}

/**
 * The text of a 2xx generate-content answer (its non-thought text parts, joined and trimmed) and its token
 * usage; `UpstreamFailed` (`bad-body`) when it has no text.
 *
 * @category decoding
 */
export const geminiTranscriptText = (json: unknown, channelId: number): HeardText | UpstreamFailed => {
  const answer = (typeof json === "object" && json !== null ? json : {}) as {
    candidates?: Array<{ content?: { parts?: Array<{ text?: unknown; thought?: unknown }> } }>
    usageMetadata?: { promptTokenCount?: unknown; candidatesTokenCount?: unknown }
  }
  const parts = Array.isArray(answer.candidates) ? answer.candidates[0]?.content?.parts ?? [] : []
  const texts = (Array.isArray(parts) ? parts : []).filter((part) =>
    typeof part?.text === "string" && part.thought !== true
  ).map((part) => part.text as string)
  if (texts.length === 0) {
    return new UpstreamFailed({
      kind: "bad-body",
      status: 200,
      message: "The generate-content answer has no text.",
      channelId
    })
  }
  const count = (value: unknown) =>
    typeof value === "number" && Number.isFinite(value) && value >= 0 ? Math.trunc(value) : undefined
  const input = count(answer.usageMetadata?.promptTokenCount)
  const output = count(answer.usageMetadata?.candidatesTokenCount)
  const usage: Usage | undefined = input === undefined ? undefined : { inputTokens: input, outputTokens: output ?? 0 }
  return { text: texts.join("").trim(), usage }
}
