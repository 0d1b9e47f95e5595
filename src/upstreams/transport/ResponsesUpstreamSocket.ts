/**
 * The upstream transport of the Responses API's WebSocket mode (platform.openai.com/docs/guides/websocket-mode):
 * a channel's `wss://<base>/v1/responses` opened with the gateway's socket client (`ClientSocket.ts`), with the
 * headers `Authorization: Bearer <channel key>` and the channel's extra headers, each response sent as one
 * `response.create` event (the create body without the HTTP-only `stream` and `stream_options`) and its server
 * events read one text frame each, handed out as the SSE events the Responses stream decoder reads over HTTP (the
 * frame's `type` as the event name, the frame as its data), so the billed pipeline, the decoder and the bridge do
 * not know which transport carried them.
 *
 * A turn whose input starts with the whole conversation of its connection's last completed response (the gateway
 * expands a client's `previous_response_id` into the full input, so failover may pick any channel) sends only the
 * new items with `previous_response_id` naming that upstream response, as OpenAI's guide asks of socket clients; the
 * rest of the body is sent each turn. Should the upstream answer `previous_response_not_found`, the turn is sent again
 * whole.
 *
 * One pool per client socket (`UPSTREAM_SOCKETS`, kept in the client socket's `http/SocketScope.ts`): a turn takes
 * an idle connection to the same URL and key, or opens one (at most `MAX_CONNECTIONS` per client socket, an idle one
 * of another URL or key closed to make room; OpenAI's socket runs one response at a time per connection), and gives it back once the response ended (`response.completed`,
 * `.incomplete`, `.failed`, or an `error` event), so a socket's later turns reuse it. A turn released before its
 * response ended (the caller gone, a cut, a timeout) closes its connection: OpenAI's socket has no cancel event, and a
 * response left running would interleave with the next. The pool's connections close with the client socket.
 *
 * Failures: a socket that cannot open, or closes before it answered, is `network` (retryable: failover); a handshake
 * the vendor answers with an HTTP error status is handed back as that status and body, and an `error` event as the
 * first answer as the status it names with `{error}` as the body, for the wire's error classifier, as an HTTP error
 * answer is (a refused key is disabled, a 400 goes back to the caller); a socket that closes mid-response is `stream-broken` (the bridge's
 * cut-stream rule); a binary frame, a frame above `MAX_EVENT_BYTES` or one nesting deeper than `MAX_JSON_DEPTH` is
 * `bad-body`; the channel's first-byte, idle and total timeouts apply to the first frame, the gaps between frames and
 * the whole turn (`timeout`).
 *
 * @since 0.4.0
 */
import { Effect } from "effect"
import type { Sse } from "effect/encoding"
import { nestsTooDeep } from "../../domain/JsonDepth.ts"
import { UpstreamFailed } from "../../errors/GatewayError.ts"
import type { SocketResource, SocketResourceKey } from "../../http/SocketScope.ts"
import { type ClientSocket, closeSocketQuietly, isSocketOpen, openClientSocket } from "./ClientSocket.ts"
import { MAX_EVENT_BYTES } from "./SseEvents.ts"
import type { Timeouts } from "./UpstreamClient.ts"

/** Upstream connections one client socket may hold at once (its lanes run one response each). @category limits */
export const MAX_CONNECTIONS = 16

/**
 * Bytes of frames one turn may hold unread (the caller reads slower than the upstream sends; a socket has no
 * backpressure): past it the turn is cut, as a stream the gateway cannot deliver is.
 */
export const MAX_UNREAD_BYTES = 32 * 1024 * 1024

/** Milliseconds a socket may take to open when the channel sets no first-byte timeout. */
const DEFAULT_OPEN_MILLIS = 10_000

/** The event types that end a response on the socket. */
const TERMINAL: ReadonlySet<string> = new Set(["response.completed", "response.incomplete", "response.failed", "error"])

/** One response on the socket, as the attempt reads it. @category models */
export interface SocketTurn {
  /** 200 when the upstream began answering; else the status of the `error` event it answered with first. */
  readonly status: number
  /** With a status other than 200: the error event's `{error: …}` as JSON text, for the wire's classifier. */
  readonly errorText: string
  /** The next batch of events (frames received since the last read), `undefined` once the response ended. */
  readonly next: Effect.Effect<ReadonlyArray<Sse.Event> | undefined, UpstreamFailed>
  /**
   * Ends the turn (idempotent): its connection goes back to the pool when the response ended, else it is closed
   * (the upstream stops answering).
   */
  readonly release: () => void
}

/** A client socket's upstream connections. @category models */
export interface ResponsesUpstreamSockets extends SocketResource {
  /**
   * Sends `body` (the Responses create body) as a `response.create` on a connection to `url` with `headers`, and
   * answers once the upstream's first frame arrived. Interrupting it closes the connection it was using.
   */
  readonly turn: (
    url: string,
    headers: Readonly<Record<string, string>>,
    body: Readonly<Record<string, unknown>>,
    timeouts: Timeouts
  ) => Effect.Effect<SocketTurn, UpstreamFailed>
  /** Connections opened since the pool was made (each one upstream handshake). */
  readonly opened: () => number
}

/** A handshake the vendor answered with an HTTP error instead of the upgrade. */
type Refusal = { readonly _tag: "Refused"; readonly status: number; readonly bodyText: string }

/** The turn of a refused handshake: the refusal as the status and error text the wire's classifier reads. */
const refusedTurn = (refusal: Refusal): SocketTurn => ({
  status: refusal.status,
  errorText: refusal.bodyText,
  next: Effect.undefined,
  release: () => {}
})

/** A turn as it started, and whether its create continued the connection's last response. */
interface TurnRun {
  readonly turn: SocketTurn
  readonly continued: boolean
}

/** One upstream connection. */
interface Connection {
  readonly socket: ClientSocket
  readonly pool: string
  /** The turn reading it now (a frame, or `undefined` once the socket closed), or `undefined` while idle. */
  reader: ((frame: { readonly data: unknown } | undefined) => void) | undefined
  /** The last response it completed and the conversation so far (input then output items, as JSON texts). */
  last: { readonly id: string; readonly history: ReadonlyArray<string> } | undefined
}

/** `http(s)://` → `ws(s)://`. */
const socketUrl = (url: string): string => url.replace(/^http(s?):\/\//i, (_, secure: string) => `ws${secure}://`)

const failure = (kind: UpstreamFailed["kind"], message: string, status = 502) =>
  new UpstreamFailed({ kind, status, message })

/** The `type` of a frame: read from its start when it leads with it (OpenAI's frames do), else parsed. */
const typeOf = (text: string): string | undefined => {
  const lead = /^\s*\{\s*"type"\s*:\s*"([^"\\]{1,100})"/.exec(text.slice(0, 160))
  if (lead !== null) return lead[1]
  try {
    const parsed: unknown = JSON.parse(text)
    return typeof parsed === "object" && parsed !== null && typeof (parsed as { type?: unknown }).type === "string"
      ? (parsed as { type: string }).type
      : undefined
  } catch {
    return undefined
  }
}

/** The input of a create body as items (a string is one user message, as the Responses API reads it). */
const inputItems = (input: unknown): ReadonlyArray<unknown> | undefined =>
  typeof input === "string"
    ? [{ type: "message", role: "user", content: input }]
    : Array.isArray(input)
    ? input
    : undefined

/**
 * The create event for `body` on `connection`: the body as a `response.create`, without the fields only HTTP uses.
 * When the body's input starts with the whole conversation of the connection's last response (its input, then its
 * output), only the rest is sent, with `previous_response_id` naming that response: OpenAI's socket continues its
 * connection's latest response from memory, `store: false` included (the guide's "incremental inputs"), and the
 * usage it reports is the same. Anything else is sent whole. Also answers the conversation's items as JSON texts.
 */
const createEvent = (
  connection: Connection,
  body: Readonly<Record<string, unknown>>,
  incremental: boolean
): {
  readonly text: string
  readonly conversation: ReadonlyArray<string> | undefined
  readonly continued: boolean
} => {
  const { stream: _stream, stream_options: _options, ...rest } = body
  const items = rest.previous_response_id === undefined ? inputItems(rest.input) : undefined
  const conversation = items?.map((item) => JSON.stringify(item))
  const last = connection.last
  if (
    incremental && conversation !== undefined && last !== undefined && conversation.length > last.history.length &&
    last.history.every((item, index) => item === conversation[index])
  ) {
    const event = {
      type: "response.create",
      ...rest,
      previous_response_id: last.id,
      input: items!.slice(last.history.length)
    }
    return { text: JSON.stringify(event), conversation, continued: true }
  }
  return { text: JSON.stringify({ type: "response.create", ...rest }), conversation, continued: false }
}

/** The id and output items (as JSON texts) of a `response.completed` frame, or `undefined`. */
const completedOf = (data: string): { readonly id: string; readonly output: ReadonlyArray<string> } | undefined => {
  try {
    const parsed = JSON.parse(data) as { response?: { id?: unknown; output?: unknown } }
    const response = parsed.response
    return typeof response?.id === "string" && Array.isArray(response.output)
      ? { id: response.id, output: response.output.map((item) => JSON.stringify(item)) }
      : undefined
  } catch {
    return undefined
  }
}

/**
 * A new pool of upstream connections for one client socket.
 *
 * @category constructors
 */
export const makeResponsesUpstreamSockets = (): ResponsesUpstreamSockets => {
  const idle = new Map<string, Array<Connection>>()
  const all = new Set<Connection>()
  let opened = 0
  let closed = false

  const forget = (connection: Connection) => {
    all.delete(connection)
    const list = idle.get(connection.pool)
    const at = list?.indexOf(connection) ?? -1
    if (list !== undefined && at >= 0) list.splice(at, 1)
  }

  /**
   * Opens a connection, or answers the vendor's refusal of the handshake (its HTTP status and body); interrupting it
   * closes the socket.
   */
  const open = (url: string, headers: Readonly<Record<string, string>>, pool: string, openMillis: number) =>
    Effect.flatMap(
      openClientSocket({ url: socketUrl(url), headers, openMillis, maxFrameBytes: MAX_EVENT_BYTES, what: "Responses" }),
      (handshake): Effect.Effect<Connection | Refusal, UpstreamFailed> => {
        if (handshake._tag === "Refused") {
          return handshake.status >= 400 && handshake.status <= 599
            ? Effect.succeed(handshake)
            : Effect.fail(failure("network", `The channel's Responses socket answered HTTP ${handshake.status}.`))
        }
        const socket = handshake.socket
        if (closed) {
          closeSocketQuietly(socket, 1000, "client socket closed")
          return Effect.fail(failure("network", "The client socket has closed."))
        }
        opened++
        const connection: Connection = { socket, pool, reader: undefined, last: undefined }
        all.add(connection)
        socket.onmessage = (message) => connection.reader?.(message)
        socket.onclose = () => {
          forget(connection)
          connection.reader?.(undefined)
        }
        return Effect.succeed(connection)
      }
    )

  /** Closes one idle connection of any pool (the first found), to make room for another pool's. */
  const evictIdle = () => {
    for (const list of idle.values()) {
      const connection = list.shift()
      if (connection === undefined) continue
      forget(connection)
      closeSocketQuietly(connection.socket, 1000, "making room")
      return
    }
  }

  /** Takes an idle open connection of `pool`, if any. */
  const takeIdle = (pool: string): Connection | undefined => {
    const list = idle.get(pool)
    while (list !== undefined && list.length > 0) {
      const connection = list.pop()!
      if (isSocketOpen(connection.socket)) return connection
      forget(connection)
    }
    return undefined
  }

  /** Runs one response on `connection`: sends the create, then reads frames until its terminal one. */
  const run = (
    connection: Connection,
    body: Readonly<Record<string, unknown>>,
    timeouts: Timeouts,
    incremental: boolean
  ) =>
    Effect.callback<TurnRun, UpstreamFailed>((resume) => {
      const { text, conversation, continued } = createEvent(connection, body, incremental)
      // Only this turn's completion names the connection's latest response.
      connection.last = undefined
      const started = Date.now()
      let frames: Array<Sse.Event> = []
      let unread = 0
      /** Set once the terminal frame arrived (`done`) or the turn failed. */
      let ended: "done" | UpstreamFailed | undefined
      let released = false
      let wake: (() => void) | undefined
      let answered = false
      let timer: ReturnType<typeof setTimeout> | undefined

      const release = () => {
        if (released) return
        released = true
        clearTimeout(timer)
        connection.reader = undefined
        if (ended === "done" && !closed && isSocketOpen(connection.socket)) {
          const list = idle.get(connection.pool) ?? []
          list.push(connection)
          idle.set(connection.pool, list)
        } else {
          forget(connection)
          closeSocketQuietly(connection.socket, 1000, "response abandoned")
        }
      }
      const end = (outcome: "done" | UpstreamFailed) => {
        if (ended !== undefined) return
        ended = outcome
        clearTimeout(timer)
        if (!answered) {
          answered = true
          if (outcome instanceof UpstreamFailed) {
            release()
            resume(Effect.fail(outcome))
          } else resume(Effect.succeed({ turn, continued }))
        }
        wake?.()
      }
      /** Arms the timeout for the next frame: the first byte's until the first frame, then the idle gap's. */
      const arm = () => {
        clearTimeout(timer)
        const gap = answered || frames.length > 0 ? timeouts.idleMs : timeouts.firstByteMs
        const limits: Array<number> = gap > 0 ? [gap] : []
        if (timeouts.totalMs > 0) limits.push(Math.max(0, timeouts.totalMs - (Date.now() - started)))
        if (limits.length > 0) {
          timer = setTimeout(
            () => end(failure("timeout", "The channel's Responses socket stopped answering in time.", 504)),
            Math.min(...limits)
          )
        }
      }
      let errorStatus = 200
      let errorText = ""
      connection.reader = (message) => {
        if (ended !== undefined) return
        if (message === undefined) {
          return end(
            answered || frames.length > 0
              ? failure("stream-broken", "The channel's Responses socket closed mid-response.", 200)
              : failure("network", "The channel's Responses socket closed before it answered.")
          )
        }
        const data: unknown = message.data
        if (typeof data !== "string") return end(failure("bad-body", "The upstream sent a binary frame.", 200))
        if (data.length > MAX_EVENT_BYTES) return end(failure("bad-body", "An upstream event was too large.", 200))
        if (nestsTooDeep(data)) return end(failure("bad-body", "An upstream event nested too deep.", 200))
        const type = typeOf(data) ?? "message"
        if (!answered && frames.length === 0 && type === "error") {
          // An error as the first answer is the upstream's refusal of the request, as an HTTP error status is.
          let parsed: { status?: unknown; error?: unknown } = {}
          try {
            parsed = JSON.parse(data)
          } catch {
            // Not JSON: the status alone.
          }
          errorStatus = typeof parsed.status === "number" && parsed.status >= 400 && parsed.status <= 599
            ? parsed.status
            : 500
          errorText = JSON.stringify({ error: parsed.error ?? null })
          answered = true
          ended = "done"
          clearTimeout(timer)
          resume(Effect.succeed({ turn, continued }))
          return
        }
        unread += data.length
        if (unread > MAX_UNREAD_BYTES) {
          return end(failure("stream-broken", "The caller read the answer too slowly; it was cut.", 200))
        }
        frames.push({ _tag: "Event", event: type, id: undefined, data })
        if (type === "response.completed" && conversation !== undefined) {
          const completed = completedOf(data)
          if (completed !== undefined) {
            connection.last = { id: completed.id, history: [...conversation, ...completed.output] }
          }
        }
        if (TERMINAL.has(type)) return end("done")
        if (!answered) {
          answered = true
          resume(Effect.succeed({ turn, continued }))
        }
        arm()
        wake?.()
      }

      const next: Effect.Effect<ReadonlyArray<Sse.Event> | undefined, UpstreamFailed> = Effect.suspend(() => {
        if (frames.length > 0) {
          const batch = frames
          frames = []
          unread = 0
          return Effect.succeed(batch)
        }
        if (ended instanceof UpstreamFailed) return Effect.fail(ended)
        if (ended === "done" || released) return Effect.undefined
        return Effect.andThen(
          Effect.callback<void>((wakeUp) => {
            wake = () => {
              wake = undefined
              wakeUp(Effect.void)
            }
            return Effect.sync(() => {
              wake = undefined
            })
          }),
          next
        )
      })
      const turn: SocketTurn = {
        get status() {
          return errorStatus
        },
        get errorText() {
          return errorText
        },
        next,
        release
      }

      try {
        connection.socket.send(text)
      } catch {
        end(failure("network", "The channel's Responses socket could not take the request."))
        return
      }
      arm()
      return Effect.sync(() => {
        if (!answered) {
          answered = true
          release()
        }
      })
    })

  return {
    turn: (url, headers, body, timeouts) => {
      const pool = `${url}\n${JSON.stringify(headers)}`
      /** An idle connection of the pool, or a new one (or the vendor's refusal to open one). */
      const acquire = Effect.suspend((): Effect.Effect<Connection | Refusal, UpstreamFailed> => {
        if (closed) return Effect.fail(failure("network", "The client socket has closed."))
        const ready = takeIdle(pool)
        if (ready !== undefined) return Effect.succeed(ready)
        if (all.size >= MAX_CONNECTIONS) evictIdle()
        if (all.size >= MAX_CONNECTIONS) {
          return Effect.fail(failure("network", "Too many upstream sockets are open for this client socket."))
        }
        return open(url, headers, pool, timeouts.firstByteMs > 0 ? timeouts.firstByteMs : DEFAULT_OPEN_MILLIS)
      })
      const runOn = (taken: Connection | Refusal, incremental: boolean): Effect.Effect<TurnRun, UpstreamFailed> =>
        "_tag" in taken
          ? Effect.succeed({ turn: refusedTurn(taken), continued: false })
          : run(taken, body, timeouts, incremental)
      return Effect.flatMap(acquire, (taken) => runOn(taken, true)).pipe(
        Effect.flatMap(({ turn, continued }) => {
          // The upstream no longer holds the response continued from: the same turn again, whole.
          if (!continued || turn.status !== 400 || !turn.errorText.includes(`"previous_response_not_found"`)) {
            return Effect.succeed(turn)
          }
          turn.release()
          return Effect.map(
            Effect.flatMap(acquire, (taken) => runOn(taken, false)),
            (whole) => whole.turn
          )
        })
      )
    },
    opened: () => opened,
    close: () => {
      if (closed) return
      closed = true
      for (const connection of all) closeSocketQuietly(connection.socket, 1000, "client socket closed")
      all.clear()
      idle.clear()
    }
  }
}

/**
 * The key of a client socket's pool in its `SocketScope`.
 *
 * @category models
 */
export const UPSTREAM_SOCKETS: SocketResourceKey<ResponsesUpstreamSockets> = {
  name: "responses-upstream-sockets",
  make: makeResponsesUpstreamSockets
}
