/**
 * Time to first token: each streamed usage row's `first_token_ms` (milliseconds from the request's start to the
 * first answer content the gateway metered from the upstream; `NULL` for an answer that was not streamed or that
 * ended before any content), and the health rollup's histogram of it (`first_token_min`, `first_token_max`,
 * `first_token_counts`: the successful streamed attempts of the bucket, over the same 61 bounds as
 * `latency_counts`, `src/domain/LatencyHistogram.ts`). Rows folded before this migration have no histogram
 * (`NULL`): they count as no samples.
 *
 * @since 0.5.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE usage_logs ADD COLUMN first_token_ms INTEGER`
  yield* sql`ALTER TABLE health_rollup
    ADD COLUMN first_token_min INTEGER,
    ADD COLUMN first_token_max INTEGER,
    ADD COLUMN first_token_counts INTEGER[] CHECK (first_token_counts IS NULL OR cardinality(first_token_counts) = 61)`
})
