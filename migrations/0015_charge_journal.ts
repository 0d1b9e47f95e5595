/**
 * The charge journal on PostgreSQL (billing/journal/ChargeJournal.ts): one
 * row per batch of settled charges, written before the answers it bills end
 * and deleted in the transaction that folds it into the balances and the
 * usage log. Narrow on purpose: its primary key and no other index, and it
 * only ever holds the unfolded tail (a few hundred milliseconds of charges,
 * or a dead instance's until a live one folds them).
 *
 * @since 0.2.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE charge_journal (
      id          TEXT PRIMARY KEY,
      instance_id TEXT NOT NULL,
      written_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
      record      TEXT NOT NULL
    )`
})
