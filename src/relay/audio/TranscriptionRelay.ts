/**
 * The transcription and translation relay (`POST /v1/audio/transcriptions`,
 * `/v1/audio/translations`) on the billed pipeline: the caller's form
 * forwarded with the model mapped on a wire that speaks it (OpenAI's); on a
 * wire that answers whole (generate-content, transcription only) the wire's
 * own request with the audio inline (`formats/audio/`, chosen by the
 * candidate's wire). A streamed
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
import { audioCost, holdPrice, type Price, textCost } from "../../domain/Pricing.ts"
import { type GatewayError, UpstreamFailed } from "../../errors/GatewayError.ts"
import { ledgerErrorEvent, transcriptAnswer } from "../../formats/audio/Transcript.ts"
import type { AudioWire, ReportedUsage, TranscriptionWire } from "../../formats/audio/Wires.ts"
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
  audioWireOf,
  eventOf,
  isTokenPriced,
  safeHeader,
  sseDataReader,
  takingCandidates
} from "./AudioShared.ts"
import { type PipelineContext, runBilled } from "../pipeline/BilledPipeline.ts"
import type { Accepted } from "../pipeline/Failover.ts"
import { postForJson, priceFor } from "../pipeline/OneShot.ts"

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
  | {
    readonly _tag: "stream"
    readonly response: UpstreamResponse
    /** The usage the stream's `done` event reports (its wire's reader). */
    readonly usage: (text: string) => ReportedUsage
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
      const candidates = yield* takingCandidates(
        serving,
        (wire) => wire.transcription._tag === "whole" ? wire.transcription.refusal(input.form) : undefined
      )
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
      const billed = (text: string, reported: ReportedUsage) => billedOf(reported, text.length)
      /** A transcription as a request of the wire's own, answered whole and as OpenAI answers it. */
      const wholeAttempt = (
        candidate: Candidate,
        wire: Extract<TranscriptionWire, { readonly _tag: "whole" }>,
        classify: AudioWire["classifyError"]
      ): Effect.Effect<TranscriptionAnswer, UpstreamFailed> =>
        Effect.gen(function* () {
          const target = targetOf(candidate, input.operation)
          const { json } = yield* postForJson(
            client,
            settings,
            candidate.channel,
            target,
            JSON.stringify(yield* Effect.promise(() => wire.body(input.form, input.mimeType))),
            classify
          )
          const heard = wire.decode(json, candidate.channel.id)
          if (heard instanceof UpstreamFailed) return yield* heard
          const tokens = heard.usage
          const { usage, cost } = billed(heard.text, tokens === undefined ? {} : { tokens })
          return {
            _tag: "text" as const,
            ...transcriptAnswer(heard.text, usage, input.form.get("response_format")),
            usage,
            cost
          }
        })
      const attempt = (candidate: Candidate): Effect.Effect<TranscriptionAnswer, UpstreamFailed> => {
        const wire = audioWireOf(candidate)
        return wire.transcription._tag === "whole"
          ? wholeAttempt(candidate, wire.transcription, wire.classifyError)
          : formAttempt(candidate, wire.transcription, wire.classifyError)
      }
      /** A transcription passed on as a form to a wire that speaks the caller's request. */
      const formAttempt = (
        candidate: Candidate,
        wire: Extract<TranscriptionWire, { readonly _tag: "form" }>,
        classify: AudioWire["classifyError"]
      ): Effect.Effect<TranscriptionAnswer, UpstreamFailed> =>
        Effect.gen(function* () {
          const form = wire.form(input.form, candidate.upstreamModel, candidate.channel.settings.strip_params ?? [])
          const { body, contentType } = yield* encodeForm(form)
          const target = targetOf(candidate, input.operation)
          const response = yield* client.post(
            target.url,
            { ...target.headers, "content-type": contentType },
            body,
            channelTimeouts(candidate.channel, settings)
          )
          yield* failIfRefused(response, classify, candidate.channel.id)
          if (/^text\/event-stream\b/i.test(response.headers["content-type"] ?? "")) {
            return { _tag: "stream" as const, response, usage: wire.usage }
          }
          const text = yield* response.text
          return {
            _tag: "text" as const,
            text,
            contentType: safeHeader(response.headers["content-type"], "application/json"),
            ...billed(text, wire.usage(text))
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
        usageOf: (text: string) => ReportedUsage,
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
            // An upstream failure (kept in `failure` above), not storage: the stream's pull ends on it.
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
              return Effect.map(
                settleWith(billedOf(usageOf(JSON.stringify(done)), text.length)),
                (durable) => {
                  if (durable) return [chunk]
                  withheld = true
                  return [ledgerErrorEvent]
                }
              )
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
          if (answer._tag === "stream") {
            return streamTranscript(accepted, answer.response, answer.usage, context, record)
          }
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
