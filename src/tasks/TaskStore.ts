/**
 * The task store: asynchronous tasks (video generations, async image
 * generations, Midjourney tasks) in the `tasks` table (migrations/0006_tasks.ts). A task is
 * read by its public id for its owner only (anyone else: `NotFound`, the same
 * answer as for an id that does not exist, so ids cannot be probed). Pollers
 * claim due tasks with `FOR UPDATE SKIP LOCKED` and a lease (`claimed_by`,
 * `claimed_until`), so gateway instances sharing one PostgreSQL never poll the
 * same task at once, and a crashed instance's claims lapse with their lease.
 * A claim is released by clearing `claimed_until`; `claimed_by` keeps the
 * name of the instance that claimed the task last.
 *
 * A task ends once (`finish`): its final state and its final bill — a refund
 * on failure or timeout, or the difference after re-pricing on the actual
 * duration — are written in one transaction that starts by flipping
 * `settled` on the task row (`WHERE NOT settled`), so a second instance, a
 * retried poll or a read racing the poller finds nothing to do: the bill is
 * adjusted exactly once. The bill goes through the ledger in that same
 * transaction: `QuotaLedger.adjustWithin` credits (or debits) the user's
 * `quota` and the token's `remain_quota` (unless unlimited) and their
 * `used_quota` — a debit capped at what no instance's quota lease holds —, a
 * credit also returns the budget spend the submit took to the windows it was
 * charged in (`refundBudgetSpendWithin`), and
 * `UsageLog.writeWithin` writes the usage-log row `attempt = 0` of the
 * submit's request id with the signed difference as its cost, so the logged
 * costs keep summing to `used_quota` (QuotaLedger's invariant) at every
 * committed point. A transaction that does not commit writes none of it, and
 * the next `finish` starts over. The store writes no SQL of its own on
 * `users`, `tokens` or `usage_logs`.
 *
 * This module is the service and a thin layer over `store/`: `Task.ts` (the
 * models, re-exported here), `TaskRow.ts` (row to task, pure), `TaskSql.ts`
 * (the statements of inserts, reads, claims and poll records),
 * `FinalBill.ts` (the final bill's decisions, pure) and `FinishTask.ts` (its
 * transaction).
 *
 * Amounts are quota units (micro-USD) as bigints; times epoch milliseconds
 * unless named seconds.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import type { PageRequest } from "../domain/Page.ts"
import type { NotFound, StorageUnavailable } from "../errors/GatewayError.ts"
import { Ledger } from "../billing/Ledger.ts"
import type { TaskChargePending } from "./store/FinalBill.ts"
import { finishTask } from "./store/FinishTask.ts"
import type { TaskQuery } from "./store/TaskListing.ts"
import type { Advance, Finished, NewTask, Task, TaskEnd } from "./store/Task.ts"
import {
  claimDueTasks,
  claimExpiredTasks,
  claimTask,
  insertTask,
  recordAdvance,
  recordAdvances,
  recordBackoff,
  selectOwnPage,
  selectTask
} from "./store/TaskSql.ts"

// The store's models and its final bill's constant and error, where routes, relays and the poller import them.
export { CHARGE_WAIT_MILLIS, TaskChargePending } from "./store/FinalBill.ts"
export {
  type Advance,
  type Finished,
  insertedTask,
  type NewTask,
  type Task,
  type TaskBilling,
  type TaskEnd,
  type TaskKind,
  type TaskResult
} from "./store/Task.ts"
export { TASK_KINDS, TASK_SORTS, TASK_STATUSES, type TaskQuery, type TaskSort } from "./store/TaskListing.ts"

/** @category services */
export class TaskStore extends Context.Service<TaskStore, {
  /** This instance's claim name. */
  readonly instance: string
  /** Inserts a new task; its row id. Storage failures are defects (see `insertTask`). */
  readonly insert: (task: NewTask) => Effect.Effect<bigint>
  /**
   * The task `publicId` of user `userId`; `NotFound` (task) for any other user's or an unknown id,
   * `StorageUnavailable` when it cannot be read.
   */
  readonly find: (publicId: string, userId: bigint) => Effect.Effect<Task, NotFound | StorageUnavailable>
  /**
   * The task `publicId`, whoever owns it: only for what a signed URL opens
   * without a key (a Midjourney task's image, `routes/MidjourneyRoutes.ts`).
   * `NotFound` (task) for an unknown id, `StorageUnavailable` as `find`.
   */
  readonly findAnyOwner: (publicId: string) => Effect.Effect<Task, NotFound | StorageUnavailable>
  /**
   * One page of user `userId`'s own tasks matching `query` (searched,
   * filtered and sorted as `store/TaskListing.ts` says; `{}`: newest first),
   * and how many match in all; `StorageUnavailable` when they cannot be read.
   */
  readonly listOwn: (
    userId: bigint,
    page: PageRequest,
    query: TaskQuery
  ) => Effect.Effect<{ readonly tasks: ReadonlyArray<Task>; readonly total: number }, StorageUnavailable>
  /**
   * Claims up to `limit` due tasks of channel `channelId` (not final, next
   * poll due, not claimed by a live lease) for `leaseMillis`, skipping rows
   * another transaction holds. Counts the poll attempt.
   */
  readonly claimDue: (channelId: number, limit: number, leaseMillis: number) => Effect.Effect<ReadonlyArray<Task>>
  /** Claims up to `limit` unfinished tasks past their deadline, whatever their channel. */
  readonly claimExpired: (limit: number, leaseMillis: number) => Effect.Effect<ReadonlyArray<Task>>
  /**
   * Claims the one task `taskId` when it is unclaimed and its poll is due, or
   * (no failed poll pending a backoff) it was last polled, or submitted, at
   * least `minAgeMillis` ago: a read of a stale task polls it on demand.
   */
  readonly claimOne: (taskId: bigint, leaseMillis: number, minAgeMillis: number) => Effect.Effect<Task | undefined>
  /**
   * Records a poll that found the task still running: status, progress, and
   * the next poll in `nextPollMillis`; releases this instance's claim. A task
   * already final is left alone.
   */
  readonly advance: (task: Task, state: Advance, nextPollMillis: number) => Effect.Effect<void>
  /**
   * `advance` for many tasks in one statement (a poll cycle's batch): each
   * task's status and progress, all next polled in `nextPollMillis`; their
   * claims released. Tasks already final are left alone. Nothing to do for an
   * empty batch.
   */
  readonly advanceMany: (
    batch: ReadonlyArray<{ readonly task: Task; readonly state: Advance }>,
    nextPollMillis: number
  ) => Effect.Effect<void>
  /** Records a failed poll: counts it and puts the next poll `delayMillis` away; releases the claim. */
  readonly backoff: (task: Task, delayMillis: number) => Effect.Effect<void>
  /**
   * Ends the task and makes its final bill, once (see the module doc). The
   * amount adjusted is what the submit's committed usage row says it was
   * charged (at most `quota_charged`): a submit abandoned before its charge
   * (the caller gone after the task row was written) is refunded nothing.
   * Fails with `TaskChargePending` while that row is not committed (within
   * `CHARGE_WAIT_MILLIS` of the submit), or the `SqlError` of a transaction
   * that did not commit; nothing is written then: try again later.
   */
  readonly finish: (task: Task, end: TaskEnd) => Effect.Effect<Finished, SqlError.SqlError | TaskChargePending>
}>()("sluice/tasks/TaskStore") {
  /**
   * SQL-backed (PGlite or PostgreSQL); bills through the `Ledger`, which must
   * share its `SqlClient` (the task's end and its final bill are one transaction).
   */
  static readonly layer = Layer.effect(
    TaskStore,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const ledger = yield* Ledger
      const instance = crypto.randomUUID()
      return TaskStore.of({
        instance,
        insert: Effect.fn("TaskStore.insert")(function* (task: NewTask) {
          return yield* insertTask(sql, task)
        }),
        find: (publicId, userId) => selectTask(sql, publicId, userId),
        findAnyOwner: (publicId) => selectTask(sql, publicId, undefined),
        listOwn: (userId, page, query) => selectOwnPage(sql, userId, page, query),
        claimDue: (channelId, limit, leaseMillis) => claimDueTasks(sql, instance, channelId, limit, leaseMillis),
        claimExpired: (limit, leaseMillis) => claimExpiredTasks(sql, instance, limit, leaseMillis),
        claimOne: (taskId, leaseMillis, minAgeMillis) => claimTask(sql, instance, taskId, leaseMillis, minAgeMillis),
        advance: (task, state, nextPollMillis) => recordAdvance(sql, task, state, nextPollMillis),
        advanceMany: (batch, nextPollMillis) => recordAdvances(sql, batch, nextPollMillis),
        backoff: (task, delayMillis) => recordBackoff(sql, task, delayMillis),
        finish: finishTask(sql, ledger)
      })
    })
  )
}
