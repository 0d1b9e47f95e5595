/**
 * An upstream attempt as a span of its own (`upstream.attempt`), a child of
 * the request's span, used only while traces are exported (see
 * `observability/Tracing.ts`). Attributes: `sluice.channel` (the channel's
 * configured name), `sluice.upstream_model`, `sluice.attempt` (1-based),
 * `http.response.status_code`, and on failure `sluice.failover_reason` (the
 * failure's kind). Never a key, a prompt or an answer.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { GatewayError } from "../../errors/GatewayError.ts"
import type { Candidate } from "../../services/ChannelRouter.ts"

/**
 * `attempt`, each call wrapped in its span.
 *
 * @category tracing
 */
export const traced = <A>(attempt: (candidate: Candidate) => Effect.Effect<A, GatewayError>) =>
(
  candidate: Candidate,
  number: number
): Effect.Effect<A, GatewayError> =>
  attempt(candidate).pipe(
    Effect.tap(() => Effect.annotateCurrentSpan("http.response.status_code", 200)),
    Effect.tapError((error) =>
      error._tag === "UpstreamFailed"
        ? Effect.annotateCurrentSpan({
          "http.response.status_code": error.status,
          "sluice.failover_reason": error.kind,
          "sluice.retryable": error.retryable
        })
        : Effect.annotateCurrentSpan("sluice.failover_reason", error._tag)
    ),
    Effect.withSpan("upstream.attempt", {
      attributes: {
        "sluice.channel": candidate.channel.name,
        "sluice.upstream_model": candidate.upstreamModel,
        "sluice.attempt": number
      }
    })
  )
