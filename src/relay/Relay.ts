/**
 * The relay every text route shares (DESIGN.md, "The relay in parts"):
 * candidates (ChannelRouter) → limits (RateLimiter) → hold (QuotaLedger) →
 * `Failover` (one attempt per candidate until one is accepted) → the answer
 * (JSON, or the `StreamBridge` for streams) → `Settlement` (cost, settle,
 * usage-log row, permit release: exactly once, uninterruptible). A same-format
 * request passes through (`Format.passthrough`); otherwise it goes through the
 * canonical form. Format knowledge stays in `formats/`.
 *
 * @since 0.1.0
 */
import { Context, Effect, Exit, Layer, Scope } from "effect"
import type { Sse } from "effect/encoding"
import { HttpServerResponse } from "effect/http"
import type { OutputPart } from "../canonical/Content.ts"
import { promptTokensTypical, promptTokensUpperBound } from "../canonical/Estimate.ts"
import type { Request } from "../canonical/Request.ts"
import type { Usage } from "../canonical/Usage.ts"
import { isTextPriced, textCost } from "../domain/Pricing.ts"
import { type GatewayError, InvalidRequest, ModelNotPriced, UpstreamFailed } from "../errors/GatewayError.ts"
import type { DecodeStep, Format, FormatName, ResponseMeta } from "../formats/Format.ts"
import { hasForeignReasoning } from "../formats/ReasoningOrigin.ts"
import { formatOf } from "../formats/registry.ts"
import { readableBody } from "../http/ReadableBody.ts"
import { sseReader } from "../http/SseEvents.ts"
import type { Principal } from "../services/Auth.ts"
import { type Candidate, ChannelRouter } from "../services/ChannelRouter.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"
import { type InlineMedia, MediaFetcher, toInvalidRequest } from "../services/MediaFetcher.ts"
import { QuotaLedger } from "../services/QuotaLedger.ts"
import { RateLimiter } from "../services/RateLimiter.ts"
import { UpstreamClient, type UpstreamResponse } from "../services/UpstreamClient.ts"
import { UsageLog } from "../services/UsageLog.ts"
import { Catalog, type Channel } from "../storage/Catalog.ts"
import { adapters } from "../upstreams/Adapter.ts"
import { failover } from "./Failover.ts"
import { applyDelta, makeSettlement } from "./Settlement.ts"
import { bridgeBody } from "./StreamBridge.ts"

/** What a route hands the relay. @category models */
export interface RelayInput {
  /** The caller's format. */
  readonly inbound: FormatName
  /** The caller's parsed JSON body (forwarded as is on same-format channels). */
  readonly raw: Record<string, unknown>
  /** The same request in canonical form. */
  readonly request: Request
  readonly principal: Principal
  readonly requestId: string
  readonly meta: ResponseMeta
  /** Generate-content without `alt=sse`: stream as one JSON array instead of SSE. */
  readonly jsonArrayStream?: boolean | undefined
  /** Translate even when the channel speaks the caller's format (the canonical request was changed). */
  readonly forceTranslate?: boolean | undefined
  /** Called once with the answer's public id and content after a complete answer. */
  readonly onAnswer?: ((id: string, content: ReadonlyArray<OutputPart>) => Effect.Effect<void>) | undefined
  /** Forward to a side endpoint of the inbound format instead of the format's own (see `SideEndpoint`). */
  readonly endpoint?: SideEndpoint | undefined
}

/**
 * A side endpoint of the inbound format that only some channels have (`POST /v1/responses/compact`): only
 * candidates whose channel `supports` it are tried; the caller's body goes to the URL the channel's adapter gives
 * for the inbound format plus `pathSuffix`, unchanged but for the mapped model (and `strip_params`), never
 * streamed; the upstream's 2xx JSON is the answer as is, billed from `usageOf` (when the upstream reports none:
 * the typical prompt estimate and a quarter of the answer's characters).
 *
 * @category models
 */
export interface SideEndpoint {
  /** Appended to the inbound format's upstream URL, e.g. `/compact` (→ `{base}/v1/responses/compact`). */
  readonly pathSuffix: string
  /** Whether a channel serves the endpoint. */
  readonly supports: (channel: Channel) => boolean
  /** The failure when the model has candidates but none of their channels serves the endpoint. */
  readonly unsupported: (model: string) => GatewayError
  /** The usage the upstream reported in its JSON answer, if any. */
  readonly usageOf: (json: unknown) => Usage | undefined
}

const sseHeaders = { "cache-control": "no-cache", "x-accel-buffering": "no" }

/** A stream's accepted head: the first events read, the first one decoded, and the reader of the rest. */
interface StreamHead {
  readonly wire: Format<unknown, unknown>
  readonly first: ReadonlyArray<Sse.Event>
  readonly firstStep: DecodeStep<unknown>
  readonly next: Effect.Effect<ReadonlyArray<Sse.Event> | undefined, UpstreamFailed>
  readonly scope: Scope.Closeable
}

/** A JSON answer: the caller's body, and what it means for billing. */
interface JsonAnswer {
  readonly text: string
  readonly usage: Usage | undefined
  readonly deliveredCharacters: number
  readonly answerId: string | undefined
  readonly answer: ReadonlyArray<OutputPart> | undefined
}

/** @category services */
export class Relay extends Context.Service<Relay, {
  /** Runs the pipeline; the answer is a complete response or an SSE (or JSON array) stream. */
  readonly run: (input: RelayInput) => Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError>
}>()("sluice/relay/Relay") {
  static readonly layer = Layer.effect(
    Relay,
    Effect.gen(function* () {
      const router = yield* ChannelRouter
      const ledger = yield* QuotaLedger
      const usageLog = yield* UsageLog
      const client = yield* UpstreamClient
      const settings = yield* GatewaySettings
      const limiter = yield* RateLimiter
      const media = yield* MediaFetcher
      const catalog = yield* Catalog
      const run = Effect.fnUntraced(function* (input: RelayInput) {
        const { principal, request, endpoint } = input
        const started = Date.now()
        const inbound = formatOf(input.inbound)
        const routed = yield* router.candidates(principal, request.model)
        const candidates = endpoint === undefined
          ? routed
          : routed.filter((candidate) => endpoint.supports(candidate.channel))
        if (candidates.length === 0 && endpoint !== undefined) return yield* endpoint.unsupported(request.model)
        const snapshot = catalog.snapshot()
        const price = snapshot.prices.get(request.model)
        const group = snapshot.groups.get(principal.group)
        const ratio = group?.ratio ?? 1_000_000_000n
        if (price === undefined || !isTextPriced(price)) return yield* new ModelNotPriced({ model: request.model })
        const outputCap = request.maxOutputTokens ?? settings.defaultMaxTokens
        if (!Number.isSafeInteger(outputCap) || outputCap < 0) {
          return yield* new InvalidRequest({
            message: "max_tokens must be a non-negative integer.",
            param: "max_tokens"
          })
        }
        let heldPrompt = promptTokensUpperBound(request)
        const estimate = textCost(ratio, price, heldPrompt, outputCap)
        /** The cap sent upstream when the caller named none, so the answer cannot outgrow the hold. */
        const sentCap = request.maxOutputTokens === undefined ? outputCap : undefined
        const translatedRequest: Request = sentCap === undefined ? request : { ...request, maxOutputTokens: sentCap }

        return yield* Effect.uninterruptibleMask((restore) =>
          Effect.gen(function* () {
            const permit = yield* limiter.acquire(limitSubjects(principal, group?.limits))
            const settlement = makeSettlement({
              ledger,
              usageLog,
              principal,
              requestId: input.requestId,
              model: request.model,
              stream: request.stream && endpoint === undefined,
              price,
              ratio,
              promptTokens: promptTokensTypical(request),
              started,
              permit,
              onAnswer: input.onAnswer
            })
            let handedOff = false

            /** Holds `amount` more for this request (the request's own hold, or an extension). */
            const hold = (amount: bigint) =>
              ledger.reserve(principal, amount).pipe(
                Effect.tap((taken) => Effect.sync(() => settlement.addHold(taken))),
                Effect.uninterruptible
              )

            /** Images and files downloaded for this request (shared by its attempts); requests made inline, by candidate. */
            const downloaded = new Map<string, InlineMedia>()

            /** The request for `candidate` with its URL media made inline where the channel needs it (the hold grown to cover them). */
            const prepared = (candidate: Candidate) =>
              Effect.gen(function* () {
                if (endpoint !== undefined) return undefined
                // An image or file that cannot be downloaded is the caller's 400: no upstream call, no health report.
                const wire = adapters[candidate.channel.type].wireFormat(input.inbound, candidate.channel)
                const inlined = yield* media.prepare(request, candidate.channel, wire, downloaded).pipe(
                  Effect.mapError((error) => toInvalidRequest(error, input.raw, input.inbound))
                )
                if (inlined === undefined) return undefined
                const upper = promptTokensUpperBound(inlined)
                if (upper > heldPrompt) {
                  yield* hold(textCost(ratio, price, upper - heldPrompt, 0))
                  heldPrompt = upper
                }
                return inlined
              })

            /** The upstream body for `candidate` in its wire format. */
            const upstreamBody = (
              candidate: Candidate,
              wire: Format<unknown, unknown>,
              inlined: Request | undefined,
              stream: boolean
            ): Record<string, unknown> => {
              // A request made inline, or holding another vendor's reasoning token, is translated (the token dropped).
              const passthrough = wire.name === input.inbound && input.forceTranslate !== true &&
                inlined === undefined && !hasForeignReasoning(request, wire.name)
              const body = passthrough
                ? wire.passthrough.body(input.raw, { model: candidate.upstreamModel, stream, outputCap: sentCap })
                : wire.encodeRequest({
                  ...(inlined === undefined
                    ? translatedRequest
                    : { ...inlined, maxOutputTokens: sentCap ?? inlined.maxOutputTokens }),
                  model: candidate.upstreamModel
                }).body
              for (const param of candidate.channel.settings.strip_params ?? []) delete body[param]
              return body
            }

            const call = (
              candidate: Candidate,
              wire: Format<unknown, unknown>,
              inlined: Request | undefined,
              stream: boolean
            ) => {
              const adapter = adapters[candidate.channel.type]
              const target = adapter.target(
                candidate.channel,
                candidate.key.key,
                wire.name,
                candidate.upstreamModel,
                stream
              )
              return client.post(
                target.url + (endpoint?.pathSuffix ?? ""),
                target.headers,
                JSON.stringify(
                  endpoint === undefined ? upstreamBody(candidate, wire, inlined, stream) : sideBody(candidate)
                ),
                {
                  firstByteMs: candidate.channel.settings.first_byte_timeout_ms ?? settings.firstByteTimeoutMs,
                  idleMs: candidate.channel.settings.idle_timeout_ms ?? settings.idleTimeoutMs,
                  totalMs: candidate.channel.settings.total_timeout_ms ?? settings.totalTimeoutMs
                }
              )
            }

            /** A side endpoint's body: the caller's, with only the model mapped. */
            const sideBody = (candidate: Candidate): Record<string, unknown> => {
              const body: Record<string, unknown> = { ...input.raw, model: candidate.upstreamModel }
              for (const param of candidate.channel.settings.strip_params ?? []) delete body[param]
              return body
            }

            /** One non-stream attempt: the caller's JSON body (a passthrough answer as received), or a failure. */
            const attemptJson = (candidate: Candidate) =>
              Effect.gen(function* () {
                const inlined = yield* prepared(candidate)
                const wire = endpoint === undefined
                  ? formatOf(adapters[candidate.channel.type].wireFormat(input.inbound, candidate.channel))
                  : inbound
                const response = yield* call(candidate, wire, inlined, false)
                if (response.status < 200 || response.status >= 300) return yield* failureOfStatus(wire, response)
                const text = yield* response.text
                let json: unknown
                try {
                  json = JSON.parse(text)
                } catch {
                  return yield* new UpstreamFailed({ kind: "bad-body", status: response.status, message: "Not JSON." })
                }
                if (endpoint !== undefined) {
                  const usage = endpoint.usageOf(json)
                  // No usage reported: billed from what was delivered (see `billedUsage`).
                  return {
                    text,
                    usage,
                    deliveredCharacters: usage === undefined ? text.length : 0,
                    answerId: undefined,
                    answer: undefined
                  } satisfies JsonAnswer
                }
                const decoded = wire.decodeResponse(json)
                if (decoded instanceof UpstreamFailed) return yield* decoded
                const passthrough = wire.name === input.inbound && input.forceTranslate !== true
                return {
                  text: passthrough ? text : JSON.stringify(inbound.encodeResponse(decoded, input.meta)),
                  usage: decoded.usage,
                  deliveredCharacters: 0,
                  answerId: passthrough ? decoded.id : input.meta.id,
                  answer: [...decoded.content]
                } satisfies JsonAnswer
              })

            /** One stream attempt: the upstream is answering with a readable first event, or a failure. */
            const attemptStream = (candidate: Candidate) =>
              Effect.gen(function* () {
                const inlined = yield* prepared(candidate)
                const wire = formatOf(adapters[candidate.channel.type].wireFormat(input.inbound, candidate.channel))
                const scope = yield* Scope.make()
                return yield* Effect.gen(function* () {
                  const response = yield* call(candidate, wire, inlined, true)
                  yield* Scope.addFinalizer(scope, Effect.sync(response.abort))
                  if (response.status < 200 || response.status >= 300) return yield* failureOfStatus(wire, response)
                  const next = sseReader(response.read)
                  const first = yield* next
                  if (first === undefined) {
                    return yield* new UpstreamFailed({ kind: "stream-broken", status: 200, message: "Empty stream." })
                  }
                  // An in-band error as the very first event can still fail over. The answer starts from this step.
                  const firstStep = wire.streamDecoder.step(wire.streamDecoder.initial(), first[0])
                  if (firstStep instanceof UpstreamFailed) return yield* firstStep
                  return { wire, first, firstStep, next, scope } satisfies StreamHead
                }).pipe(Effect.onError(() => Scope.close(scope, Exit.void)))
              })

            const body = restore(Effect.gen(function* () {
              yield* hold(estimate)
              const attempts = {
                candidates,
                maxAttempts: Math.min(candidates.length, 1 + settings.retryTimes),
                deadline: started + settings.requestDeadlineMs,
                report: router.report,
                logFailed: settlement.logFailedAttempt
              }
              if (!request.stream || endpoint !== undefined) {
                const accepted = yield* failover({ ...attempts, attempt: attemptJson })
                const answer = accepted.value
                settlement.update((meter) => ({
                  ...meter,
                  usage: answer.usage,
                  final: answer.usage !== undefined,
                  deliveredCharacters: answer.deliveredCharacters,
                  status: 200,
                  answerId: answer.answerId,
                  answer: answer.answer
                }))
                handedOff = true
                yield* settlement.settle(accepted.candidate, accepted.attempt)
                return HttpServerResponse.text(answer.text, { contentType: "application/json" })
              }
              const accepted = yield* failover({ ...attempts, attempt: attemptStream })
              const head = accepted.value
              const passthrough = head.wire.name === input.inbound && input.forceTranslate !== true
              const stream = readableBody(
                bridgeBody(
                  {
                    inbound,
                    wire: head.wire,
                    passthrough,
                    meta: input.meta,
                    jsonArray: input.jsonArrayStream === true,
                    assemble: input.onAnswer !== undefined
                  },
                  head.firstStep,
                  head.first,
                  head.next,
                  (delta) => settlement.update((meter) => applyDelta(meter, delta))
                ),
                Scope.close(head.scope, Exit.void).pipe(
                  Effect.andThen(settlement.settle(accepted.candidate, accepted.attempt))
                ),
                yield* Effect.context<never>()
              )
              handedOff = true
              const contentType = input.jsonArrayStream === true ? "application/json" : "text/event-stream"
              return HttpServerResponse.raw(stream, { contentType, headers: sseHeaders })
            }))

            // Nothing reached the caller (a failure, or the caller left): every hold back, the permit released.
            return yield* body.pipe(Effect.onExit(() => handedOff ? Effect.void : settlement.abandon))
          })
        )
      }) as (input: RelayInput) => Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError>

      return Relay.of({ run })
    })
  )
}

/** An upstream HTTP error answer as the failure its format's classifier says. */
const failureOfStatus = (wire: Format<unknown, unknown>, response: UpstreamResponse) =>
  response.text.pipe(
    Effect.catch(() => Effect.succeed("")),
    Effect.flatMap((text) => {
      const classified = wire.classifyError(response.status, text)
      return Effect.fail(
        new UpstreamFailed({ kind: classified.kind, status: response.status, message: classified.message })
      )
    })
  )

/** The rate-limit subjects of a request: its token and its user (group defaults fill gaps). */
const limitSubjects = (
  principal: Principal,
  groupLimits: { readonly rpm?: number; readonly tpm?: number; readonly concurrency?: number } | undefined
) => [
  { key: `token:${principal.tokenId}`, limits: principal.tokenLimits ?? {} },
  { key: `user:${principal.userId}`, limits: principal.userLimits ?? groupLimits ?? {} }
]
