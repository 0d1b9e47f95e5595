/**
 * Speech on a generate-content channel (ai.google.dev/gemini-api/docs/speech-generation):
 * the caller's OpenAI speech request as a generate-content body with audio
 * output and a prebuilt voice, the requests it cannot make by field, and the
 * 24 kHz 16-bit PCM of its answer made whole into `wav` or `pcm`.
 *
 * @since 0.1.0
 */
import type { Usage } from "../../../canonical/Usage.ts"
import { InvalidRequest, UpstreamFailed } from "../../../errors/GatewayError.ts"
import { wavOf } from "../AudioFile.ts"
import type { SpeechAudio } from "../AudioWire.ts"

/**
 * Why a speech request cannot go to a generate-content channel, by field, or
 * `undefined` when it can: Gemini makes 24 kHz 16-bit PCM, which only `wav`
 * and `pcm` hold without loss; it takes a prebuilt voice by name, no
 * `speed`, and answers whole (no `sse` events).
 *
 * @category decoding
 */
export const geminiSpeechRefusal = (body: Readonly<Record<string, unknown>>): InvalidRequest | undefined => {
  const format = body.response_format ?? "mp3"
  if (format !== "wav" && format !== "pcm") {
    return new InvalidRequest({
      message: `\`response_format\` ${
        JSON.stringify(format)
      } cannot be made without loss from a gemini channel's PCM; ask for wav or pcm.`,
      param: "response_format"
    })
  }
  if (typeof body.voice !== "string") {
    return new InvalidRequest({ message: "A gemini channel takes `voice` as a prebuilt voice name.", param: "voice" })
  }
  if (body.speed !== undefined && body.speed !== 1) {
    return new InvalidRequest({ message: "A gemini channel does not take `speed`.", param: "speed" })
  }
  if (body.stream_format === "sse") {
    return new InvalidRequest({ message: "A gemini channel does not stream speech events.", param: "stream_format" })
  }
  return undefined
}

/**
 * The generate-content body of a speech request: the text (after the style `instructions`), audio out, the voice.
 *
 * @category encoding
 */
export const geminiSpeechBody = (body: Readonly<Record<string, unknown>>): Record<string, unknown> => ({
  contents: [{
    role: "user",
    parts: [{
      text: typeof body.instructions === "string" && body.instructions.length > 0
        ? `${body.instructions}: ${String(body.input)}`
        : String(body.input)
    }]
  }],
  generationConfig: {
    responseModalities: ["AUDIO"],
    speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: String(body.voice) } } }
  }
})

/** The 16-bit PCM of a generate-content answer (`audio/L16;…;rate=N` inline data, parts joined) and its rate. */
const geminiPcmOf = (json: unknown): { readonly pcm: Uint8Array; readonly rate: number } | undefined => {
  const answer = (typeof json === "object" && json !== null ? json : {}) as {
    candidates?: Array<{ content?: { parts?: Array<{ inlineData?: { mimeType?: unknown; data?: unknown } }> } }>
  }
  const parts = Array.isArray(answer.candidates) ? answer.candidates[0]?.content?.parts ?? [] : []
  const chunks: Array<Uint8Array> = []
  let rate = 24_000
  for (const part of Array.isArray(parts) ? parts : []) {
    const data = part?.inlineData?.data
    const mimeType = part?.inlineData?.mimeType
    if (typeof data !== "string" || typeof mimeType !== "string" || !/^audio\/L16\b/i.test(mimeType)) continue
    const declared = /rate=(\d{4,6})/.exec(mimeType)?.[1]
    if (declared !== undefined) rate = Number(declared)
    try {
      chunks.push(Uint8Array.from(atob(data), (char) => char.charCodeAt(0)))
    } catch {
      return undefined
    }
  }
  if (chunks.length === 0) return undefined
  const pcm = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.length, 0))
  let offset = 0
  for (const chunk of chunks) {
    pcm.set(chunk, offset)
    offset += chunk.length
  }
  return { pcm, rate }
}

/**
 * The speech of a 2xx generate-content answer: its PCM in a WAV file when `body` asked for `wav`, else raw
 * (`audio/pcm`), with the `usageMetadata` tokens when it reported them; `UpstreamFailed` (`bad-body`) when it
 * holds no 16-bit PCM.
 *
 * @category decoding
 */
export const geminiSpeechAudio = (
  json: unknown,
  body: Readonly<Record<string, unknown>>,
  channelId: number
): SpeechAudio | UpstreamFailed => {
  const audio = geminiPcmOf(json)
  if (audio === undefined) {
    return new UpstreamFailed({
      kind: "bad-body",
      status: 200,
      message: "The generate-content answer has no 16-bit PCM audio.",
      channelId
    })
  }
  const wav = body.response_format === "wav"
  const metadata = (json as { usageMetadata?: { promptTokenCount?: unknown; candidatesTokenCount?: unknown } })
    ?.usageMetadata
  const count = (value: unknown) =>
    typeof value === "number" && Number.isFinite(value) && value >= 0 ? Math.trunc(value) : undefined
  const prompt = count(metadata?.promptTokenCount)
  const usage: Usage | undefined = prompt === undefined
    ? undefined
    : { inputTokens: prompt, outputTokens: count(metadata?.candidatesTokenCount) ?? 0 }
  return {
    bytes: wav ? wavOf(audio.pcm, audio.rate) : audio.pcm,
    contentType: wav ? "audio/wav" : "audio/pcm",
    usage
  }
}
