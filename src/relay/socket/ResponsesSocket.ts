/**
 * The Responses API's WebSocket mode after the upgrade: each client
 * `response.create` event (`{type: "response.create", stream_id?, ...<the body
 * of POST /v1/responses>}`, openai 7.57.0 `ResponsesClientEvent.ResponseCreate`)
 * is run as a `POST /v1/responses` with `stream: true` through the gateway's
 * own handler (`dispatch`), so it goes through the same authentication, rate
 * limits, budgets, routing to any upstream type, billed pipeline and access
 * log as over HTTP; each SSE event of that answer becomes one text frame, in
 * order (with `stream_id` added when the create named one). The terminal
 * event (`response.completed`, `.incomplete`, `.failed`, or the stream's
 * `error`) leaves once the answer's body has ended, so its settlement (the
 * bill, the stored response for `store: true`) is done when the caller sees it.
 *
 * Lanes: requests with the same `stream_id` run one after another (FIFO),
 * different lanes at once, each response billed alone; a create without
 * `stream_id` is on the default lane (the SDK's `ResponseCreate.stream_id`
 * docs). At most `MAX_PENDING` responses are queued or running per socket.
 *
 * The dispatched requests carry the socket's scope (`http/SocketScope.ts`, bound in `App.ts`): a channel that
 * takes the Responses wire over a WebSocket is reached through the socket's own upstream sockets
 * (`upstreams/transport/ResponsesUpstreamSocket.ts`), every other over HTTP.
 *
 * Continuation: `previous_response_id` naming one of the socket's last
 * responses (`SocketMemory.ts`) is expanded here into the request's `input`,
 * so it works with `store: false`; any other id goes on to the stored
 * responses, as over HTTP.
 *
 * Errors inside the socket are `error` events (`ResponsesServerEvent.ResponseWsError`:
 * `{type: "error", status, error: {type, code, message, param}, stream_id?}`);
 * the socket stays open; a stream's own `error` event (a failure after the answer began: an upstream cut, a
 * timeout) is sent in that shape too. A client gone mid-response cuts that response's
 * stream, which bills what the upstream had reported, as a disconnect over
 * HTTP does. There is no client event to cancel a response in openai 7.57.0
 * (its client events are `response.create` and `response.steer`); steering is
 * refused with an error event.
 *
 * @since 0.1.0
 */
import {
  type FrameRefusal,
  makeFrameGate,
  makeTally,
  type SocketTally,
  utf8Bytes
} from "../../http/WebSocketUpgrade.ts"
import type { WebSocketLimits } from "../../http/WebSocketUpgrade.ts"
import { makeSocketMemory, type SocketMemoryBounds } from "./SocketMemory.ts"

/** Responses queued or running on one socket at once. @category limits */
export const MAX_PENDING = 16

/** Longest `stream_id` taken, in UTF-16 units. @category limits */
export const MAX_STREAM_ID_LENGTH = 128

/** The events that end a response (openai 7.57.0 `ResponsesServerEvent`), and the stream's own error event. */
const TERMINAL: ReadonlySet<string> = new Set(["response.completed", "response.incomplete", "response.failed", "error"])

/** Bytes the socket may hold unsent before it stops reading the upstream's answer (backpressure). */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024

/** What a socket session needs from the gateway. @category models */
export interface ResponsesSocketOptions {
  readonly socket: WebSocket
  /** The socket's id: the prefix of its responses' request ids (`<id>.<n>`). */
  readonly socketId: string
  readonly limits: WebSocketLimits
  readonly memory: SocketMemoryBounds
  /**
   * Runs one `POST /v1/responses` whose body is `body` (JSON text) with the
   * handshake's headers and `x-request-id: requestId`; answers the gateway's
   * own response (SSE on success, the OpenAI error envelope otherwise).
   * `signal` aborts when the socket ends first (the request's fiber is then
   * interrupted, as a client gone over HTTP interrupts it).
   */
  readonly dispatch: (body: string, requestId: string, signal: AbortSignal) => Promise<Response>
  /** A frame went through the socket (for the metrics). */
  readonly onFrame?: ((direction: "in" | "out", bytes: number) => void) | undefined
  /** The socket closed with `code`, after its last response settled or was cut. */
  readonly onClosed?: ((code: number, tally: SocketTally) => void) | undefined
}

/** A running socket session. @category models */
export interface ResponsesSocketSession {
  /**
   * Takes no new response, lets the ones in flight finish until `deadline`
   * (epoch milliseconds), cuts the rest (billed for what was reported), then
   * closes with 1001 (going away).
   */
  readonly drain: (deadline: number) => Promise<void>
}

/** An `error` event as the SDK reads it (`ResponseWsError`). */
const errorEvent = (
  status: number,
  type: string,
  code: string | null,
  message: string,
  param: string | null,
  streamId: string | undefined
) => ({
  type: "error",
  status,
  error: { type, code, message, param },
  ...(streamId === undefined ? {} : { stream_id: streamId })
})

/**
 * The status and type of the codes a Responses stream's `error` event carries once its answer began (the upstream
 * failures and the ledger's of `errors/Envelope.ts`); any other is a 500 `server_error`.
 */
const STREAM_ERRORS: Readonly<Record<string, readonly [number, string]>> = {
  upstream_error: [502, "platform_api_error"],
  upstream_timeout: [504, "platform_api_error"],
  bad_response_body: [500, "platform_api_error"],
  bad_response: [500, "platform_api_error"],
  too_many_requests: [429, "platform_api_error"]
}

/** A Responses stream's `error` event (`{type: "error", code, message, param}`) as the socket's `error` event. */
const streamErrorEvent = (event: Record<string, unknown>, streamId: string | undefined) => {
  const code = typeof event.code === "string" && event.code !== "" ? event.code : null
  const [status, type] = code !== null && Object.hasOwn(STREAM_ERRORS, code)
    ? STREAM_ERRORS[code]
    : [500, "server_error"]
  return errorEvent(
    status,
    type,
    code,
    typeof event.message === "string" ? event.message : "The response failed.",
    typeof event.param === "string" && event.param !== "" ? event.param : null,
    streamId
  )
}

const refusalEvent = (refusal: FrameRefusal) =>
  errorEvent(refusal.status, "invalid_request_error", refusal.code, refusal.message, null, undefined)

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** The `input` of a create as input items (a string is one user message). */
const inputItems = (input: unknown): ReadonlyArray<unknown> | undefined =>
  input === undefined || input === null
    ? []
    : typeof input === "string"
    ? [{ type: "message", role: "user", content: input }]
    : Array.isArray(input)
    ? input
    : undefined

/** The error envelope of a refused request as an `error` event (any body the gateway answered). */
const errorFromResponse = async (response: Response, streamId: string | undefined) => {
  const text = await response.text().catch(() => "")
  let error: Record<string, unknown> = {}
  try {
    const parsed: unknown = JSON.parse(text)
    if (isObject(parsed) && isObject(parsed.error)) error = parsed.error
  } catch {
    // Not JSON: the fixed message below.
  }
  const string = (value: unknown) => typeof value === "string" && value !== "" ? value : null
  return errorEvent(
    response.status,
    string(error.type) ?? (response.status >= 500 ? "server_error" : "invalid_request_error"),
    string(error.code),
    string(error.message) ?? `The request failed with status ${response.status}.`,
    string(error.param),
    streamId
  )
}

/**
 * The JSON payloads of an SSE body read through `reader`, in order (`data:`
 * lines joined per event; `[DONE]` skipped). Cancelling `reader` ends it.
 */
async function* sseData(reader: ReadableStreamDefaultReader<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder()
  let buffer = ""
  let data: Array<string> = []
  while (true) {
    const { value, done } = await reader.read()
    if (done) break
    buffer += decoder.decode(value, { stream: true })
    let newline = buffer.indexOf("\n")
    while (newline !== -1) {
      const line = buffer.slice(0, newline).replace(/\r$/, "")
      buffer = buffer.slice(newline + 1)
      if (line === "") {
        if (data.length > 0) {
          const payload = data.join("\n")
          data = []
          if (payload !== "[DONE]") yield payload
        }
      } else if (line.startsWith("data:")) {
        data.push(line.slice(line.startsWith("data: ") ? 6 : 5))
      }
      newline = buffer.indexOf("\n")
    }
  }
  if (data.length > 0 && data.join("\n") !== "[DONE]") yield data.join("\n")
}

/**
 * Runs a Responses socket session on an open (or opening) `socket`.
 *
 * @category constructors
 */
export const runResponsesSocket = (options: ResponsesSocketOptions): ResponsesSocketSession => {
  const { socket, limits } = options
  const gate = makeFrameGate(limits)
  const memory = makeSocketMemory(options.memory)
  const tally = makeTally()
  const lanes = new Map<string, Promise<void>>()
  /** Each response's cut: cancels its answer's body. */
  const running = new Set<() => void>()
  let pending = 0
  let closed = false
  let draining = false
  /** Set when the drain's grace is over: queued responses are not started. */
  let stopped = false
  let sequence = 0
  let lastActivity = Date.now()
  /** Called once nothing is queued or running. */
  let waiters: Array<() => void> = []

  const send = (event: unknown): void => {
    if (closed || socket.readyState !== WebSocket.OPEN) return
    const text = JSON.stringify(event)
    sendText(text)
  }
  const sendText = (text: string): void => {
    if (closed || socket.readyState !== WebSocket.OPEN) return
    const bytes = utf8Bytes(text)
    try {
      socket.send(text)
    } catch {
      return
    }
    lastActivity = Date.now()
    tally.framesOut++
    tally.bytesOut += bytes
    options.onFrame?.("out", bytes)
  }
  const drained = () => {
    if (pending !== 0) return
    const called = waiters
    waiters = []
    for (const waiter of called) waiter()
  }
  const whenSettled = (): Promise<void> =>
    pending === 0 ? Promise.resolve() : new Promise<void>((resolve) => waiters.push(resolve))

  /** Waits while the socket holds more than `MAX_BUFFERED_BYTES` unsent. */
  const backpressure = async () => {
    while (!closed && socket.readyState === WebSocket.OPEN && socket.bufferedAmount > MAX_BUFFERED_BYTES) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  }

  const runOne = async (body: Record<string, unknown>, items: ReadonlyArray<unknown>, streamId: string | undefined) => {
    const requestId = `${options.socketId}.${++sequence}`
    tally.responses++
    let cut = false
    let cancel: (() => void) | undefined
    let cancelling: Promise<void> | undefined
    const aborted = new AbortController()
    const onCut = () => {
      cut = true
      aborted.abort()
      cancel?.()
    }
    running.add(onCut)
    try {
      const response = await options.dispatch(JSON.stringify(body), requestId, aborted.signal)
      const streamed = response.ok && (response.headers.get("content-type") ?? "").startsWith("text/event-stream")
      if (!streamed || response.body === null) {
        send(await errorFromResponse(response, streamId))
        return
      }
      const reader = response.body.getReader()
      // Cancelling the answer's body is a client gone mid-stream: the gateway bills what was reported; the promise
      // settles once that bill is made (the body's finalizer), which the response waits for before it counts as done.
      cancel = () => void (cancelling ??= reader.cancel().catch(() => {}))
      if (cut) cancel()
      let held: Array<string> | undefined
      for await (const payload of sseData(reader)) {
        if (cut || closed) break
        let text = payload
        let event: unknown
        try {
          event = JSON.parse(payload)
        } catch {
          continue
        }
        if (isObject(event) && event.type === "error" && !isObject(event.error)) {
          // The stream's own error event (`{type: "error", code, message, param}`) in the socket's error shape.
          event = streamErrorEvent(event, streamId)
          text = JSON.stringify(event)
        } else if (isObject(event)) {
          if (streamId !== undefined) text = JSON.stringify({ ...event, stream_id: streamId })
          const answer = event.response
          if (
            (event.type === "response.completed" || event.type === "response.incomplete") && isObject(answer) &&
            typeof answer.id === "string" && Array.isArray(answer.output)
          ) {
            memory.save(answer.id, [...items, ...answer.output])
          }
        }
        // The terminal event (and anything after it) waits for the answer's end: the stream's settlement (its bill,
        // the stored response) is done by then, so a caller that continues from it at once finds it.
        if (held !== undefined || (isObject(event) && TERMINAL.has(event.type as string))) {
          ;(held ??= []).push(text)
          continue
        }
        sendText(text)
        await backpressure()
      }
      if (cut || closed) cancel()
      else for (const text of held ?? []) sendText(text)
    } catch (cause) {
      if (!closed) {
        const message = cause instanceof Error && cause.name === "AbortError"
          ? "The response was cut."
          : "The response could not be run."
        send(errorEvent(500, "server_error", "internal_error", message, null, streamId))
      }
    } finally {
      running.delete(onCut)
      await cancelling
    }
  }

  const create = (event: Record<string, unknown>) => {
    const rawStreamId = event.stream_id
    if (
      rawStreamId !== undefined &&
      (typeof rawStreamId !== "string" || rawStreamId.length === 0 || rawStreamId.length > MAX_STREAM_ID_LENGTH)
    ) {
      return send(errorEvent(
        400,
        "invalid_request_error",
        "invalid_value",
        `stream_id must be a non-empty string of at most ${MAX_STREAM_ID_LENGTH} characters.`,
        "stream_id",
        undefined
      ))
    }
    const streamId = rawStreamId as string | undefined
    const refuse = (status: number, code: string, message: string, param: string | null) =>
      send(errorEvent(status, "invalid_request_error", code, message, param, streamId))
    if (draining) return refuse(503, "server_shutting_down", "The gateway is shutting down; reconnect.", null)
    if (event.background === true) {
      return refuse(400, "unsupported_parameter", "background is not supported over the WebSocket mode.", "background")
    }
    if (event.stream === false) {
      return refuse(400, "unsupported_parameter", "Responses over the WebSocket mode always stream.", "stream")
    }
    if (pending >= MAX_PENDING) {
      return refuse(
        429,
        "too_many_pending_responses",
        `At most ${MAX_PENDING} responses may be queued or running on one socket.`,
        null
      )
    }
    const { type: _type, stream_id: _streamId, ...rest } = event
    const body: Record<string, unknown> = { ...rest, stream: true }
    const given = inputItems(body.input)
    if (given === undefined) {
      return refuse(400, "invalid_type", "input must be a string or an array of input items.", "input")
    }
    let items = given
    const previous = body.previous_response_id
    if (typeof previous === "string") {
      const history = memory.load(previous)
      if (history !== undefined) {
        items = [...history, ...given]
        body.input = items
        delete body.previous_response_id
      }
    }
    const lane = streamId ?? ""
    pending++
    const before = lanes.get(lane) ?? Promise.resolve()
    const turn = before.then(() => closed || stopped ? undefined : runOne(body, items, streamId)).finally(() => {
      pending--
      if (lanes.get(lane) === turn) lanes.delete(lane)
      drained()
    })
    lanes.set(lane, turn)
  }

  socket.onmessage = (message: MessageEvent) => {
    lastActivity = Date.now()
    const data: unknown = message.data
    const size = typeof data === "string"
      ? utf8Bytes(data)
      : data instanceof ArrayBuffer
      ? data.byteLength
      : data instanceof Blob
      ? data.size
      : 0
    tally.framesIn++
    tally.bytesIn += size
    options.onFrame?.("in", size)
    const admitted = gate.admit(data, lastActivity)
    if ("status" in admitted) return send(refusalEvent(admitted))
    let event: unknown
    try {
      event = JSON.parse(admitted.text)
    } catch {
      return send(
        errorEvent(400, "invalid_request_error", "invalid_json", "The event is not valid JSON.", null, undefined)
      )
    }
    if (!isObject(event) || typeof event.type !== "string") {
      return send(errorEvent(
        400,
        "invalid_request_error",
        "invalid_event",
        "An event must be a JSON object with a string type.",
        "type",
        undefined
      ))
    }
    if (event.type === "response.create") return create(event)
    const known = event.type === "response.steer"
    return send(errorEvent(
      400,
      "invalid_request_error",
      known ? "unsupported_event" : "unknown_event_type",
      known
        ? "response.steer is not supported by this gateway; send a new response.create with previous_response_id."
        : `Unknown event type ${JSON.stringify(event.type.slice(0, 64))}; expected response.create.`,
      "type",
      undefined
    ))
  }

  const idleMs = limits.idleSeconds * 1000
  const idleTimer = idleMs > 0
    ? setInterval(() => {
      if (pending === 0 && Date.now() - lastActivity >= idleMs && socket.readyState === WebSocket.OPEN) {
        socket.close(1000, "idle timeout")
      }
    }, Math.max(100, Math.min(idleMs / 4, 30_000)))
    : undefined

  const finish = (code: number) => {
    if (closed) return
    closed = true
    if (idleTimer !== undefined) clearInterval(idleTimer)
    for (const cut of running) cut()
    void whenSettled().then(() => options.onClosed?.(code, tally))
  }
  socket.onclose = (event: CloseEvent) => finish(event.code)
  socket.onerror = () => {}

  return {
    drain: async (deadline) => {
      draining = true
      if (pending > 0) {
        let timer: ReturnType<typeof setTimeout> | undefined
        const late = new Promise<void>((resolve) => timer = setTimeout(resolve, Math.max(0, deadline - Date.now())))
        await Promise.race([whenSettled(), late])
        clearTimeout(timer)
      }
      stopped = true
      for (const cut of running) cut()
      // The cut responses are billed before the socket closes (and before the gateway's layers do).
      await whenSettled()
      if (socket.readyState === WebSocket.OPEN || socket.readyState === WebSocket.CONNECTING) {
        try {
          socket.close(1001, "server shutting down")
        } catch {
          // Already closing.
        }
      }
    }
  }
}
