/**
 * Failover: one attempt per candidate, in the router's order, until one is
 * accepted (docs/OPERATING.md, "Routing, health, timeouts, limits"). Generic over what an
 * attempt is (a JSON answer, a stream's head, a task submit): a retryable
 * failure (connection, timeout, 429, 5xx, unreadable answer, a key refused)
 * moves on, at most `maxAttempts` in all and no new attempt after `deadline`;
 * a request error (`rejected`) goes straight back. Every failed attempt is
 * logged and reported to the health state; the accepted one is reported too.
 *
 * @since 0.1.0
 */
import { Clock, Effect } from "effect"
import { safeVendorText } from "../domain/Redact.ts"
import { UpstreamFailed } from "../errors/GatewayError.ts"
import type { AttemptOutcome, Candidate } from "../services/ChannelRouter.ts"

/**
 * What a failed attempt tells the health state: a refused key (401/403 or the
 * vendor's exhausted-credit signal) disables the key; another retryable
 * failure counts towards the channel's cooldown; a request error (the caller's
 * fault) tells nothing, so it can neither disable a key nor cool a channel.
 *
 * @category failover
 */
export const outcomeOf = (error: UpstreamFailed): AttemptOutcome | undefined =>
  error.kind === "unauthorized" || error.kind === "quota"
    ? { _tag: "KeyRejected", reason: `${error.kind}: ${safeVendorText(error.message, 180)}` }
    : error.retryable
    ? { _tag: "Retryable", reason: error.kind }
    : undefined

/** One accepted attempt. @category models */
export interface Accepted<A> {
  readonly candidate: Candidate
  /** 1-based attempt number (the usage log's `attempt`). */
  readonly attempt: number
  readonly value: A
}

/** How to fail over. @category models */
export interface FailoverOptions<A, E> {
  readonly candidates: ReadonlyArray<Candidate>
  /** Attempts at most (the first and `retry_times` more, never more than the candidates). */
  readonly maxAttempts: number
  /** Epoch milliseconds (of Effect's `Clock`) after which no new attempt starts. */
  readonly deadline: number
  /**
   * One attempt on `candidate`. Failing with `UpstreamFailed` is the
   * upstream's failure (logged, reported, maybe retried); any other error
   * `E` (the caller's, e.g. a media download) ends the loop at once, with no
   * report.
   */
  readonly attempt: (candidate: Candidate, attempt: number) => Effect.Effect<A, UpstreamFailed | E>
  /** Records the health outcome of an attempt. */
  readonly report: (candidate: Candidate, outcome: AttemptOutcome) => Effect.Effect<void>
  /**
   * Logs a failed attempt (the request goes on or ends with its error): an effect the loop runs in the request's
   * fiber, before the attempt's health report, so the log line carries the request's annotations and spans.
   */
  readonly logFailed: (candidate: Candidate, attempt: number, error: UpstreamFailed) => Effect.Effect<void>
}

/**
 * Runs attempts until one is accepted. Fails with the last upstream failure,
 * or a 503 `server` failure when no attempt could be made.
 *
 * @category failover
 */
export const failover = <A, E>(options: FailoverOptions<A, E>): Effect.Effect<Accepted<A>, UpstreamFailed | E> => {
  const success: AttemptOutcome = { _tag: "Success" }
  // A recursion over `matchEffect` rather than a generator: the accepted first attempt (the usual case) costs
  // two effect steps. `failedAt` is the `Clock`'s time when the previous attempt failed (read only then, before
  // its outcome is reported); the first attempt always starts.
  const from = (
    index: number,
    lastError: UpstreamFailed | undefined,
    failedAt: number
  ): Effect.Effect<Accepted<A>, UpstreamFailed | E> => {
    if (index >= options.maxAttempts || (index > 0 && failedAt > options.deadline)) {
      return Effect.fail(lastError ?? new UpstreamFailed({ kind: "server", status: 503, message: "No channel left." }))
    }
    const candidate = options.candidates[index]
    const attempt = index + 1
    return Effect.matchEffect(options.attempt(candidate, attempt), {
      onSuccess: (value) => Effect.as(options.report(candidate, success), { candidate, attempt, value }),
      onFailure: (error) => {
        if (!(error instanceof UpstreamFailed)) return Effect.fail(error)
        const logged = options.logFailed(candidate, attempt, error)
        const outcome = outcomeOf(error)
        const then = (next: Effect.Effect<Accepted<A>, UpstreamFailed | E>) =>
          Effect.andThen(
            logged,
            outcome === undefined ? next : Effect.andThen(options.report(candidate, outcome), next)
          )
        return error.retryable
          ? Effect.flatMap(Clock.currentTimeMillis, (now) => then(from(index + 1, error, now)))
          : then(Effect.fail(error))
      }
    })
  }
  return Effect.suspend(() => from(0, undefined, 0))
}
