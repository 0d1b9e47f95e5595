/**
 * Quota leases: the part of a user's or token's balance one gateway instance
 * has taken into memory to serve holds without a database write per request
 * (QuotaLedger). `users.quota` and `tokens.remain_quota` only fall by settled
 * charges; what an instance may still hold is `amount`. A lease whose
 * instance stopped renewing it (a crash) is dead after two minutes and no
 * longer counts, so a crash never locks a balance away for good.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE quota_leases (
      instance_id TEXT NOT NULL,
      subject     TEXT NOT NULL CHECK (subject IN ('user', 'token')),
      subject_id  BIGINT NOT NULL,
      amount      BIGINT NOT NULL CHECK (amount >= 0),
      renewed_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
      PRIMARY KEY (subject, subject_id, instance_id)
    )`
})
