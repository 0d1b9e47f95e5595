/**
 * The gateway's WebSocket client for upstream sockets (the Responses API's WebSocket mode, Realtime): npm `ws`
 * (github.com/websockets/ws). The runtime's `WebSocket` hides a refused handshake behind a bare `error` event, and
 * what the vendor answered matters: a 401 or a vendor's exhausted-credit code names a key to disable, a 429 a
 * throttled one, a 400 the caller's own mistake. `ws` hands the refusal's HTTP answer over (`unexpected-response`),
 * so an upstream socket's refusal goes to the wire's error classifier as an HTTP error answer does.
 *
 * @since 0.4.0
 */
// @ts-types="@types/ws"
import WebSocket from "ws"
import { Effect } from "effect"
import { UpstreamFailed } from "../../errors/GatewayError.ts"

/** An open upstream socket: `ws`'s client, whose `onmessage` hands text frames over as strings. @category models */
export type ClientSocket = WebSocket

/** Bytes of a refused handshake's body kept for the classifier (the rest is dropped). @category limits */
export const MAX_REFUSAL_BYTES = 64 * 1024

/**
 * How a handshake ended: the socket open, or the vendor's HTTP answer instead of the upgrade (its status and the
 * first `MAX_REFUSAL_BYTES` of its body as text).
 *
 * @category models
 */
export type Handshake =
  | { readonly _tag: "Open"; readonly socket: ClientSocket }
  | { readonly _tag: "Refused"; readonly status: number; readonly bodyText: string }

/** What `openClientSocket` needs. @category models */
export interface ClientSocketOptions {
  /** `ws://` or `wss://` URL. */
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  /** Milliseconds the handshake may take (the refusal's body included). */
  readonly openMillis: number
  /** Largest frame in bytes the socket takes; a larger one closes it (1009), read as a close. */
  readonly maxFrameBytes: number
  /** The socket's name in failure messages: "Responses", "Realtime". */
  readonly what: string
  /** Set on the failures (the usage log and the health state read it). */
  readonly channelId?: number | undefined
}

const noop = () => {}

/**
 * Opens an upstream socket. Succeeds with `Open`, or with `Refused` when the vendor answered the handshake with an
 * HTTP status other than 101; fails with a retryable `UpstreamFailed`: `network` (a URL it cannot open, a
 * connection refused or reset, a close during the handshake) or `timeout` (`openMillis`). Interrupting it ends the
 * handshake. The socket always has an `error` listener, so an error `ws` raises later is never thrown: a caller
 * learns of it from the close that follows.
 *
 * @category constructors
 */
export const openClientSocket = (options: ClientSocketOptions): Effect.Effect<Handshake, UpstreamFailed> =>
  Effect.callback<Handshake, UpstreamFailed>((resume) => {
    const failure = (kind: "network" | "timeout", message: string) =>
      new UpstreamFailed({ kind, status: 502, message, channelId: options.channelId })
    let socket: WebSocket
    try {
      socket = new WebSocket(options.url, {
        headers: { ...options.headers },
        maxPayload: options.maxFrameBytes,
        perMessageDeflate: false
      })
    } catch {
      resume(Effect.fail(failure("network", `The channel's ${options.what} socket URL is not valid.`)))
      return
    }
    socket.on("error", noop)
    let settled = false
    const settle = (outcome: Effect.Effect<Handshake, UpstreamFailed>) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.removeListener("open", onOpen)
      socket.removeListener("close", onClose)
      socket.removeListener("error", onError)
      socket.removeListener("unexpected-response", onRefused)
      resume(outcome)
    }
    const timer = setTimeout(() => {
      socket.terminate()
      settle(Effect.fail(failure("timeout", `The channel's ${options.what} socket did not open in time.`)))
    }, options.openMillis)
    const onOpen = () => settle(Effect.succeed({ _tag: "Open", socket }))
    const onError = () => {
      socket.terminate()
      settle(Effect.fail(failure("network", `The channel's ${options.what} socket could not be reached.`)))
    }
    const onClose = () =>
      settle(Effect.fail(failure("network", `The channel's ${options.what} socket closed during the handshake.`)))
    const onRefused = (_request: unknown, response: import("node:http").IncomingMessage) => {
      const chunks: Array<Uint8Array> = []
      let kept = 0
      const done = () => {
        const bytes = new Uint8Array(kept)
        let at = 0
        for (const chunk of chunks) {
          bytes.set(chunk, at)
          at += chunk.byteLength
        }
        response.destroy()
        socket.terminate()
        settle(Effect.succeed({
          _tag: "Refused",
          status: response.statusCode ?? 502,
          bodyText: new TextDecoder().decode(bytes)
        }))
      }
      response.on("data", (chunk: Uint8Array) => {
        const room = MAX_REFUSAL_BYTES - kept
        if (room <= 0) return
        const part = chunk.byteLength > room ? chunk.subarray(0, room) : chunk
        chunks.push(part)
        kept += part.byteLength
        if (kept >= MAX_REFUSAL_BYTES) done()
      })
      response.on("end", done)
      response.on("error", done)
    }
    socket.on("open", onOpen)
    socket.on("close", onClose)
    socket.on("error", onError)
    socket.on("unexpected-response", onRefused)
    return Effect.sync(() => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.terminate()
    })
  })

/** Closes `socket` if it is open or opening, never throwing. @category lifecycle */
export const closeSocketQuietly = (socket: ClientSocket, code = 1000, reason = "done"): void => {
  try {
    if (socket.readyState === WebSocket.OPEN) socket.close(code, reason)
    else if (socket.readyState === WebSocket.CONNECTING) socket.terminate()
  } catch {
    // Already closing.
  }
}

/** Whether `socket` is open. @category lifecycle */
export const isSocketOpen = (socket: ClientSocket): boolean => socket.readyState === WebSocket.OPEN
