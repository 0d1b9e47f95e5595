/**
 * Sends one upstream call and hands back its status, headers and body as a
 * stream of bytes. Built on `fetch` with an `AbortController` owned by the
 * call, so interrupting the caller (client gone, timeout, failover) aborts the
 * upstream request; timeouts for the answer's head, the gap between body
 * chunks and the whole call are enforced here.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Stream } from "effect"
import { UpstreamFailed } from "../errors/GatewayError.ts"

/** Timeouts in milliseconds (0 = none). @category models */
export interface Timeouts {
  /** Until the status line and headers arrive (covers connect). */
  readonly firstByteMs: number
  /** Between two body chunks. */
  readonly idleMs: number
  /** The whole call, body included. */
  readonly totalMs: number
}

/** An answered upstream call. `body` may be read once. @category models */
export interface UpstreamResponse {
  readonly status: number
  readonly headers: Headers
  /** The body; fails with `UpstreamFailed` (`timeout`, `stream-broken`). Ending it aborts the call. */
  readonly body: Stream.Stream<Uint8Array, UpstreamFailed>
  /** Reads the whole body as text. */
  readonly text: Effect.Effect<string, UpstreamFailed>
  /** Aborts the call (idempotent). */
  readonly abort: () => void
}

/** @category services */
export class UpstreamClient extends Context.Service<UpstreamClient, {
  /**
   * POSTs `body` to `url`. Fails with `UpstreamFailed` kind `network` (no
   * connection) or `timeout` (no head within `firstByteMs`). The call is
   * aborted when the surrounding scope closes.
   */
  readonly post: (
    url: string,
    headers: Record<string, string>,
    body: string,
    timeouts: Timeouts
  ) => Effect.Effect<UpstreamResponse, UpstreamFailed>
}>()("sluice/services/UpstreamClient") {
  /** Over the runtime's `fetch`. */
  static readonly layer = Layer.succeed(
    UpstreamClient,
    UpstreamClient.of({
      post: (url, headers, body, timeouts) =>
        Effect.callback<UpstreamResponse, UpstreamFailed>((resume) => {
          const controller = new AbortController()
          let timedOut = false
          let finished = false
          const abort = () => {
            if (!finished) {
              finished = true
              controller.abort()
            }
          }
          const timer = (ms: number) =>
            ms > 0
              ? setTimeout(() => {
                timedOut = true
                abort()
              }, ms)
              : undefined
          const headTimer = timer(timeouts.firstByteMs)
          const totalTimer = timer(timeouts.totalMs)
          // Idle watchdog: one timer per quiet period, not one per chunk; each expiry checks the last activity.
          let idleTimer: ReturnType<typeof setTimeout> | undefined
          let idleExpired = false
          let lastActivity = 0
          const armIdle = (ms: number) => {
            idleTimer = setTimeout(() => {
              const quiet = Date.now() - lastActivity
              if (quiet < timeouts.idleMs) return armIdle(timeouts.idleMs - quiet)
              idleExpired = true
              timedOut = true
              abort()
            }, ms)
          }
          const clear = () => {
            clearTimeout(headTimer)
            clearTimeout(totalTimer)
            clearTimeout(idleTimer)
          }
          fetch(url, { method: "POST", headers, body, signal: controller.signal }).then(
            (response) => {
              clearTimeout(headTimer)
              const failure = (kind: "timeout" | "stream-broken", message: string) =>
                new UpstreamFailed({ kind, status: response.status, message })
              const raw = response.body
              const bodyStream: Stream.Stream<Uint8Array, UpstreamFailed> = raw === null
                ? Stream.empty
                : Stream.fromReadableStream({
                  evaluate: () => raw,
                  onError: () =>
                    idleExpired
                      ? failure("timeout", "The upstream went idle mid-answer.")
                      : timedOut
                      ? failure("timeout", "The upstream stopped sending in time.")
                      : failure("stream-broken", "The upstream connection broke mid-answer.")
                })
              const idle = timeouts.idleMs
              const guarded = idle > 0
                ? Stream.suspend(() => {
                  lastActivity = Date.now()
                  armIdle(idle)
                  return bodyStream.pipe(Stream.mapArray((chunk) => {
                    lastActivity = Date.now()
                    return chunk
                  }))
                })
                : bodyStream
              const finalBody = guarded.pipe(
                // Read to the end: nothing to abort (an abort would only build a DOMException and its stack).
                Stream.onEnd(Effect.sync(() => {
                  finished = true
                })),
                Stream.ensuring(Effect.sync(() => {
                  clear()
                  abort()
                }))
              )
              resume(Effect.succeed({
                status: response.status,
                headers: response.headers,
                body: finalBody,
                text: Effect.tryPromise({
                  try: () => response.text(),
                  catch: () =>
                    timedOut
                      ? failure("timeout", "The upstream did not finish its answer in time.")
                      : failure("stream-broken", "The upstream connection broke mid-answer.")
                }).pipe(Effect.ensuring(Effect.sync(() => {
                  clear()
                  finished = true
                }))),
                abort: () => {
                  clear()
                  abort()
                }
              }))
            },
            (error: unknown) => {
              clear()
              finished = true
              resume(Effect.fail(
                new UpstreamFailed({
                  kind: timedOut ? "timeout" : "network",
                  status: 0,
                  message: timedOut
                    ? "The upstream did not answer in time."
                    : `The upstream could not be reached (${(error as Error).name}).`
                })
              ))
            }
          )
          return Effect.sync(() => {
            clear()
            abort()
          })
        })
    })
  )
}
