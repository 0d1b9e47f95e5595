/**
 * The relay of the audio and moderation routes: the one-answer billed
 * sequence (`runOneShot`: limits → hold → `Failover` → settlement) with an
 * attempt per operation, on the channel types `upstreams/AudioAdapter.ts`
 * lists for it.
 *
 * - Speech: the caller's JSON forwarded with the model mapped; the accepted
 *   answer's body is streamed to the caller as it arrives (audio bytes, or
 *   `speech.audio.*` SSE events). Billed `per_1m_characters` × the input's
 *   characters (held and settled alike: the input is the whole measure).
 *   A speech model priced by tokens instead (`input`/`output`, as
 *   `gpt-4o-mini-tts`) is held at a safe bound (input: the UTF-8 bytes of
 *   `input` and `instructions` plus `SPEECH_PROMPT_OVERHEAD`, since a token
 *   is at least one byte; output: `SPEECH_OUTPUT_TOKENS_PER_CHARACTER` a
 *   character ÷ `speed`) and settled when the stream ends: from the usage
 *   of `speech.audio.done` with `stream_format: "sse"`, else (raw audio,
 *   which carries no usage) from `speechEstimate`.
 * - Transcription and translation: the caller's form forwarded with the model
 *   mapped. A streamed transcription (`stream=true`) is read whole before it
 *   is passed on, since its bill is in its last event. Billed `per_second` × the duration: held from the WAV header, or
 *   from the file size at 8 kbit/s for other containers; settled from the
 *   vendor's `usage: {type: "duration", seconds}` (or verbose_json's
 *   `duration`, or a stream's `transcript.text.done` usage) when reported, else the duration measured from the header,
 *   else the hold. A token-priced model is billed the vendor's
 *   `usage: {type: "tokens"}` (held at the hold's duration × 50 audio tokens
 *   a second and the most output the held text can be).
 * - Moderations: free unless the model is priced (`input`: the prompt
 *   estimate, as moderation answers carry no usage).
 *
 * A failed call costs nothing.
 *
 * @since 0.1.0
 */
import { Cause, Clock, Context, Effect, Layer, Stream } from "effect"
import { HttpServerResponse } from "effect/http"
import { emptyUsage, type Usage } from "../canonical/Usage.ts"
import { wavOf } from "../formats/audio/AudioFile.ts"
import { readableBody } from "../http/ReadableBody.ts"
import { CurrentRequest, usageRequestId } from "../observability/RequestRecord.ts"
import { audioCost, characterCost, holdPrice, type Price, textCost } from "../domain/Pricing.ts"
import { type GatewayError, InvalidRequest, ModelNotFound, UpstreamFailed } from "../errors/GatewayError.ts"
import { classifyGeminiError } from "../formats/gemini/generate-content/ErrorBody.ts"
import { classifyOpenAiError } from "../formats/openai/shared/ErrorBody.ts"
import type { Principal } from "../services/Auth.ts"
import { type Candidate, ChannelRouter } from "../services/ChannelRouter.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"
import {
  channelTimeouts,
  encodeForm,
  UpstreamClient,
  type UpstreamResponse
} from "../upstreams/transport/UpstreamClient.ts"
import { Catalog, type Limits } from "../storage/Catalog.ts"
import { audioAdapters, type AudioOperation } from "../upstreams/AudioAdapter.ts"
import { runBilled } from "./BilledPipeline.ts"
import { oneShotServices, postForJson, priceFor, runOneShot } from "./OneShot.ts"

/** A speech request, checked by the route. @category models */
export interface SpeechInput {
  readonly operation: "speech"
  readonly principal: Principal
  readonly model: string
  /** The caller's JSON body, forwarded with only `model` replaced. */
  readonly body: Record<string, unknown>
  /** Characters of `input` (what `per_1m_characters` bills). */
  readonly characters: number
  /** The content type of the asked format (used when the upstream names none). */
  readonly contentType: string
}

/** A transcription or translation request, checked by the route. @category models */
export interface TranscriptionInput {
  readonly operation: "transcriptions" | "translations"
  readonly principal: Principal
  readonly model: string
  /** The caller's form, forwarded with only `model` replaced. */
  readonly form: FormData
  /** The duration read from the file's header (milliseconds), when it has one that tells. */
  readonly measuredMillis: number | undefined
  /** A duration the file does not exceed (milliseconds): the hold's. */
  readonly boundMillis: number
  /** The file's media type, as its bytes show it (`audio/wav`, …). */
  readonly mimeType: string
}

/** A moderation request, checked by the route. @category models */
export interface ModerationInput {
  readonly operation: "moderations"
  readonly principal: Principal
  readonly model: string
  readonly body: Record<string, unknown>
  /** The prompt estimate of its text (billed when the model has an input price). */
  readonly promptTokens: number
}

/** What an audio route hands the relay. @category models */
export type AudioRelayInput = SpeechInput | TranscriptionInput | ModerationInput

/** Audio tokens a second assumed for a token-priced transcription's hold (above OpenAI's observed rate). */
const AUDIO_TOKENS_PER_SECOND = 50

/** Output tokens a transcription's hold allows per second of audio (a fast speaker is ~4 tokens a second). */
const TEXT_TOKENS_PER_SECOND = 20

const isCharacterPriced = (price: Price): boolean => price.free || price.perMillionCharacters !== undefined
const isTokenPriced = (price: Price): boolean => price.input !== undefined || price.output !== undefined
const isSpeechPriced = (price: Price): boolean => isCharacterPriced(price) || isTokenPriced(price)

/** Tokens of the prompt a speech model adds around the caller's text (a margin of the input's hold). */
const SPEECH_PROMPT_OVERHEAD = 32

/**
 * Audio output tokens a speech hold allows per input character at speed 1:
 * speech runs at ~15 characters a second, and OpenAI's published estimate
 * for `gpt-4o-mini-tts` ($0.015 a minute at $12 per 1M audio tokens) is
 * 1250 audio tokens a minute, ~1.4 a character; 2 leaves a margin.
 */
const SPEECH_OUTPUT_TOKENS_PER_CHARACTER = 2

/**
 * Audio tokens a second of speech, for raw audio (which reports no usage):
 * 1250 a minute, from OpenAI's published estimate for `gpt-4o-mini-tts`
 * ($0.015 a minute at $12 per 1M audio tokens; OpenAI documents no per-second
 * rate as such).
 */
const SPEECH_AUDIO_TOKENS_PER_SECOND = 1250 / 60

/** Characters of speech a second at speed 1 (for formats whose bytes do not tell a duration). */
const SPEECH_CHARACTERS_PER_SECOND = 15

/** Bytes a second of OpenAI's `pcm` and `wav` speech: 24 kHz, 16-bit, mono. */
const SPEECH_PCM_BYTES_PER_SECOND = 48_000

/** The most of an SSE line kept while waiting for its end (a longer one is skipped). */
const SSE_LINE_LIMIT = 4 * 1024 * 1024

/** UTF-8 bytes of `text`. */
const utf8Length = (text: string): number => new TextEncoder().encode(text).length

/**
 * The token usage of a raw-audio speech answer, which carries none: input
 * ceil((characters of `input` + `instructions`) / 4), the text routes'
 * estimate; output the audio's seconds × `SPEECH_AUDIO_TOKENS_PER_SECOND`,
 * the seconds measured from the delivered bytes for `pcm` and `wav` (24 kHz
 * 16-bit mono, less a 44-byte header), else taken as characters ÷ (15 ×
 * `speed`); never above `outputCap`. `undefined` when no audio was delivered
 * (nothing billed).
 *
 * @category billing
 */
export const speechEstimate = (options: {
  readonly format: string
  readonly deliveredBytes: number
  readonly characters: number
  readonly instructionCharacters: number
  readonly speed: number
  readonly outputCap: number
}): Usage | undefined => {
  if (options.deliveredBytes <= 0) return undefined
  const seconds = options.format === "pcm"
    ? options.deliveredBytes / SPEECH_PCM_BYTES_PER_SECOND
    : options.format === "wav"
    ? Math.max(0, options.deliveredBytes - 44) / SPEECH_PCM_BYTES_PER_SECOND
    : options.characters / (SPEECH_CHARACTERS_PER_SECOND * options.speed)
  return {
    inputTokens: Math.ceil((options.characters + options.instructionCharacters) / 4),
    outputTokens: Math.min(options.outputCap, Math.ceil(seconds * SPEECH_AUDIO_TOKENS_PER_SECOND))
  }
}

/**
 * Reads a `speech.audio.*` SSE stream as it passes: the usage of its
 * `speech.audio.done` event (platform.openai.com/docs/api-reference/audio/speech-audio-done-event:
 * `usage: {input_tokens, output_tokens, total_tokens}`) and the audio bytes
 * of its `speech.audio.delta` events so far.
 */
const speechEventReader = () => {
  const decoder = new TextDecoder()
  let pending = ""
  let skipping = false
  let usage: Usage | undefined
  let audioBytes = 0
  const finite = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value) && value >= 0
  const line = (text: string) => {
    if (!text.startsWith("data:")) return
    let event: { type?: unknown; audio?: unknown; usage?: { input_tokens?: unknown; output_tokens?: unknown } }
    try {
      event = JSON.parse(text.slice(5))
    } catch {
      return
    }
    if (typeof event !== "object" || event === null) return
    if (event.type === "speech.audio.delta" && typeof event.audio === "string") {
      audioBytes += Math.floor(event.audio.replace(/=+$/, "").length * 3 / 4)
    } else if (event.type === "speech.audio.done" && typeof event.usage === "object" && event.usage !== null) {
      const { input_tokens, output_tokens } = event.usage
      if (finite(input_tokens) && finite(output_tokens)) {
        usage = { inputTokens: Math.trunc(input_tokens), outputTokens: Math.trunc(output_tokens) }
      }
    }
  }
  return {
    push: (chunk: Uint8Array) => {
      const lines = (pending + decoder.decode(chunk, { stream: true })).split("\n")
      pending = lines.pop() ?? ""
      for (const text of lines) {
        if (skipping) skipping = false
        else line(text.trim())
      }
      if (pending.length > SSE_LINE_LIMIT) {
        pending = ""
        skipping = true
      }
    },
    usage: () => usage,
    audioBytes: () => audioBytes
  }
}
const isDurationPriced = (price: Price): boolean => price.free || price.perSecond !== undefined || isTokenPriced(price)

/** An answer a transcription attempt accepted: the text as it came, its type, and what it bills. */
interface TranscriptionAnswer {
  readonly text: string
  readonly contentType: string
  readonly usage: Usage
  readonly cost: bigint
}

/** A header value safe to pass on (printable ASCII, short), else `fallback`. */
const safeHeader = (value: string | undefined, fallback: string): string =>
  value !== undefined && value.length <= 100 && /^[\x20-\x7e]+$/.test(value) ? value : fallback

/**
 * The data of a streamed transcription's `transcript.text.done` event (which
 * carries the usage), when `text` is such a stream
 * (platform.openai.com/docs/api-reference/audio/transcript-text-done-event).
 */
const streamedDone = (text: string): string | undefined => {
  if (!text.startsWith("data:") && !text.startsWith("event:")) return undefined
  for (const line of text.split("\n").reverse()) {
    if (!line.startsWith("data:")) continue
    const data = line.slice(5).trim()
    try {
      const event = JSON.parse(data) as { type?: unknown }
      if (event.type === "transcript.text.done") return data
    } catch {
      continue
    }
  }
  return undefined
}

/** The `usage` a transcription answer reports, if JSON with one; `duration` of verbose_json counts as seconds. */
const reportedUsage = (text: string): { seconds?: number; tokens?: Usage } => {
  let parsed: unknown
  try {
    parsed = JSON.parse(streamedDone(text) ?? text)
  } catch {
    return {}
  }
  if (typeof parsed !== "object" || parsed === null) return {}
  const answer = parsed as Record<string, unknown>
  const usage = answer.usage as Record<string, unknown> | undefined
  const finite = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value) && value >= 0
  if (typeof usage === "object" && usage !== null) {
    if (usage.type === "duration" && finite(usage.seconds)) return { seconds: usage.seconds }
    if (usage.type === "tokens" && finite(usage.input_tokens) && finite(usage.output_tokens)) {
      return { tokens: { inputTokens: Math.trunc(usage.input_tokens), outputTokens: Math.trunc(usage.output_tokens) } }
    }
  }
  return finite(answer.duration) ? { seconds: answer.duration } : {}
}

/**
 * Why a speech request cannot go to a generate-content channel, by field, or
 * `undefined` when it can: Gemini makes 24 kHz 16-bit PCM
 * (ai.google.dev/gemini-api/docs/speech-generation), which only `wav` and
 * `pcm` hold without loss; it takes a prebuilt voice by name, no `speed`,
 * and answers whole (no `sse` events).
 */
const geminiSpeechRefusal = (body: Record<string, unknown>): InvalidRequest | undefined => {
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

/** The generate-content body of a speech request: the text (after the style `instructions`), audio out, the voice. */
const geminiSpeechBody = (body: Record<string, unknown>) => ({
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

/** Inline data Gemini takes in one request (20 MB, base64 included: ai.google.dev/gemini-api/docs/audio). */
const GEMINI_INLINE_FILE_LIMIT = Math.floor(20 * 1024 * 1024 * 3 / 4) - 64 * 1024

/**
 * Why a transcription cannot go to a generate-content channel, by field, or
 * `undefined` when it can: Gemini answers plain text without timestamps
 * (so json and text only, no `timestamp_granularities[]`), translates
 * nothing here, and takes at most 20 MB of inline data.
 */
const geminiTranscriptionRefusal = (input: TranscriptionInput): InvalidRequest | undefined => {
  const format = input.form.get("response_format") ?? "json"
  if (format !== "json" && format !== "text") {
    return new InvalidRequest({
      message: `\`response_format\` ${
        JSON.stringify(format)
      } needs timestamps, which a gemini channel does not give; ask for json or text.`,
      param: "response_format"
    })
  }
  if (input.form.get("stream") === "true") {
    return new InvalidRequest({ message: "A gemini channel does not stream transcripts here.", param: "stream" })
  }
  if (input.form.has("timestamp_granularities[]")) {
    return new InvalidRequest({
      message: "A gemini channel gives no timestamps.",
      param: "timestamp_granularities[]"
    })
  }
  const file = input.form.get("file")
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
 * caller's `language` and `prompt` as context) and the audio as inline data
 * (ai.google.dev/gemini-api/docs/audio, "Get a transcript").
 */
const geminiTranscriptionBody = (input: TranscriptionInput) =>
  Effect.promise(async () => {
    const file = input.form.get("file") as File
    const language = input.form.get("language")
    const context = input.form.get("prompt")
    const instruction = "Generate a verbatim transcript of the speech in this audio. Answer with the transcript only." +
      (typeof language === "string" && language.length > 0 ? ` The speech is in the language "${language}".` : "") +
      (typeof context === "string" && context.length > 0 ? ` Context for spelling: ${context}` : "")
    return {
      contents: [{
        role: "user",
        parts: [
          { text: instruction },
          { inlineData: { mimeType: input.mimeType, data: base64Of(new Uint8Array(await file.arrayBuffer())) } }
        ]
      }]
    }
  })

/** The text of a generate-content answer (its non-thought text parts) and its token usage, if it has text. */
const geminiTextOf = (json: unknown): { readonly text: string; readonly usage: Usage | undefined } | undefined => {
  const answer = (typeof json === "object" && json !== null ? json : {}) as {
    candidates?: Array<{ content?: { parts?: Array<{ text?: unknown; thought?: unknown }> } }>
    usageMetadata?: { promptTokenCount?: unknown; candidatesTokenCount?: unknown }
  }
  const parts = Array.isArray(answer.candidates) ? answer.candidates[0]?.content?.parts ?? [] : []
  const texts = (Array.isArray(parts) ? parts : []).filter((part) =>
    typeof part?.text === "string" && part.thought !== true
  ).map((part) => part.text as string)
  if (texts.length === 0) return undefined
  const count = (value: unknown) =>
    typeof value === "number" && Number.isFinite(value) && value >= 0 ? Math.trunc(value) : undefined
  const input = count(answer.usageMetadata?.promptTokenCount)
  const output = count(answer.usageMetadata?.candidatesTokenCount)
  return {
    text: texts.join("").trim(),
    usage: input === undefined ? undefined : { inputTokens: input, outputTokens: output ?? 0 }
  }
}

/** @category services */
export class AudioRelay extends Context.Service<AudioRelay, {
  /**
   * Runs `input` on the first candidate that serves its operation. Fails
   * with `ModelNotFound` when no candidate serves it, `ModelNotPriced` when
   * the model has no price this operation bills by (speech:
   * `per_1m_characters` or token prices; transcription: `per_second` or token prices;
   * moderations are free unless priced), and the relay's usual quota,
   * rate-limit and upstream failures.
   */
  readonly run: (input: AudioRelayInput) => Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError>
}>()("sluice/relay/AudioRelay") {
  /** Needs the one-shot services, `UpstreamClient`, `GatewaySettings` and `Catalog`. */
  static readonly layer = Layer.effect(
    AudioRelay,
    Effect.gen(function* () {
      const router = yield* ChannelRouter
      const client = yield* UpstreamClient
      const settings = yield* GatewaySettings
      const catalog = yield* Catalog
      const services = yield* oneShotServices

      const candidatesFor = (principal: Principal, model: string, operation: AudioOperation) =>
        Effect.gen(function* () {
          const routed = yield* router.candidates(principal, model)
          const serving = routed.filter((candidate) =>
            audioAdapters[candidate.channel.type]?.serves.has(operation) === true
          )
          if (serving.length === 0) return yield* new ModelNotFound({ model })
          return serving
        })

      const targetOf = (candidate: Candidate, operation: AudioOperation) =>
        audioAdapters[candidate.channel.type]!.target(
          candidate.channel,
          candidate.key.key,
          operation,
          candidate.upstreamModel
        )

      /** The upstream's answer, streamed on (OpenAI), or PCM made whole into the asked container (generate-content). */
      type SpeechAnswer =
        | { readonly _tag: "stream"; readonly response: UpstreamResponse }
        | {
          readonly _tag: "bytes"
          readonly bytes: Uint8Array
          readonly contentType: string
          /** The generate-content answer's `usageMetadata` tokens, when it reported them. */
          readonly usage: Usage | undefined
        }

      const openAiSpeech = (input: SpeechInput, candidate: Candidate): Effect.Effect<SpeechAnswer, UpstreamFailed> =>
        Effect.gen(function* () {
          const target = targetOf(candidate, "speech")
          const body: Record<string, unknown> = { ...input.body, model: candidate.upstreamModel }
          for (const param of candidate.channel.settings.strip_params ?? []) delete body[param]
          const response = yield* client.post(
            target.url,
            { ...target.headers, "content-type": "application/json" },
            JSON.stringify(body),
            channelTimeouts(candidate.channel, settings)
          )
          if (response.status < 200 || response.status >= 300) {
            const text = yield* Effect.orElseSucceed(response.text, () => "")
            const classified = classifyOpenAiError(response.status, text)
            return yield* new UpstreamFailed({
              kind: classified.kind,
              status: response.status,
              message: classified.message,
              channelId: candidate.channel.id
            })
          }
          return { _tag: "stream" as const, response }
        })

      const geminiSpeech = (input: SpeechInput, candidate: Candidate): Effect.Effect<SpeechAnswer, UpstreamFailed> =>
        Effect.gen(function* () {
          const target = targetOf(candidate, "speech")
          const { json } = yield* postForJson(
            client,
            settings,
            candidate.channel,
            target,
            JSON.stringify(geminiSpeechBody(input.body)),
            classifyGeminiError
          )
          const audio = geminiPcmOf(json)
          if (audio === undefined) {
            return yield* new UpstreamFailed({
              kind: "bad-body",
              status: 200,
              message: "The generate-content answer has no 16-bit PCM audio.",
              channelId: candidate.channel.id
            })
          }
          const wav = input.body.response_format === "wav"
          const metadata = (json as { usageMetadata?: { promptTokenCount?: unknown; candidatesTokenCount?: unknown } })
            ?.usageMetadata
          const count = (value: unknown) =>
            typeof value === "number" && Number.isFinite(value) && value >= 0 ? Math.trunc(value) : undefined
          const prompt = count(metadata?.promptTokenCount)
          return {
            _tag: "bytes" as const,
            bytes: wav ? wavOf(audio.pcm, audio.rate) : audio.pcm,
            contentType: wav ? "audio/wav" : "audio/pcm",
            usage: prompt === undefined
              ? undefined
              : { inputTokens: prompt, outputTokens: count(metadata?.candidatesTokenCount) ?? 0 }
          }
        })

      const speech = (input: SpeechInput) =>
        Effect.gen(function* () {
          const started = yield* Clock.currentTimeMillis
          const serving = yield* candidatesFor(input.principal, input.model, "speech")
          const refusal = geminiSpeechRefusal(input.body)
          const candidates = refusal === undefined
            ? serving
            : serving.filter((candidate) => audioAdapters[candidate.channel.type]!.wire !== "gemini")
          if (candidates.length === 0 && refusal !== undefined) return yield* refusal
          const { price, ratio, limits } = yield* priceFor(
            catalog,
            input.model,
            input.principal.group,
            isSpeechPriced
          )
          const attempt = (candidate: Candidate) =>
            audioAdapters[candidate.channel.type]!.wire === "gemini"
              ? geminiSpeech(input, candidate)
              : openAiSpeech(input, candidate)
          if (!isCharacterPriced(price)) {
            return yield* tokenPricedSpeech(input, { price, ratio, limits, started, candidates, attempt })
          }
          const cost = characterCost(ratio, price, input.characters)
          return yield* runOneShot(services, {
            principal: input.principal,
            groupLimits: limits,
            model: input.model,
            price,
            ratio,
            promptTokens: 0,
            started,
            hold: cost,
            candidates,
            attempt,
            usageOf: () => emptyUsage,
            costOf: () => cost,
            respond: (answer) => {
              if (answer._tag === "bytes") {
                return HttpServerResponse.uint8Array(answer.bytes, { contentType: answer.contentType })
              }
              const upstream = answer.response
              const body = Stream.unfold(
                undefined,
                () =>
                  Effect.map(upstream.read, (chunk) => chunk === undefined ? undefined : [chunk, undefined] as const)
              ).pipe(Stream.ensuring(Effect.sync(upstream.abort)))
              return HttpServerResponse.stream(body, {
                contentType: safeHeader(upstream.headers["content-type"], input.contentType),
                headers: { "cache-control": "no-cache" }
              })
            }
          })
        })

      /**
       * A token-priced speech request on the billed pipeline: held at the
       * bounds of the module doc, the audio streamed on as it comes and
       * billed when it ends (the `speech.audio.done` usage, else
       * `speechEstimate` of what was delivered), durably before the caller
       * sees the end.
       */
      const tokenPricedSpeech = (
        input: SpeechInput,
        request: {
          readonly price: Price
          readonly ratio: bigint
          readonly limits: Limits | undefined
          readonly started: number
          readonly candidates: ReadonlyArray<Candidate>
          readonly attempt: (candidate: Candidate) => Effect.Effect<SpeechAnswer, UpstreamFailed>
        }
      ) =>
        Effect.gen(function* () {
          const record = yield* CurrentRequest
          const instructions = typeof input.body.instructions === "string" ? input.body.instructions : ""
          const speed = typeof input.body.speed === "number" && input.body.speed > 0 ? input.body.speed : 1
          const format = typeof input.body.response_format === "string" ? input.body.response_format : "mp3"
          const inputBound = utf8Length(String(input.body.input)) + utf8Length(instructions) + SPEECH_PROMPT_OVERHEAD
          const outputCap = Math.ceil(input.characters * SPEECH_OUTPUT_TOKENS_PER_CHARACTER / speed)
          const estimate = (deliveredBytes: number) =>
            speechEstimate({
              format,
              deliveredBytes,
              characters: input.characters,
              instructionCharacters: [...instructions].length,
              speed,
              outputCap
            })
          return yield* runBilled(services, {
            principal: input.principal,
            groupLimits: request.limits,
            model: input.model,
            price: request.price,
            ratio: request.ratio,
            promptTokens: 0,
            outputCap,
            started: request.started,
            stream: true,
            requestId: usageRequestId(record),
            hold: textCost(request.ratio, holdPrice(request.price), inputBound, outputCap),
            candidates: request.candidates,
            attempt: () => request.attempt,
            deliver: (accepted, context) =>
              Effect.gen(function* () {
                const answer = accepted.value
                if (answer._tag === "bytes") {
                  return yield* context.answerJson(
                    accepted,
                    { usage: answer.usage ?? estimate(answer.bytes.length) },
                    HttpServerResponse.uint8Array(answer.bytes, { contentType: answer.contentType })
                  )
                }
                const upstream = answer.response
                const events = input.body.stream_format === "sse" ? speechEventReader() : undefined
                let deliveredBytes = 0
                const pull: Effect.Effect<ReadonlyArray<Uint8Array>, Cause.Done> = Effect.flatMap(
                  Effect.orDie(upstream.read),
                  (chunk) => {
                    if (chunk === undefined) return Cause.done()
                    deliveredBytes += chunk.length
                    events?.push(chunk)
                    return Effect.succeed([chunk])
                  }
                )
                const finalizer = Effect.suspend(() => {
                  upstream.abort()
                  const usage = events === undefined
                    ? estimate(deliveredBytes)
                    : events.usage() ?? estimate(events.audioBytes())
                  context.settlement.update((meter) => ({ ...meter, usage, final: usage !== undefined, status: 200 }))
                  return Effect.andThen(
                    context.settle(accepted.candidate, accepted.attempt),
                    context.settlement.durable
                  )
                })
                const body = readableBody(pull, Effect.asVoid(finalizer), yield* Effect.context<never>())
                context.handOff()
                record?.defer()
                return HttpServerResponse.raw(body, {
                  contentType: safeHeader(upstream.headers["content-type"], input.contentType),
                  headers: { "cache-control": "no-cache" }
                })
              })
          })
        })

      const transcription = (input: TranscriptionInput) =>
        Effect.gen(function* () {
          const started = yield* Clock.currentTimeMillis
          const serving = yield* candidatesFor(input.principal, input.model, input.operation)
          const refusal = geminiTranscriptionRefusal(input)
          const candidates = refusal === undefined
            ? serving
            : serving.filter((candidate) => audioAdapters[candidate.channel.type]!.wire !== "gemini")
          if (candidates.length === 0 && refusal !== undefined) return yield* refusal
          const { price, ratio, limits } = yield* priceFor(
            catalog,
            input.model,
            input.principal.group,
            isDurationPriced
          )
          const byTokens = !price.free && price.perSecond === undefined
          const boundSeconds = Math.ceil(input.boundMillis / 1000)
          const hold = byTokens
            ? textCost(
              ratio,
              holdPrice(price),
              boundSeconds * AUDIO_TOKENS_PER_SECOND,
              boundSeconds * TEXT_TOKENS_PER_SECOND
            )
            : audioCost(ratio, price, input.boundMillis)
          const billed = (
            text: string,
            reported: { seconds?: number; tokens?: Usage } = reportedUsage(text)
          ): { usage: Usage; cost: bigint } => {
            if (byTokens) {
              const usage = reported.tokens ?? {
                inputTokens: boundSeconds * AUDIO_TOKENS_PER_SECOND,
                outputTokens: Math.ceil(text.length / 4)
              }
              return { usage, cost: textCost(ratio, price, usage.inputTokens, usage.outputTokens) }
            }
            const millis = reported.seconds !== undefined
              ? Math.ceil(reported.seconds * 1000)
              : input.measuredMillis ?? input.boundMillis
            return { usage: reported.tokens ?? emptyUsage, cost: audioCost(ratio, price, millis) }
          }
          const geminiAttempt = (candidate: Candidate): Effect.Effect<TranscriptionAnswer, UpstreamFailed> =>
            Effect.gen(function* () {
              const target = targetOf(candidate, input.operation)
              const { json } = yield* postForJson(
                client,
                settings,
                candidate.channel,
                target,
                JSON.stringify(yield* geminiTranscriptionBody(input)),
                classifyGeminiError
              )
              const heard = geminiTextOf(json)
              if (heard === undefined) {
                return yield* new UpstreamFailed({
                  kind: "bad-body",
                  status: 200,
                  message: "The generate-content answer has no text.",
                  channelId: candidate.channel.id
                })
              }
              const tokens = heard.usage
              const { usage, cost } = billed(heard.text, tokens === undefined ? {} : { tokens })
              const usageField = {
                type: "tokens",
                input_tokens: usage.inputTokens,
                output_tokens: usage.outputTokens,
                total_tokens: usage.inputTokens + usage.outputTokens
              }
              return input.form.get("response_format") === "text"
                ? { text: `${heard.text}\n`, contentType: "text/plain; charset=utf-8", usage, cost }
                : {
                  text: JSON.stringify({ text: heard.text, usage: usageField }),
                  contentType: "application/json",
                  usage,
                  cost
                }
            })
          const attempt = (candidate: Candidate): Effect.Effect<TranscriptionAnswer, UpstreamFailed> =>
            audioAdapters[candidate.channel.type]!.wire === "gemini"
              ? geminiAttempt(candidate)
              : openAiTranscription(candidate)
          const openAiTranscription = (candidate: Candidate): Effect.Effect<TranscriptionAnswer, UpstreamFailed> =>
            Effect.gen(function* () {
              const form = new FormData()
              const strip = new Set(candidate.channel.settings.strip_params ?? [])
              for (const [name, value] of input.form.entries()) {
                if (name !== "model" && !strip.has(name)) form.append(name, value)
              }
              form.set("model", candidate.upstreamModel)
              const { body, contentType } = yield* encodeForm(form)
              const target = targetOf(candidate, input.operation)
              const response = yield* client.post(
                target.url,
                { ...target.headers, "content-type": contentType },
                body,
                channelTimeouts(candidate.channel, settings)
              )
              const text = yield* response.text
              if (response.status < 200 || response.status >= 300) {
                const classified = classifyOpenAiError(response.status, text)
                return yield* new UpstreamFailed({
                  kind: classified.kind,
                  status: response.status,
                  message: classified.message,
                  channelId: candidate.channel.id
                })
              }
              return {
                text,
                contentType: safeHeader(response.headers["content-type"], "application/json"),
                ...billed(text)
              }
            })
          return yield* runOneShot(services, {
            principal: input.principal,
            groupLimits: limits,
            model: input.model,
            price,
            ratio,
            promptTokens: 0,
            started,
            hold,
            candidates,
            attempt,
            usageOf: (answer) => answer.usage,
            costOf: (answer) => answer.cost,
            respond: (answer) => HttpServerResponse.text(answer.text, { contentType: answer.contentType })
          })
        })

      const moderation = (input: ModerationInput) =>
        Effect.gen(function* () {
          const started = yield* Clock.currentTimeMillis
          const candidates = yield* candidatesFor(input.principal, input.model, "moderations")
          // Free unless priced: a model the catalog does not price is served at no cost.
          const priced = yield* Effect.option(priceFor(catalog, input.model, input.principal.group, () => true))
          const group = catalog.snapshot().groups.get(input.principal.group)
          const price: Price = priced._tag === "Some" ? priced.value.price : { free: true }
          const ratio = priced._tag === "Some" ? priced.value.ratio : group?.ratio ?? 1_000_000_000n
          const cost = textCost(ratio, price, input.promptTokens, 0)
          const usage: Usage = { inputTokens: input.promptTokens, outputTokens: 0 }
          const attempt = (candidate: Candidate) => {
            const target = targetOf(candidate, "moderations")
            const body = { ...input.body, model: candidate.upstreamModel }
            return postForJson(
              client,
              settings,
              candidate.channel,
              { url: target.url, headers: { ...target.headers, "content-type": "application/json" } },
              JSON.stringify(body),
              classifyOpenAiError
            )
          }
          return yield* runOneShot(services, {
            principal: input.principal,
            groupLimits: group?.limits,
            model: input.model,
            price,
            ratio,
            promptTokens: input.promptTokens,
            started,
            hold: cost,
            candidates,
            attempt,
            usageOf: () => usage,
            costOf: () => cost,
            respond: (answer) => HttpServerResponse.text(answer.text, { contentType: "application/json" })
          })
        })

      const run = (input: AudioRelayInput): Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError> => {
        switch (input.operation) {
          case "speech":
            return speech(input)
          case "transcriptions":
          case "translations":
            return transcription(input)
          case "moderations":
            return moderation(input)
        }
      }

      return AudioRelay.of({ run })
    })
  )
}
