/**
 * Budget spend handed back with a refund: when a task (a video or image job)
 * fails or settles lower than its pre-charge, `QuotaLedger.adjustWithin`
 * credits the balances and this takes the same amount off the `spent` of
 * every budget window that charge went to — the key's and its user's, the
 * window of each period that holds the time the task was submitted
 * (budgets charge "the period in which the request started", issue 30) —
 * so a failed task costs no budget, and each window's `spent` keeps equal to
 * the usage-log costs of its requests. Kept beside the ledger rather than in
 * it: a credit only adds room, which every instance's budget lease top-up
 * reads from the window row (QuotaLedger's `budgetBalance`), so no
 * in-memory state changes.
 *
 * A debit (a task re-priced higher) moves no budget spend: a debit is capped
 * at the balance no lease holds, and the budget windows would need the same
 * cap; it is logged and charged to the balances only.
 *
 * Amounts are quota units (micro-USD).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { SqlClient, SqlError } from "effect/sql"
import type { BalanceOwner } from "./QuotaLedger.ts"

/**
 * Takes `amount` (a refund, > 0; anything else is a no-op) off the `spent` of
 * the budget windows of `owner`'s key and user that hold `chargedAt` (the
 * submit's time), each never below 0, inside the caller's open transaction
 * (the one that writes the balance credit and its usage row), so all commit
 * or none. Returns the windows moved (ids). Called with no transaction open
 * it dies; a statement's failure is its `SqlError` (the caller's transaction
 * rolls back).
 *
 * @category budgets
 */
export const refundBudgetSpendWithin = (
  sql: SqlClient.SqlClient,
  owner: BalanceOwner,
  amount: bigint,
  chargedAt: Date
): Effect.Effect<ReadonlyArray<bigint>, SqlError.SqlError> =>
  Effect.gen(function* () {
    const open = yield* Effect.serviceOption(sql.transactionService)
    if (open._tag === "None") {
      return yield* Effect.die(new Error("refundBudgetSpendWithin runs inside the caller's transaction"))
    }
    if (amount <= 0n) return []
    // Per budget (owner and period), the latest window that started by the charge: the one its hold took.
    const rows = yield* sql<{ readonly id: bigint }>`
      UPDATE budget_periods p SET spent = GREATEST(p.spent - ${amount}, 0)
      FROM (
        SELECT DISTINCT ON (subject, period) id FROM budget_periods
        WHERE ((subject = 'token' AND subject_id = ${owner.tokenId}) OR (subject = 'user' AND subject_id = ${owner.userId}))
          AND period_start <= ${chargedAt} AND (period_end IS NULL OR period_end > ${chargedAt})
        ORDER BY subject, period, period_start DESC
      ) w
      WHERE p.id = w.id AND p.spent > 0
      RETURNING p.id`
    return rows.map((row) => BigInt(row.id))
  })
