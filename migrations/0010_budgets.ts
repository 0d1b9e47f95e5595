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
 * Alerts: `webhook_endpoints` (a user's, or with `operator` an admin's for the
 * operator's events; `secret` is the Standard Webhooks `whsec_` key) and
 * `webhook_outbox`, one row per event and endpoint, written in the
 * transaction of the change that raised the event (a budget threshold: the
 * ledger commit of the spend) and delivered at least once from there;
 * `event_key` makes an event raised twice (a re-run commit, a second
 * instance) one row.
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
  yield* sql`
    CREATE TABLE webhook_endpoints (
      id         BIGINT PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
      user_id    BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      operator   BOOLEAN NOT NULL DEFAULT FALSE,
      url        TEXT NOT NULL,
      events     TEXT[] NOT NULL,
      thresholds NUMERIC[] NOT NULL DEFAULT '{0.5,0.8,1}',
      balance_below BIGINT CHECK (balance_below >= 0),
      secret     TEXT NOT NULL,
      created_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX webhook_endpoints_user_idx ON webhook_endpoints (user_id)`
  yield* sql`
    CREATE TABLE webhook_outbox (
      id              TEXT PRIMARY KEY,
      endpoint_id     BIGINT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
      event_key       TEXT NOT NULL,
      event_type      TEXT NOT NULL,
      payload         TEXT NOT NULL,
      created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
      next_attempt_at TIMESTAMPTZ NOT NULL DEFAULT now(),
      attempts        INTEGER NOT NULL DEFAULT 0,
      status          TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
      last_status     INTEGER,
      last_error      TEXT,
      delivered_at    TIMESTAMPTZ,
      UNIQUE (endpoint_id, event_key)
    )`
  yield* sql`CREATE INDEX webhook_outbox_due_idx ON webhook_outbox (next_attempt_at) WHERE status = 'pending'`
})
