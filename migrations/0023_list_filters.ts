/**
 * The lists at scale of keys, tasks and webhooks (`GET /api/token/`, `GET /api/task/self`, `GET /api/webhook/`):
 * `webhook_endpoints.enabled` (a disabled endpoint is sent no new event; `POST /api/webhook/bulk` sets it), and the
 * index a user's task list filtered by status reads newest first (`tasks (user_id, status, created_at)`; the
 * unfiltered list reads `tasks_user_idx`). A user's keys are read through `UNIQUE (user_id, name)`.
 *
 * @since 0.4.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE webhook_endpoints ADD COLUMN enabled BOOLEAN NOT NULL DEFAULT TRUE`
  yield* sql`CREATE INDEX tasks_user_status_idx ON tasks (user_id, status, created_at)`
})
