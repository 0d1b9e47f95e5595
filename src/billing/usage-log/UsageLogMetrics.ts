/**
 * The usage log's gauges, read when metrics are scraped: the rows waiting
 * for the next commit (`sluice_usage_log_queue_rows`) and the seconds since
 * the log last committed (`sluice_usage_log_last_commit_age_seconds`).
 *
 * @since 0.1.0
 */
import { Effect, type Scope } from "effect"
import { CurrentMetrics } from "../../observability/Metrics.ts"
import type { RowQueue } from "./RowQueue.ts"

/**
 * Registers the log's gauges over `queue` with the gateway's metrics
 * (nothing when metrics are off); `commitAgeSeconds` reads the age of the last
 * commit. They are unregistered when the scope closes.
 *
 * @category metrics
 */
export const registerUsageLogMetrics = (
  queue: RowQueue,
  commitAgeSeconds: () => number
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function* () {
    const metrics = yield* CurrentMetrics
    if (metrics === undefined) return
    const unregister = [
      metrics.pull("sluice_usage_log_queue_rows", "Usage rows waiting for the next commit", () => queue.pending.length),
      metrics.pull(
        "sluice_usage_log_last_commit_age_seconds",
        "Seconds since the usage log last committed (or found nothing to commit)",
        commitAgeSeconds
      )
    ]
    yield* Effect.addFinalizer(() => Effect.sync(() => unregister.forEach((remove) => remove())))
  })
