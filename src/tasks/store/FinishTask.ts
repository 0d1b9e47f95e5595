/**
 * A task's end and its final bill in one transaction (`TaskStore.finish`;
 * the module doc of `TaskStore.ts` says why): the flip of `settled` that lets
 * only the first caller go on, the adjustment through the ledger, the budget
 * spend handed back, the task row's `refunded`, and the usage-log row. The
 * decisions are `FinalBill.ts`'s; this module runs them in order.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { SqlClient, SqlError } from "effect/sql"
import { refundBudgetSpendWithin } from "../../billing/BudgetRefund.ts"
import type { QuotaLedger } from "../../billing/QuotaLedger.ts"
import type { UsageLog } from "../../billing/UsageLog.ts"
import {
  adjustmentOf,
  adjustmentRow,
  CHARGE_WAIT_MILLIS,
  committedCharge,
  endColumns,
  TaskChargePending
} from "./FinalBill.ts"
import type { Finished, Task, TaskEnd } from "./Task.ts"

/**
 * `TaskStore.finish` on `sql`, billing through `ledger` and `usageLog` (both
 * on the same `SqlClient`, so the three write in one transaction). Fails with
 * `TaskChargePending` while the submit's charge is not committed, or the
 * `SqlError` of a transaction that did not commit; nothing is written then.
 *
 * @category final bill
 */
export const finishTask = (
  sql: SqlClient.SqlClient,
  ledger: Pick<typeof QuotaLedger.Service, "adjustWithin">,
  usageLog: Pick<typeof UsageLog.Service, "committedCharge" | "writeWithin">
): (task: Task, end: TaskEnd) => Effect.Effect<Finished, SqlError.SqlError | TaskChargePending> =>
  Effect.fn("TaskStore.finish")(function* (task: Task, end: TaskEnd) {
    const { errorCode, errorMessage, result, publicResult } = endColumns(end)
    return yield* sql.withTransaction(Effect.gen(function* () {
      // The guard: only the first transaction to flip `settled` goes on; a concurrent one waits on the row
      // lock, then finds it flipped and ends here.
      const [row] = yield* sql<{ readonly charged: bigint; readonly old: boolean }>`
        UPDATE tasks SET status = ${end.status}, progress = 100, result = ${result},
          public_result = ${publicResult}, error_code = ${errorCode}, error_message = ${errorMessage},
          completed_at = now(), settled = TRUE, claimed_until = NULL
        WHERE id = ${task.id} AND NOT settled
        RETURNING quota_charged AS charged,
          created_at < now() - ${CHARGE_WAIT_MILLIS} * interval '1 millisecond' AS old`
      if (row === undefined) return { ended: false, refunded: 0n }
      // What the submit was charged, as committed: its settled usage rows (written with the charge in one
      // ledger commit; a failed attempt's row carries its error). None yet: the commit is pending (this or
      // another instance), so wait.
      const charged = committedCharge(BigInt(row.charged), yield* usageLog.committedCharge(task.requestId), row.old)
      if (charged === undefined) return yield* new TaskChargePending({ task: task.publicId })
      // The balance change and its usage row in this transaction, with the flip above: all or nothing.
      const refunded = yield* ledger.adjustWithin(task, adjustmentOf(charged, end.cost))
      // A refund hands back the budget spend the submit took too, in its windows (this transaction as well).
      yield* refundBudgetSpendWithin(sql, task, refunded, new Date(task.createdAt))
      if (refunded !== 0n) {
        yield* sql`UPDATE tasks SET refunded = ${refunded}, quota_charged = quota_charged - ${refunded}
          WHERE id = ${task.id}`
        yield* usageLog.writeWithin(adjustmentRow(task, end.status, errorCode, refunded))
      }
      return { ended: true, refunded }
    }))
  })
