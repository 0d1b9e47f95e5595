/**
 * Batches run by the gateway (src/batches/, docs/ROUTES.md "Batches"): `batches`, one row per batch of either vendor's
 * API (`api` `anthropic` or `openai`), with the caller's token by id and by stored key digest (its lines are
 * authenticated by digest, as the key would be), the inner route every line is sent to, its status and times;
 * `batch_lines`, one row per line in input order (`line_index` from 0): the line as JSON text (`custom_id` and
 * the body), its state (`pending`, `running`, `succeeded`, `errored`, `canceled`, `expired`), the claim of the
 * instance running it (`claimed_by`, `claimed_until`, `attempts`), and its result as JSON text. JSON is kept as
 * TEXT: a caller's NUL or lone surrogate, escaped by `JSON.stringify`, round-trips where JSONB would refuse it.
 *
 * @since 0.4.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE batches (
      id                  BIGINT PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
      public_id           TEXT NOT NULL UNIQUE,
      api                 TEXT NOT NULL CHECK (api IN ('anthropic', 'openai')),
      user_id             BIGINT NOT NULL,
      token_id            BIGINT NOT NULL,
      key_hash            TEXT NOT NULL,
      client_address      TEXT,
      endpoint            TEXT NOT NULL,
      status              TEXT NOT NULL,
      line_count          INTEGER NOT NULL DEFAULT 0,
      input_file_id       TEXT,
      output_file_id      TEXT,
      error_file_id       TEXT,
      metadata            TEXT,
      errors              TEXT,
      created_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
      in_progress_at      TIMESTAMPTZ,
      expires_at          TIMESTAMPTZ NOT NULL,
      cancel_initiated_at TIMESTAMPTZ,
      finalizing_at       TIMESTAMPTZ,
      ended_at            TIMESTAMPTZ,
      archived_at         TIMESTAMPTZ
    )`
  yield* sql`CREATE INDEX batches_user_idx ON batches (user_id, api, id)`
  yield* sql`CREATE INDEX batches_active_idx ON batches (id) WHERE ended_at IS NULL`
  yield* sql`
    CREATE TABLE batch_lines (
      batch_id      BIGINT NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
      line_index    INTEGER NOT NULL,
      line          TEXT NOT NULL,
      state         TEXT NOT NULL DEFAULT 'pending',
      claimed_by    TEXT,
      claimed_until TIMESTAMPTZ,
      attempts      INTEGER NOT NULL DEFAULT 0,
      status_code   INTEGER,
      result        TEXT,
      finished_at   TIMESTAMPTZ,
      PRIMARY KEY (batch_id, line_index)
    )`
  yield* sql`CREATE INDEX batch_lines_open_idx ON batch_lines (batch_id, line_index) WHERE state IN ('pending', 'running')`
})
