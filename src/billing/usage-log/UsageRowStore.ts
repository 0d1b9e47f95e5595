/**
 * The usage log's SQL: rows inserted as one JSON parameter
 * (`storage/UsageRowsSql.ts`), a batch the database rejects (SQLSTATE class
 * 22 or 23) split in halves until each rejected row is alone and set aside
 * in its minimal form (`UsageRow.minimalRow`, its cost kept; dropped and
 * logged only when even that is rejected), and what a request was charged as
 * committed.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { SqlClient, SqlError } from "effect/sql"
import { insertUsageRows, isRowRejection, sqlStateOf } from "../../storage/UsageRowsSql.ts"
import { minimalRow, tupleOf, type UsageRow } from "./UsageRow.ts"

/**
 * The SQL side of the usage log.
 *
 * @category models
 */
export interface UsageRowStore {
  /**
   * Inserts `rows` (already cleaned), each try in a savepoint of the open
   * transaction (or a transaction of its own): a rejected batch is split and
   * its rejected rows set aside. Fails with any other `SqlError`.
   */
  readonly writeRows: (rows: ReadonlyArray<UsageRow>) => Effect.Effect<void, SqlError.SqlError>
  /**
   * How many of request `requestId`'s attempts (`attempt > 0`) are logged as
   * accepted (status below 400, no error) and the sum of their costs in quota
   * units, read in the caller's transaction when one is open. Fails with the
   * `SqlError` of the read.
   */
  readonly committedCharge: (
    requestId: string
  ) => Effect.Effect<{ readonly rows: number; readonly total: bigint }, SqlError.SqlError>
}

/** The usage rows' SQL over `sql`. @category constructors */
export const makeUsageRowStore = (sql: SqlClient.SqlClient): UsageRowStore => {
  // The batch travels as one JSON parameter (bigints as strings): see `insertUsageRows`.
  const insertRows = (rows: ReadonlyArray<UsageRow>) =>
    sql.unsafe(insertUsageRows("$1::jsonb"), [JSON.stringify(rows.map(tupleOf))])

  /** Writes the rejected row's minimal form (its cost kept), or drops it when even that is rejected. */
  const setAside = (row: UsageRow, error: SqlError.SqlError) => {
    const state = sqlStateOf(error) ?? error.reason._tag
    return sql.withTransaction(insertRows([minimalRow(row, state)])).pipe(
      Effect.andThen(Effect.logWarning("Usage row set aside in a minimal form", {
        requestId: row.requestId,
        attempt: row.attempt,
        sqlState: state
      })),
      Effect.catchIf(
        isRowRejection,
        (again) =>
          Effect.logError("Usage row dropped: the database rejected even its minimal form", {
            requestId: row.requestId,
            attempt: row.attempt,
            cost: String(row.cost),
            sqlState: sqlStateOf(again) ?? again.reason._tag
          })
      )
    )
  }

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

  const committedCharge = Effect.fn("UsageLog.committedCharge")(function* (requestId: string) {
    const [row] = yield* sql<{ readonly rows: bigint; readonly total: bigint }>`
      SELECT count(*)::bigint AS rows, COALESCE(SUM(cost), 0)::bigint AS total FROM usage_logs
      WHERE request_id = ${requestId} AND attempt > 0 AND status < 400 AND error IS NULL`
    return { rows: Number(row?.rows ?? 0n), total: BigInt(row?.total ?? 0n) }
  })

  return { writeRows, committedCharge }
}
