/**
 * Turns a route's typed failures (and defects) into a response in the route's
 * own error shape, with the status of the one error table and `Retry-After`
 * on rate limits. No stack, cause or upstream key ever reaches the body.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { internalProblem, toProblem } from "../errors/Envelope.ts"
import type { GatewayError } from "../errors/GatewayError.ts"
import type { Problem } from "../domain/Problem.ts"

/**
 * Recovers every failure of `effect` as an error response rendered by
 * `render`; defects become a 500 that says nothing of their cause (and are
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
      const headers: Record<string, string> = error._tag === "RateLimited"
        ? { "retry-after": String(Math.max(1, Math.ceil(error.retryAfterSeconds))) }
        : {}
      return Effect.succeed(HttpServerResponse.jsonUnsafe(render(problem), { status: problem.status, headers }))
    }),
    Effect.catchDefect((defect) =>
      Effect.logError("Request failed with a defect", defect).pipe(
        Effect.as(HttpServerResponse.jsonUnsafe(render(internalProblem), { status: 500 }))
      )
    )
  )
