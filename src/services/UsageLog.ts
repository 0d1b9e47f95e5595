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
 * @since 0.1.0
 */
import { Cause, Clock, Context, Deferred, Duration, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { CurrentMetrics } from "../observability/Metrics.ts"
import { insertUsageRows, isRowRejection, sqlStateOf } from "../storage/UsageRowsSql.ts"
import { MAX_AMOUNT, QuotaLedger, type RowsAlongside } from "./QuotaLedger.ts"

/** One usage row. Counts are tokens; `cost` quota units; `latencyMs` milliseconds. @category models */
export interface UsageRow {
  readonly requestId: string
  readonly attempt: number
  readonly userId: bigint
  readonly tokenId: bigint
  readonly channelId: number | null
  readonly model: string
  readonly upstreamModel: string | null
  readonly promptTokens: number
  readonly completionTokens: number
  readonly cachedTokens: number
  readonly reasoningTokens: number
  readonly cost: bigint
  readonly latencyMs: number
  readonly stream: boolean
  readonly status: number
  readonly error: string | null
}

/** Rows per INSERT statement (a commit writes every queued row, in as many statements as it takes). */
const BATCH = 5_000

/**
 * The most rows the queue holds (about 100 MB at worst); a row recorded on a
 * full queue is dropped and counted. @category models
 */
export const MAX_QUEUED = 200_000

/** The largest PostgreSQL INTEGER. */
const MAX_INTEGER = 2_147_483_647

/** Longest text kept, in UTF-16 code units, per field. @category models */
export const TEXT_LIMITS = { requestId: 200, model: 200, upstreamModel: 200, error: 2_000 } as const

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff

/**
 * `text` as PostgreSQL TEXT accepts it: at most `limit` code units, cut at a
 * code-point boundary (a trailing high surrogate, the first half of a pair cut
 * off here or upstream, is dropped), NUL removed, other lone surrogates
 * replaced by U+FFFD.
 *
 * @category sanitizing
 */
export const cleanText = (text: string, limit: number): string => {
  let cut = text.length > limit ? text.slice(0, limit) : text
  if (cut.length > 0 && isHighSurrogate(cut.charCodeAt(cut.length - 1))) cut = cut.slice(0, -1)
  return cut.replaceAll("\u0000", "").toWellFormed()
}

/**
 * `value` as a non-negative PostgreSQL INTEGER: a fraction is truncated, a
 * negative or non-finite number is 0, a number above 2^31 − 1 is 2^31 − 1.
 *
 * @category sanitizing
 */
export const cleanInteger = (value: number): number =>
  !Number.isFinite(value) || value <= 0 ? 0 : value >= MAX_INTEGER ? MAX_INTEGER : Math.trunc(value)

/**
 * The row made safe to insert, and the names of the fields that had to change
 * (never their values: they may hold a caller's or a vendor's text).
 *
 * @category sanitizing
 */
export const cleanRow = (row: UsageRow): { readonly row: UsageRow; readonly adjusted: ReadonlyArray<string> } => {
  const adjusted: Array<string> = []
  const text = (field: keyof typeof TEXT_LIMITS, value: string): string => {
    const clean = cleanText(value, TEXT_LIMITS[field])
    if (clean !== value) adjusted.push(field)
    return clean
  }
  const integer = (field: string, value: number): number => {
    const clean = cleanInteger(value)
    if (clean !== value) adjusted.push(field)
    return clean
  }
  const channelId = row.channelId === null || (Number.isSafeInteger(row.channelId) && row.channelId >= 0)
    ? row.channelId
    : null
  if (channelId !== row.channelId) adjusted.push("channelId")
  const cost = row.cost < 0n ? 0n : row.cost > MAX_AMOUNT ? MAX_AMOUNT : row.cost
  if (cost !== row.cost) adjusted.push("cost")
  const clean: UsageRow = {
    requestId: text("requestId", row.requestId),
    attempt: integer("attempt", row.attempt),
    userId: row.userId,
    tokenId: row.tokenId,
    channelId,
    model: text("model", row.model),
    upstreamModel: row.upstreamModel === null ? null : text("upstreamModel", row.upstreamModel),
    promptTokens: integer("promptTokens", row.promptTokens),
    completionTokens: integer("completionTokens", row.completionTokens),
    cachedTokens: integer("cachedTokens", row.cachedTokens),
    reasoningTokens: integer("reasoningTokens", row.reasoningTokens),
    cost,
    latencyMs: integer("latencyMs", row.latencyMs),
    stream: row.stream === true,
    status: integer("status", row.status),
    error: row.error === null ? null : text("error", row.error)
  }
  return { row: clean, adjusted }
}

/** A row as a JSON array in column order (bigints as strings): a third of the bytes of an object. */
const tupleOf = (row: UsageRow) => [
  row.requestId,
  row.attempt,
  String(row.userId),
  String(row.tokenId),
  row.channelId,
  row.model,
  row.upstreamModel,
  row.promptTokens,
  row.completionTokens,
  row.cachedTokens,
  row.reasoningTokens,
  String(row.cost),
  row.latencyMs,
  row.stream,
  row.status,
  row.error
]

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
}>()("sluice/services/UsageLog") {
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
        let pending: Array<UsageRow> = []
        /** When a commit last succeeded (epoch ms). */
        let committedAt = clock.currentTimeMillisUnsafe()
        /** Fields adjusted by `record` since the last report, by name. */
        let adjusted = new Map<string, number>()
        let dropped = { rows: 0, cost: 0n }

        // The batch travels as one JSON parameter (bigints as strings): see `insertUsageRows`.
        const insertRows = (rows: ReadonlyArray<UsageRow>) =>
          sql.unsafe(insertUsageRows("$1::jsonb"), [JSON.stringify(rows.map(tupleOf))])

        /** Writes the rejected row's minimal form (its cost kept), or drops it when even that is rejected. */
        const setAside = (row: UsageRow, error: SqlError.SqlError) => {
          const state = sqlStateOf(error) ?? error.reason._tag
          const minimal: UsageRow = {
            ...row,
            channelId: null,
            model: "",
            upstreamModel: null,
            promptTokens: 0,
            completionTokens: 0,
            cachedTokens: 0,
            reasoningTokens: 0,
            latencyMs: 0,
            error: `Usage row set aside: the database rejected it (SQLSTATE ${state}).`
          }
          return sql.withTransaction(insertRows([minimal])).pipe(
            Effect.andThen(Effect.logWarning("Usage row set aside in a minimal form", {
              requestId: row.requestId,
              attempt: row.attempt,
              sqlState: state
            })),
            Effect.catchIf(isRowRejection, (again) =>
              Effect.logError("Usage row dropped: the database rejected even its minimal form", {
                requestId: row.requestId,
                attempt: row.attempt,
                cost: String(row.cost),
                sqlState: sqlStateOf(again) ?? again.reason._tag
              }))
          )
        }

        /**
         * Inserts `rows` inside the ledger's transaction, each try in a savepoint: a rejected batch is split in
         * halves until each rejected row is alone and set aside. Any other failure fails the transaction.
         */
        const writeRows = (rows: ReadonlyArray<UsageRow>): Effect.Effect<void, SqlError.SqlError> =>
          sql.withTransaction(insertRows(rows)).pipe(
            Effect.catchIf(isRowRejection, (error) => {
              if (rows.length === 1) {
                return setAside(rows[0], error)
              }
              const half = Math.ceil(rows.length / 2)
              return Effect.andThen(writeRows(rows.slice(0, half)), writeRows(rows.slice(half)))
            })
          )

        /** Logs (then forgets) what `record` adjusted or dropped since the last report. */
        const report = Effect.suspend(() => {
          const fields = adjusted
          const lost = dropped
          adjusted = new Map()
          dropped = { rows: 0, cost: 0n }
          const logs: Array<Effect.Effect<void>> = []
          if (fields.size > 0) {
            logs.push(Effect.logWarning("Usage row fields adjusted to fit the table", {
              fields: [...fields].map(([field, count]) =>
                `${field}: ${count}`
              ).join(", ")
            }))
          }
          if (lost.rows > 0) {
            logs.push(Effect.logError("Usage rows dropped: the queue is full", {
              rows: lost.rows,
              cost: String(lost.cost)
            }))
          }
          return Effect.all(logs, { discard: true })
        })

        /**
         * Takes every queued row and returns them for the commit (as JSON tuples for its single statement, and as
         * their insert in statements of `BATCH` rows), or `undefined` when none is queued. The ledger calls it in the same synchronous step as it takes the settled charges
         * (`QuotaLedger.commit`), so a commit writes exactly the rows of the charges it writes; the rows are then
         * the ledger's, kept with those charges until they are written (exactly once).
         */
        const collect = (): RowsAlongside<SqlError.SqlError> | undefined => {
          if (pending.length === 0) return undefined
          const rows = pending
          pending = []
          const statements: Array<ReadonlyArray<UsageRow>> = []
          for (let start = 0; start < rows.length; start += BATCH) statements.push(rows.slice(start, start + BATCH))
          return {
            _tag: "Rows",
            // Up to `BATCH` rows ride in the commit's one statement; more, or a rejected row, take the statements.
            tuples: rows.length <= BATCH ? JSON.stringify(rows.map(tupleOf)) : undefined,
            write: Effect.forEach(statements, writeRows, { discard: true })
          }
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
          Effect.andThen(Effect.suspend(() => pending.length === 0 ? commit : tracedCommit)),
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
            if (pending.length === 0) return
          }
        })
        yield* Effect.addFinalizer(() => flush)
        const metrics = yield* CurrentMetrics
        if (metrics !== undefined) {
          const unregister = [
            metrics.pull("sluice_usage_log_queue_rows", "Usage rows waiting for the next commit", () => pending.length),
            metrics.pull(
              "sluice_usage_log_last_commit_age_seconds",
              "Seconds since the usage log last committed (or found nothing to commit)",
              () => (clock.currentTimeMillisUnsafe() - committedAt) / 1000
            )
          ]
          yield* Effect.addFinalizer(() => Effect.sync(() => unregister.forEach((remove) => remove())))
        }
        // The group commit: `next` resolves when the commit that starts next ends (whether it wrote); a caller of
        // `durable` takes it and wakes the committer, which otherwise ticks every `intervalMillis`.
        let next = Deferred.makeUnsafe<boolean>()
        let wake = Deferred.makeUnsafe<void>()
        let waiting = false
        const cycle = Effect.gen(function* () {
          yield* Effect.raceFirst(Effect.sleep(Duration.millis(intervalMillis)), Deferred.await(wake))
          wake = Deferred.makeUnsafe<void>()
          const ending = next
          waiting = false
          next = Deferred.makeUnsafe<boolean>()
          const written = yield* writeQueued
          Deferred.doneUnsafe(ending, Effect.succeed(written))
        })
        yield* cycle.pipe(Effect.forever, Effect.forkScoped)
        // Whoever still waits when the layer closes is answered by the last flush.
        yield* Effect.addFinalizer(() => Effect.sync(() => Deferred.doneUnsafe(next, Effect.succeed(false))))
        const durable = Effect.suspend(() => {
          const ending = next
          if (!waiting) {
            waiting = true
            Deferred.doneUnsafe(wake, Effect.void)
          }
          return Deferred.await(ending)
        })
        const writeWithin = Effect.fn("UsageLog.writeWithin")(function* (row: UsageRow) {
          const open = yield* Effect.serviceOption(sql.transactionService)
          if (open._tag === "None") {
            return yield* Effect.die(new Error("UsageLog.writeWithin runs inside the caller's transaction"))
          }
          const clean = cleanRow(row)
          for (const field of clean.adjusted) {
            if (field !== "cost") adjusted.set(field, (adjusted.get(field) ?? 0) + 1)
          }
          const cost = row.cost > MAX_AMOUNT ? MAX_AMOUNT : row.cost < -MAX_AMOUNT ? -MAX_AMOUNT : row.cost
          yield* writeRows([{ ...clean.row, cost }])
        })

        const committedCharge = Effect.fn("UsageLog.committedCharge")(function* (requestId: string) {
          const [row] = yield* sql<{ readonly rows: bigint; readonly total: bigint }>`
            SELECT count(*)::bigint AS rows, COALESCE(SUM(cost), 0)::bigint AS total FROM usage_logs
            WHERE request_id = ${requestId} AND attempt > 0 AND status < 400 AND error IS NULL`
          return { rows: Number(row?.rows ?? 0n), total: BigInt(row?.total ?? 0n) }
        })

        return UsageLog.of({
          durable,
          writeWithin,
          committedCharge,
          record: (row) => {
            const clean = cleanRow(row)
            for (const field of clean.adjusted) adjusted.set(field, (adjusted.get(field) ?? 0) + 1)
            if (pending.length >= MAX_QUEUED) {
              dropped.rows += 1
              dropped.cost += clean.row.cost
              return
            }
            pending.push(clean.row)
          },
          flush
        })
      })
    )
}
