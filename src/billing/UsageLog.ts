/**
 * The usage log: one row per upstream attempt (request id, user, token,
 * channel, model, upstream model, tokens, cost in quota units, latency in
 * milliseconds, stream flag, HTTP status). Rows are buffered in memory and
 * written off the hot path: every tick, the ledger takes the queued rows and
 * the quota charges settled meanwhile in one synchronous step and writes them
 * in one transaction (`QuotaLedger.commit`), so at every committed point the
 * logged costs and `used_quota` agree — provided each row is recorded in the
 * step its charge is booked (`QuotaLedger.settle`'s `onBooked`). A failed
 * commit keeps its rows with its charges and is re-run first by the next one.
 * The layer's finalizer flushes what is left, and the ledger's final commit
 * takes any row recorded after that, so a graceful shutdown loses no row.
 *
 * No row can stop the log. `record` makes every row fit its columns (text
 * cleaned of NUL and lone surrogates and bounded; counts, latency and status
 * clamped to non-negative PostgreSQL INTEGERs), and a batch the database still
 * rejects (SQLSTATE class 22 or 23) is split in halves until the rejected row
 * is alone; that row is written in a minimal form (ids, attempt, cost,
 * stream flag, status; no text, no counts) and logged as set aside, so its
 * cost stays in the sum. Only a row whose minimal form is rejected too is
 * dropped (logged with its request id and cost); `used_quota` then exceeds
 * the logged costs by exactly that cost.
 *
 * The queue holds at most `MAX_QUEUED` rows. While the database is away it
 * grows with the requests served, and the ledger stops serving new holds once
 * it has not reached the database for its lease stale time (fencing,
 * QuotaLedger), so the queue stops growing soon after; a row recorded on a
 * full queue is dropped (its charge is still applied: the charges are the
 * ledger's), and the drops are logged with their count and summed cost.
 *
 * The layer is thin: the row's cleaning and encoding are
 * `usage-log/UsageRow.ts`, the queue and its batches `usage-log/RowQueue.ts`
 * (both pure), the SQL `usage-log/UsageRowStore.ts`, the committer's ticks
 * and wake-ups `usage-log/GroupCommit.ts`, and its gauges
 * `usage-log/UsageLogMetrics.ts`.
 *
 * @since 0.1.0
 */
import { Cause, Clock, Context, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { sqlStateOf } from "../storage/UsageRowsSql.ts"
import { QuotaLedger, type RowsAlongside } from "./QuotaLedger.ts"
import { startGroupCommit } from "./usage-log/GroupCommit.ts"
import { countAdjusted, enqueue, makeRowQueue, MAX_QUEUED, takeAll, takeReport } from "./usage-log/RowQueue.ts"
import { registerUsageLogMetrics } from "./usage-log/UsageLogMetrics.ts"
import { cleanRow, signedCost, type UsageRow } from "./usage-log/UsageRow.ts"
import { makeUsageRowStore } from "./usage-log/UsageRowStore.ts"

/** The log's models, defined with the part that computes them (`usage-log/`), under the names importers use. */
export type { UsageRow } from "./usage-log/UsageRow.ts"
export { cleanInteger, cleanRow, cleanText, TEXT_LIMITS } from "./usage-log/UsageRow.ts"
export { MAX_QUEUED } from "./usage-log/RowQueue.ts"
export { isRowRejection } from "../storage/UsageRowsSql.ts"

/** @category services */
export class UsageLog extends Context.Service<UsageLog, {
  /** Cleans and queues a row (synchronous, no I/O); a full queue drops it (see the module doc). */
  readonly record: (row: UsageRow) => void
  /** Writes every queued row now (returns when the queue is empty or a write failed). */
  readonly flush: Effect.Effect<void>
  /**
   * Resolves once every row recorded before the call is committed with its charge (true), or when the commit
   * that should have held it failed (false: the rows stay with their charges and are retried). Starts that commit
   * now instead of at the next tick (a group commit: rows recorded while one commit runs go in the next, together).
   * A delivered answer waits for it before its last byte leaves, so a crash gives no answer away.
   */
  readonly durable: Effect.Effect<boolean>
  /**
   * Cleans `row` as `record` does (but keeps a negative cost, bounded to
   * ±`MAX_AMOUNT`: an `attempt = 0` adjustment row may be a credit) and
   * inserts it now, inside the caller's open transaction rather than the
   * queue, so it commits with the balance change it explains
   * (`QuotaLedger.adjustWithin`) or not at all. A row the database rejects is
   * set aside in its minimal form, as queued rows are; a row whose
   * `(request_id, attempt)` is already logged is left as it is. Fails with
   * the `SqlError` of the insert (the caller's transaction then rolls back);
   * called with no transaction open, it dies.
   */
  readonly writeWithin: (row: UsageRow) => Effect.Effect<void, SqlError.SqlError>
  /**
   * What request `requestId` was charged, as committed: how many of its
   * attempts (`attempt > 0`) are logged as accepted (status below 400, no
   * error) and the sum of their costs in quota units. Reads in the caller's
   * transaction when one is open. Fails with the `SqlError` of the read.
   */
  readonly committedCharge: (
    requestId: string
  ) => Effect.Effect<{ readonly rows: number; readonly total: bigint }, SqlError.SqlError>
}>()("sluice/billing/UsageLog") {
  /**
   * SQL-backed; commits every `intervalMillis` (default 250 ms), at once when a caller waits (`durable`), and when
   * the layer closes.
   */
  static readonly layer = (intervalMillis = 250) =>
    Layer.effect(
      UsageLog,
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const ledger = yield* QuotaLedger
        // The last-commit age is a metric read outside any effect: the clock is the one the layer is built with.
        const clock = yield* Clock.Clock
        const queue = makeRowQueue()
        const store = makeUsageRowStore(sql)
        /** When a commit last succeeded (epoch ms). */
        let committedAt = clock.currentTimeMillisUnsafe()

        /** Logs (then forgets) what `record` adjusted or dropped since the last report. */
        const report = Effect.suspend(() => {
          const { adjusted, dropped } = takeReport(queue)
          const logs: Array<Effect.Effect<void>> = []
          if (adjusted.size > 0) {
            logs.push(Effect.logWarning("Usage row fields adjusted to fit the table", {
              fields: [...adjusted].map(([field, count]) => `${field}: ${count}`).join(", ")
            }))
          }
          if (dropped.rows > 0) {
            logs.push(Effect.logError("Usage rows dropped: the queue is full", {
              rows: dropped.rows,
              cost: String(dropped.cost)
            }))
          }
          return Effect.all(logs, { discard: true })
        })

        /**
         * Takes every queued row and returns them for the commit (as JSON tuples for its single statement, and as
         * their insert in statements of `BATCH` rows), or `undefined` when none is queued. The ledger calls it in
         * the same synchronous step as it takes the settled charges (`QuotaLedger.commit`), so a commit writes
         * exactly the rows of the charges it writes; the rows are then the ledger's, kept with those charges until
         * they are written (exactly once).
         */
        const collect = (): RowsAlongside<SqlError.SqlError> | undefined => {
          if (queue.pending.length === 0) return undefined
          const rows = takeAll(queue)
          return { _tag: "Rows", rows }
        }

        /**
         * Writes every queued row with the charges settled meanwhile, in one ledger commit, and tells whether it
         * was written. A failed commit is logged by kind (never its text, which may quote a row) and retried by
         * the next one; its rows and charges stay together, with the ledger or in the queue.
         */
        const commit = ledger.commit(collect)
        // A commit with rows to write is a span of its own (an idle tick, every 250 ms, is not).
        const tracedCommit = commit.pipe(Effect.withSpan("UsageLog.commit"))
        const writeQueued: Effect.Effect<boolean> = report.pipe(
          Effect.andThen(
            Effect.suspend(() => queue.pending.length === 0 && ledger.heldRows() === 0 ? commit : tracedCommit)
          ),
          Effect.map(() => {
            committedAt = clock.currentTimeMillisUnsafe()
            return true
          }),
          Effect.catchCause((cause) => {
            const error = Cause.findErrorOption(cause)
            const kind = error._tag === "Some" ? sqlStateOf(error.value) ?? error.value.reason._tag : "defect"
            return Effect.logError("Usage log write failed; will retry", { kind }).pipe(Effect.as(false))
          }),
          Effect.uninterruptible
        )

        /** Writes until the queue is empty or a write fails: what shutdown needs. */
        const flush = Effect.gen(function* () {
          while (yield* writeQueued) {
            if (queue.pending.length === 0) return
          }
        })
        yield* Effect.addFinalizer(() => flush)
        yield* registerUsageLogMetrics(queue, () => (clock.currentTimeMillisUnsafe() - committedAt) / 1000)
        // The committer; whoever still waits when the layer closes is answered by the last flush.
        const committer = yield* startGroupCommit(writeQueued, intervalMillis)
        // With a charge journal, an answer waits for the journal's write, not for a commit.
        const durable = (yield* ledger.durableWith(collect)) ?? committer.durable

        const writeWithin = Effect.fn("UsageLog.writeWithin")(function* (row: UsageRow) {
          const open = yield* Effect.serviceOption(sql.transactionService)
          if (open._tag === "None") {
            return yield* Effect.die(new Error("UsageLog.writeWithin runs inside the caller's transaction"))
          }
          const clean = cleanRow(row)
          countAdjusted(queue, clean.adjusted.filter((field) => field !== "cost"))
          yield* store.writeRows([{ ...clean.row, cost: signedCost(row.cost) }])
        })

        return UsageLog.of({
          durable,
          writeWithin,
          committedCharge: store.committedCharge,
          record: (row) => enqueue(queue, row, MAX_QUEUED - ledger.heldRows()),
          flush
        })
      })
    )
}
