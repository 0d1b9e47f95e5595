/**
 * The speech relay (`POST /v1/audio/speech`) on the one-answer billed
 * sequence: the caller's JSON forwarded with the model mapped on a wire that
 * speaks it (OpenAI's), the accepted answer's body streamed to the caller as it arrives
 * (audio bytes, or `speech.audio.*` SSE events); on a wire that answers
 * whole (generate-content) the wire's own request, its audio decoded whole
 * (`formats/audio/`, chosen by the candidate's wire).
 * Billed `per_1m_characters` × the input's characters (held and settled
 * alike: the input is the whole measure). A speech model priced by tokens
 * instead (`input`/`output`, as `gpt-4o-mini-tts`) is held at a safe bound
 * (input: the UTF-8 bytes of `input` and `instructions` plus
 * `SPEECH_PROMPT_OVERHEAD`, since a token is at least one byte; output:
 * `SPEECH_OUTPUT_TOKENS_PER_CHARACTER` a character ÷ `speed`) and settled
 * when the stream ends: from the usage of `speech.audio.done` with
 * `stream_format: "sse"`, else (raw audio, which carries no usage) from
 * `speechEstimate`. A failed call costs nothing.
 *
 * A speech answer cut short (the caller leaves mid-stream, or the upstream
 * breaks mid-way) is billed by the pipeline's cut rule — the input is due in
 * full once the upstream has delivered output, the output as delivered,
 * never above the hold — with what the vendor charges for speech: OpenAI
 * bills a speech request by its input (characters for `tts-1`, input tokens
 * for `gpt-4o-mini-tts`, platform.openai.com/docs/pricing) once it renders
 * audio, and does not prorate by the audio a caller read. So:
 *
 * - the first chunk of the answer is read inside the attempt: an upstream
 *   that fails (or ends) before any audio is a failed attempt — the next
 *   candidate is tried, and nothing is charged;
 * - priced `per_1m_characters`: once audio has arrived the characters are
 *   due whole (the bill is made then, durably, and its `x-sluice-cost` is
 *   on the answer), whatever happens to the rest of the stream;
 * - priced by tokens: the input tokens are due whole (the reported ones, or
 *   the estimate of `speechEstimate`) and the output tokens of the audio
 *   that reached the caller (`speech.audio.done`'s when it arrived), never
 *   more than the output the hold was sized for.
 *
 * @since 0.1.0
 */
import { Cause, Clock, Effect, Stream } from "effect"
import { HttpServerResponse } from "effect/http"
import { emptyUsage, type Usage } from "../../canonical/Usage.ts"
import { characterCost, holdPrice, type Price, textCost } from "../../domain/Pricing.ts"
import { type GatewayError, UpstreamFailed } from "../../errors/GatewayError.ts"
import type { SpeechWire } from "../../formats/audio/Wires.ts"
import { readableBody } from "../../http/ReadableBody.ts"
import { CurrentRequest, usageRequestId } from "../../observability/RequestRecord.ts"
import type { Principal } from "../../services/Auth.ts"
import type { Candidate } from "../../services/ChannelRouter.ts"
import type { Limits } from "../../storage/Catalog.ts"
import { channelTimeouts, failIfRefused, type UpstreamResponse } from "../../upstreams/transport/UpstreamClient.ts"
import {
  audioCandidates,
  type AudioServices,
  audioTarget,
  audioWireOf,
  eventOf,
  isCount,
  isTokenPriced,
  safeHeader,
  sseDataReader,
  takingCandidates
} from "./AudioShared.ts"
import { runBilled } from "../pipeline/BilledPipeline.ts"
import { postForJson, priceFor, runOneShot } from "../pipeline/OneShot.ts"

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

const isCharacterPriced = (price: Price): boolean => price.free || price.perMillionCharacters !== undefined
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
  const reader = sseDataReader()
  let usage: Usage | undefined
  let audioBytes = 0
  return {
    push: (chunk: Uint8Array) => {
      for (const data of reader.push(chunk)) {
        const event = eventOf(data)
        if (event?.type === "speech.audio.delta" && typeof event.audio === "string") {
          audioBytes += Math.floor(event.audio.replace(/=+$/, "").length * 3 / 4)
        } else if (event?.type === "speech.audio.done" && typeof event.usage === "object" && event.usage !== null) {
          const { input_tokens, output_tokens } = event.usage as { input_tokens?: unknown; output_tokens?: unknown }
          if (isCount(input_tokens) && isCount(output_tokens)) {
            usage = { inputTokens: Math.trunc(input_tokens), outputTokens: Math.trunc(output_tokens) }
          }
        }
      }
    },
    usage: () => usage,
    audioBytes: () => audioBytes
  }
}

/**
 * The speech relay: runs a checked speech request on the first candidate
 * that serves it (see the module doc for how it is billed).
 *
 * @category relay
 */
export const makeSpeechRelay = (deps: AudioServices) => {
  const { client, settings, catalog, services } = deps
  const candidatesFor = (principal: Principal, model: string) => audioCandidates(deps, principal, model, "speech")
  const targetOf = audioTarget
  /** The upstream's answer, streamed on (OpenAI), or PCM made whole into the asked container (generate-content). */
  type SpeechAnswer =
    /** The upstream's answer and its first chunk of audio (or of events), read before the answer was accepted. */
    | { readonly _tag: "stream"; readonly response: UpstreamResponse; readonly first: Uint8Array }
    | {
      readonly _tag: "bytes"
      readonly bytes: Uint8Array
      readonly contentType: string
      /** The generate-content answer's `usageMetadata` tokens, when it reported them. */
      readonly usage: Usage | undefined
    }

  /** Speech passed on to a wire that speaks the caller's request, its first chunk read inside the attempt. */
  const streamedSpeech = (
    input: SpeechInput,
    candidate: Candidate,
    wire: Extract<SpeechWire, { readonly _tag: "stream" }>,
    classify: ReturnType<typeof audioWireOf>["classifyError"]
  ): Effect.Effect<SpeechAnswer, UpstreamFailed> =>
    Effect.gen(function* () {
      const target = targetOf(candidate, "speech")
      const body = wire.body(input.body, candidate.upstreamModel, candidate.channel.settings.strip_params ?? [])
      const response = yield* client.post(
        target.url,
        { ...target.headers, "content-type": "application/json" },
        JSON.stringify(body),
        channelTimeouts(candidate.channel, settings)
      )
      yield* failIfRefused(response, classify, candidate.channel.id)
      // The first audio is read before the answer is accepted: an upstream that fails before any audio is a failed
      // attempt (the next candidate is tried, nothing is charged), and from here the vendor is making the speech.
      const first = yield* response.read
      if (first === undefined || first.length === 0) {
        response.abort()
        return yield* new UpstreamFailed({
          kind: "bad-body",
          status: 200,
          message: "The speech answer ended before any audio.",
          channelId: candidate.channel.id
        })
      }
      return { _tag: "stream" as const, response, first }
    })

  /** Speech as a request of the wire's own, answered whole and decoded into the asked container. */
  const wholeSpeech = (
    input: SpeechInput,
    candidate: Candidate,
    wire: Extract<SpeechWire, { readonly _tag: "whole" }>,
    classify: ReturnType<typeof audioWireOf>["classifyError"]
  ): Effect.Effect<SpeechAnswer, UpstreamFailed> =>
    Effect.gen(function* () {
      const target = targetOf(candidate, "speech")
      const { json } = yield* postForJson(
        client,
        settings,
        candidate.channel,
        target,
        JSON.stringify(wire.body(input.body)),
        classify
      )
      const audio = wire.decode(json, input.body, candidate.channel.id)
      if (audio instanceof UpstreamFailed) return yield* audio
      return { _tag: "bytes" as const, ...audio }
    })

  const speech = (input: SpeechInput) =>
    Effect.gen(function* () {
      const started = yield* Clock.currentTimeMillis
      const serving = yield* candidatesFor(input.principal, input.model)
      const candidates = yield* takingCandidates(
        serving,
        (wire) => wire.speech._tag === "whole" ? wire.speech.refusal(input.body) : undefined
      )
      const { price, ratio, limits } = yield* priceFor(
        catalog,
        input.model,
        input.principal.group,
        isSpeechPriced
      )
      const attempt = (candidate: Candidate) => {
        const wire = audioWireOf(candidate)
        return wire.speech._tag === "stream"
          ? streamedSpeech(input, candidate, wire.speech, wire.classifyError)
          : wholeSpeech(input, candidate, wire.speech, wire.classifyError)
      }
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
          const body = Stream.concat(
            Stream.make(answer.first),
            Stream.unfold(
              undefined,
              () => Effect.map(upstream.read, (chunk) => chunk === undefined ? undefined : [chunk, undefined] as const)
            )
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
            let pending: Uint8Array | undefined = answer.first
            let failure: UpstreamFailed | undefined
            const next = Effect.suspend(() => {
              if (pending === undefined) return upstream.read
              const chunk = pending
              pending = undefined
              return Effect.succeed(chunk)
            })
            const pull: Effect.Effect<ReadonlyArray<Uint8Array>, Cause.Done> = next.pipe(
              Effect.tapError((error) =>
                Effect.sync(() => {
                  failure = error
                })
              ),
              // An upstream failure (kept in `failure` above), not storage: the stream's pull ends on it.
              Effect.orDie,
              Effect.flatMap((chunk) => {
                if (chunk === undefined) return Cause.done()
                deliveredBytes += chunk.length
                events?.push(chunk)
                return Effect.succeed([chunk])
              })
            )
            const finalizer = Effect.suspend(() => {
              upstream.abort()
              const usage = events === undefined
                ? estimate(deliveredBytes)
                : events.usage() ?? estimate(events.audioBytes())
              context.settlement.update((meter) => ({
                ...meter,
                usage,
                final: usage !== undefined,
                // What reached the caller (audio bytes here): a broken stream that delivered some is billed, not dropped.
                deliveredCharacters: deliveredBytes,
                ...(failure === undefined
                  ? { status: 200 }
                  : { status: 502, error: `stream-broken: ${failure.message}` })
              }))
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

  return (input: SpeechInput): Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError> => speech(input)
}
