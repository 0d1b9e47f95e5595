/**
 * Asynchronous tasks (video generations, async image generations): one row per
 * task with its public id (what the caller polls) and its upstream id (never
 * shown to a caller), the owner (user, token), the channel and key it runs on,
 * the request as given (for remix), the last state read from the upstream,
 * the bill (quota charged at submit, and the one final adjustment: a refund on
 * failure or timeout, or the difference after re-pricing on the actual
 * duration), and the poller's bookkeeping (next poll, attempts, consecutive
 * failures, the claim of the instance polling it). Partial index
 * `tasks_due_idx` serves "due tasks per channel"; the unique public id serves
 * reads by public id. The JSON columns (`request`, `result`, `public_result`,
 * `billing`) are TEXT holding `JSON.stringify` output, which escapes NUL and
 * lone surrogates that JSONB refuses: a caller's prompt may hold both.
 *
 * A task's final adjustment is written to `usage_logs` as the row `attempt =
 * 0` of the submit's request id, its `cost` the signed difference (negative
 * for a refund), so the logged costs still sum to `used_quota`; the cost
 * check is relaxed for those rows only.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE tasks (
      id             BIGINT PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
      public_id      TEXT NOT NULL UNIQUE,
      kind           TEXT NOT NULL CHECK (kind IN ('video', 'image')),
      user_id        BIGINT NOT NULL,
      token_id       BIGINT NOT NULL,
      channel_id     BIGINT NOT NULL,
      key_position   INTEGER NOT NULL,
      upstream_id    TEXT,
      model          TEXT NOT NULL,
      upstream_model TEXT NOT NULL,
      request        TEXT NOT NULL,
      status         TEXT NOT NULL CHECK (status IN ('queued', 'in_progress', 'completed', 'failed')),
      progress       INTEGER NOT NULL DEFAULT 0 CHECK (progress BETWEEN 0 AND 100),
      result         TEXT,
      public_result  TEXT,
      error_code     TEXT,
      error_message  TEXT,
      request_id     TEXT NOT NULL,
      billing        TEXT NOT NULL,
      quota_charged  BIGINT NOT NULL DEFAULT 0 CHECK (quota_charged >= 0),
      settled        BOOLEAN NOT NULL DEFAULT FALSE,
      refunded       BIGINT NOT NULL DEFAULT 0,
      next_poll_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
      polled_at      TIMESTAMPTZ,
      poll_attempts  INTEGER NOT NULL DEFAULT 0,
      poll_failures  INTEGER NOT NULL DEFAULT 0,
      claimed_by     TEXT,
      claimed_until  TIMESTAMPTZ,
      created_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
      completed_at   TIMESTAMPTZ,
      deadline_at    TIMESTAMPTZ NOT NULL
    )`
  yield* sql`
    CREATE INDEX tasks_due_idx ON tasks (channel_id, next_poll_at) WHERE status IN ('queued', 'in_progress')`
  yield* sql`CREATE INDEX tasks_user_idx ON tasks (user_id, created_at)`
  yield* sql`ALTER TABLE usage_logs DROP CONSTRAINT usage_logs_cost_check`
  yield* sql`ALTER TABLE usage_logs ADD CONSTRAINT usage_logs_cost_check CHECK (cost >= 0 OR attempt = 0)`
})
