/**
 * Sends one upstream call and hands back its status, headers and a body read
 * chunk by chunk (or whole, as text). Built on `fetch` with an `AbortController` owned by the
 * call, so interrupting the caller (client gone, timeout, failover) aborts the
 * upstream request; timeouts for the answer's head, the gap between body
 * chunks and the whole call are enforced here, by one shared watchdog timer
 * rather than timers per call.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
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
  /**
   * Reads the next chunk of the body, `undefined` at its end; fails with `UpstreamFailed` (`timeout`,
   * `stream-broken`). Read the body through this or through `text`, not both; `abort` when done with it early.
   */
  readonly read: Effect.Effect<Uint8Array | undefined, UpstreamFailed>
  /** Reads the whole body as text. */
  readonly text: Effect.Effect<string, UpstreamFailed>
  /** Aborts the call (idempotent). */
  readonly abort: () => void
}

/** How often the watchdog checks the deadlines of calls in flight (milliseconds): the timeouts' resolution. */
const WATCHDOG_TICK_MS = 20

/** A call in flight as the watchdog sees it; `check` aborts it once a deadline has passed. */
interface Watched {
  readonly check: (now: number) => void
}

/**
 * The deadlines of every call in flight, checked by one interval timer that
 * runs only while calls are in flight: under load, per call, a set insertion
 * and removal instead of two or three timers created and cleared.
 */
const watchdog = (() => {
  const calls = new Set<Watched>()
  let timer: ReturnType<typeof setInterval> | undefined
  const tick = () => {
    const now = Date.now()
    for (const call of calls) call.check(now)
  }
  return {
    watch: (call: Watched) => {
      calls.add(call)
      timer ??= setInterval(tick, WATCHDOG_TICK_MS)
    },
    unwatch: (call: Watched) => {
      if (calls.delete(call) && calls.size === 0) {
        clearInterval(timer)
        timer = undefined
      }
    }
  }
})()

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
          const started = Date.now()
          const headDeadline = timeouts.firstByteMs > 0 ? started + timeouts.firstByteMs : Infinity
          const totalDeadline = timeouts.totalMs > 0 ? started + timeouts.totalMs : Infinity
          const idleMs = timeouts.idleMs > 0 ? timeouts.idleMs : Infinity
          let headArrived = false
          let reading = false
          let lastActivity = started
          let timedOut = false
          let idleExpired = false
          let finished = false
          const abort = () => {
            watchdog.unwatch(call)
            if (!finished) {
              finished = true
              controller.abort()
            }
          }
          const call: Watched = {
            check: (now) => {
              if (!headArrived && now >= headDeadline) timedOut = true
              else if (now >= totalDeadline) timedOut = true
              else if (reading && now - lastActivity >= idleMs) timedOut = idleExpired = true
              if (timedOut) abort()
            }
          }
          watchdog.watch(call)
          fetch(url, { method: "POST", headers, body, signal: controller.signal }).then(
            (response) => {
              headArrived = true
              const failure = (kind: "timeout" | "stream-broken", message: string) =>
                new UpstreamFailed({ kind, status: response.status, message })
              // The body is read through one reader, taken at the first read: touching `response.body` earlier
              // would make the runtime build a web stream that `text()` then has to drain.
              let reader: ReadableStreamDefaultReader<Uint8Array> | undefined
              const readFailure = () =>
                idleExpired
                  ? failure("timeout", "The upstream went idle mid-answer.")
                  : timedOut
                  ? failure("timeout", "The upstream stopped sending in time.")
                  : failure("stream-broken", "The upstream connection broke mid-answer.")
              const onChunk = (result: ReadableStreamReadResult<Uint8Array>): Uint8Array | undefined => {
                lastActivity = Date.now()
                if (!result.done) return result.value
                // Read to the end: nothing to abort (an abort would only build a DOMException and its stack).
                finished = true
                watchdog.unwatch(call)
                return undefined
              }
              const read = Effect.tryPromise({
                try: (): Promise<Uint8Array | undefined> => {
                  if (reader === undefined) {
                    if (response.body === null) return Promise.resolve(onChunk({ done: true, value: undefined }))
                    reader = response.body.getReader()
                    lastActivity = Date.now()
                    reading = true
                  }
                  return reader.read().then(onChunk)
                },
                catch: readFailure
              })
              resume(Effect.succeed({
                status: response.status,
                headers: response.headers,
                read,
                // Read whole, the call is only unwatched; cut short (failed, interrupted), it is aborted.
                text: Effect.tryPromise({
                  try: () =>
                    response.text().then((text) => {
                      finished = true
                      return text
                    }),
                  catch: () =>
                    timedOut
                      ? failure("timeout", "The upstream did not finish its answer in time.")
                      : failure("stream-broken", "The upstream connection broke mid-answer.")
                }).pipe(Effect.ensuring(Effect.sync(abort))),
                abort
              }))
            },
            (error: unknown) => {
              finished = true
              watchdog.unwatch(call)
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
          return Effect.sync(abort)
        })
    })
  )
}
