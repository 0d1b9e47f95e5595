/**
 * The health rollup's coarse tier (`src/accounts/HealthRollup.ts`): `health_rollup_coarse`, the same columns as
 * `health_rollup` (migrations `0024`, `0026`) per 2-hour bucket (`bucket_start`, a multiple of 7,200 s since the
 * epoch), summed from the 15-minute rows; the week view reads it for its closed 2-hour buckets, so a week of a busy
 * gateway is an eighth of the rows. A bucket is in the tier once all of its eight 15-minute buckets are folded.
 *
 * The tier starts empty, so the rollup's state is reset (`folded_until = NULL`): the next pass folds the retained
 * usage rows again, both tiers, as after a restore; until it caught up (a few passes) the views read the usage rows
 * not yet folded.
 *
 * @since 0.5.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE health_rollup_coarse (LIKE health_rollup INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`
  yield* sql`CREATE UNIQUE INDEX health_rollup_coarse_key ON health_rollup_coarse (bucket_start, channel_id, model,
    kind) NULLS NOT DISTINCT`
  yield* sql`CREATE INDEX health_rollup_coarse_channel_idx ON health_rollup_coarse (channel_id, bucket_start)`
  yield* sql`CREATE INDEX health_rollup_coarse_model_idx ON health_rollup_coarse (model, bucket_start)`
  yield* sql`UPDATE health_rollup_state SET folded_until = NULL`
})
