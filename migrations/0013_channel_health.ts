/**
 * Channel health transitions shared by every instance: one row per channel
 * that has ever been marked unhealthy. `unhealthy` is the state the
 * operator's events last announced; `generation` counts the transitions
 * (each `channel.unhealthy` and `channel.recovered` raises it by one), so
 * the outbox's `event_key` (`channel.unhealthy:<channel>:<generation>`) makes
 * one transition one event however many instances see it: an instance raises
 * the event only when its conditional update moved the row. `reason` is the
 * structured failure kind (e.g. `server`, `timeout`), never vendor text.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE channel_health (
      channel_id BIGINT PRIMARY KEY REFERENCES channels (id) ON DELETE CASCADE,
      unhealthy  BOOLEAN NOT NULL,
      generation BIGINT NOT NULL,
      reason     TEXT,
      changed_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )`
})
