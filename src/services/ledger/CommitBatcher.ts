/**
 * The ledger's exactly-once group commit: every commit takes the charges
 * settled since the last one and the leases gone idle (`LeaseMath.snapshot`),
 * with what the caller writes alongside (the usage rows), and writes them
 * under one id claimed in the same transaction (`ledger_commits`,
 * migrations/0004_exactly_once.ts). A batch whose transaction ended other
 * than committed is kept whole and re-run first by the next commit; the
 * re-run's claim finds the id when the first try did commit, and writes
 * nothing (see the module doc of `QuotaLedger.ts`).
 *
 * A batch is written as one statement when it can be (`CommitSql.singleStatement`),
 * else as a transaction of several (`CommitSql.writeDeltas`).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { SqlClient, SqlError } from "effect/sql"
import { isRowRejection } from "../../storage/UsageRowsSql.ts"
import { chargesBudgets, singleStatement, writeDeltas } from "./CommitSql.ts"
import { snapshot, type Taken } from "./LeaseMath.ts"
import type { Leases } from "./Leases.ts"
import { sqlErrorOf } from "./LeaseStore.ts"
import { makeCommitIdPruner } from "./Pruning.ts"

/**
 * What a commit writes alongside the charges, in the same transaction: an
 * effect, or a function called under the ledger's gate in the same
 * synchronous step as the settled charges are taken, returning the effect to
 * run (`undefined` when there is nothing to write).
 *
 * @category models
 */
export type Alongside<E> = Effect.Effect<void, E> | (() => Effect.Effect<void, E> | RowsAlongside<E> | undefined)

/**
 * Usage rows a commit writes: as JSON tuples (`storage/UsageRowsSql.ts`) that ride in the commit's single
 * statement, and as `write`, the statements that insert them otherwise (a batch too large for one statement,
 * `tuples` undefined; or one the database refused in the single statement: `write` sets a refused row aside).
 *
 * @category models
 */
export interface RowsAlongside<E> {
  readonly _tag: "Rows"
  readonly tuples: string | undefined
  readonly write: Effect.Effect<void, E>
}

const isRows = <E>(value: Effect.Effect<void, E> | RowsAlongside<E>): value is RowsAlongside<E> =>
  !Effect.isEffect(value) && (value as RowsAlongside<E>)._tag === "Rows"

/** A commit's batch, kept whole to be re-run first when its transaction failed. */
interface Batch {
  readonly id: string
  readonly alongside: Effect.Effect<void, unknown> | RowsAlongside<unknown> | undefined
  readonly taken: ReadonlyArray<Taken>
  /** The final commit: hands every lease row of this instance back. */
  readonly final: boolean
}

/**
 * The commits of one instance.
 *
 * @category models
 */
export interface CommitBatcher {
  /**
   * `QuotaLedger.commit` (see there); with `final` (the layer closing), every free lease is handed back, every
   * lease row of this instance deleted, the last function `alongside` given is called, and nothing is renewed.
   */
  readonly commit: <E>(given: Alongside<E> | undefined, final: boolean) => Effect.Effect<void, E | SqlError.SqlError>
  /** What the failed commit kept for a re-run took (empty when none is kept): charges not yet in the table. */
  readonly pending: () => ReadonlyArray<Taken>
}

/**
 * The commits of instance `instance` over `sql`: `idleMillis` is how long a lease goes unused before a commit
 * hands it back; `oneStatement` allows the single-statement shape (false: always the transaction).
 */
export const makeCommitBatcher = (options: {
  readonly sql: SqlClient.SqlClient
  readonly instance: string
  readonly leases: Leases
  readonly idleMillis: number
  readonly oneStatement: boolean
}): CommitBatcher => {
  const { sql, instance, leases, idleMillis, oneStatement } = options
  const pruneCommitIds = makeCommitIdPruner(sql, leases.now)
  /** The commit whose transaction failed, to be re-run first. */
  const state: {
    retry: Batch | undefined
    /** The last function `alongside` given to `commit`: the final commit collects with it too. */
    collector: (() => Effect.Effect<void, unknown> | RowsAlongside<unknown> | undefined) | undefined
  } = { retry: undefined, collector: undefined }

  /** The batch in a transaction of several statements that first claims its id (see `runBatch`). */
  const inTransaction = (batch: Batch, alongside: Effect.Effect<void, unknown> | undefined) =>
    sql.withTransaction(Effect.gen(function* () {
      const claimed = yield* sql`INSERT INTO ledger_commits (id) VALUES (${batch.id})
        ON CONFLICT (id) DO NOTHING RETURNING id`
      if (claimed.length === 0) return
      if (alongside !== undefined) yield* alongside
      yield* writeDeltas(sql, instance, batch.taken)
      if (batch.final) yield* sql`DELETE FROM quota_leases WHERE instance_id = ${instance}`
    }))

  /** The batch as one statement (`CommitSql.singleStatement`). */
  const inOneStatement = (batch: Batch, tuples: string | undefined) => {
    const { text, params } = singleStatement(batch.id, instance, batch.taken, tuples)
    return sql.unsafe(text, params).pipe(Effect.asVoid)
  }

  /**
   * Writes a batch in one transaction that first claims its id: an id already there means an earlier try of
   * this batch committed, and nothing more is written. However the transaction ends other than committed
   * (a failure, or a defect: a ROLLBACK on a dead connection dies), the batch is kept to be re-run, and a
   * `SqlError` found as a defect becomes the failure again.
   */
  const runBatch = (batch: Batch) => {
    const rows = batch.alongside !== undefined && isRows(batch.alongside) ? batch.alongside : undefined
    // Budget spend comes back to raise its threshold events: such a batch takes the statements.
    const single = oneStatement && !batch.final && (batch.alongside === undefined || rows?.tuples !== undefined) &&
      !chargesBudgets(batch.taken)
    return (single
      ? inOneStatement(batch, rows?.tuples).pipe(
        // A row the database refused: the statements, which set it aside alone.
        Effect.catchIf(
          (error) => rows !== undefined && isRowRejection(error),
          () => inTransaction(batch, rows?.write)
        )
      )
      : inTransaction(batch, rows?.write ?? (batch.alongside as Effect.Effect<void, unknown> | undefined))).pipe(
        Effect.onExit((exit) =>
          Effect.sync(() => {
            state.retry = exit._tag === "Success" ? undefined : batch
          })
        ),
        Effect.catchCause(sqlErrorOf)
      )
  }

  const commit = <E>(given: Alongside<E> | undefined, final: boolean) =>
    leases.gate.withPermits(1)(Effect.gen(function* () {
      const collectNow = given === undefined || Effect.isEffect(given) ? undefined : given
      if (collectNow !== undefined) state.collector = collectNow
      if (state.retry !== undefined) yield* runBatch(state.retry) as Effect.Effect<void, E | SqlError.SqlError>
      // The charges and (through a function `alongside`) the rows of this batch, taken in one step.
      const taken = snapshot(leases.accounts.values(), final, leases.now(), idleMillis)
      const collect = collectNow ?? (final ? state.collector : undefined)
      const alongside = (collect === undefined ? given : collect()) as
        | Effect.Effect<void, E>
        | RowsAlongside<E>
        | undefined
      if (alongside !== undefined || taken.length > 0 || (final && leases.accounts.size > 0)) {
        yield* runBatch({ id: crypto.randomUUID(), alongside, taken, final }) as Effect.Effect<
          void,
          E | SqlError.SqlError
        >
        yield* pruneCommitIds
      }
      if (!final) yield* leases.renew
      leases.prune()
    })).pipe(Effect.uninterruptible)

  return { commit, pending: () => state.retry?.taken ?? [] }
}
