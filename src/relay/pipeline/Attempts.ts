/**
 * One attempt on one candidate, as `Failover` runs it: the request made ready
 * for the channel (URL media inline where the channel needs them, the hold
 * grown to cover them), its body in the channel's wire format (the caller's
 * body passed through, its URL media made inline in place where needed, or a
 * translation of the canonical request, refused naming the field when the
 * request holds what only its own format can carry), the
 * upstream call (over HTTP, or, for a request that came over a client's
 * Responses socket to a channel that takes its wire over a WebSocket, over
 * that socket's upstream socket: `ResponsesUpstreamSocket.ts`, the same events
 * for the same decoder), and either a JSON answer or a stream's accepted head (its
 * first event read and decoded, so an in-band error there can still fail
 * over). Every upstream failure is an `UpstreamFailed` classified by the
 * wire format; a download the caller can fix is an `InvalidRequest`.
 *
 * @since 0.1.0
 */
import { Effect, Exit, Predicate, Result, Scope } from "effect"
import type { Sse } from "effect/encoding"
import type { OutputPart } from "../../canonical/Content.ts"
import { promptTokensUpperBound } from "../../canonical/Estimate.ts"
import type { Request } from "../../canonical/Request.ts"
import type { Usage } from "../../canonical/Usage.ts"
import { parseJsonWithin } from "../../domain/JsonDepth.ts"
import { type GatewayError, InvalidRequest, UpstreamFailed } from "../../errors/GatewayError.ts"
import { type DecodeStep, sameFormatWire, type UpstreamWire } from "../../formats/Format.ts"
import { hasForeignReasoning } from "../../formats/shared/ReasoningOrigin.ts"
import { formatOf } from "../../formats/Formats.ts"
import { eventStreamReader } from "../../upstreams/transport/EventStreamEvents.ts"
import { sseReader } from "../../upstreams/transport/SseEvents.ts"
import type { Candidate } from "../../services/ChannelRouter.ts"
import type { Settings } from "../../services/GatewaySettings.ts"
import {
  downloadsFor,
  type InlineMedia,
  type MediaFetcher,
  toInvalidRequest
} from "../../upstreams/transport/MediaFetcher.ts"
import {
  channelTimeouts,
  readableErrorBody,
  type UpstreamClient,
  type UpstreamResponse
} from "../../upstreams/transport/UpstreamClient.ts"
import { UPSTREAM_SOCKETS } from "../../upstreams/transport/ResponsesUpstreamSocket.ts"
import { adapters, wireOf as dialectOf } from "../../upstreams/Adapter.ts"
import { mapUrlPath } from "../../upstreams/BaseUrl.ts"
import type { RelayInput } from "../text/RelayInput.ts"

/** A JSON answer: the caller's body, and what it means for billing. @category models */
export interface JsonAnswer {
  readonly text: string
  readonly usage: Usage | undefined
  /** Characters billed by estimate when the upstream reported no usage (side endpoints). */
  readonly deliveredCharacters: number
  readonly answerId: string | undefined
  readonly answer: ReadonlyArray<OutputPart> | undefined
}

/**
 * A stream's accepted head: the first events read, the first one decoded, the
 * reader of the rest, and the scope that aborts the upstream call when closed.
 *
 * @category models
 */
export interface StreamHead {
  readonly wire: UpstreamWire
  readonly first: ReadonlyArray<Sse.Event>
  readonly firstStep: DecodeStep<unknown>
  readonly next: Effect.Effect<ReadonlyArray<Sse.Event> | undefined, UpstreamFailed>
  readonly scope: Scope.Closeable
}

/** What the attempts of one request share. @category models */
export interface AttemptContext {
  readonly input: RelayInput
  readonly client: typeof UpstreamClient.Service
  readonly media: typeof MediaFetcher.Service
  readonly settings: Settings
  /** The output cap sent when the caller named none (the one the hold was sized for); `undefined` otherwise. */
  readonly sentCap: number | undefined
  /** Grows the request's hold to cover a prompt of `promptTokens` (nothing when already covered). */
  readonly coverPrompt: (promptTokens: number) => Effect.Effect<void, GatewayError>
  /** The request's `x-request-id`, sent upstream with every attempt (none outside the telemetry middleware). */
  readonly requestId?: string | undefined
}

/** The two kinds of attempt of one request. @category models */
export interface Attempts {
  readonly json: (candidate: Candidate) => Effect.Effect<JsonAnswer, GatewayError>
  readonly stream: (candidate: Candidate) => Effect.Effect<StreamHead, GatewayError>
}

/**
 * The attempts of one request.
 *
 * @category attempts
 */
export const makeAttempts = (context: AttemptContext): Attempts => {
  const { input, settings, sentCap } = context
  const { request, endpoint } = input
  const inbound = formatOf(input.inbound)
  /** Images and files downloaded for this request, shared by its attempts (made by the first download). */
  let downloaded: Map<string, InlineMedia> | undefined

  const wireOf = (candidate: Candidate): UpstreamWire =>
    endpoint === undefined
      ? dialectOf(
        candidate.channel.type,
        adapters[candidate.channel.type].wireFormat(input.inbound, candidate.channel, candidate.upstreamModel)
      )
      : inbound

  /** The request with its URL media inline where `candidate`'s channel needs them, or `undefined` when none do. */
  const prepared = (
    candidate: Candidate,
    wire: UpstreamWire
  ): Effect.Effect<Request | undefined, GatewayError> => {
    if (endpoint !== undefined) return Effect.undefined
    // Most requests hold no URL media the channel must have inline: no download effect at all for them.
    const downloads = downloadsFor(request, candidate.channel, wire.name)
    if (downloads.length === 0) return Effect.undefined
    return Effect.flatMap(
      // An image or file that cannot be downloaded is the caller's 400: no upstream call, no health report.
      Effect.mapError(
        context.media.inline(request, downloads, downloaded ??= new Map()),
        (error) => toInvalidRequest(error, input.raw, input.inbound)
      ),
      (inlined) => Effect.as(context.coverPrompt(promptTokensUpperBound(inlined)), inlined)
    )
  }

  /**
   * The upstream body for `candidate` in `wire` format. A side endpoint takes the caller's body with only the
   * model mapped. A same-format channel takes the caller's body, its URL media rewritten inline in place when
   * the channel needs them and another vendor's reasoning tokens left out where the format can do that in place
   * (every other field as sent). Otherwise (another channel, or a foreign token the format cannot leave out in
   * place) the canonical request is translated (the token dropped), and a request holding what only its own
   * format can carry is the caller's 400 naming that field.
   */
  const bodyOf = (
    candidate: Candidate,
    wire: UpstreamWire,
    inlined: Request | undefined,
    stream: boolean
  ): Record<string, unknown> | InvalidRequest => {
    // A side endpoint takes the caller's body with only the model mapped. A same-format body is the caller's own,
    // media made inline and another vendor's reasoning token left out in place; a translation is refused when the
    // request holds what only its own format can say. A channel with `forward_store: false` gets no `store`.
    const forwardStore = candidate.channel.settings.forward_store !== false
    let body: Record<string, unknown>
    const same = endpoint === undefined ? sameFormatWire(wire, input.inbound) : undefined
    const foreign = same !== undefined && hasForeignReasoning(request, same.name)
    if (endpoint !== undefined) body = { ...input.raw, model: candidate.upstreamModel }
    else if (same !== undefined && (!foreign || same.passthrough.withoutForeignReasoning !== undefined)) {
      const inline = inlined === undefined ? input.raw : same.passthrough.inlineMedia(input.raw, inlined)
      const raw = foreign && same.passthrough.withoutForeignReasoning !== undefined
        ? same.passthrough.withoutForeignReasoning(inline, candidate.upstreamModel)
        : inline
      body = same.passthrough.body(raw, {
        model: candidate.upstreamModel,
        stream,
        outputCap: sentCap,
        forwardStore,
        headers: input.forwardHeaders
      })
    } else {
      const refused = request.untranslatable?.[0]
      if (refused !== undefined) return new InvalidRequest({ message: refused.message, param: refused.param })
      body = wire.encodeRequest({
        ...(inlined ?? request),
        ...(sentCap === undefined ? {} : { maxOutputTokens: sentCap }),
        model: candidate.upstreamModel,
        ...(forwardStore ? {} : { store: undefined })
      }).body
    }
    for (const param of candidate.channel.settings.strip_params ?? []) delete body[param]
    return body
  }

  const call = (
    candidate: Candidate,
    wire: UpstreamWire,
    inlined: Request | undefined,
    stream: boolean
  ) => {
    const { channel } = candidate
    const target = adapters[channel.type].target(channel, candidate.key.key, wire.name, candidate.upstreamModel, stream)
    if (context.requestId !== undefined) target.headers["x-request-id"] = context.requestId
    if (endpoint === undefined && sameFormatWire(wire, input.inbound) !== undefined) {
      Object.assign(target.headers, input.forwardHeaders)
    }
    const body = bodyOf(candidate, wire, inlined, stream)
    if (body instanceof InvalidRequest) return Effect.fail(body)
    return context.client.post(
      endpoint === undefined ? target.url : mapUrlPath(target.url, (path) => path + endpoint.pathSuffix),
      target.headers,
      JSON.stringify(body),
      channelTimeouts(channel, settings),
      target.signing
    )
  }

  /**
   * The stream call over the caller's socket's upstream socket, when the request came over a client socket and
   * `candidate`'s channel takes `wire` over a WebSocket (`Adapter.socketTarget`); `undefined`: over HTTP.
   */
  const socketCall = (candidate: Candidate, wire: UpstreamWire, inlined: Request | undefined) => {
    if (input.socket === undefined || endpoint !== undefined) return undefined
    const { channel } = candidate
    const target = adapters[channel.type].socketTarget?.(channel, candidate.key.key, wire.name)
    if (target === undefined) return undefined
    const sockets = input.socket.get(UPSTREAM_SOCKETS)
    if (sockets === undefined) return undefined
    const body = bodyOf(candidate, wire, inlined, true)
    if (body instanceof InvalidRequest) return Effect.fail(body)
    return sockets.turn(target.url, target.headers, body, channelTimeouts(channel, settings))
  }

  /** One non-stream attempt: the caller's JSON body (a passthrough answer as received), or a failure. */
  const json = (candidate: Candidate) =>
    Effect.gen(function* () {
      const wire = wireOf(candidate)
      const inlined = yield* prepared(candidate, wire)
      const response = yield* call(candidate, wire, inlined, false)
      if (response.status < 200 || response.status >= 300) return yield* failureOfStatus(wire, response)
      const text = yield* response.text
      const read = parseJsonWithin(text)
      if (Result.isFailure(read)) {
        const message = read.failure === "too-deep" ? "Nested too deep." : "Not JSON."
        return yield* new UpstreamFailed({ kind: "bad-body", status: response.status, message })
      }
      const parsed = read.success
      if (endpoint !== undefined) {
        const usage = endpoint.usageOf(parsed)
        // No usage reported: billed from what was delivered (see `billedUsage`).
        const deliveredCharacters = usage === undefined ? text.length : 0
        return { text, usage, deliveredCharacters, answerId: undefined, answer: undefined } satisfies JsonAnswer
      }
      const decoded = wire.decodeResponse(parsed)
      if (decoded instanceof UpstreamFailed) return yield* decoded
      const same = sameFormatWire(wire, input.inbound)
      const passthrough = same !== undefined
      const shown = same !== undefined && Predicate.isObject(parsed) && !Array.isArray(parsed)
        ? same.passthrough.answer?.(parsed as Record<string, unknown>)
        : undefined
      return {
        text: passthrough
          ? (shown === undefined ? text : JSON.stringify(shown))
          : JSON.stringify(inbound.encodeResponse(decoded, input.meta)),
        usage: decoded.usage,
        deliveredCharacters: 0,
        answerId: passthrough ? decoded.id : input.meta.id,
        answer: [...decoded.content]
      } satisfies JsonAnswer
    })

  /** One stream attempt: the upstream is answering with a readable first event, or a failure. */
  const stream = (candidate: Candidate) => {
    const scope = Scope.makeUnsafe()
    return Effect.gen(function* () {
      const wire = wireOf(candidate)
      const inlined = yield* prepared(candidate, wire)
      const turn = socketCall(candidate, wire, inlined)
      let next: Effect.Effect<ReadonlyArray<Sse.Event> | undefined, UpstreamFailed>
      if (turn !== undefined) {
        // Over the client socket's upstream socket: the same events, read by the same decoder.
        const answered = yield* turn
        yield* Scope.addFinalizer(scope, Effect.sync(answered.release))
        if (answered.status !== 200) return yield* failureOf(wire, answered.status, answered.errorText, undefined)
        next = answered.next
      } else {
        const response = yield* call(candidate, wire, inlined, true)
        yield* Scope.addFinalizer(scope, Effect.sync(response.abort))
        if (response.status < 200 || response.status >= 300) return yield* failureOfStatus(wire, response)
        // The wire says how its stream is framed: SSE, or AWS event-stream binary messages (Bedrock).
        next = wire.framing === "aws-event-stream" ? eventStreamReader(response.read) : sseReader(response.read)
      }
      const first = yield* next
      if (first === undefined) {
        return yield* new UpstreamFailed({ kind: "stream-broken", status: 200, message: "Empty stream." })
      }
      // An in-band error as the very first event can still fail over. The answer starts from this step.
      const firstStep = wire.streamDecoder.step(wire.streamDecoder.initial(), first[0])
      if (firstStep instanceof UpstreamFailed) return yield* firstStep
      return { wire, first, firstStep, next, scope } satisfies StreamHead
    }).pipe(Effect.onError(() => Scope.close(scope, Exit.void)))
  }

  return { json, stream }
}

/**
 * An upstream HTTP error answer as the failure its format's classifier says, from its status, body and AWS's
 * structured error type header (`x-amzn-ErrorType`, sent by Bedrock; absent elsewhere).
 */
const failureOfStatus = (wire: UpstreamWire, response: UpstreamResponse) =>
  response.text.pipe(
    Effect.catch(() => Effect.succeed("")),
    Effect.flatMap((text) => failureOf(wire, response.status, text, response.headers["x-amzn-errortype"]))
  )

/** An upstream error answer (`status`, its body `text`) as the failure its format's classifier says. */
const failureOf = (wire: UpstreamWire, status: number, text: string, errorType: string | undefined) => {
  const classified = wire.classifyError(status, readableErrorBody(text), errorType)
  return Effect.fail(
    new UpstreamFailed({
      kind: classified.kind,
      status,
      message: classified.message,
      ...(classified.code === undefined ? {} : { code: classified.code })
    })
  )
}
