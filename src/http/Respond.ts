/**
 * Turns a route's typed failures (and defects) into a response in the route's
 * own error shape, with the status of the one error table, `Retry-After` on
 * rate limits, and `x-should-retry: false` on failures a retry cannot fix. No
 * stack, cause or upstream key ever reaches the body.
 *
 * @since 0.1.0
 */
import { Effect, Match } from "effect"
import { HttpServerResponse } from "effect/http"
import { internalProblem, toProblem } from "../errors/Envelope.ts"
import type { GatewayError } from "../errors/GatewayError.ts"
import type { Problem } from "../domain/Problem.ts"

/**
 * Whether the same request, sent again unchanged, can succeed: `false` for a
 * failure only the caller can fix (unknown model, missing price, quota
 * exhausted, malformed or oversized body, unknown route or object, bad key,
 * an upstream that refused the request itself) and for an upstream failure that
 * another attempt must not repeat (an accepted answer that broke off while it was
 * copied: the vendor may hold what it made), `true` otherwise (rate
 * limits, upstream outages and timeouts, a body that came too slowly, the
 * gateway's database out of reach). Decided from the error's tag and kind,
 * never from its message; for `UpstreamFailed` the one rule is the error's own
 * `retryable`, the one failover follows (`relay/Failover.ts`).
 *
 * @category http
 */
export const isRetryable = (error: GatewayError): boolean =>
  Match.valueTags(error, {
    InvalidRequest: () => false,
    InvalidApiKey: () => false,
    InsufficientQuota: () => false,
    BudgetExceeded: () => false,
    ModelNotFound: () => false,
    ModelNotPriced: () => false,
    RateLimited: () => true,
    PayloadTooLarge: () => false,
    RequestTimeout: () => true,
    RouteNotFound: () => false,
    NotFound: () => false,
    UpstreamFailed: (e) => e.retryable,
    LedgerUnavailable: () => true,
    Unauthenticated: () => false,
    Forbidden: () => false
  })

/**
 * The headers an error answer carries besides its body: `retry-after`
 * (whole seconds, at least 1) on `RateLimited` and on a `BudgetExceeded` that resets, and `x-should-retry: false`
 * when `isRetryable` says a retry cannot help. The official `openai` and
 * `@anthropic-ai/sdk` clients obey `x-should-retry` before their status rules
 * (`shouldRetry` in their `client.ts`), so a caller's default retries are not
 * spent on, say, a wrong model name (503 `model_not_found`, spec "Errors").
 *
 * @category http
 */
export const errorHeaders = (error: GatewayError): Record<string, string> => {
  const headers: Record<string, string> = {}
  if (error._tag === "RateLimited") {
    headers["retry-after"] = String(Math.max(1, Math.ceil(error.retryAfterSeconds)))
  }
  if (error._tag === "BudgetExceeded" && error.retryAfterSeconds !== undefined) {
    headers["retry-after"] = String(Math.max(1, Math.ceil(error.retryAfterSeconds)))
  }
  if (!isRetryable(error)) headers["x-should-retry"] = "false"
  return headers
}

/**
 * Recovers every failure of `effect` as an error response rendered by
 * `render`, with `errorHeaders`; defects become a 500 that says nothing of their cause (and are
 * logged).
 *
 * @category http
 */
export const respondWith = (render: (problem: Problem) => unknown) =>
<R>(
  effect: Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R> =>
  effect.pipe(
    Effect.catch((error: GatewayError) => {
      const problem = toProblem(error)
      return Effect.succeed(
        HttpServerResponse.jsonUnsafe(render(problem), { status: problem.status, headers: errorHeaders(error) })
      )
    }),
    Effect.catchDefect((defect) =>
      Effect.logError("Request failed with a defect", defect).pipe(
        Effect.as(HttpServerResponse.jsonUnsafe(render(internalProblem), { status: 500 }))
      )
    )
  )
