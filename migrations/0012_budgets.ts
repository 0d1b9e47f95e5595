/**
 * Budgets: spend caps that reset by period on keys and users. `budgets` on
 * `tokens` and `users` is a JSON list of `{amount, period, timezone}`
 * (`amount` in quota units as a decimal string, at most one budget per
 * period). `budget_periods` has one row per budget and window: what was
 * charged in it (`spent`, quota units), written by the quota ledger's commits
 * with the usage rows of the same charges. The ledger leases a period's room
 * (`amount − spent`) like a balance: `quota_leases` rows with subject
 * `budget` and the period row's id (QuotaLedger).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE tokens ADD COLUMN budgets JSONB`
  yield* sql`ALTER TABLE users ADD COLUMN budgets JSONB`
  yield* sql`
    CREATE TABLE budget_periods (
      id           BIGINT PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
      subject      TEXT NOT NULL CHECK (subject IN ('user', 'token')),
      subject_id   BIGINT NOT NULL,
      period       TEXT NOT NULL CHECK (period IN ('day', 'week', 'month', 'total')),
      period_start TIMESTAMPTZ NOT NULL,
      period_end   TIMESTAMPTZ,
      spent        BIGINT NOT NULL DEFAULT 0 CHECK (spent >= 0),
      UNIQUE (subject, subject_id, period, period_start)
    )`
  yield* sql`ALTER TABLE quota_leases DROP CONSTRAINT quota_leases_subject_check`
  yield* sql`ALTER TABLE quota_leases ADD CONSTRAINT quota_leases_subject_check
    CHECK (subject IN ('user', 'token', 'budget'))`
})
