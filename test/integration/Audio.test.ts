/**
 * The audio and moderation routes end to end on an openai channel of the
 * emulator, through the official `openai` SDK (`audio.speech.create` read as
 * a stream, `audio.transcriptions.create` and `audio.translations.create`
 * with a WAV file, `moderations.create`) and the AI SDK
 * (`generateSpeech`, `transcribe`). Billing is
 * checked against `/api/usage/token` and `x-sluice-cost` with the price
 * fields' rules: speech ceil(ratio × characters × `per_1m_characters`), or,
 * priced by tokens, the usage of `speech.audio.done` (raw audio and a cut
 * stream: the documented estimate),
 * whisper ceil(ratio × reported seconds × `per_second`), gpt-4o-transcribe
 * the reported tokens, moderations free unless priced. An mp3 upload is held
 * and billed by the duration the gateway reads from its bytes, checked against
 * the emulator's own frame count. A streamed transcription reaches the caller
 * before the upstream has sent its end and is billed its done event's usage
 * (a cut one: the held audio and the text delivered). Cut speech: an upstream
 * failing before any audio costs nothing; after audio (broken upstream, or the
 * caller leaving) the characters are due, or the input tokens and the audio
 * passed on, below the hold. Bad input (a 30 MB
 * file, an unknown format, a wrong MIME type, bytes that are not audio) is a
 * 400 naming the field and costs nothing.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { generateSpeech, transcribe } from "ai"
import { createOpenAI } from "@ai-sdk/openai"
import OpenAI, { toFile } from "openai"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { durationBoundMillis } from "../../src/formats/audio/AudioFile.ts"
import { speechMillis, transcriptSegments, wavFile } from "../../emulator/Audio.ts"
import { startGateway, type TestGateway } from "../support/Gateway.ts" // The AI SDK's notes on its experimental audio functions are noise here.
;(globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false

const KEY = "sk-test-audio-0001"

/** A key with 2,000 quota units (0.002 USD) of its own. */
const SMALL_KEY = "sk-test-audio-small-0001"

const config = (
  emulatorUrl: string,
  ttsPrice: Record<string, number> = { per_1m_characters: 12 },
  geminiTtsPrice: Record<string, number> = { per_1m_characters: 20 }
) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1.5 } },
      models: {
        "tts-1": { per_1m_characters: 15 },
        "gpt-4o-mini-tts": ttsPrice,
        "whisper-1": { per_second: 0.0001 },
        "gpt-4o-transcribe": { input: 2.5, output: 10 },
        "omni-moderation-priced": { input: 4 },
        "gemini-2.5-flash-preview-tts": geminiTtsPrice,
        "gemini-2.5-flash": { input: 1, output: 2.5 }
      },
      channels: [{
        name: "openai",
        type: "openai",
        base_url: emulatorUrl,
        keys: ["sk-test-up"],
        models: [
          "tts-1",
          "gpt-4o-mini-tts",
          "whisper-1",
          "gpt-4o-transcribe",
          "omni-moderation-latest",
          "omni-moderation-priced"
        ],
        model_mapping: { "omni-moderation-priced": "omni-moderation-latest" }
      }, {
        name: "gemini",
        type: "gemini",
        base_url: emulatorUrl,
        keys: ["sk-test-gem"],
        models: ["gemini-2.5-flash-preview-tts", "gemini-2.5-flash"]
      }],
      users: [{
        username: "alice",
        group: "default",
        quota: 100_000_000,
        tokens: [{ name: "main", key: KEY }, { name: "small", key: SMALL_KEY, quota: 2000 }]
      }]
    }),
    "audio.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

const totalUsed = async (gateway: TestGateway): Promise<number> => {
  const response = await fetch(`${gateway.url}/api/usage/token`, { headers: { authorization: `Bearer ${KEY}` } })
  const body = await response.json()
  strictEqual(body.success, true)
  return body.data.total_used
}

/** What the last `charged` call cost. */
let lastCharge = 0

/** Runs `send` and checks it charged exactly `expected` quota units (any, when `expected` is -1; see `lastCharge`). */
const charged = async <A>(gateway: TestGateway, expected: number, send: () => Promise<A>): Promise<A> => {
  const before = await totalUsed(gateway)
  const result = await send()
  lastCharge = (await totalUsed(gateway)) - before
  if (expected !== -1) strictEqual(lastCharge, expected, "quota charged")
  return result
}

/** `seconds` of silent 16-bit mono PCM at 16 kHz in a WAV file. */
const wavOf = (seconds: number) => wavFile(new Uint8Array(Math.round(16_000 * seconds) * 2), 16_000)

/** Speech cost: ceil(1.5 × characters × price USD per 1M) quota units. */
const speechCost = (characters: number, pricePerMillion: number) => Math.ceil(1.5 * characters * pricePerMillion)

/** Whisper cost: ceil(1.5 × seconds × 0.0001 USD × 10⁶) quota units. */
const whisperCost = (seconds: number) => Math.ceil(1.5 * seconds * 100)

const readAll = async (body: ReadableStream<Uint8Array>): Promise<{ bytes: Uint8Array; chunks: number }> => {
  const parts: Array<Uint8Array> = []
  for await (const chunk of body) parts.push(chunk)
  const bytes = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0))
  let offset = 0
  for (const part of parts) {
    bytes.set(part, offset)
    offset += part.length
  }
  return { bytes, chunks: parts.length }
}

const ascii = (bytes: Uint8Array, start: number, end: number) => String.fromCharCode(...bytes.subarray(start, end))

/** Waits (up to 10 s) until `check` holds. */
const eventually = async (check: () => boolean | Promise<boolean>, what: string): Promise<void> => {
  const deadline = Date.now() + 10_000
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

/** The emulator's last speech request. */
const lastSpeech = (gateway: TestGateway) => gateway.emulator.requests.findLast((r) => r.path === "/v1/audio/speech")!

Deno.test("audio: speech, transcription, translation and moderations through the openai SDK, billed exactly", async (t) => {
  const gateway = await startGateway({ config })
  const client = new OpenAI({ apiKey: KEY, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
  try {
    await t.step("speech: wav streamed, the emulator's duration, ratio × characters × per_1m_characters", async () => {
      const input = "Hello from the gateway, read aloud."
      const response = await charged(
        gateway,
        speechCost(input.length, 15),
        () => client.audio.speech.create({ model: "tts-1", voice: "alloy", input, response_format: "wav" })
      )
      strictEqual(response.headers.get("content-type"), "audio/wav")
      strictEqual(response.headers.get("x-sluice-cost"), (speechCost(input.length, 15) / 1e6).toFixed(6))
      const { bytes } = await readAll(response.body!)
      strictEqual(ascii(bytes, 0, 4), "RIFF")
      strictEqual(ascii(bytes, 8, 12), "WAVE")
      const view = new DataView(bytes.buffer)
      strictEqual(view.getUint32(24, true), 24_000)
      strictEqual(view.getUint32(40, true), Math.round(24 * speechMillis(input, 1)) * 2)
      strictEqual(bytes.length, 44 + view.getUint32(40, true))
    })

    await t.step("speech: mp3 frames (MPEG-1 Layer III sync words), speed honoured", async () => {
      const input = "Quick."
      const response = await client.audio.speech.create({
        model: "tts-1",
        voice: "nova",
        input,
        response_format: "mp3",
        speed: 2
      })
      strictEqual(response.headers.get("content-type"), "audio/mpeg")
      const { bytes } = await readAll(response.body!)
      const frames = Math.ceil(speechMillis(input, 2) / (1152 / 44.1))
      strictEqual(bytes.length, frames * 417)
      for (let frame = 0; frame < frames; frame++) {
        deepStrictEqual([...bytes.subarray(frame * 417, frame * 417 + 2)], [0xff, 0xfb])
      }
    })

    await t.step(
      "speech cut (per character): broken before any audio costs nothing; after audio, or the caller leaving, the characters are due",
      async () => {
        const input = "Cut speech, long enough to stream in many pieces. ".repeat(8)
        const speak = () =>
          client.audio.speech.create({ model: "tts-1", voice: "alloy", input, response_format: "mp3" })
        try {
          // The upstream answers 200 and breaks before its first byte: a failed attempt, nothing charged.
          gateway.emulator.setFaults([{ match: { path: "/v1/audio/speech" }, breakAfterEvents: 0 }])
          await charged(gateway, 0, async () => {
            const error = await speak().then(() => undefined, (error) => error)
            ok(error instanceof OpenAI.APIError, String(error))
          })
          // Half the audio, then a broken connection: the vendor rendered the input, so the characters are due.
          gateway.emulator.setFaults([{ match: { path: "/v1/audio/speech" }, breakAfterEvents: 1 }])
          await charged(gateway, speechCost(input.length, 15), async () => {
            const response = await speak()
            strictEqual(response.headers.get("x-sluice-cost"), (speechCost(input.length, 15) / 1e6).toFixed(6))
            strictEqual(await readAll(response.body!).then(() => "whole", () => "cut"), "cut")
          })
          // Paced audio, and the caller leaves after its first piece: charged the characters, the upstream aborted.
          gateway.emulator.setFaults([{ match: { path: "/v1/audio/speech" }, paceMs: 25 }])
          await charged(gateway, speechCost(input.length, 15), async () => {
            const response = await speak()
            const reader = response.body!.getReader()
            ok(!(await reader.read()).done)
            await reader.cancel()
            await eventually(() => lastSpeech(gateway).aborted, "the gateway aborts the upstream call")
            strictEqual(lastSpeech(gateway).completed, false)
          })
        } finally {
          gateway.emulator.setFaults([])
        }
      }
    )

    await t.step("speech: stream_format sse passes the speech.audio events through", async () => {
      const input = "Streamed as events."
      const response = await charged(
        gateway,
        speechCost(input.length, 12),
        () =>
          client.audio.speech.create({
            model: "gpt-4o-mini-tts",
            voice: "coral",
            input,
            instructions: "Calm.",
            response_format: "pcm",
            stream_format: "sse"
          })
      )
      ok(response.headers.get("content-type")?.startsWith("text/event-stream"))
      const text = new TextDecoder().decode((await readAll(response.body!)).bytes)
      const events = text.split("\n\n").filter((frame) => frame.startsWith("data: ")).map((frame) =>
        JSON.parse(frame.slice(6))
      )
      const audio = events.filter((event) => event.type === "speech.audio.delta")
        .map((event) => atob(event.audio).length).reduce((sum, size) => sum + size, 0)
      strictEqual(audio, Math.round(24 * speechMillis(input, 1)) * 2)
      strictEqual(events.at(-1).type, "speech.audio.done")
    })

    await t.step("speech: the upstream's events reach the caller as they arrive, not at the end", async () => {
      gateway.emulator.setFaults([{ match: { path: "/v1/audio/speech" }, paceMs: 20 }])
      try {
        const input = "A longer passage, so that the answer is many events long. ".repeat(2)
        const started = performance.now()
        const response = await client.audio.speech.create({
          model: "gpt-4o-mini-tts",
          voice: "coral",
          input,
          response_format: "pcm",
          stream_format: "sse"
        })
        const reader = response.body!.getReader()
        const first = await reader.read()
        const firstAt = performance.now() - started
        ok(!first.done)
        const decoder = new TextDecoder()
        let text = decoder.decode(first.value, { stream: true })
        while (true) {
          const { done, value } = await reader.read()
          if (done) break
          text += decoder.decode(value, { stream: true })
        }
        const total = performance.now() - started
        const events = text.split("\n\n").filter((frame) => frame.startsWith("data: ")).length
        const frames = Math.ceil(Math.round(24 * speechMillis(input, 1)) * 2 / 4096) + 1
        strictEqual(events, frames)
        // Paced at 20 ms an event upstream: the whole answer takes about frames × 20 ms; the first bytes came long before.
        ok(total >= (frames - 1) * 20 * 0.8, `total ${total} ms for ${frames} events`)
        ok(firstAt < total / 2, `first bytes after ${firstAt} ms of ${total} ms`)
      } finally {
        gateway.emulator.setFaults([])
      }
    })

    await t.step(
      "speech on a gemini channel: generate-content audio, PCM wrapped losslessly as wav or pcm",
      async () => {
        const model = "gemini-2.5-flash-preview-tts"
        const input = "Read by the generate-content voice."
        const wav = await charged(
          gateway,
          speechCost(input.length, 20),
          () => client.audio.speech.create({ model, voice: "Kore", input, response_format: "wav" })
        )
        strictEqual(wav.headers.get("content-type"), "audio/wav")
        const bytes = (await readAll(wav.body!)).bytes
        const view = new DataView(bytes.buffer)
        strictEqual(ascii(bytes, 0, 4), "RIFF")
        strictEqual(view.getUint32(24, true), 24_000)
        strictEqual(view.getUint32(40, true), Math.round(24 * speechMillis(input, 1)) * 2)
        const upstream = gateway.emulator.requests.at(-1)!
        ok(upstream.path.endsWith(`/models/${model}:generateContent`))
        deepStrictEqual((upstream.body as Record<string, unknown>).generationConfig, {
          responseModalities: ["AUDIO"],
          speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: "Kore" } } }
        })
        const styled = await client.audio.speech.create({
          model,
          voice: "Puck",
          input,
          instructions: "Cheerfully",
          response_format: "pcm"
        })
        strictEqual(styled.headers.get("content-type"), "audio/pcm")
        strictEqual(
          (await readAll(styled.body!)).bytes.length,
          Math.round(24 * speechMillis(`Cheerfully: ${input}`, 1)) * 2
        )
        for (
          const [field, extra] of [["response_format", { response_format: "mp3" }], ["speed", {
            speed: 1.5,
            response_format: "wav"
          }]] as const
        ) {
          const error = await charged(
            gateway,
            0,
            () => client.audio.speech.create({ model, voice: "Kore", input, ...extra }).then(() => undefined, (e) => e)
          )
          ok(error instanceof OpenAI.BadRequestError, field)
          strictEqual((error.error as { param?: string }).param, field)
        }
      }
    )

    await t.step("transcription: whisper-1 verbose_json, billed the reported seconds", async () => {
      const file = await toFile(wavOf(2.5), "speech.wav", { type: "audio/wav" })
      const answer = await charged(
        gateway,
        whisperCost(3),
        () =>
          client.audio.transcriptions.create({
            file,
            model: "whisper-1",
            response_format: "verbose_json",
            timestamp_granularities: ["segment"],
            language: "en"
          })
      )
      strictEqual(answer.duration, 2.5)
      deepStrictEqual(answer.segments?.map((segment) => segment.text), transcriptSegments(2.5).map((s) => s.text))
      strictEqual(answer.text, transcriptSegments(2.5).map((s) => s.text).join(" "))
    })

    await t.step(
      "transcription: srt and vtt as text, billed from the WAV header when no usage is reported",
      async () => {
        const srt = await charged(
          gateway,
          whisperCost(1.5),
          () =>
            client.audio.transcriptions.create({
              file: new File([wavOf(1.5)], "clip.wav", { type: "audio/wav" }),
              model: "whisper-1",
              response_format: "srt"
            })
        )
        strictEqual(
          srt,
          "1\n00:00:00,000 --> 00:00:01,000\nEmulated segment 1.\n\n2\n00:00:01,000 --> 00:00:01,500\nEmulated segment 2.\n\n"
        )
        const vtt = await client.audio.transcriptions.create({
          file: new File([wavOf(1)], "clip.wav", { type: "audio/wav" }),
          model: "whisper-1",
          response_format: "vtt"
        })
        ok(vtt.startsWith("WEBVTT\n\n00:00:00.000 --> 00:00:01.000\nEmulated segment 1."))
      }
    )

    await t.step("transcription: gpt-4o-transcribe billed the reported tokens", async () => {
      // The emulator reports 10 audio tokens a second and ceil(text / 4) output tokens.
      const text = transcriptSegments(2).map((s) => s.text).join(" ")
      const inputTokens = 20
      const outputTokens = Math.ceil(text.length / 4)
      const answer = await charged(
        gateway,
        Math.ceil(1.5 * (inputTokens * 2.5 + outputTokens * 10)),
        () =>
          client.audio.transcriptions.create({
            file: new File([wavOf(2)], "a.wav", { type: "audio/wav" }),
            model: "gpt-4o-transcribe"
          })
      )
      strictEqual(answer.text, text)
    })

    await t.step(
      "transcription on a gemini channel: inline audio, the text back, billed the reported tokens",
      async () => {
        const model = "gemini-2.5-flash"
        const text = transcriptSegments(2).map((s) => s.text).join(" ")
        const answer = await charged(gateway, -1, () =>
          client.audio.transcriptions.create({
            file: new File([wavOf(2)], "a.wav", { type: "audio/wav" }),
            model,
            language: "en"
          }))
        strictEqual(answer.text, text)
        const upstream = gateway.emulator.requests.at(-1)!
        ok(upstream.path.endsWith(`/models/${model}:generateContent`))
        const parts =
          (upstream.body as { contents: Array<{ parts: Array<Record<string, unknown>> }> }).contents[0].parts
        const inline = parts[1].inlineData as { mimeType: string; data: string }
        strictEqual(inline.mimeType, "audio/wav")
        deepStrictEqual(Uint8Array.from(atob(inline.data), (c) => c.charCodeAt(0)), wavOf(2))
        // The emulator reports 32 tokens a second plus the instruction's, and ceil(text / 4) out.
        const promptTokens = Math.ceil(2 * 32) + Math.ceil((parts[0].text as string).length / 4)
        const outputTokens = Math.ceil(text.length / 4)
        strictEqual(lastCharge, Math.ceil(1.5 * (promptTokens * 1 + outputTokens * 2.5)))
        const plain = await client.audio.transcriptions.create({
          file: new File([wavOf(1)], "a.wav", { type: "audio/wav" }),
          model,
          response_format: "text"
        })
        strictEqual(plain, "Emulated segment 1.\n")
        for (const format of ["srt", "vtt", "verbose_json"] as const) {
          const error = await charged(gateway, 0, () =>
            client.audio.transcriptions.create({
              file: new File([wavOf(1)], "a.wav", { type: "audio/wav" }),
              model,
              response_format: format
            }).then(() => undefined, (e) => e))
          ok(error instanceof OpenAI.BadRequestError, format)
          strictEqual((error.error as { param?: string }).param, "response_format")
        }
      }
    )

    await t.step(
      "transcription: stream=true passes the transcript events, billed the done event's tokens",
      async () => {
        const text = transcriptSegments(3).map((s) => s.text).join(" ")
        const inputTokens = 30
        const outputTokens = Math.ceil(text.length / 4)
        const stream = await charged(
          gateway,
          Math.ceil(1.5 * (inputTokens * 2.5 + outputTokens * 10)),
          () =>
            client.audio.transcriptions.create({
              file: new File([wavOf(3)], "a.wav", { type: "audio/wav" }),
              model: "gpt-4o-transcribe",
              stream: true
            })
        )
        const deltas: Array<string> = []
        let done: { text: string; usage?: { input_tokens: number } } | undefined
        for await (const event of stream) {
          if (event.type === "transcript.text.delta") deltas.push(event.delta)
          if (event.type === "transcript.text.done") done = event
        }
        strictEqual(deltas.join(""), text)
        strictEqual(done?.text, text)
        strictEqual(done?.usage?.input_tokens, inputTokens)
        const refused = await charged(gateway, 0, () =>
          client.audio.transcriptions.create({
            file: new File([wavOf(1)], "a.wav", { type: "audio/wav" }),
            model: "whisper-1",
            stream: true
          }).then(() => undefined, (error) => error))
        ok(refused instanceof OpenAI.BadRequestError)
      }
    )

    await t.step(
      "transcription: an mp3 (the emulator's own speech) held and billed by the duration read from its bytes",
      async () => {
        const speech = await client.audio.speech.create({
          model: "tts-1",
          voice: "alloy",
          input: "Seventy characters of speech, read aloud and then heard back again...",
          response_format: "mp3"
        })
        const mp3 = new Uint8Array(await speech.arrayBuffer())
        const heard = () => (gateway.emulator.requests.at(-1)!.body as { file: { seconds: number } }).file.seconds
        // `text` reports no usage: billed the duration the gateway read, which must be what the emulator heard.
        await charged(gateway, -1, () =>
          client.audio.transcriptions.create({
            file: new File([mp3], "speech.mp3", { type: "audio/mpeg" }),
            model: "whisper-1",
            response_format: "text"
          }))
        const seconds = heard()
        ok(seconds > 4 && seconds < 4.3, `the emulator heard ${seconds} s`)
        // ceil(1.5 × ceil(ms) × 0.0001 USD/s × 10⁶ / 1000) in integers.
        strictEqual(lastCharge, Math.ceil(15 * Math.ceil(seconds * 1000) / 100))
        // `json` reports `usage.seconds` (whole seconds): billed that.
        const answer = await charged(gateway, -1, () =>
          client.audio.transcriptions.create({
            file: new File([mp3], "speech.mp3", { type: "audio/mpeg" }),
            model: "whisper-1"
          }))
        strictEqual(answer.text, transcriptSegments(heard()).map((segment) => segment.text).join(" "))
        const usage = (answer as unknown as { usage: { type: string; seconds: number } }).usage
        strictEqual(usage.type, "duration")
        strictEqual(lastCharge, whisperCost(usage.seconds))
        // The hold is the duration read rounded up (5 s: 750 units), not the size bound (the file at 8 kbit/s, over a
        // minute: more than 10,000 units), so a key with 2,000 units left is served.
        ok(whisperCost(durationBoundMillis(mp3.length) / 1000) > 2000)
        const small = new OpenAI({ apiKey: SMALL_KEY, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
        const served = await small.audio.transcriptions.create({
          file: new File([mp3], "speech.mp3", { type: "audio/mpeg" }),
          model: "whisper-1",
          response_format: "text"
        })
        strictEqual(served.trim(), transcriptSegments(heard()).map((segment) => segment.text).join(" "))
      }
    )

    await t.step(
      "transcription: stream=true events reach the caller as the upstream sends them, billed the done event's usage",
      async () => {
        gateway.emulator.setFaults([{ match: { path: "/v1/audio/transcriptions" }, paceMs: 150 }])
        try {
          const upstream = () => gateway.emulator.requests.findLast((r) => r.path === "/v1/audio/transcriptions")!
          const { firstWhileSending, deltas, done } = await charged(gateway, -1, async () => {
            const stream = await client.audio.transcriptions.create({
              file: new File([wavOf(5)], "a.wav", { type: "audio/wav" }),
              model: "gpt-4o-transcribe",
              stream: true
            })
            let firstWhileSending: boolean | undefined
            const deltas: Array<string> = []
            let done: { text: string; usage?: { input_tokens: number; output_tokens: number } } | undefined
            for await (const event of stream) {
              if (event.type === "transcript.text.delta") {
                // The emulator has not sent its last event yet when the first one reaches the caller.
                firstWhileSending ??= !upstream().completed
                deltas.push(event.delta)
              }
              if (event.type === "transcript.text.done") done = event
            }
            return { firstWhileSending, deltas, done }
          })
          strictEqual(firstWhileSending, true, "the first delta arrived before the upstream sent the last event")
          strictEqual(deltas.length, 5)
          strictEqual(deltas.join(""), done?.text)
          const usage = done!.usage!
          const reported = upstream().usage!
          deepStrictEqual([reported.input, reported.output], [usage.input_tokens, usage.output_tokens])
          strictEqual(lastCharge, Math.ceil(1.5 * (usage.input_tokens * 2.5 + usage.output_tokens * 10)))
        } finally {
          gateway.emulator.setFaults([])
        }
      }
    )

    await t.step(
      "transcription: a stream cut before transcript.text.done is billed the held audio and the text delivered",
      async () => {
        gateway.emulator.setFaults([{ match: { path: "/v1/audio/transcriptions" }, breakAfterEvents: 2 }])
        try {
          const deltas = await charged(gateway, -1, async () => {
            const stream = await client.audio.transcriptions.create({
              file: new File([wavOf(5)], "a.wav", { type: "audio/wav" }),
              model: "gpt-4o-transcribe",
              stream: true
            })
            const deltas: Array<string> = []
            try {
              for await (const event of stream) {
                if (event.type === "transcript.text.delta") deltas.push(event.delta)
              }
            } catch {
              // the cut reaches the caller as a failed stream
            }
            return deltas
          })
          strictEqual(deltas.length, 2)
          // 5 s held (the WAV header's duration): 50 audio tokens a second in, the delivered text / 4 out.
          const output = Math.ceil(deltas.join("").length / 4)
          strictEqual(lastCharge, Math.ceil(1.5 * (5 * 50 * 2.5 + output * 10)))
          // Broken before any event: nothing delivered, nothing charged.
          gateway.emulator.setFaults([{ match: { path: "/v1/audio/transcriptions" }, breakAfterEvents: 0 }])
          await charged(gateway, 0, async () => {
            const stream = await client.audio.transcriptions.create({
              file: new File([wavOf(5)], "a.wav", { type: "audio/wav" }),
              model: "gpt-4o-transcribe",
              stream: true
            })
            try {
              for await (const _ of stream) { /* nothing arrives */ }
            } catch {
              // the cut
            }
          })
        } finally {
          gateway.emulator.setFaults([])
        }
      }
    )

    await t.step("translation: whisper-1 text", async () => {
      const text = await charged(
        gateway,
        whisperCost(1),
        () =>
          client.audio.translations.create({
            file: new File([wavOf(1)], "a.wav", { type: "audio/wav" }),
            model: "whisper-1",
            response_format: "text"
          })
      )
      strictEqual(text, "Emulated segment 1.\n")
    })

    await t.step("moderations: text and image inputs, categories, free unless priced", async () => {
      const free = await charged(
        gateway,
        0,
        () => client.moderations.create({ model: "omni-moderation-latest", input: ["hello", "EMULATOR-FLAG now"] })
      )
      deepStrictEqual(free.results.map((result) => result.flagged), [false, true])
      strictEqual(free.results[1].categories.violence, true)
      const text = "an image and some words"
      const priced = await charged(
        gateway,
        Math.ceil(1.5 * Math.ceil(text.length / 4) * 4),
        () =>
          client.moderations.create({
            model: "omni-moderation-priced",
            input: [{ type: "text", text }, { type: "image_url", image_url: { url: "https://example.com/a.png" } }]
          })
      )
      deepStrictEqual(priced.results[0].category_applied_input_types.violence, ["text", "image"])
    })

    await t.step("bad input: a 400 naming the field, nothing charged", async () => {
      const cases: ReadonlyArray<{ name: string; param: string; send: () => Promise<unknown> }> = [
        {
          name: "30 MB file",
          param: "file",
          send: () =>
            client.audio.transcriptions.create({
              file: new File([wavOf(30 * 1024 * 1024 / 32_000)], "big.wav", { type: "audio/wav" }),
              model: "whisper-1"
            })
        },
        {
          name: "wrong MIME type",
          param: "file",
          send: () =>
            client.audio.transcriptions.create({
              file: new File([wavOf(1)], "a.wav", { type: "text/plain" }),
              model: "whisper-1"
            })
        },
        {
          name: "bytes that are not audio",
          param: "file",
          send: () =>
            client.audio.transcriptions.create({
              file: new File(["just some text"], "a.wav", { type: "audio/wav" }),
              model: "whisper-1"
            })
        },
        {
          name: "unknown transcript format",
          param: "response_format",
          send: () =>
            client.audio.transcriptions.create({
              file: new File([wavOf(1)], "a.wav", { type: "audio/wav" }),
              model: "whisper-1",
              response_format: "docx" as "json"
            })
        },
        {
          name: "unknown speech format",
          param: "response_format",
          send: () =>
            client.audio.speech.create({ model: "tts-1", voice: "alloy", input: "x", response_format: "ogg" as "mp3" })
        },
        {
          name: "speed out of range",
          param: "speed",
          send: () => client.audio.speech.create({ model: "tts-1", voice: "alloy", input: "x", speed: 9 })
        },
        {
          name: "speech input too long",
          param: "input",
          send: () => client.audio.speech.create({ model: "tts-1", voice: "alloy", input: "x".repeat(4097) })
        },
        {
          name: "moderation input part",
          param: "input[0]",
          send: () => client.moderations.create({ input: [{ type: "audio" } as never] })
        }
      ]
      for (const item of cases) {
        const error = await charged(gateway, 0, () => item.send().then(() => undefined, (error) => error))
        ok(error instanceof OpenAI.BadRequestError, `${item.name}: ${error}`)
        strictEqual(error.status, 400, item.name)
        strictEqual((error.error as { param?: string }).param, item.param, item.name)
      }
    })

    await t.step("an upstream refusal (instructions on tts-1) is the vendor's 400 and costs nothing", async () => {
      const error = await charged(
        gateway,
        0,
        () =>
          client.audio.speech.create({ model: "tts-1", voice: "alloy", input: "x", instructions: "Loud." }).then(
            () => undefined,
            (error) => error
          )
      )
      ok(error instanceof OpenAI.BadRequestError)
    })
  } finally {
    await gateway.close()
  }
})

Deno.test("audio: the AI SDK's generateSpeech and transcribe through the gateway", async () => {
  const gateway = await startGateway({ config })
  try {
    const openai = createOpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY })
    const text = "Spoken by the AI SDK."
    const speech = await charged(
      gateway,
      speechCost(text.length, 12),
      () =>
        generateSpeech({
          model: openai.speech("gpt-4o-mini-tts"),
          text,
          voice: "alloy",
          outputFormat: "wav"
        })
    )
    strictEqual(ascii(speech.audio.uint8Array, 0, 4), "RIFF")
    const transcript = await charged(
      gateway,
      whisperCost(2),
      () => transcribe({ model: openai.transcription("whisper-1"), audio: wavOf(2) })
    )
    strictEqual(transcript.text, transcriptSegments(2).map((s) => s.text).join(" "))
    strictEqual(transcript.segments.length, 2)
  } finally {
    await gateway.close()
  }
})

/** Token-priced speech cost: ceil(1.5 × (input × 0.6 + output × 12)) quota units (USD per 1M tokens). */
const speechTokenCost = (input: number, output: number) => Math.ceil(1.5 * (input * 0.6 + output * 12))

Deno.test("audio: token-priced speech (gpt-4o-mini-tts) billed the reported usage, or the raw audio's estimate", async (t) => {
  const gateway = await startGateway({
    config: (url: string) => config(url, { input: 0.6, output: 12 }, { input: 0.6, output: 12 })
  })
  const client = new OpenAI({ apiKey: KEY, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
  try {
    await t.step("sse: billed exactly the usage of speech.audio.done", async () => {
      const input = "Billed by the tokens the vendor reports. ".repeat(3)
      const response = await charged(gateway, -1, async () => {
        const answer = await client.audio.speech.create({
          model: "gpt-4o-mini-tts",
          voice: "coral",
          input,
          instructions: "Slow and warm.",
          response_format: "pcm",
          stream_format: "sse"
        })
        return new TextDecoder().decode((await readAll(answer.body!)).bytes)
      })
      const events = response.split("\n\n").filter((frame) => frame.startsWith("data: ")).map((frame) =>
        JSON.parse(frame.slice(6))
      )
      const done = events.at(-1)
      strictEqual(done.type, "speech.audio.done")
      const usage = done.usage as { input_tokens: number; output_tokens: number; total_tokens: number }
      ok(usage.input_tokens > 0 && usage.output_tokens > 0)
      strictEqual(usage.total_tokens, usage.input_tokens + usage.output_tokens)
      strictEqual(lastCharge, speechTokenCost(usage.input_tokens, usage.output_tokens))
    })

    await t.step("raw pcm: billed the estimate (characters / 4 in, 1250 audio tokens a minute out)", async () => {
      const input = "Raw audio carries no usage."
      const instructions = "Bright."
      const { bytes } = await charged(gateway, -1, async () => {
        const answer = await client.audio.speech.create({
          model: "gpt-4o-mini-tts",
          voice: "alloy",
          input,
          instructions,
          response_format: "pcm"
        })
        strictEqual(answer.headers.get("content-type"), "audio/pcm")
        return await readAll(answer.body!)
      })
      strictEqual(bytes.length, Math.round(24 * speechMillis(input, 1)) * 2)
      const inputTokens = Math.ceil((input.length + instructions.length) / 4)
      const outputTokens = Math.ceil(bytes.length / 48_000 * 1250 / 60)
      strictEqual(lastCharge, speechTokenCost(inputTokens, outputTokens))
    })

    await t.step("sse cut before speech.audio.done: billed the estimate of the audio delivered", async () => {
      gateway.emulator.setFaults([{ match: { path: "/v1/audio/speech" }, breakAfterEvents: 2 }])
      try {
        const input = "Cut short after two events of audio, long enough for more than two. ".repeat(2)
        const received = await charged(gateway, -1, async () => {
          const answer = await client.audio.speech.create({
            model: "gpt-4o-mini-tts",
            voice: "coral",
            input,
            response_format: "pcm",
            stream_format: "sse"
          })
          const decoder = new TextDecoder()
          let text = ""
          try {
            for await (const chunk of answer.body!) text += decoder.decode(chunk, { stream: true })
          } catch {
            // the cut reaches the caller as a failed body
          }
          return text
        })
        const events = received.split("\n\n").filter((frame) => frame.startsWith("data: ")).map((frame) =>
          JSON.parse(frame.slice(6))
        )
        strictEqual(events.length, 2)
        ok(events.every((event) => event.type === "speech.audio.delta"))
        const audioBytes = events.reduce((sum, event) => sum + atob(event.audio).length, 0)
        strictEqual(
          lastCharge,
          speechTokenCost(Math.ceil(input.length / 4), Math.ceil(audioBytes / 48_000 * 1250 / 60))
        )
      } finally {
        gateway.emulator.setFaults([])
      }
    })

    await t.step(
      "sse cut by the caller: billed the input and the audio the gateway passed on, below the hold",
      async () => {
        gateway.emulator.setFaults([{ match: { path: "/v1/audio/speech" }, paceMs: 25 }])
        try {
          const input = "A long passage for a caller who leaves early. ".repeat(6)
          const before = await totalUsed(gateway)
          const answer = await client.audio.speech.create({
            model: "gpt-4o-mini-tts",
            voice: "coral",
            input,
            response_format: "pcm",
            stream_format: "sse"
          })
          const reader = answer.body!.getReader()
          ok(!(await reader.read()).done)
          await reader.cancel()
          await eventually(() => lastSpeech(gateway).aborted, "the gateway aborts the upstream call")
          await eventually(async () => (await totalUsed(gateway)) > before, "the cut stream is billed")
          const charge = (await totalUsed(gateway)) - before
          // The emulator's events carry 4096 bytes of 24 kHz 16-bit PCM each: k of them were passed on, 0 < k < all.
          const events = Math.ceil(Math.round(24 * speechMillis(input, 1)) * 2 / 4096)
          const possible = Array.from(
            { length: events - 1 },
            (_, k) => speechTokenCost(Math.ceil(input.length / 4), Math.ceil((k + 1) * 4096 / 48_000 * 1250 / 60))
          )
          ok(possible.includes(charge), `charged ${charge}, not the estimate of a whole number of events`)
          // Below the hold: the input's UTF-8 bytes + 32 and 2 audio tokens a character.
          ok(charge < speechTokenCost(input.length + 32, input.length * 2))
        } finally {
          gateway.emulator.setFaults([])
        }
      }
    )

    await t.step("a token-priced speech stream broken before any audio costs nothing", async () => {
      gateway.emulator.setFaults([{ match: { path: "/v1/audio/speech" }, breakAfterEvents: 0 }])
      try {
        for (const stream_format of ["sse", "audio"] as const) {
          await charged(gateway, 0, async () => {
            const error = await client.audio.speech.create({
              model: "gpt-4o-mini-tts",
              voice: "alloy",
              input: "Never heard.",
              response_format: "pcm",
              stream_format
            }).then(() => undefined, (error) => error)
            ok(error instanceof OpenAI.APIError, `${stream_format}: ${error}`)
          })
        }
      } finally {
        gateway.emulator.setFaults([])
      }
    })

    await t.step("gemini channel: billed the usageMetadata of the generate-content answer", async () => {
      const input = "Read by the generate-content voice, priced by tokens."
      const response = await charged(gateway, -1, () =>
        client.audio.speech.create({
          model: "gemini-2.5-flash-preview-tts",
          voice: "Kore",
          input,
          response_format: "wav"
        }))
      const { bytes } = await readAll(response.body!)
      strictEqual(ascii(bytes, 0, 4), "RIFF")
      const upstream = gateway.emulator.requests.at(-1)!
      ok(upstream.path.endsWith(":generateContent"), upstream.path)
      const reported = upstream.usage!
      ok(reported.input > 0 && reported.output > 0)
      strictEqual(lastCharge, speechTokenCost(reported.input, reported.output))
      strictEqual(response.headers.get("x-sluice-cost"), (lastCharge / 1e6).toFixed(6))
    })

    await t.step("a failed token-priced speech call costs nothing", async () => {
      gateway.emulator.setFaults([{ match: { path: "/v1/audio/speech" }, status: 500 }])
      try {
        await charged(gateway, 0, async () => {
          const error = await client.audio.speech.create({ model: "gpt-4o-mini-tts", voice: "alloy", input: "No." })
            .then(() => undefined, (error) => error)
          ok(error instanceof OpenAI.APIError, String(error))
        })
      } finally {
        gateway.emulator.setFaults([])
      }
    })
  } finally {
    await gateway.close()
  }
})

Deno.test("audio: a streamed transcript whose charge no journal can hold ends with the ledger's error event, not transcript.text.done", async () => {
  const gateway = await startGateway({ config, store: "postgres" })
  try {
    const transcribe = async () => {
      const form = new FormData()
      form.set("file", new File([wavOf(2)], "a.wav", { type: "audio/wav" }))
      form.set("model", "gpt-4o-transcribe")
      form.set("stream", "true")
      const response = await fetch(`${gateway.url}/v1/audio/transcriptions`, {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}` },
        body: form
      })
      strictEqual(response.status, 200)
      return await response.text()
    }
    // A first transcript takes the lease: the hold below is served from memory, as in an outage.
    await transcribe()
    // The journal table is gone for a while (and this gateway has no spill file): no journal can hold the charge.
    await gateway.query("ALTER TABLE charge_journal RENAME TO charge_journal_away")
    const withheld = await transcribe()
    await gateway.query("ALTER TABLE charge_journal_away RENAME TO charge_journal", false)
    ok(withheld.includes('"code":"quota_ledger_unavailable"'), withheld)
    ok(!withheld.includes("transcript.text.done"), withheld)
    const again = await transcribe()
    ok(again.includes("transcript.text.done") && !again.includes("quota_ledger_unavailable"), again)
  } finally {
    await gateway.close()
  }
})
