/**
 * What every WebSocket endpoint of the gateway shares, whatever it speaks: how
 * a handshake is recognised, the marker status its Effect route answers once
 * the handshake is authenticated (the upgrade itself happens outside the
 * router, in `App.ts`, on the runtime's own request: Deno's
 * `Deno.upgradeWebSocket`), the per-socket limits (`settings.websocket_*`),
 * the frame gate that applies them to each frame from a caller, and the
 * socket's access-log line.
 *
 * Every frame from a caller is hostile: binary, over the size limit, faster
 * than the rate, or not valid UTF-8 (Deno delivers a text frame as a string,
 * so invalid UTF-8 never reaches here; the runtime closes with 1007).
 *
 * @since 0.1.0
 */
/**
 * Where the socket gauges are registered: the gateway's `Metrics`
 * (`observability/Metrics.ts`, its `pullLabelled`), named by shape so this
 * module stays below the telemetry.
 *
 * @category metrics
 */
export interface GaugeRegistry {
  readonly pullLabelled: (
    name: string,
    description: string,
    attributes: Record<string, string>,
    get: () => number
  ) => () => void
}

/**
 * The status an authenticated handshake's route answers inside the router
 * (never sent to the caller: `App.ts` replaces it with the runtime's 101).
 *
 * @category handshake
 */
export const HANDSHAKE_ACCEPTED = 204

/**
 * Whether `request` asks for a WebSocket upgrade (RFC 6455 §4.2.1: a GET with
 * `Upgrade: websocket`, the token compared case-insensitively).
 *
 * @category handshake
 */
export const isWebSocketUpgrade = (request: Request): boolean =>
  request.method === "GET" &&
  (request.headers.get("upgrade") ?? "").toLowerCase().split(",").some((token) => token.trim() === "websocket")

/**
 * The limits of one socket, from the bootstrap file's `settings`.
 *
 * @category models
 */
export interface WebSocketLimits {
  /** Largest text frame (message) taken, in bytes of UTF-8 (`websocket_max_frame_bytes`, default 16 MiB). */
  readonly maxFrameBytes: number
  /** Frames a caller may send per second, over a one-second token bucket (`websocket_max_events_per_second`, 20). */
  readonly maxEventsPerSecond: number
  /** Seconds a socket may stay with no frame either way and nothing in flight before it is closed (`websocket_idle_seconds`, 300). */
  readonly idleSeconds: number
}

/** The default limits (README, "WebSockets"). @category models */
export const DEFAULT_WEBSOCKET_LIMITS: WebSocketLimits = {
  maxFrameBytes: 16 * 1024 * 1024,
  maxEventsPerSecond: 20,
  idleSeconds: 300
}

/**
 * Why a caller's frame was refused: the `code` and `message` of the `error`
 * event the socket answers with (the socket stays open).
 *
 * @category models
 */
export interface FrameRefusal {
  readonly status: number
  readonly code: string
  readonly message: string
}

const encoder = new TextEncoder()

/** Bytes of `text` in UTF-8, without encoding it when its length alone decides. */
export const utf8Bytes = (text: string): number => {
  // Each UTF-16 unit is 1 to 3 bytes in UTF-8.
  if (text.length * 3 <= 1024) return encoder.encode(text).byteLength
  let bytes = 0
  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index)
    if (unit < 0x80) bytes += 1
    else if (unit < 0x800) bytes += 2
    else if (unit >= 0xd800 && unit <= 0xdbff && index + 1 < text.length) {
      const next = text.charCodeAt(index + 1)
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4
        index++
      } else bytes += 3
    } else bytes += 3
  }
  return bytes
}

/**
 * A gate for the frames of one socket: `admit(data, now)` answers the text of
 * an acceptable frame, or the refusal to send back. `now`: milliseconds.
 *
 * @category constructors
 */
export const makeFrameGate = (limits: WebSocketLimits) => {
  let tokens = limits.maxEventsPerSecond
  let refilled = Number.NEGATIVE_INFINITY
  return {
    admit: (data: unknown, now: number): { readonly text: string; readonly bytes: number } | FrameRefusal => {
      const rate = limits.maxEventsPerSecond
      if (rate > 0) {
        tokens = Math.min(rate, tokens + ((now - refilled) / 1000) * rate)
        refilled = now
        if (tokens < 1) {
          return {
            status: 429,
            code: "rate_limit_exceeded",
            message: `Too many events on this socket (at most ${rate} a second); the event was dropped.`
          }
        }
        tokens -= 1
      }
      if (typeof data !== "string") {
        return {
          status: 400,
          code: "invalid_frame",
          message: "Binary frames are not accepted; send each event as a JSON text frame."
        }
      }
      const bytes = utf8Bytes(data)
      if (bytes > limits.maxFrameBytes) {
        return {
          status: 413,
          code: "frame_too_large",
          message: `The event is ${bytes} bytes; a frame may hold at most ${limits.maxFrameBytes}.`
        }
      }
      return { text: data, bytes }
    }
  }
}

/**
 * What a socket did, for its access-log line and the socket metrics.
 *
 * @category models
 */
export interface SocketTally {
  framesIn: number
  framesOut: number
  bytesIn: number
  bytesOut: number
  /** Responses the socket ran (admitted or refused by the pipeline). */
  responses: number
}

/** A tally at zero. @category constructors */
export const makeTally = (): SocketTally => ({ framesIn: 0, framesOut: 0, bytesIn: 0, bytesOut: 0, responses: 0 })

/**
 * The access-log line of a socket's end, in the log's one shape
 * (`observability/LogLine.ts`, named by shape so this module stays below the
 * telemetry): `time`, `level: "info"`, `msg: "socket"`, then its id (the
 * prefix of its responses' request ids), route, close code, milliseconds open
 * and its tally. No key, no frame content.
 *
 * @category logging
 */
export type SocketLine = {
  readonly time: string
  readonly level: "info"
  readonly msg: "socket"
  readonly socket_id: string
  readonly route: string
  readonly close_code: number
  readonly duration_ms: number
  readonly responses: number
  readonly frames_in: number
  readonly frames_out: number
  readonly bytes_in: number
  readonly bytes_out: number
}

/**
 * The line of a socket's end (`SocketLine`), closed at `closedAt` after
 * opening at `openedAt` (epoch milliseconds), written by the telemetry in its
 * format.
 *
 * @category logging
 */
export const socketLine = (
  socketId: string,
  route: string,
  openedAt: number,
  closedAt: number,
  code: number,
  tally: SocketTally
): SocketLine => ({
  time: new Date(closedAt).toISOString(),
  level: "info",
  msg: "socket",
  socket_id: socketId,
  route,
  close_code: code,
  duration_ms: closedAt - openedAt,
  responses: tally.responses,
  frames_in: tally.framesIn,
  frames_out: tally.framesOut,
  bytes_in: tally.bytesIn,
  bytes_out: tally.bytesOut
})

/**
 * The sockets one gateway has open, by route, for the `sluice_websocket_open`
 * gauge, plus the frame and byte counters (`sluice_websocket_frames_total`,
 * `sluice_websocket_bytes_total`, by route and direction). Call `register`
 * once per gateway; `opened` returns the function to call when the socket ends.
 *
 * @category metrics
 */
export const makeSocketMetrics = (metrics: GaugeRegistry | undefined, routes: ReadonlyArray<string>) => {
  const open = new Map<string, number>(routes.map((route) => [route, 0]))
  const totals = new Map<string, SocketTally>(routes.map((route) => [route, makeTally()]))
  const removers: Array<() => void> = []
  if (metrics !== undefined) {
    for (const route of routes) {
      const tally = totals.get(route)!
      removers.push(
        metrics.pullLabelled("sluice_websocket_open", "WebSocket connections open", { route }, () => open.get(route)!)
      )
      for (const direction of ["in", "out"] as const) {
        removers.push(
          metrics.pullLabelled(
            "sluice_websocket_frames_total",
            "WebSocket frames, by route and direction",
            { route, direction },
            () => direction === "in" ? tally.framesIn : tally.framesOut
          ),
          metrics.pullLabelled(
            "sluice_websocket_bytes_total",
            "WebSocket payload bytes, by route and direction",
            { route, direction },
            () => direction === "in" ? tally.bytesIn : tally.bytesOut
          )
        )
      }
    }
  }
  return {
    /** Counts a socket open on `route`; the returned function counts it closed. */
    opened: (route: string): () => void => {
      open.set(route, (open.get(route) ?? 0) + 1)
      let closed = false
      return () => {
        if (closed) return
        closed = true
        open.set(route, (open.get(route) ?? 1) - 1)
      }
    },
    /** Adds a frame to `route`'s totals. */
    frame: (route: string, direction: "in" | "out", bytes: number): void => {
      const tally = totals.get(route)
      if (tally === undefined) return
      if (direction === "in") {
        tally.framesIn++
        tally.bytesIn += bytes
      } else {
        tally.framesOut++
        tally.bytesOut += bytes
      }
    },
    /** Unregisters the gauges (the gateway's disposal). */
    remove: (): void => {
      for (const remove of removers) remove()
    }
  }
}

/** The socket metrics of one gateway (`makeSocketMetrics`). @category metrics */
export type SocketMetrics = ReturnType<typeof makeSocketMetrics>
