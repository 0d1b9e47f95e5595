/**
 * The audio wires (`src/formats/audio/`): every audio adapter names a wire of the registry; OpenAI's bodies are the
 * caller's with the model mapped and the channel's `strip_params` gone; generate-content's refusals name the field,
 * its answers decode to speech and text, and an answer without them is a `bad-body` failure.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { UpstreamFailed } from "../../../src/errors/GatewayError.ts"
import { geminiSpeechAudio, geminiSpeechRefusal } from "../../../src/formats/audio/gemini/Speech.ts"
import { geminiTranscriptionRefusal, geminiTranscriptText } from "../../../src/formats/audio/gemini/Transcription.ts"
import { openAiSpeechBody } from "../../../src/formats/audio/openai/Speech.ts"
import { openAiTranscriptionForm, transcriptionUsage } from "../../../src/formats/audio/openai/Transcription.ts"
import { transcriptAnswer } from "../../../src/formats/audio/Transcript.ts"
import { audioWires } from "../../../src/formats/audio/Wires.ts"
import { audioAdapters } from "../../../src/upstreams/AudioAdapter.ts"

Deno.test("audio wires: every audio adapter names a wire of the registry", () => {
  for (const [type, adapter] of Object.entries(audioAdapters)) {
    if (adapter !== undefined) strictEqual(audioWires[adapter.wire]?.name, adapter.wire, type)
  }
})

Deno.test("openai audio: the caller's body and form with the upstream model, stripped params gone", () => {
  deepStrictEqual(
    openAiSpeechBody({ model: "tts", input: "hi", voice: "alloy", user: "u" }, "tts-1", ["user"]),
    { model: "tts-1", input: "hi", voice: "alloy" }
  )
  const form = new FormData()
  form.set("model", "whisper")
  form.set("language", "en")
  form.set("prompt", "p")
  const sent = openAiTranscriptionForm(form, "whisper-1", ["prompt"])
  deepStrictEqual([...sent.entries()], [["language", "en"], ["model", "whisper-1"]])
  deepStrictEqual(transcriptionUsage(JSON.stringify({ text: "x", usage: { type: "duration", seconds: 3 } })), {
    seconds: 3
  })
  deepStrictEqual(transcriptionUsage("not json"), {})
})

Deno.test("gemini audio: refusals name the field the caller must change", () => {
  strictEqual(geminiSpeechRefusal({ input: "hi", voice: "Kore" })?.param, "response_format")
  strictEqual(geminiSpeechRefusal({ input: "hi", response_format: "wav", voice: 3 })?.param, "voice")
  strictEqual(geminiSpeechRefusal({ input: "hi", response_format: "pcm", voice: "Kore", speed: 2 })?.param, "speed")
  strictEqual(geminiSpeechRefusal({ input: "hi", response_format: "wav", voice: "Kore" }), undefined)
  const form = new FormData()
  form.set("response_format", "srt")
  strictEqual(geminiTranscriptionRefusal(form)?.param, "response_format")
  form.set("response_format", "text")
  form.set("stream", "true")
  strictEqual(geminiTranscriptionRefusal(form)?.param, "stream")
})

Deno.test("gemini audio: PCM answers become wav or pcm with their tokens; text answers their transcript", () => {
  const pcm = new Uint8Array([1, 2, 3, 4])
  const answer = {
    candidates: [{
      content: {
        parts: [{ inlineData: { mimeType: "audio/L16;codec=pcm;rate=24000", data: btoa("\x01\x02\x03\x04") } }]
      }
    }],
    usageMetadata: { promptTokenCount: 7, candidatesTokenCount: 11 }
  }
  const wav = geminiSpeechAudio(answer, { response_format: "wav" }, 1)
  if (wav instanceof UpstreamFailed) throw wav
  deepStrictEqual([wav.contentType, wav.bytes.length, wav.usage], ["audio/wav", 44 + 4, {
    inputTokens: 7,
    outputTokens: 11
  }])
  const raw = geminiSpeechAudio(answer, { response_format: "pcm" }, 1)
  if (raw instanceof UpstreamFailed) throw raw
  deepStrictEqual([raw.contentType, [...raw.bytes]], ["audio/pcm", [...pcm]])
  strictEqual((geminiSpeechAudio({ candidates: [] }, {}, 9) as UpstreamFailed).kind, "bad-body")
  const heard = geminiTranscriptText({
    candidates: [{ content: { parts: [{ text: "thinking", thought: true }, { text: " hello " }] } }]
  }, 1)
  deepStrictEqual(heard, { text: "hello", usage: undefined })
  strictEqual((geminiTranscriptText({}, 2) as UpstreamFailed).channelId, 2)
  deepStrictEqual(transcriptAnswer("hello", { inputTokens: 1, outputTokens: 2 }, "text"), {
    text: "hello\n",
    contentType: "text/plain; charset=utf-8"
  })
})
