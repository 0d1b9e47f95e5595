/**
 * Accepting WebSocket connections, whatever they then speak: the handshake
 * goes through the gateway's own handler first (its route authenticates it
 * and answers `HANDSHAKE_ACCEPTED`, or the refusal the caller then gets as an
 * HTTP error), the socket is counted among its address's open requests for as
 * long as it is open (`OpenRequests.ts`), then upgraded by the runtime
 * (`Deno.upgradeWebSocket`) and handed to the endpoint's session. Keeps every
 * session open for the graceful shutdown (`drain`), and writes the socket's
 * access-log line and metrics at its end.
 *
 * A request built for a socket's inner work (`innerRequest`) carries the
 * handshake's headers (credentials, forwarded addresses) and its peer address,
 * so every per-request rule sees the caller as over HTTP.
 *
 * @since 0.1.0
 */
import { rememberClientAddress, trustProxies } from "./ClientAddress.ts"
import { markMadeRequestId } from "./MadeRequestId.ts"
import {
  HANDSHAKE_ACCEPTED,
  type SocketLine,
  socketLine,
  type SocketMetrics,
  type SocketTally
} from "./WebSocketUpgrade.ts"

/** A session on an accepted socket, as the server keeps it. @category models */
export interface SocketSession {
  /** Finish what is in flight until `deadline` (epoch milliseconds), then close with 1001. */
  readonly drain: (deadline: number) => Promise<void>
}

/** What the server hands a session when the socket is upgraded. @category models */
export interface AcceptedSocket {
  readonly socket: WebSocket
  /** `ws_` then 24 hex digits (well-formed as an `x-request-id`). */
  readonly socketId: string
  /** Call once the socket ended and its last work settled (logs the line, frees the count). */
  readonly closed: (code: number, tally: SocketTally) => void
  /** Counts one frame in the metrics. */
  readonly frame: (direction: "in" | "out", bytes: number) => void
}

/** How a server is built. @category models */
export interface SocketServerOptions {
  readonly metrics: SocketMetrics
  /** Where a socket's end line goes (the telemetry's `write`), or `undefined` when the access log is off. */
  readonly accessLog: ((line: SocketLine) => void) | undefined
  /** The gateway's handler for the handshake (its route authenticates it). */
  readonly handshake: (request: Request) => Promise<Response>
  /** The open-requests bound: the refusal when the address has too many open, else `undefined`. */
  readonly admit: (request: Request, completed: Promise<void>) => Response | undefined
}

const HOP_HEADERS = new Set([
  "upgrade",
  "connection",
  "sec-websocket-key",
  "sec-websocket-version",
  "sec-websocket-extensions",
  "sec-websocket-protocol",
  "content-length",
  "content-type",
  "x-request-id",
  "transfer-encoding",
  // The inner answer is read here, not sent on: it must come uncompressed.
  "accept-encoding"
])

/**
 * A request for a socket's inner work: `method` `url` with a JSON `body`, the
 * handshake's headers (not its WebSocket or hop-by-hop ones), `x-request-id:
 * requestId`, `signal` (abort: the caller is gone), and the handshake's peer address (`peer`: read at the handshake, as the server's `info` cannot be read
 * once the handshake's request is over) and trusted proxies.
 *
 * @category requests
 */
export const innerRequest = (
  handshake: Request,
  peer: { readonly remoteAddr: Deno.Addr } | undefined,
  trusted: ReadonlyArray<string>,
  method: string,
  url: string,
  body: string,
  requestId: string,
  signal?: AbortSignal
): Request => {
  const headers = new Headers()
  for (const [name, value] of handshake.headers) if (!HOP_HEADERS.has(name)) headers.set(name, value)
  headers.set("content-type", "application/json")
  headers.set("x-request-id", requestId)
  const request = new Request(url, { method, headers, body, ...(signal === undefined ? {} : { signal }) })
  markMadeRequestId(request)
  if (peer !== undefined) rememberClientAddress(request, peer)
  if (trusted.length > 0) trustProxies(request, trusted)
  return request
}

/**
 * A WebSocket server for one route.
 *
 * @category constructors
 */
export const makeSocketServer = (route: string, options: SocketServerOptions) => {
  const sessions = new Set<SocketSession>()
  return {
    /**
     * Answers a handshake `request`: the open-requests refusal, the handler's
     * refusal, a 400 when the runtime cannot upgrade it, or the 101 with the
     * session `start` made running on it.
     */
    accept: async (request: Request, start: (accepted: AcceptedSocket) => SocketSession): Promise<Response> => {
      // The open-requests bound first, as over HTTP: a refused socket never reaches the handler (nor its log).
      let end: () => void = () => {}
      const ended = new Promise<void>((resolve) => end = resolve)
      const refused = options.admit(request, ended)
      if (refused !== undefined) return refused
      const answer = await options.handshake(request)
      if (answer.status !== HANDSHAKE_ACCEPTED) {
        end()
        return answer
      }
      let upgraded: { socket: WebSocket; response: Response }
      try {
        upgraded = Deno.upgradeWebSocket(request)
      } catch {
        end()
        return Response.json({
          error: {
            message: "The WebSocket handshake is malformed.",
            type: "invalid_request_error",
            param: null,
            code: "invalid_request"
          }
        }, { status: 400 })
      }
      const socketId = `ws_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`
      const openedAt = Date.now()
      const counted = options.metrics.opened(route)
      let session: SocketSession | undefined = undefined
      let finished = false
      const closed = (code: number, tally: SocketTally) => {
        if (finished) return
        finished = true
        counted()
        end()
        if (session !== undefined) sessions.delete(session)
        options.accessLog?.(socketLine(socketId, route, openedAt, Date.now(), code, tally))
      }
      session = start({
        socket: upgraded.socket,
        socketId,
        closed,
        frame: (direction, bytes) => options.metrics.frame(route, direction, bytes)
      })
      if (!finished) sessions.add(session)
      return upgraded.response
    },
    /** Drains every open session until `deadline` (epoch milliseconds): each then closes with 1001. */
    drain: async (deadline: number): Promise<void> => {
      await Promise.all([...sessions].map((session) => session.drain(deadline)))
    },
    /** Sockets open now. */
    open: (): number => sessions.size
  }
}

/** A socket server (`makeSocketServer`). @category models */
export type SocketServer = ReturnType<typeof makeSocketServer>
