/**
 * The health rollup (`src/accounts/HealthRollup.ts`): what the day and week views of `GET /api/health/*` read
 * instead of every usage row.
 *
 * - `health_rollup`: one row per 15-minute bucket (`bucket_start`, a multiple of 900 s since the epoch), channel
 *   (`NULL` for a row that reached none), model and failure kind (`kind`: `''` for an attempt that did not fail, and
 *   for the `attempt = 0` adjustment rows; else the kind the health view counts), holding the bucket's attempts
 *   (`requests`: usage rows with `attempt >= 1`), the tokens by kind, the cost (quota units; adjustments included),
 *   and the latency of the successful attempts (`successes`: status below 400) as its minimum, maximum and a fixed
 *   histogram (`latency_counts`: 61 counts, bucket `i` the latencies in `[LATENCY_BOUNDS_MS[i - 1],
 *   LATENCY_BOUNDS_MS[i])` of `src/domain/LatencyHistogram.ts`; those bounds are fixed with this table).
 * - `health_rollup_state`: its one row, `folded_until` (every bucket before it is in the rollup; `NULL` before the
 *   first pass) and when the last pass ran. A pass locks the row, so two instances never fold at once.
 *
 * @since 0.5.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE health_rollup (
      bucket_start        TIMESTAMPTZ NOT NULL,
      channel_id          BIGINT,
      model               TEXT NOT NULL,
      kind                TEXT NOT NULL,
      requests            INTEGER NOT NULL,
      successes           INTEGER NOT NULL,
      prompt_tokens       BIGINT NOT NULL,
      completion_tokens   BIGINT NOT NULL,
      cached_tokens       BIGINT NOT NULL,
      reasoning_tokens    BIGINT NOT NULL,
      audio_input_tokens  BIGINT NOT NULL,
      audio_output_tokens BIGINT NOT NULL,
      cost                BIGINT NOT NULL,
      latency_min         INTEGER,
      latency_max         INTEGER,
      latency_counts      INTEGER[] NOT NULL CHECK (cardinality(latency_counts) = 61)
    )`
  yield* sql`CREATE UNIQUE INDEX health_rollup_key ON health_rollup (bucket_start, channel_id, model, kind)
    NULLS NOT DISTINCT`
  yield* sql`CREATE INDEX health_rollup_channel_idx ON health_rollup (channel_id, bucket_start)`
  yield* sql`CREATE INDEX health_rollup_model_idx ON health_rollup (model, bucket_start)`
  yield* sql`
    CREATE TABLE health_rollup_state (
      id           INTEGER PRIMARY KEY CHECK (id = 1),
      folded_until TIMESTAMPTZ,
      folded_at    TIMESTAMPTZ
    )`
  yield* sql`INSERT INTO health_rollup_state (id) VALUES (1)`
})
