/**
 * What the operator's health view reads (`src/accounts/HealthQueries.ts`, `GET /api/health/*`):
 *
 * - `channel_events`: every health transition of a channel on one time axis, one row each, written in the
 *   transaction of the change (`src/services/routing/HealthStore.ts`) whether or not a webhook endpoint listens:
 *   `channel.unhealthy`, `channel.recovered` and `channel.key_disabled`, with the structured reason (a failure
 *   kind, `request`/`probe`, or the refusal that disabled the key: never an upstream key) and the key's position.
 * - The last probe of each channel (`src/services/HealthProber.ts`: a cooling channel's or a disabled key's test
 *   request) on its `channel_health` row: when, which key, whether it passed, the upstream's status (0 when none).
 *   A channel probed before it was ever marked unhealthy gets a row with `unhealthy` false and `generation` 0.
 * - Indexes on `usage_logs` by channel and by model, then time, so one channel's or one model's window is an
 *   index range scan; the whole window's aggregate uses the time index of `0005_accounts`.
 *
 * @since 0.4.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE channel_events (
      id           BIGINT PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
      channel_id   BIGINT NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
      event_type   TEXT NOT NULL,
      key_position INTEGER,
      reason       TEXT,
      created_at   TIMESTAMPTZ NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX channel_events_channel_created_idx ON channel_events (channel_id, created_at)`
  yield* sql`CREATE INDEX channel_events_created_idx ON channel_events (created_at)`
  yield* sql`ALTER TABLE channel_health
    ADD COLUMN probed_at TIMESTAMPTZ,
    ADD COLUMN probe_key INTEGER,
    ADD COLUMN probe_ok BOOLEAN,
    ADD COLUMN probe_status INTEGER`
  yield* sql`CREATE INDEX usage_logs_channel_created_idx ON usage_logs (channel_id, created_at)`
  yield* sql`CREATE INDEX usage_logs_model_created_idx ON usage_logs (model, created_at)`
})
