/**
 * The emulator's Responses WebSocket mode (`GET /v1/responses` with `Upgrade: websocket`), as OpenAI's
 * (platform.openai.com/docs/guides/websocket-mode; the client events and server events of the `openai` package's
 * `resources/responses/ws.ts` and `responses.ts`, 7.57.0): each `response.create` client event (the create body of
 * `POST /v1/responses`, `stream` implicit) is answered with the events the HTTP SSE stream emits
 * (`response.created` … `response.completed` / `.incomplete`, with `usage`), one text frame each, in order.
 *
 * The create is run through the emulator's own HTTP handler (`host.run`) as `POST /v1/responses` with
 * `stream: true`, so its checks, answers, faults, pacing and usage record are the HTTP wire's; the recorded request
 * is marked as having come over the socket (`RecordedRequest.transport`). Responses run one at a time per socket,
 * in the order their creates arrived (as OpenAI's socket does: one response in flight per connection).
 *
 * Continuation: `previous_response_id` naming a response made on this socket (its last `MAX_REMEMBERED`) is
 * expanded into the input (the earlier input items and that response's output, then the new input), whatever its
 * `store`, so `store: false` continues as on OpenAI's socket; any other id is `previous_response_not_found` (400,
 * `param: previous_response_id`): the HTTP emulator keeps no stored responses.
 *
 * Errors are OpenAI's socket error event, `{type: "error", status, error: {type, code, message, param}}` (the
 * SDK's `ResponseWsError`): a refused create (the HTTP answer's status and error body), an in-band stream error, a
 * frame that is not a JSON event; the socket stays open. A stream the HTTP handler cuts (a `breakAfterEvents`
 * fault) closes the socket with 1011, as an upstream socket lost mid-response is.
 *
 * @since 0.4.0
 */
import { arrayOr, isObject, type JsonObject, stringOr } from "./Wire.ts"

/** Responses a socket remembers for `previous_response_id` (OpenAI keeps the connection's latest). */
export const MAX_REMEMBERED = 16

/** Creates queued on one socket beyond which a create is refused (429). */
const MAX_QUEUED = 32

/** What a socket needs from the emulator's server. */
export interface ResponsesSocketHost {
  /**
   * Runs one create as `POST /v1/responses` (`body` has `stream: true`) through the emulator's HTTP handler, with
   * the handshake's credentials; `signal` aborts when the socket closes.
   */
  readonly run: (body: JsonObject, signal: AbortSignal) => Promise<Response>
  /** Aborts when the emulator closes; open sockets are closed with 1001 then. */
  readonly closing: AbortSignal
}

/** OpenAI's socket error event. */
const errorEvent = (status: number, type: string, code: string | null, message: string, param: string | null) => ({
  type: "error",
  status,
  error: { type, code, message, param }
})

/** The JSON payloads of the emulator's own SSE body, in order; fails when the body is cut. */
async function* ssePayloads(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder()
  let buffer = ""
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true })
    let end = buffer.indexOf("\n\n")
    while (end !== -1) {
      const data = buffer.slice(0, end).split("\n").filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(line.startsWith("data: ") ? 6 : 5)).join("\n")
      buffer = buffer.slice(end + 2)
      if (data !== "" && data !== "[DONE]") yield data
      end = buffer.indexOf("\n\n")
    }
  }
}

/** The input of a create as input items (a string is one user message); `undefined` when neither. */
const inputItems = (input: unknown): ReadonlyArray<unknown> | undefined =>
  typeof input === "string"
    ? [{ type: "message", role: "user", content: input }]
    : Array.isArray(input)
    ? input
    : undefined

/**
 * Serves one upgraded Responses socket. `socket` is the server side from `Deno.upgradeWebSocket`.
 *
 * @category handlers
 */
export const serveResponsesSocket = (socket: WebSocket, host: ResponsesSocketHost): void => {
  const remembered = new Map<string, ReadonlyArray<unknown>>()
  const aborted = new AbortController()
  const queue: Array<JsonObject> = []
  let running = false

  const send = (event: unknown) => {
    if (socket.readyState === WebSocket.OPEN) socket.send(typeof event === "string" ? event : JSON.stringify(event))
  }
  const refuse = (status: number, code: string, message: string, param: string | null) =>
    send(errorEvent(status, "invalid_request_error", code, message, param))
  const remember = (id: string, items: ReadonlyArray<unknown>) => {
    remembered.delete(id)
    remembered.set(id, items)
    while (remembered.size > MAX_REMEMBERED) remembered.delete(remembered.keys().next().value!)
  }

  /** The HTTP error answer as the socket's error event. */
  const refusedAnswer = async (response: Response) => {
    const parsed: unknown = await response.json().catch(() => undefined)
    const error = isObject(parsed) && isObject(parsed.error) ? parsed.error : {}
    send(errorEvent(
      response.status,
      stringOr(error.type) ?? (response.status >= 500 ? "server_error" : "invalid_request_error"),
      stringOr(error.code) ?? null,
      stringOr(error.message) ?? `The request failed with status ${response.status}.`,
      stringOr(error.param) ?? null
    ))
  }

  const respond = async (event: JsonObject) => {
    const { type: _type, stream: _stream, ...rest } = event
    const given = inputItems(rest.input)
    if (given === undefined) {
      return refuse(400, "invalid_type", "Invalid type for 'input': expected a string or an array.", "input")
    }
    let items = given
    const previous = rest.previous_response_id
    if (previous !== undefined && previous !== null) {
      const history = typeof previous === "string" ? remembered.get(previous) : undefined
      if (history === undefined) {
        return refuse(
          400,
          "previous_response_not_found",
          `Previous response with id '${String(previous).slice(0, 64)}' not found.`,
          "previous_response_id"
        )
      }
      items = [...history, ...given]
    }
    const response = await host.run({ ...rest, input: [...items], stream: true }, aborted.signal)
    if (!response.ok || response.body === null) return refusedAnswer(response)
    try {
      for await (const payload of ssePayloads(response.body)) {
        let parsed: unknown
        try {
          parsed = JSON.parse(payload)
        } catch {
          continue
        }
        if (!isObject(parsed)) continue
        if (parsed.type === "error") {
          // The SSE stream's in-band error, in the socket's error shape.
          const code = stringOr(parsed.code) ?? null
          send(errorEvent(
            code === "rate_limit_exceeded" ? 429 : 500,
            code === "rate_limit_exceeded" ? "requests" : "server_error",
            code,
            stringOr(parsed.message) ?? "The response failed.",
            stringOr(parsed.param) ?? null
          ))
          continue
        }
        const answer = parsed.response
        if (
          (parsed.type === "response.completed" || parsed.type === "response.incomplete") && isObject(answer) &&
          typeof answer.id === "string"
        ) {
          remember(answer.id, [...items, ...arrayOr(answer.output)])
        }
        send(payload)
      }
    } catch {
      // The answer was cut mid-stream: the socket is lost with it, as an upstream's is.
      if (socket.readyState === WebSocket.OPEN) socket.close(1011, "The response stream broke.")
    }
  }

  const drain = async () => {
    if (running) return
    running = true
    try {
      while (queue.length > 0 && socket.readyState === WebSocket.OPEN) {
        await respond(queue.shift()!).catch(() => {
          if (!aborted.signal.aborted) send(errorEvent(500, "server_error", null, "The emulator failed.", null))
        })
      }
    } finally {
      running = false
    }
  }

  socket.addEventListener("message", (message) => {
    if (typeof message.data !== "string") {
      return refuse(400, "invalid_frame", "Binary frames are not supported; send JSON text.", null)
    }
    let parsed: unknown
    try {
      parsed = JSON.parse(message.data)
    } catch {
      return refuse(400, "invalid_json", "The event is not valid JSON.", null)
    }
    if (!isObject(parsed) || typeof parsed.type !== "string") {
      return refuse(400, "missing_required_parameter", "Missing required parameter: 'type'.", "type")
    }
    if (parsed.type !== "response.create") {
      return refuse(400, "invalid_value", `Invalid value: '${parsed.type.slice(0, 100)}'.`, "type")
    }
    if (typeof parsed.model !== "string") {
      return refuse(400, "missing_required_parameter", "Missing required parameter: 'model'.", "model")
    }
    if (parsed.background === true) {
      return refuse(400, "unsupported_parameter", "background is not supported in WebSocket mode.", "background")
    }
    if (queue.length >= MAX_QUEUED) {
      return send(errorEvent(429, "requests", "too_many_requests", "Too many queued responses.", null))
    }
    queue.push(parsed)
    void drain()
  })
  const onClosing = () => {
    if (socket.readyState === WebSocket.OPEN) socket.close(1001, "Going away")
  }
  host.closing.addEventListener("abort", onClosing, { once: true })
  socket.addEventListener("close", () => {
    aborted.abort()
    queue.length = 0
    host.closing.removeEventListener("abort", onClosing)
  })
}
