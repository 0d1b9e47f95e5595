/**
 * One Realtime session once both sockets are open: the caller's (server side, from `Deno.upgradeWebSocket`) and the
 * channel's (the gateway's socket client, `upstreams/transport/ClientSocket.ts`). Every event crosses unchanged, in order, each way; the gateway
 * reads the vendor's events only to bill them, and the caller's only to bound them.
 *
 * - From the caller: each frame passes `readClientEvent` (text, at most `websocket_max_frame_bytes`, one JSON
 *   object with a `type`) and the event rate (`websocket_max_events_per_second`); a refused frame is answered with an
 *   `error` event and not forwarded. A `response.create` takes a place in the caller's rpm (a refusal: an `error`
 *   event, `rate_limit_exceeded`, not forwarded), kept until the response it asks for ends, when its tokens count
 *   against the tpm. A response started by server turn detection takes its own place when it starts; over the rpm
 *   or tpm it is cancelled at the vendor (`response.cancel`), billed what it then reports, and the caller told.
 * - The float (docs/BILLING.md, "Realtime sessions"): one hold of `float` quota units is kept spare. A vendor
 *   `response.created` (asked for by the caller, or started by server turn detection) takes the spare float and a
 *   new one is held at once; each `response.done` books its response's cost (`realtimeCost` of the usage it
 *   reported) against its own float as one usage row (`requestId` `<socket id>/<response id>`), then is
 *   forwarded. When no new float can be held (balance or budget), the session is ending: the caller's events are
 *   refused (`insufficient_user_quota`), the responses in flight finish, then the caller gets an `error` event and
 *   the socket closes with 1008. At most `MAX_IN_FLIGHT` responses run at once (each on its own float).
 * - The end (caller or vendor closed, idle time, shutdown: `drain` lets the responses in flight finish within the
 *   grace, then closes with 1001): the spare float is released; a response
 *   still in flight is billed from the deltas it had sent (`cutTokens`, at most its float); the rate-limit slot is
 *   freed; one log line for the socket.
 *
 * @since 0.3.0
 */
import { Clock, Effect, Exit, type Tracer } from "effect"
import { type Price, realtimeCost, type RealtimeTokens } from "../../domain/Pricing.ts"
import { errorEvent, isRefusal, makeEventRate, readClientEvent, type Refusal } from "../../http/WebSocketFrames.ts"
import type { Metrics } from "../../observability/Metrics.ts"
import type { Ledger } from "../../billing/Ledger.ts"
import type { Hold } from "../../billing/QuotaLedger.ts"
import type { Principal } from "../../services/Auth.ts"
import type { Candidate } from "../../services/ChannelRouter.ts"
import type { Permit } from "../../services/RateLimiter.ts"
import type { GatewayError } from "../../errors/GatewayError.ts"
import { cutTokens, realtimeUsageOf } from "./RealtimeUsage.ts"
import type { ClientSocket } from "../../upstreams/transport/ClientSocket.ts"

/** Most responses a session may have running at once (OpenAI runs one per conversation, plus out-of-band ones). */
export const MAX_IN_FLIGHT = 4

/** Response ids a session remembers as billed. */
const MAX_FINISHED_KEPT = 16

/** Milliseconds the caller's socket may take to open after the 101 before the session ends. */
export const CLIENT_OPEN_MILLIS = 10_000

/** The metrics route label of Realtime sockets. */
const ROUTE = "/v1/realtime"

/** What a session runs with, fixed at the handshake. @category models */
export interface RealtimeSessionInput {
  /** The socket's id (`rtsock_…`), in every usage row and log line of the session. */
  readonly socketId: string
  readonly principal: Principal
  readonly model: string
  readonly candidate: Candidate
  readonly price: Price
  /** The group ratio, fixed-point ×10⁹. */
  readonly ratio: bigint
  /** Quota units held per response (see the module doc). */
  readonly float: bigint
  /** The float held at the handshake. */
  readonly firstHold: Hold
  /** The rate-limit slot the socket holds while open. */
  readonly permit: Permit
  /** Admits one response against the caller's rpm and tpm; its permit is released with the response's tokens. */
  readonly admitResponse: Effect.Effect<Permit, GatewayError>
  readonly ledger: typeof Ledger.Service
  readonly metrics: Metrics | undefined
  readonly maxFrameBytes: number
  readonly eventsPerSecond: number
  /** Whether spans are exported (`TracingEnabled`): then each response has a `realtime.response` span. */
  readonly traced: boolean
  /** Milliseconds with no frame either way before the socket is closed; 0: never. */
  readonly idleMillis: number
  readonly started: number
  /** Runs an effect with the request's services (its loggers); never rejects for the effects given here. */
  readonly run: <A>(effect: Effect.Effect<A>) => Promise<A>
}

/** A session's handle: its end, and a way to end it from outside (shutdown). @category models */
export interface RealtimeSession {
  /** Resolves once the session ended and everything it held is billed or released. */
  readonly ended: Promise<void>
  /** Ends the session: both sockets closed with `code` and `reason`. */
  readonly close: (code: number, reason: string) => void
  /**
   * Ends the session for a shutdown: the caller's events are refused from now on, the responses in flight may
   * finish (billed as reported) for up to `graceMillis`, then both sockets close with 1001.
   */
  readonly drain: (graceMillis: number) => void
}

/** A response the vendor started and has not finished. */
interface InFlight {
  readonly hold: Hold
  /** Its place in the caller's rpm, given back with its tokens (the tpm) when it ends. */
  readonly permit: Permit | undefined
  /** Its `realtime.response` span, when spans are exported. */
  readonly span: Tracer.Span | undefined
  textCharacters: number
  audioBytes: number
}

/** Most admitted `response.create` events kept waiting for the vendor's `response.created`. */
const MAX_PENDING_PERMITS = 8

const encoder = new TextEncoder()

const quotaRefusal = (message: string): Refusal => ({
  code: "insufficient_user_quota",
  message,
  param: null,
  eventId: null
})

/** Close codes a server may send (RFC 6455 §7.4): 1000–1003, 1007–1014, 3000–4999. */
const sendableCode = (code: number): number =>
  (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999) ? code : 1011

/** The decoded length of a base64 string (an audio delta), without decoding it. */
const base64Bytes = (value: unknown): number =>
  typeof value === "string" ? Math.floor((value.replace(/=+$/, "").length * 3) / 4) : 0

/**
 * Runs a session over `client` (open or opening) and `upstream` (open). Returns at once.
 *
 * @category constructors
 */
export const startRealtimeSession = (
  input: RealtimeSessionInput,
  client: WebSocket,
  upstream: ClientSocket
): RealtimeSession => {
  const { ledger, run } = input
  let spare: Hold | undefined = input.firstHold
  const inFlight = new Map<string, InFlight>()
  /** The rpm places of the caller's admitted `response.create` events, oldest first, until their responses start. */
  const pending: Array<Permit> = []
  /** The ids of the last responses billed (at most `MAX_FINISHED_KEPT`), so a repeated `response.done` bills nothing. */
  const finished: Array<string> = []
  let ending = false
  let draining = false
  let ended = false
  let responses = 0
  let charged = 0n
  let endReason = "client"
  let lastFrame = Date.now()
  const rate = makeEventRate(input.eventsPerSecond)
  let resolveEnded: () => void = () => {}
  const endedPromise = new Promise<void>((resolve) => resolveEnded = resolve)
  // Resolved when the caller's socket opens, or when the session ends first (so the queued events drain).
  let releaseOpen: () => void = () => {}
  const clientOpen = new Promise<void>((resolve) => releaseOpen = resolve)
  if (client.readyState === WebSocket.OPEN) releaseOpen()
  else client.addEventListener("open", () => releaseOpen(), { once: true })
  // Upstream events wait for the caller's socket to open, then cross one at a time (a `response.done` is billed
  // before it is forwarded, and nothing after it overtakes it).
  let upstreamChain: Promise<void> = clientOpen
  let clientChain: Promise<void> = Promise.resolve()

  const toClient = (text: string) => {
    if (client.readyState !== WebSocket.OPEN) return
    client.send(text)
    input.metrics?.websocketFrame(ROUTE, "out", encoder.encode(text).length)
  }
  const refuse = (refusal: Refusal, type?: string) => toClient(errorEvent(refusal, type))

  /** One response's place in the caller's rpm, or `undefined` when the rpm or tpm is spent. */
  const admit = (): Promise<Permit | undefined> =>
    run(input.admitResponse.pipe(
      Effect.map((permit): Permit | undefined => permit),
      Effect.catch(() => Effect.succeed(undefined))
    ))

  /** The rpm place of a response the vendor started: the caller's oldest admitted create's, or a new one. */
  const permitOfStarted = async (): Promise<Permit | undefined> => pending.shift() ?? await admit()

  /**
   * A response's span, a child of the handshake's (`run` carries its context), from its `response.created` to its
   * end; `undefined` when spans are not exported.
   */
  const startSpan = (responseId: string): Promise<Tracer.Span | undefined> =>
    input.traced
      ? run(Effect.makeSpan("realtime.response", {
        kind: "internal",
        attributes: {
          "sluice.socket_id": input.socketId,
          "sluice.response_id": responseId.slice(0, 100),
          "sluice.model": input.model,
          "sluice.channel": input.candidate.channel.name
        }
      }))
      : Promise.resolve(undefined)

  /** Gives a response's place back with the tokens it used (counted against the tpm). */
  const releasePermit = (permit: Permit | undefined, tokens: number): Effect.Effect<void> =>
    permit === undefined ? Effect.void : permit.release(tokens)

  /** Books `tokens` of a response against `hold` as its one usage row; returns what was charged. */
  const book = (
    responseId: string,
    hold: Hold,
    tokens: RealtimeTokens,
    status: number,
    error: string | null,
    span: Tracer.Span | undefined
  ) =>
    Effect.gen(function* () {
      const cost = realtimeCost(input.ratio, input.price, tokens)
      // A cut response is billed from an estimate, never above its float; a reported one as reported.
      const capped = status !== 200 && cost > input.float ? input.float : cost
      const bill = yield* ledger.book(hold, capped, (amount) => ({
        requestId: `${input.socketId}/${responseId}`,
        attempt: 0,
        userId: input.principal.userId,
        tokenId: input.principal.tokenId,
        channelId: input.candidate.channel.id,
        model: input.model,
        upstreamModel: input.candidate.upstreamModel,
        promptTokens: tokens.inputTokens,
        completionTokens: tokens.outputTokens,
        cachedTokens: tokens.cachedText + tokens.cachedAudio + tokens.cachedImage,
        reasoningTokens: 0,
        audioInputTokens: tokens.audioInput,
        audioOutputTokens: tokens.audioOutput,
        cost: amount,
        latencyMs: Date.now() - input.started,
        stream: true,
        status,
        error
      }))
      input.metrics?.usage(
        input.model,
        input.principal.group,
        tokens.inputTokens,
        tokens.outputTokens,
        tokens.cachedText + tokens.cachedAudio + tokens.cachedImage,
        0,
        bill
      )
      if (span !== undefined) {
        span.attribute("sluice.input_tokens", tokens.inputTokens)
        span.attribute("sluice.output_tokens", tokens.outputTokens)
        span.attribute("sluice.audio_input_tokens", tokens.audioInput)
        span.attribute("sluice.audio_output_tokens", tokens.audioOutput)
        span.attribute("sluice.cost", bill.toString())
        span.attribute("sluice.status", status)
        span.end(yield* Clock.currentTimeNanos, Exit.void)
      }
      responses++
      charged += bill
      yield* Effect.logInfo("Realtime response billed").pipe(Effect.annotateLogs({
        socket_id: input.socketId,
        response_id: responseId.slice(0, 100),
        model: input.model,
        channel: input.candidate.channel.name,
        input_tokens: tokens.inputTokens,
        output_tokens: tokens.outputTokens,
        audio_input_tokens: tokens.audioInput,
        audio_output_tokens: tokens.audioOutput,
        cached_tokens: tokens.cachedText + tokens.cachedAudio + tokens.cachedImage,
        cost: bill.toString(),
        status
      }))
      return bill
    })

  /** Holds a new spare float; false when the balance or a budget cannot cover it. */
  const refill = (): Promise<boolean> =>
    run(
      ledger.hold(input.principal, input.float).pipe(
        Effect.map((hold) => {
          spare = hold
          return true
        }),
        Effect.catch(() => Effect.succeed(false))
      )
    )

  /** The session could not hold its next float and nothing is in flight: tell the caller, close with 1008. */
  const finishEnding = () => {
    refuse(quotaRefusal("The quota cannot cover another response; the session ends."), "insufficient_quota")
    endWith("quota", 1008, "Quota exhausted")
  }

  const onUpstreamEvent = async (text: string) => {
    let event: Record<string, unknown> | undefined
    try {
      const parsed: unknown = JSON.parse(text)
      if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) {
        event = parsed as Record<string, unknown>
      }
    } catch {
      event = undefined
    }
    const type = event?.type
    const response = event === undefined ? {} : event.response
    const responseId = typeof response === "object" && response !== null && !Array.isArray(response) &&
        typeof (response as Record<string, unknown>).id === "string"
      ? String((response as Record<string, unknown>).id)
      : typeof event?.response_id === "string"
      ? event.response_id
      : undefined
    if (type === "response.created" && ended) return
    if (type === "response.created" && responseId !== undefined && !inFlight.has(responseId)) {
      if (spare === undefined || inFlight.size >= MAX_IN_FLIGHT) {
        // A response no float covers: it is not forwarded and the session ends (never a response unbilled).
        refuse(quotaRefusal("A response started that no float covers; the session ends."), "insufficient_quota")
        endWith("quota", 1008, "Quota exhausted")
        return
      }
      const hold = spare
      spare = undefined
      // A response started by server turn detection (no create of the caller's before it) takes its own rpm place;
      // over the rpm or tpm it is cancelled at the vendor (still billed what it reports) and the caller told.
      const fromCreate = pending.length > 0
      const permit = await permitOfStarted()
      const span = await startSpan(responseId)
      inFlight.set(responseId, { hold, permit, span, textCharacters: 0, audioBytes: 0 })
      toClient(text)
      if (permit === undefined && !fromCreate) {
        if (upstream.readyState === WebSocket.OPEN) {
          upstream.send(JSON.stringify({ type: "response.cancel", response_id: responseId }))
        }
        refuse({
          code: "rate_limit_exceeded",
          message: "Too many responses for this key; the one turn detection started was cancelled.",
          param: null,
          eventId: null
        }, "rate_limit_error")
      }
      if (!ending && !ended && !await refill()) ending = true
      return
    }
    if (type === "response.done" && responseId !== undefined && event !== undefined) {
      // A `response.done` with no `response.created` before it is billed against the spare float all the same.
      const known = inFlight.get(responseId)
      const running = known ??
        (spare === undefined || finished.includes(responseId)
          ? undefined
          : { hold: spare, permit: undefined, span: undefined, textCharacters: 0, audioBytes: 0 })
      if (known === undefined && running !== undefined) spare = undefined
      if (running !== undefined) {
        inFlight.delete(responseId)
        finished.push(responseId)
        if (finished.length > MAX_FINISHED_KEPT) finished.shift()
        const tokens = realtimeUsageOf(event) ?? cutTokens(running.textCharacters, running.audioBytes)
        const permit = running.permit ?? (known === undefined ? await permitOfStarted() : undefined)
        const span = running.span ?? await startSpan(responseId)
        await run(Effect.gen(function* () {
          yield* book(responseId, running.hold, tokens, 200, null, span)
          yield* releasePermit(permit, tokens.inputTokens + tokens.outputTokens)
          if (!(yield* ledger.durable)) {
            yield* Effect.logWarning("Realtime response billed but not yet journaled").pipe(
              Effect.annotateLogs({ socket_id: input.socketId })
            )
          }
        }))
      }
      toClient(text)
      if (known === undefined && running !== undefined && !ending && !ended && !await refill()) ending = true
      if (draining && inFlight.size === 0) endWith("shutdown", 1001, "Server shutting down")
      else if (ending && inFlight.size === 0) finishEnding()
      return
    }
    if (responseId !== undefined && event !== undefined) {
      const running = inFlight.get(responseId)
      if (running !== undefined) {
        if (
          (type === "response.output_text.delta" || type === "response.output_audio_transcript.delta" ||
            type === "response.text.delta" || type === "response.audio_transcript.delta") &&
          typeof event.delta === "string"
        ) running.textCharacters += event.delta.length
        if ((type === "response.output_audio.delta" || type === "response.audio.delta")) {
          running.audioBytes += base64Bytes(event.delta)
        }
      }
    }
    toClient(text)
  }

  const onClientEvent = async (data: unknown) => {
    const read = readClientEvent(data, input.maxFrameBytes)
    if (isRefusal(read)) return refuse(read)
    if (draining) {
      return refuse({
        code: "server_shutting_down",
        message: "The gateway is shutting down; reconnect.",
        param: null,
        eventId: eventIdOf(read.event)
      }, "server_error")
    }
    if (ending) {
      return refuse({ ...quotaRefusal("The quota cannot cover another response."), eventId: eventIdOf(read.event) })
    }
    if (read.type === "response.create") {
      // Counted against the rpm at admission; the place is kept until the response it asks for ends, then given
      // back with its tokens (the tpm). The socket's own slot holds the concurrency.
      const admitted = await admit()
      if (admitted !== undefined) {
        pending.push(admitted)
        // Creates the vendor never answered with a response (it refused them) give their places back.
        while (pending.length > MAX_PENDING_PERMITS) void run(pending.shift()!.release(0))
      } else {
        return refuse({
          code: "rate_limit_exceeded",
          message: "Too many responses for this key; try again shortly.",
          param: null,
          eventId: eventIdOf(read.event)
        }, "rate_limit_error")
      }
    }
    if (upstream.readyState === WebSocket.OPEN) upstream.send(read.text)
  }

  const endWith = (reason: string, code: number, message: string) => {
    if (ended) return
    ended = true
    endReason = reason
    clearInterval(idleTimer)
    clearTimeout(openTimer)
    releaseOpen()
    try {
      if (client.readyState === WebSocket.OPEN || client.readyState === WebSocket.CONNECTING) {
        client.close(sendableCode(code), message.slice(0, 120))
      }
    } catch {
      // Already closing.
    }
    try {
      if (upstream.readyState === WebSocket.OPEN || upstream.readyState === WebSocket.CONNECTING) {
        upstream.close(1000, "Session ended")
      }
    } catch {
      // Already closing.
    }
    // The end waits for the events already taken in, so a `response.done` that arrived is billed as reported.
    void Promise.allSettled([upstreamChain, clientChain]).then(() =>
      run(Effect.gen(function* () {
        if (spare !== undefined) yield* ledger.release(spare)
        spare = undefined
        for (const [responseId, running] of inFlight) {
          const cut = cutTokens(running.textCharacters, running.audioBytes)
          yield* book(
            responseId,
            running.hold,
            cut,
            499,
            "The session ended before the response was done",
            running.span
          )
          yield* releasePermit(running.permit, cut.inputTokens + cut.outputTokens)
        }
        inFlight.clear()
        for (const permit of pending.splice(0)) yield* permit.release(0)
        // Each response's tokens reached the tpm as it ended; the socket's slot holds only the concurrency.
        yield* input.permit.release(0)
        yield* ledger.durable
        yield* Effect.logInfo("Realtime socket ended").pipe(Effect.annotateLogs({
          socket_id: input.socketId,
          model: input.model,
          channel: input.candidate.channel.name,
          reason: endReason,
          close_code: sendableCode(code),
          responses,
          cost: charged.toString(),
          duration_ms: Date.now() - input.started
        }))
      }))
    ).finally(resolveEnded)
  }

  const openTimer = client.readyState === WebSocket.OPEN
    ? undefined
    : setTimeout(() => endWith("client", 1000, "The caller's socket never opened"), CLIENT_OPEN_MILLIS)
  void clientOpen.then(() => clearTimeout(openTimer))
  const idleTimer = setInterval(() => {
    if (input.idleMillis > 0 && Date.now() - lastFrame >= input.idleMillis) endWith("idle", 1000, "Idle timeout")
  }, Math.max(50, Math.min(5_000, Math.floor(input.idleMillis / 4) || 5_000)))

  upstream.addEventListener("message", (message) => {
    lastFrame = Date.now()
    if (typeof message.data !== "string") return
    const text = message.data
    upstreamChain = upstreamChain.then(() => onUpstreamEvent(text)).catch(() => {})
  })
  upstream.addEventListener("close", (event) => {
    upstreamChain = upstreamChain.then(() => endWith("upstream", event.code, event.reason || "Upstream closed"))
  })
  upstream.addEventListener("error", () => {
    upstreamChain = upstreamChain.then(() => endWith("upstream", 1011, "Upstream socket failed"))
  })
  client.addEventListener("message", (message) => {
    lastFrame = Date.now()
    const size = typeof message.data === "string" ? message.data.length : message.data?.byteLength ?? 0
    input.metrics?.websocketFrame(ROUTE, "in", size)
    if (!rate.admit(lastFrame)) {
      return refuse({
        code: "rate_limit_exceeded",
        message: `More than ${input.eventsPerSecond} events a second; this one was dropped.`,
        param: null,
        eventId: null
      }, "rate_limit_error")
    }
    const data = message.data
    clientChain = clientChain.then(() => onClientEvent(data)).catch(() => {})
  })
  client.addEventListener("close", (event) => endWith("client", event.code, "Client closed"))
  client.addEventListener("error", () => endWith("client", 1011, "Client socket failed"))

  return {
    ended: endedPromise,
    close: (code, reason) => endWith("shutdown", code, reason),
    drain: (graceMillis) => {
      draining = true
      if (inFlight.size === 0) return endWith("shutdown", 1001, "Server shutting down")
      const timer = setTimeout(() => endWith("shutdown", 1001, "Server shutting down"), graceMillis)
      void endedPromise.then(() => clearTimeout(timer))
    }
  }
}

const eventIdOf = (event: Record<string, unknown>): string | null =>
  typeof event.event_id === "string" ? event.event_id.slice(0, 200) : null
