/**
 * The request pipeline every text route shares: route the request to its
 * candidates, hold quota, call the upstream (same format: the caller's body
 * passes through with only the model mapped; otherwise through the canonical
 * form), fail over before the first byte reaches the caller, translate the
 * answer or the stream back, settle the exact cost and log the usage.
 *
 * @since 0.1.0
 */
import { Cause, Context, Effect, Exit, Layer, Scope } from "effect"
import { Sse } from "effect/encoding"
import { HttpServerResponse } from "effect/http"
import { promptTokensTypical, promptTokensUpperBound } from "../canonical/Estimate.ts"
import type { OutputPart } from "../canonical/Content.ts"
import type { Request } from "../canonical/Request.ts"
import type { StreamPart } from "../canonical/StreamPart.ts"
import { emptyUsage, type Usage } from "../canonical/Usage.ts"
import { toProblem } from "../errors/Envelope.ts"
import { type GatewayError, InvalidRequest, ModelNotPriced, UpstreamFailed } from "../errors/GatewayError.ts"
import type { DecodeStep, Format, FormatName, ResponseMeta } from "../formats/Format.ts"
import { hasForeignReasoning } from "../formats/ReasoningOrigin.ts"
import { formatOf } from "../formats/registry.ts"
import { readableBody } from "../http/ReadableBody.ts"
import { sseReader } from "../http/SseEvents.ts"
import { Catalog, type Channel } from "../storage/Catalog.ts"
import { adapters } from "../upstreams/Adapter.ts"
import type { Principal } from "./Auth.ts"
import { type Candidate, ChannelRouter } from "./ChannelRouter.ts"
import { GatewaySettings } from "./GatewaySettings.ts"
import { type InlineMedia, MediaFetcher, toInvalidRequest } from "./MediaFetcher.ts"
import { isTextPriced, textCost } from "../domain/Pricing.ts"
import { QuotaLedger } from "./QuotaLedger.ts"
import { RateLimiter } from "./RateLimiter.ts"
import { UpstreamClient, type UpstreamResponse } from "./UpstreamClient.ts"
import { UsageLog } from "./UsageLog.ts"

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

/** How a request ended, for the usage log and billing. */
interface Meter {
  /** The answer as it was assembled (for `onAnswer`). */
  answerId: string | undefined
  answer: Array<OutputPart> | undefined
  usage: Usage | undefined
  deliveredCharacters: number
  status: number
  error: string | null
}

const sseHeaders = { "cache-control": "no-cache", "x-accel-buffering": "no" }

const usageOfParts = (parts: ReadonlyArray<StreamPart>, current: Usage | undefined): Usage | undefined => {
  let usage = current
  for (const part of parts) {
    if (part._tag === "UsageUpdate" || part._tag === "Finish") usage = part.usage
  }
  return usage
}

const deliveredOf = (parts: ReadonlyArray<StreamPart>): number => {
  let characters = 0
  for (const part of parts) {
    if (part._tag === "TextDelta" || part._tag === "ReasoningDelta") characters += part.text.length
    else if (part._tag === "ToolInputDelta") characters += part.json.length
  }
  return characters
}

/** A chat completions usage-only chunk (`choices: []`), dropped unless the caller asked for usage. */
const isUsageOnlyChunk = (data: string): boolean => data.includes(`"choices":[]`) && data.includes(`"usage"`)

/** @category services */
export class Relay extends Context.Service<Relay, {
  /** Runs the pipeline; the answer is a complete response or an SSE (or JSON array) stream. */
  readonly run: (input: RelayInput) => Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError>
}>()("sluice/services/Relay") {
  static readonly layer = Layer.effect(
    Relay,
    Effect.gen(function* () {
      const catalog = yield* Catalog
      const router = yield* ChannelRouter
      const ledger = yield* QuotaLedger
      const usageLog = yield* UsageLog
      const client = yield* UpstreamClient
      const settings = yield* GatewaySettings
      const limiter = yield* RateLimiter
      const media = yield* MediaFetcher

      const run = Effect.fnUntraced(function* (input: RelayInput) {
        const { principal, request } = input
        const started = Date.now()
        const inbound = formatOf(input.inbound)
        const routed = yield* router.candidates(principal, request.model)
        const endpoint = input.endpoint
        const candidates = endpoint === undefined
          ? routed
          : routed.filter((candidate) => endpoint.supports(candidate.channel))
        if (candidates.length === 0 && endpoint !== undefined) return yield* endpoint.unsupported(request.model)
        const snapshot = catalog.snapshot()
        const price = snapshot.prices.get(request.model)
        if (price === undefined || !isTextPriced(price)) return yield* new ModelNotPriced({ model: request.model })
        const ratio = snapshot.groups.get(principal.group)?.ratio ?? 1_000_000_000n
        const maxOutput = request.maxOutputTokens ?? settings.defaultMaxTokens
        if (!Number.isSafeInteger(maxOutput) || maxOutput < 0) {
          return yield* new InvalidRequest({
            message: "max_tokens must be a non-negative integer.",
            param: "max_tokens"
          })
        }
        const promptUpper = promptTokensUpperBound(request)
        const estimate = textCost(ratio, price, promptUpper, maxOutput)

        const permit = yield* limiter.acquire(limitSubjects(principal, snapshot.groups.get(principal.group)?.limits))
        const meter: Meter = {
          answerId: undefined,
          answer: undefined,
          usage: undefined,
          deliveredCharacters: 0,
          status: 200,
          error: null
        }
        const hold = yield* ledger.reserve(principal, estimate).pipe(
          Effect.tapError(() => permit.release(0))
        )
        let handedOff = false

        /** Bills the request (once) and logs its final attempt. */
        const finish = (candidate: Candidate | undefined, attempt: number, stream: boolean) =>
          Effect.suspend(() => {
            const failed = meter.status >= 400
            const usage = meter.usage ??
              (meter.deliveredCharacters > 0
                ? { inputTokens: promptTokensTypical(request), outputTokens: Math.ceil(meter.deliveredCharacters / 4) }
                : emptyUsage)
            const chargeable = !failed || meter.deliveredCharacters > 0
            const cost = chargeable ? textCost(ratio, price, usage.inputTokens, usage.outputTokens) : 0n
            return Effect.flatMap(ledger.settle(hold, cost), (charged) => {
              usageLog.record({
                requestId: input.requestId,
                attempt,
                userId: principal.userId,
                tokenId: principal.tokenId,
                channelId: candidate?.channel.id ?? null,
                model: request.model,
                upstreamModel: candidate?.upstreamModel ?? null,
                promptTokens: chargeable ? usage.inputTokens : 0,
                completionTokens: chargeable ? usage.outputTokens : 0,
                cachedTokens: chargeable ? usage.cachedInputTokens ?? 0 : 0,
                reasoningTokens: chargeable ? usage.reasoningTokens ?? 0 : 0,
                cost: charged,
                latencyMs: Date.now() - started,
                stream,
                status: meter.status,
                error: meter.error
              })
              const released = permit.release(chargeable ? usage.inputTokens + usage.outputTokens : 0)
              return !failed && input.onAnswer !== undefined && meter.answerId !== undefined &&
                  meter.answer !== undefined
                ? Effect.andThen(released, input.onAnswer(meter.answerId, meter.answer))
                : released
            })
          }).pipe(Effect.uninterruptible)

        const logFailedAttempt = (candidate: Candidate, attempt: number, error: UpstreamFailed) =>
          Effect.sync(() =>
            usageLog.record({
              requestId: input.requestId,
              attempt,
              userId: principal.userId,
              tokenId: principal.tokenId,
              channelId: candidate.channel.id,
              model: request.model,
              upstreamModel: candidate.upstreamModel,
              promptTokens: 0,
              completionTokens: 0,
              cachedTokens: 0,
              reasoningTokens: 0,
              cost: 0n,
              latencyMs: Date.now() - started,
              stream: request.stream,
              status: error.status === 0 ? 502 : error.status,
              error: `${error.kind}: ${error.message}`.slice(0, 500)
            })
          )

        /** Images and files downloaded for this request (shared by its attempts); requests made inline, by candidate. */
        const downloaded = new Map<string, InlineMedia>()
        const inlinedFor = new Map<Candidate, Request>()

        /** The upstream body for `candidate` in its wire format. */
        const upstreamBody = (candidate: Candidate, wire: Format<unknown, unknown>): Record<string, unknown> => {
          let body: Record<string, unknown>
          // A request whose URL images were made inline for this channel is always translated.
          const inlined = inlinedFor.get(candidate)
          // A same-format request holding another vendor's reasoning token is translated, so the token is dropped.
          if (
            wire.name === input.inbound && input.forceTranslate !== true && inlined === undefined &&
            !hasForeignReasoning(request, wire.name)
          ) {
            body = { ...input.raw }
            if (wire.name !== "gemini") body.model = candidate.upstreamModel
            if (wire.name === "openai-chat" && request.stream) {
              const options = typeof body.stream_options === "object" && body.stream_options !== null
                ? body.stream_options as Record<string, unknown>
                : {}
              body.stream_options = { ...options, include_usage: true }
            }
          } else {
            body = wire.encodeRequest({ ...(inlined ?? request), model: candidate.upstreamModel }).body
          }
          for (const param of candidate.channel.settings.strip_params ?? []) delete body[param]
          return body
        }

        const timeoutsOf = (candidate: Candidate) => ({
          firstByteMs: candidate.channel.settings.first_byte_timeout_ms ?? settings.firstByteTimeoutMs,
          idleMs: candidate.channel.settings.idle_timeout_ms ?? settings.idleTimeoutMs,
          totalMs: candidate.channel.settings.total_timeout_ms ?? settings.totalTimeoutMs
        })

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

        /** One non-stream attempt: the caller's JSON body as text (a passthrough answer as received), or a failure. */
        const attemptJson = Effect.fnUntraced(function* (candidate: Candidate) {
          const adapter = adapters[candidate.channel.type]
          const wire = formatOf(
            endpoint === undefined ? adapter.wireFormat(input.inbound, candidate.channel) : inbound.name
          )
          const target = adapter.target(candidate.channel, candidate.key.key, wire.name, candidate.upstreamModel, false)
          const response = yield* client.post(
            target.url + (endpoint?.pathSuffix ?? ""),
            target.headers,
            JSON.stringify(upstreamBody(candidate, wire)),
            timeoutsOf(candidate)
          )
          if (response.status < 200 || response.status >= 300) return yield* failureOfStatus(wire, response)
          const text = yield* response.text
          let json: unknown
          try {
            json = JSON.parse(text)
          } catch {
            return yield* new UpstreamFailed({ kind: "bad-body", status: response.status, message: "Not JSON." })
          }
          if (endpoint !== undefined) {
            meter.usage = endpoint.usageOf(json)
            // No usage reported: billed like a broken stream, from what was delivered (see `finish`).
            if (meter.usage === undefined) meter.deliveredCharacters = text.length
            return text
          }
          const decoded = wire.decodeResponse(json)
          if (decoded instanceof UpstreamFailed) return yield* decoded
          meter.usage = decoded.usage
          const passthrough = wire.name === input.inbound && input.forceTranslate !== true
          meter.answerId = passthrough ? decoded.id : input.meta.id
          meter.answer = [...decoded.content]
          return passthrough ? text : JSON.stringify(inbound.encodeResponse(decoded, input.meta))
        })

        /** One stream attempt: the upstream is answering with a readable first event, or a failure. */
        const attemptStream = Effect.fnUntraced(function* (candidate: Candidate, scope: Scope.Closeable) {
          const adapter = adapters[candidate.channel.type]
          const wire = formatOf(adapter.wireFormat(input.inbound, candidate.channel))
          const target = adapter.target(candidate.channel, candidate.key.key, wire.name, candidate.upstreamModel, true)
          const response = yield* client.post(
            target.url,
            target.headers,
            JSON.stringify(upstreamBody(candidate, wire)),
            timeoutsOf(candidate)
          )
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
          return { wire, first, firstStep, next }
        })

        /**
         * The caller's answer body, as the pull of its next bytes: upstream events (the first batch already
         * read, its first event already decoded as `firstStep`, then `next` until the end) decoded, metered and
         * encoded in the caller's format. One pull per
         * upstream read does it all (read, parse, translate, frame, encode); `readableBody` hands the pulls to the
         * runtime. The upstream's end, early end or failure becomes the format's last events (an in-band error for
         * a failure), then `Cause.Done`.
         */
        const answerBody = (
          wire: Format<unknown, unknown>,
          first: ReadonlyArray<Sse.Event>,
          firstStep: readonly [unknown, ReadonlyArray<StreamPart>],
          next: Effect.Effect<ReadonlyArray<Sse.Event> | undefined, UpstreamFailed>
        ): Effect.Effect<readonly [Uint8Array], Cause.Done> => {
          const passthrough = wire.name === input.inbound && input.forceTranslate !== true
          const dropUsageChunks = passthrough && input.inbound === "openai-chat" && input.meta.includeUsage !== true
          const encoder = inbound.streamEncoder
          const decoder = wire.streamDecoder
          const assembled = new Map<number, OutputPart>()
          const assemble = (parts: ReadonlyArray<StreamPart>) => {
            if (input.onAnswer === undefined) return
            for (const part of parts) {
              switch (part._tag) {
                case "ResponseStart":
                  meter.answerId = passthrough ? part.id : input.meta.id
                  break
                case "BlockStart":
                  assembled.set(
                    part.index,
                    part.block.type === "tool-call"
                      ? { type: "tool-call", callId: part.block.callId, name: part.block.name, arguments: "" }
                      : part.block.type === "reasoning"
                      ? { type: "reasoning", text: "" }
                      : { type: "text", text: "" }
                  )
                  break
                case "TextDelta":
                case "ReasoningDelta": {
                  const current = assembled.get(part.index)
                  if (current !== undefined && current.type !== "tool-call") {
                    assembled.set(part.index, { ...current, text: current.text + part.text })
                  }
                  break
                }
                case "ReasoningSignature": {
                  const current = assembled.get(part.index)
                  if (current?.type === "reasoning") {
                    assembled.set(part.index, { ...current, signature: part.signature, origin: part.origin })
                  }
                  break
                }
                case "ToolInputDelta": {
                  const current = assembled.get(part.index)
                  if (current?.type === "tool-call") {
                    assembled.set(part.index, { ...current, arguments: current.arguments + part.json })
                  }
                  break
                }
                case "Finish":
                  meter.answer = [...assembled.entries()].sort((a, b) => a[0] - b[0]).map(([, value]) => value)
                  break
              }
            }
          }
          let decoded = decoder.initial()
          /** The decoded first event, taken by the first `step` (the first event of `first`). */
          let pendingStep: DecodeStep<unknown> | undefined = firstStep
          let encoded = encoder.initial(input.meta)
          let done = false
          let pending: ReadonlyArray<Sse.Event> | undefined = first
          let opened = false
          const bytes = new TextEncoder()

          const encodeParts = (parts: ReadonlyArray<StreamPart>, out: Array<Sse.Event>) => {
            for (const part of parts) {
              const [state, produced] = encoder.step(encoded, part)
              encoded = state
              for (const event of produced) out.push(event)
            }
          }
          const fail = (error: UpstreamFailed, out: Array<Sse.Event>) => {
            meter.status = error.status >= 400 ? error.status : 502
            meter.error = `${error.kind}: ${error.message}`.slice(0, 500)
            done = true
            for (const event of encoder.fail(encoded, toProblem(error))) out.push(event)
          }
          const onEvents = (events: ReadonlyArray<Sse.Event>): Array<Sse.Event> => {
            const out: Array<Sse.Event> = []
            for (const event of events) {
              const result = pendingStep ?? decoder.step(decoded, event)
              pendingStep = undefined
              if (result instanceof UpstreamFailed) {
                fail(result, out)
                return out
              }
              const [state, parts] = result as readonly [unknown, ReadonlyArray<StreamPart>]
              decoded = state
              meter.usage = usageOfParts(parts, meter.usage)
              assemble(parts)
              meter.deliveredCharacters += deliveredOf(parts)
              if (!passthrough) encodeParts(parts, out)
              else if (!(dropUsageChunks && isUsageOnlyChunk(event.data))) out.push(event)
            }
            return out
          }
          const onEnd = (): Array<Sse.Event> => {
            const out: Array<Sse.Event> = []
            if (!decoder.complete(decoded)) {
              fail(
                new UpstreamFailed({ kind: "stream-broken", status: 0, message: "The upstream stream ended early." }),
                out
              )
              return out
            }
            done = true
            const parts = decoder.flush(decoded)
            meter.usage = usageOfParts(parts, meter.usage)
            assemble(parts)
            if (passthrough) return out
            encodeParts(parts, out)
            for (const event of encoder.end(encoded)) out.push(event)
            return out
          }
          /** The events as one write in the caller's framing (SSE, or one JSON array for generate-content). */
          const frame = (events: ReadonlyArray<Sse.Event>): string => {
            let text = ""
            if (input.jsonArrayStream === true) {
              for (const event of events) {
                text += (opened ? ",\r\n" : "[") + event.data
                opened = true
              }
              if (done) text += opened ? "]" : "[]"
            } else {
              for (const event of events) text += Sse.encoder.write(event)
            }
            return text
          }
          const emit = (events: ReadonlyArray<Sse.Event>) => {
            const text = frame(events)
            return text === "" ? pull : Effect.succeed([bytes.encode(text)] as const)
          }
          const afterRead = Effect.matchEffect(next, {
            onFailure: (error: UpstreamFailed) => {
              const out: Array<Sse.Event> = []
              fail(error, out)
              return emit(out)
            },
            onSuccess: (events: ReadonlyArray<Sse.Event> | undefined) =>
              emit(events === undefined ? onEnd() : onEvents(events))
          })
          const pull: Effect.Effect<readonly [Uint8Array], Cause.Done> = Effect.suspend(() => {
            if (done) return Cause.done()
            if (pending === undefined) return afterRead
            const events = pending
            pending = undefined
            return emit(onEvents(events))
          })
          return pull
        }

        const maxAttempts = Math.min(candidates.length, 1 + settings.retryTimes)
        const deadline = started + settings.requestDeadlineMs
        let lastError: UpstreamFailed | undefined

        const outcome = Effect.gen(function* () {
          for (let index = 0; index < maxAttempts; index++) {
            const candidate = candidates[index]
            const attempt = index + 1
            if (index > 0 && Date.now() > deadline) break
            if (endpoint === undefined) {
              // An image or file that cannot be downloaded is the caller's 400: no upstream call, no health report.
              const wire = adapters[candidate.channel.type].wireFormat(input.inbound, candidate.channel)
              const inlined = yield* media.prepare(request, candidate.channel, wire, downloaded).pipe(
                Effect.mapError((error) => toInvalidRequest(error, input.raw, input.inbound))
              )
              if (inlined !== undefined) inlinedFor.set(candidate, inlined)
            }
            if (!request.stream || endpoint !== undefined) {
              const result = yield* Effect.result(attemptJson(candidate))
              if (result._tag === "Success") {
                yield* router.report(candidate, { _tag: "Success" })
                meter.status = 200
                yield* finish(candidate, attempt, false)
                handedOff = true
                return HttpServerResponse.text(result.success, { contentType: "application/json" })
              }
              lastError = result.failure
            } else {
              const scope = yield* Scope.make()
              const result = yield* Effect.result(attemptStream(candidate, scope))
              if (result._tag === "Success") {
                yield* router.report(candidate, { _tag: "Success" })
                const { wire, first, firstStep, next } = result.success
                const body = readableBody(
                  answerBody(wire, first, firstStep, next),
                  Scope.close(scope, Exit.void).pipe(Effect.andThen(finish(candidate, attempt, true))),
                  yield* Effect.context<never>()
                )
                handedOff = true
                const contentType = input.jsonArrayStream === true ? "application/json" : "text/event-stream"
                return HttpServerResponse.raw(body, { contentType, headers: sseHeaders })
              }
              yield* Scope.close(scope, Exit.void)
              lastError = result.failure
            }
            const error = lastError
            yield* logFailedAttempt(candidate, attempt, error)
            yield* router.report(
              candidate,
              error.kind === "unauthorized" || error.kind === "quota"
                ? { _tag: "KeyRejected", reason: `${error.kind}: ${error.message}`.slice(0, 200) }
                : error.retryable
                ? { _tag: "Retryable", reason: error.kind }
                : { _tag: "Success" }
            )
            if (!error.retryable) break
          }
          meter.status = lastError === undefined ? 503 : lastError.status || 502
          return yield* (lastError ?? new UpstreamFailed({ kind: "server", status: 503, message: "No channel left." }))
        })

        return yield* outcome.pipe(
          Effect.onExit((exit) =>
            handedOff ? Effect.void : Effect.suspend(() => {
              if (exit._tag === "Failure") meter.status = meter.status < 400 ? 499 : meter.status
              meter.usage = undefined
              meter.deliveredCharacters = 0
              // Nothing reached the caller: release the hold in full.
              return ledger.settle(hold, 0n).pipe(Effect.andThen(permit.release(0)))
            })
          )
        )
      }) as (input: RelayInput) => Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError>

      return Relay.of({ run })
    })
  )
}

/** The rate-limit subjects of a request: its token and its user (group defaults fill gaps). */
const limitSubjects = (
  principal: Principal,
  groupLimits: { readonly rpm?: number; readonly tpm?: number; readonly concurrency?: number } | undefined
) => [
  { key: `token:${principal.tokenId}`, limits: principal.tokenLimits ?? {} },
  { key: `user:${principal.userId}`, limits: principal.userLimits ?? groupLimits ?? {} }
]
