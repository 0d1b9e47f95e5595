/**
 * The transcription and translation relay (`POST /v1/audio/transcriptions`,
 * `/v1/audio/translations`) on the billed pipeline: the caller's form
 * forwarded with the model mapped on openai channels; on gemini channels
 * (transcription) a generate-content call with the audio inline. A streamed
 * transcription (`stream=true` on a model that streams, answered as
 * `text/event-stream`) is passed on event by event as it arrives and billed
 * at its `transcript.text.done` event (`streamTranscript`). Billed
 * `per_second` × the duration: held for the duration read from the file's
 * bytes rounded up to a second (else the file size at 8 kbit/s: see
 * `formats/audio/AudioFile.ts`); settled from the vendor's `usage: {type:
 * "duration", seconds}` (or verbose_json's `duration`, or a stream's
 * `transcript.text.done` usage) when reported, else the duration read from
 * the bytes, else the hold. A token-priced model is billed the vendor's
 * `usage: {type: "tokens"}` (held at the hold's duration × 50 audio tokens a
 * second and 20 text tokens a second). A failed call costs nothing.
 *
 * @since 0.1.0
 */
import { Cause, Clock, Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { emptyUsage, type Usage } from "../../canonical/Usage.ts"
import { parseJsonOrUndefined } from "../../domain/JsonDepth.ts"
import { audioCost, holdPrice, type Price, textCost } from "../../domain/Pricing.ts"
import { toProblem } from "../../errors/Envelope.ts"
import { type GatewayError, InvalidRequest, LedgerUnavailable, UpstreamFailed } from "../../errors/GatewayError.ts"
import { classifyGeminiError } from "../../formats/gemini/generate-content/ErrorBody.ts"
import { classifyOpenAiError, encodeOpenAiError } from "../../formats/openai/shared/ErrorBody.ts"
import type { Principal } from "../../services/Auth.ts"
import type { Candidate } from "../../services/ChannelRouter.ts"
import {
  channelTimeouts,
  encodeForm,
  failIfRefused,
  type UpstreamResponse
} from "../../upstreams/transport/UpstreamClient.ts"
import { readableBody } from "../../http/ReadableBody.ts"
import { CurrentRequest, type RequestRecord, usageRequestId } from "../../observability/RequestRecord.ts"
import {
  audioCandidates,
  type AudioServices,
  audioTarget,
  eventOf,
  isGeminiWire,
  isTokenPriced,
  safeHeader,
  sseDataReader
} from "./AudioShared.ts"
import { type PipelineContext, runBilled } from "../pipeline/BilledPipeline.ts"
import type { Accepted } from "../pipeline/Failover.ts"
import { postForJson, priceFor } from "../pipeline/OneShot.ts"

/** OpenAI's stream error event for a bill the ledger could not make durable (what a withheld end becomes). */
const ledgerErrorEvent = new TextEncoder().encode(
  `data: ${JSON.stringify(encodeOpenAiError(toProblem(new LedgerUnavailable())))}\n\n`
)

/** A transcription or translation request, checked by the route. @category models */
export interface TranscriptionInput {
  readonly operation: "transcriptions" | "translations"
  readonly principal: Principal
  readonly model: string
  /** The caller's form, forwarded with only `model` replaced. */
  readonly form: FormData
  /**
   * The duration read from the file's bytes (milliseconds, `formats/audio/AudioFile.ts`: its WAV header, else
   * `music-metadata`), when they tell it.
   */
  readonly measuredMillis: number | undefined
  /**
   * A duration the bill is not expected to exceed (milliseconds): the hold's. The measured duration rounded up to
   * a whole second, else the size bound (`durationBoundMillis`).
   */
  readonly boundMillis: number
  /** The file's media type, as its bytes show it (`audio/wav`, …). */
  readonly mimeType: string
}

/** Audio tokens a second assumed for a token-priced transcription's hold (above OpenAI's observed rate). */
const AUDIO_TOKENS_PER_SECOND = 50

/** Output tokens a transcription's hold allows per second of audio (a fast speaker is ~4 tokens a second). */
const TEXT_TOKENS_PER_SECOND = 20

const isDurationPriced = (price: Price): boolean => price.free || price.perSecond !== undefined || isTokenPriced(price)

/** An answer a transcription attempt accepted: the text as it came, its type, and what it bills; or a stream. */
type TranscriptionAnswer =
  | {
    readonly _tag: "text"
    readonly text: string
    readonly contentType: string
    readonly usage: Usage
    readonly cost: bigint
  }
  /** A streamed transcript (`stream=true` on a model that streams): passed on as it arrives, billed at its end. */
  | { readonly _tag: "stream"; readonly response: UpstreamResponse }

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
    const event = parseJsonOrUndefined(data) as { type?: unknown } | null | undefined
    if (event?.type === "transcript.text.done") return data
  }
  return undefined
}

/**
 * The `usage` a transcription answer reports, if JSON with one (nested at most `MAX_JSON_DEPTH`); `duration` of
 * verbose_json counts as seconds.
 */
const reportedUsage = (text: string): { seconds?: number; tokens?: Usage } => {
  const parsed = parseJsonOrUndefined(streamedDone(text) ?? text)
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

/**
 * The transcription and translation relay: runs a checked request on the
 * first candidate that serves its operation (see the module doc for how it
 * is billed).
 *
 * @category relay
 */
export const makeTranscriptionRelay = (deps: AudioServices) => {
  const { client, settings, catalog, services } = deps
  const candidatesFor = (principal: Principal, model: string, operation: TranscriptionInput["operation"]) =>
    audioCandidates(deps, principal, model, operation)
  const targetOf = audioTarget
  const transcription = (input: TranscriptionInput) =>
    Effect.gen(function* () {
      const started = yield* Clock.currentTimeMillis
      const serving = yield* candidatesFor(input.principal, input.model, input.operation)
      const refusal = geminiTranscriptionRefusal(input)
      const candidates = refusal === undefined ? serving : serving.filter((candidate) => !isGeminiWire(candidate))
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
      /**
       * The usage and cost of an answer that reported `reported` and holds `outputCharacters` of text: the
       * reported tokens or seconds; else (nothing reported, or a stream cut before its usage) the held audio
       * tokens and the text's tokens (characters / 4, at most the hold's), or the measured duration (else the
       * hold's).
       */
      const billedOf = (
        reported: { seconds?: number; tokens?: Usage },
        outputCharacters: number
      ): { usage: Usage; cost: bigint } => {
        if (byTokens) {
          const usage = reported.tokens ?? {
            inputTokens: boundSeconds * AUDIO_TOKENS_PER_SECOND,
            outputTokens: Math.min(Math.ceil(outputCharacters / 4), boundSeconds * TEXT_TOKENS_PER_SECOND)
          }
          return { usage, cost: textCost(ratio, price, usage.inputTokens, usage.outputTokens) }
        }
        const millis = reported.seconds !== undefined
          ? Math.ceil(reported.seconds * 1000)
          : input.measuredMillis ?? input.boundMillis
        return { usage: reported.tokens ?? emptyUsage, cost: audioCost(ratio, price, millis) }
      }
      const billed = (text: string, reported: { seconds?: number; tokens?: Usage } = reportedUsage(text)) =>
        billedOf(reported, text.length)
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
            ? { _tag: "text" as const, text: `${heard.text}\n`, contentType: "text/plain; charset=utf-8", usage, cost }
            : {
              _tag: "text" as const,
              text: JSON.stringify({ text: heard.text, usage: usageField }),
              contentType: "application/json",
              usage,
              cost
            }
        })
      const attempt = (candidate: Candidate): Effect.Effect<TranscriptionAnswer, UpstreamFailed> =>
        isGeminiWire(candidate) ? geminiAttempt(candidate) : openAiTranscription(candidate)
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
          yield* failIfRefused(response, classifyOpenAiError, candidate.channel.id)
          if (/^text\/event-stream\b/i.test(response.headers["content-type"] ?? "")) {
            return { _tag: "stream" as const, response }
          }
          const text = yield* response.text
          return {
            _tag: "text" as const,
            text,
            contentType: safeHeader(response.headers["content-type"], "application/json"),
            ...billed(text)
          }
        })

      /**
       * A streamed transcript passed on event by event as the upstream sends it (`transcript.text.delta` …
       * `transcript.text.done`: platform.openai.com/docs/api-reference/audio/transcript-text-done-event). The
       * chunk carrying `transcript.text.done` is held until the request is billed from its `usage` (`billedOf`)
       * and the charge is durable, so no byte of the answer's end leaves unbilled; when the charge cannot be made
       * durable, that chunk is dropped and the answer ends with OpenAI's stream error event for the ledger
       * (`quota_ledger_unavailable`) instead of its end. A stream that ends or is cut
       * before it (the upstream broke, the caller left) is billed by `billedOf` with nothing reported and the
       * delta text delivered so far, and costs nothing when no text was delivered.
       */
      const streamTranscript = (
        accepted: Accepted<TranscriptionAnswer>,
        upstream: UpstreamResponse,
        context: PipelineContext,
        record: RequestRecord | undefined
      ) =>
        Effect.gen(function* () {
          const events = sseDataReader()
          let deliveredCharacters = 0
          let settled = false
          /** The end was withheld (the bill could not be made durable): the error event is out, nothing more. */
          let withheld = false
          let failure: UpstreamFailed | undefined
          const settleWith = (bill: { usage: Usage; cost: bigint } | undefined) => {
            settled = true
            billedCost = bill?.cost ?? 0n
            context.settlement.update((meter) => ({
              ...meter,
              usage: bill?.usage,
              final: bill !== undefined,
              deliveredCharacters,
              ...(failure === undefined ? { status: 200 } : { status: 502, error: `stream-broken: ${failure.message}` })
            }))
            return Effect.andThen(context.settle(accepted.candidate, accepted.attempt), context.settlement.durable)
          }
          const reading: Effect.Effect<ReadonlyArray<Uint8Array>, Cause.Done> = upstream.read.pipe(
            Effect.tapError((error) =>
              Effect.sync(() => {
                failure = error
              })
            ),
            Effect.orDie,
            Effect.flatMap((chunk) => {
              if (chunk === undefined) return Cause.done()
              let done: Record<string, unknown> | undefined
              for (const data of events.push(chunk)) {
                const event = eventOf(data)
                if (event?.type === "transcript.text.delta" && typeof event.delta === "string") {
                  deliveredCharacters += event.delta.length
                } else if (event?.type === "transcript.text.done") done = event
              }
              if (done === undefined || settled) return Effect.succeed([chunk])
              const text = typeof done.text === "string" ? done.text : ""
              return Effect.map(settleWith(billedOf(reportedUsage(JSON.stringify(done)), text.length)), (durable) => {
                if (durable) return [chunk]
                withheld = true
                return [ledgerErrorEvent]
              })
            })
          )
          const pull = Effect.suspend(() => withheld ? Cause.done() : reading)
          const finalizer = Effect.suspend(() => {
            upstream.abort()
            if (settled) return Effect.void
            return settleWith(deliveredCharacters > 0 ? billedOf({}, deliveredCharacters) : undefined)
          })
          const body = readableBody(pull, Effect.asVoid(finalizer), yield* Effect.context<never>())
          context.handOff()
          record?.defer()
          return HttpServerResponse.raw(body, {
            contentType: safeHeader(upstream.headers["content-type"], "text/event-stream"),
            headers: { "cache-control": "no-cache" }
          })
        })

      const record = yield* CurrentRequest
      /** The cost of the accepted answer: what `deliver` (a whole answer) or the stream's end billed. */
      let billedCost = 0n
      return yield* runBilled(services, {
        principal: input.principal,
        groupLimits: limits,
        model: input.model,
        price,
        ratio,
        promptTokens: 0,
        started,
        stream: input.form.get("stream") === "true",
        requestId: usageRequestId(record),
        cost: () => billedCost,
        hold,
        candidates,
        attempt: () => attempt,
        deliver: (accepted, context) => {
          const answer = accepted.value
          if (answer._tag === "stream") return streamTranscript(accepted, answer.response, context, record)
          billedCost = answer.cost
          return context.answerJson(
            accepted,
            { usage: answer.usage },
            HttpServerResponse.text(answer.text, { contentType: answer.contentType })
          )
        }
      })
    })

  return (input: TranscriptionInput): Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError> =>
    transcription(input)
}
