/**
 * Charges and usage rows exactly once. `usage_logs` gets a unique
 * `(request_id, attempt)`, so a batch written again after a commit whose
 * outcome was unknown adds no second row (`ON CONFLICT DO NOTHING`).
 * `ledger_commits` records the id of every ledger commit in the commit's own
 * transaction, so a retried commit can tell whether its first try went
 * through before it applies its charges again (QuotaLedger); ids older than
 * seven days are pruned.
 *
 * Rows duplicated before this migration (only a retried batch could make
 * them) keep their lowest id; the others are removed so the index can exist.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    DELETE FROM usage_logs newer USING usage_logs older
    WHERE newer.request_id = older.request_id AND newer.attempt = older.attempt AND newer.id > older.id`
  yield* sql`DROP INDEX IF EXISTS usage_logs_request_idx`
  yield* sql`CREATE UNIQUE INDEX usage_logs_request_attempt_key ON usage_logs (request_id, attempt)`
  yield* sql`
    CREATE TABLE ledger_commits (
      id           TEXT PRIMARY KEY,
      committed_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX ledger_commits_committed_at_idx ON ledger_commits (committed_at)`
})
