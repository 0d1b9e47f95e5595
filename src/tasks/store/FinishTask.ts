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
import type { Ledger } from "../../billing/Ledger.ts"
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
 * `TaskStore.finish` on `sql`, billing through `ledger` (`Ledger.adjust`, on
 * the same `SqlClient`, so the task row and the bill write in one transaction). Fails with
 * `TaskChargePending` while the submit's charge is not committed, or the
 * `SqlError` of a transaction that did not commit; nothing is written then.
 *
 * @category final bill
 */
export const finishTask = (
  sql: SqlClient.SqlClient,
  ledger: Pick<typeof Ledger.Service, "adjust" | "committedCharge">
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
      const charged = committedCharge(BigInt(row.charged), yield* ledger.committedCharge(task.requestId), row.old)
      if (charged === undefined) return yield* new TaskChargePending({ task: task.publicId })
      // The balance change, the budget spend a refund hands back and the adjustment row, in this transaction with
      // the flip above: all or nothing.
      const refunded = yield* ledger.adjust(
        task,
        adjustmentOf(charged, end.cost),
        new Date(task.createdAt),
        (applied) => adjustmentRow(task, end.status, errorCode, applied)
      )
      if (refunded !== 0n) {
        yield* sql`UPDATE tasks SET refunded = ${refunded}, quota_charged = quota_charged - ${refunded}
          WHERE id = ${task.id}`
      }
      return { ended: true, refunded }
    }))
  })
