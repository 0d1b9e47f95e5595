/**
 * Two more tables the rollup pass keeps (`src/accounts/HealthRollup.ts`), so no console view adds up every usage row:
 *
 * - `health_rollup_coarse`: the health rollup's coarse tier, the same columns as `health_rollup` (migrations `0024`,
 *   `0026`) per 2-hour bucket (`bucket_start`, a multiple of 7,200 s since the epoch), summed from the 15-minute rows;
 *   the week view reads it for its closed 2-hour buckets, so a week of a busy gateway is an eighth of the rows. A
 *   bucket is in the tier once all of its eight 15-minute buckets are folded.
 * - `usage_rollup`: per 15-minute bucket, user, key (`token_id`) and model, the usage rows (`requests`, every row as
 *   the daily usage counts them), their prompt and completion tokens and cost (quota units): what a user's daily
 *   usage (`GET /api/user/self/usage`, the dashboard) reads before `folded_until`.
 *
 * Both start empty, so the rollup's state is reset (`folded_until = NULL`): the next pass folds the retained usage
 * rows again, every table, as after a restore; until it caught up (a few passes) the views read the usage rows not yet
 * folded.
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
  yield* sql`
    CREATE TABLE usage_rollup (
      bucket_start      TIMESTAMPTZ NOT NULL,
      user_id           BIGINT NOT NULL,
      token_id          BIGINT NOT NULL,
      model             TEXT NOT NULL,
      requests          INTEGER NOT NULL,
      prompt_tokens     BIGINT NOT NULL,
      completion_tokens BIGINT NOT NULL,
      cost              BIGINT NOT NULL,
      PRIMARY KEY (user_id, bucket_start, token_id, model)
    )`
  yield* sql`CREATE INDEX usage_rollup_bucket_idx ON usage_rollup (bucket_start)`
  yield* sql`UPDATE health_rollup_state SET folded_until = NULL`
})
