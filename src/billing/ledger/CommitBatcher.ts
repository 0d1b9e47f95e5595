/**
 * The ledger's exactly-once group commit, and the batches a charge journal
 * makes durable before they are committed (folded).
 *
 * A batch is what one commit writes: the charges settled since the last
 * batch, the leases gone idle (`LeaseMath.snapshot`), the usage rows written
 * alongside, under one id claimed in the commit's own transaction
 * (`ledger_commits`, migrations/0004_exactly_once.ts). Batches are kept in
 * memory until a commit folds them; a commit folds every batch kept (the
 * journal's, and any whose commit failed) with its own, in one transaction
 * that claims every id first and writes only the batches whose id it claimed
 * — so a batch folded twice (a re-run after a commit whose outcome was
 * unknown, a journal record folded again after a crash, a dead instance's
 * record folded by another) writes once.
 *
 * `take` makes a batch of the charges alone (no hand-back), outside the gate,
 * for the journal to write before an answer's end leaves (`QuotaLedger.durable`).
 *
 * A commit of one batch held nowhere else is written as one statement when
 * it can be (`CommitSql.singleStatement`); any other as a transaction of
 * several statements (`CommitSql.writeDeltas`).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { SqlClient, SqlError } from "effect/sql"
import { isRowRejection } from "../../storage/UsageRowsSql.ts"
import { BATCH, statementsOf } from "../usage-log/RowQueue.ts"
import { tupleOf, type UsageRow } from "../usage-log/UsageRow.ts"
import { chargesBudgets, singleStatement, writeDeltas } from "./CommitSql.ts"
import { mergeTaken, snapshot, snapshotCharges, type Taken, withdrawn } from "./LeaseMath.ts"
import type { Leases } from "./Leases.ts"
import { sqlErrorOf } from "./LeaseStore.ts"
import { makeCommitIdPruner } from "./Pruning.ts"

/**
 * What a commit writes alongside the charges, in the same transaction: an
 * effect, or a function called under the ledger's gate in the same
 * synchronous step as the settled charges are taken, returning the rows to
 * write (`undefined` when there is nothing to write).
 *
 * @category models
 */
export type Alongside<E> = Effect.Effect<void, E> | (() => Effect.Effect<void, E> | RowsAlongside<E> | undefined)

/**
 * Usage rows a commit writes: the cleaned rows (`UsageRow.cleanRow`), which
 * ride in a journal record and in the commit's statements (a refused row set
 * aside: `UsageRowStore.writeRows`). `E` is only the `Alongside` it stands in.
 *
 * @category models
 */
export interface RowsAlongside<E> {
  readonly _tag: "Rows"
  readonly rows: Array<UsageRow>
  /** Never set: keeps `E` in the type. */
  readonly error?: E
}

const isRows = <E>(value: Effect.Effect<void, E> | RowsAlongside<E>): value is RowsAlongside<E> =>
  !Effect.isEffect(value) && (value as RowsAlongside<E>)._tag === "Rows"

/**
 * Where a batch's journal record is durable: a row of `charge_journal`, record `seq` of the local journal file, or
 * `Volatile`: no record, for an embedded store in memory (`memory://`), which keeps nothing past the process, so
 * a charge is as durable as the store with no journal at all.
 *
 * @category models
 */
export type JournalPlace =
  | { readonly _tag: "Table" }
  | { readonly _tag: "File"; readonly seq: number }
  | { readonly _tag: "Volatile" }

/**
 * One batch, kept until a commit folds it.
 *
 * @category models
 */
export interface Batch {
  /** The id its commit claims in `ledger_commits`. */
  readonly id: string
  /** The instance whose `quota_leases` rows it lowers (this one, or a dead one whose record is folded here). */
  readonly instance: string
  readonly alongside: Effect.Effect<void, unknown> | RowsAlongside<unknown> | undefined
  /** Changed only by `withdraw`, on a batch no journal holds. */
  taken: ReadonlyArray<Taken>
  /** The final commit: hands every lease row of this instance back. */
  readonly final: boolean
  /** Where its journal record is durable; `undefined`: in memory only. */
  place: JournalPlace | undefined
  /** Set once a commit wrote it (a journal write still in flight then deletes the record it made). */
  folded?: boolean
}

/** The usage rows of a batch (none for an effect alongside). @category models */
export const rowsOf = (batch: Batch): ReadonlyArray<UsageRow> =>
  batch.alongside !== undefined && isRows(batch.alongside) ? batch.alongside.rows : []

/**
 * What a commit asks of the charge journal (`billing/journal/ChargeJournal.ts`).
 *
 * @category models
 */
export interface JournalHooks {
  /**
   * Deletes the `charge_journal` rows of `ids` (folded now, or long ago): inside the commit's transaction, or after
   * it for rows a journal write added while it ran.
   */
  readonly forgetWithin: (ids: ReadonlyArray<string>) => Effect.Effect<void, SqlError.SqlError>
  /** After a commit: every file record up to `seq` is folded (`seq` below the first still kept). */
  readonly markFolded: (seq: number) => void
  /** The highest file record seq written so far (0: none). */
  readonly lastSeq: () => number
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
  /**
   * Takes the charges settled since the last batch (no hand-back) and the rows `collect` returns, in one
   * synchronous step, as a batch kept for the next commit; `undefined` when there is nothing new. For the journal.
   */
  readonly take: (collect: () => RowsAlongside<unknown> | undefined) => Batch | undefined
  /** Every batch kept and not yet committed, oldest first. */
  readonly kept: () => ReadonlyArray<Batch>
  /** The kept batches without a journal place, oldest first: what the journal writes next. */
  readonly unjournaled: () => ReadonlyArray<Batch>
  /** Keeps batches recovered from a journal, to be committed first by the next commit. */
  readonly adopt: (batches: ReadonlyArray<Batch>) => void
  /**
   * Commits batches that are not this instance's (a dead instance's journal records) in one transaction, each
   * written at most once; kept nowhere when it fails (their records stay in the journal).
   */
  readonly foldForeign: (batches: ReadonlyArray<Batch>) => Effect.Effect<void, SqlError.SqlError>
  /**
   * Takes back the charge of `amount` booked on the accounts `keys` (`LeaseMath.accountKey`) with the usage row
   * `(requestId, attempt)`, when its batch is held by no journal and no commit is writing it: the row is kept with
   * cost 0 and status 503 (`quota_ledger_unavailable`), the charge and its request no longer written. Returns
   * whether it did; false means the charge stands (it is durable, or being committed). The caller gives the
   * amount back to the leases.
   */
  readonly withdraw: (requestId: string, attempt: number, keys: ReadonlyArray<string>, amount: bigint) => boolean
  /** The charges of the kept batches: charges not yet in the table. */
  readonly pending: () => ReadonlyArray<Taken>
  /** How many usage rows the kept batches hold (the usage log's bound counts them). */
  readonly heldRows: () => number
}

/**
 * The commits of instance `instance` over `sql`: `idleMillis` is how long a lease goes unused before a commit
 * hands it back; `oneStatement` allows the single-statement shape (false: always the transaction); `writeRows`
 * inserts rows (`UsageRowStore.writeRows`); `journal` the charge journal's hooks (none: no journal).
 */
export const makeCommitBatcher = (options: {
  readonly sql: SqlClient.SqlClient
  readonly instance: string
  readonly leases: Leases
  readonly idleMillis: number
  readonly oneStatement: boolean
  readonly writeRows: (rows: ReadonlyArray<UsageRow>) => Effect.Effect<void, SqlError.SqlError>
  readonly journal: JournalHooks | undefined
}): CommitBatcher => {
  const { sql, instance, leases, idleMillis, oneStatement, writeRows, journal } = options
  const pruneCommitIds = makeCommitIdPruner(sql, leases.now)
  const state: {
    /** Batches taken and not yet committed, oldest first. */
    kept: Array<Batch>
    /** The last function `alongside` given to `commit`: the final commit collects with it too. */
    collector: (() => Effect.Effect<void, unknown> | RowsAlongside<unknown> | undefined) | undefined
  } = { kept: [], collector: undefined }
  /** The batches of the commit in flight: not to be changed (`withdraw`) until it ends. */
  const folding = new Set<Batch>()
  /** Kept batches that had no journal place when last looked at (`unjournaled` drops the placed ones lazily). */
  const unplaced = new Set<Batch>()
  /** The usage rows the kept batches hold. */
  let heldRows = 0
  const keep = (batch: Batch) => {
    state.kept.push(batch)
    heldRows += rowsOf(batch).length
    if (batch.place === undefined) unplaced.add(batch)
  }

  /** One batch as one statement (`CommitSql.singleStatement`). */
  const inOneStatement = (batch: Batch, rows: ReadonlyArray<UsageRow>) => {
    const tuples = rows.length === 0 ? undefined : JSON.stringify(rows.map(tupleOf))
    const { text, params } = singleStatement(batch.id, batch.instance, batch.taken, tuples)
    return sql.unsafe(text, params).pipe(Effect.asVoid)
  }

  /** One batch held nowhere else: one statement when it can be, else the statements. */
  const runOne = (batch: Batch) => {
    const rows = batch.alongside !== undefined && isRows(batch.alongside) ? batch.alongside : undefined
    // Budget spend comes back to raise its threshold events: such a batch takes the statements.
    const single = oneStatement && !batch.final && (batch.alongside === undefined || rows !== undefined) &&
      (rows === undefined || rows.rows.length <= BATCH) && !chargesBudgets(batch.taken)
    return single
      ? inOneStatement(batch, rows?.rows ?? []).pipe(
        // A row the database refused: the statements, which set it aside alone.
        Effect.catchIf((error) => rows !== undefined && isRowRejection(error), () => inOneTransaction([batch]))
      )
      : inOneTransaction([batch])
  }

  /**
   * Several batches in one transaction: every id claimed at once, and only the batches whose id was claimed
   * written (their rows, their charges merged per instance and account); the journal rows of all of them
   * deleted. A batch already committed (its id found) writes nothing again.
   */
  const inOneTransaction = (batches: ReadonlyArray<Batch>) =>
    sql.withTransaction(Effect.gen(function* () {
      const ids = batches.map((batch) => batch.id)
      const claimed = new Set(
        (yield* sql<{ readonly id: string }>`INSERT INTO ledger_commits (id) SELECT unnest(${ids}::text[])
          ON CONFLICT (id) DO NOTHING RETURNING id`).map((row) => row.id)
      )
      const fresh = batches.filter((batch) => claimed.has(batch.id))
      for (const batch of fresh) {
        if (batch.alongside !== undefined && !isRows(batch.alongside)) yield* batch.alongside
      }
      const rows = fresh.flatMap(rowsOf)
      yield* Effect.forEach(statementsOf(rows), writeRows, { discard: true })
      const instances = [...new Set(fresh.map((batch) => batch.instance))]
      for (const owner of instances) {
        const taken = mergeTaken(fresh.filter((batch) => batch.instance === owner).map((batch) => batch.taken))
        yield* writeDeltas(sql, owner, taken)
      }
      if (journal !== undefined) yield* journal.forgetWithin(ids)
      if (fresh.some((batch) => batch.final)) yield* sql`DELETE FROM quota_leases WHERE instance_id = ${instance}`
    }))

  /** After a commit of this instance's batches: the journal file's folded position, below the first kept record. */
  const markFolded = () => {
    if (journal === undefined) return
    const first = state.kept.find((batch) => batch.place?._tag === "File")
    journal.markFolded(first?.place?._tag === "File" ? first.place.seq - 1 : journal.lastSeq())
  }

  /**
   * Commits `batches` (kept ones first, the new one last). Committed, they are no longer kept; however the
   * transaction ends other than committed (a failure, or a defect: a ROLLBACK on a dead connection dies), they
   * stay kept to be re-run, and a `SqlError` found as a defect becomes the failure again.
   */
  const fold = (batches: ReadonlyArray<Batch>) => {
    /** The batches whose journal row was in the table when the commit began (its transaction deletes them). */
    const inTable = new Set(batches.filter((batch) => batch.place?._tag === "Table"))
    return Effect.suspend(() => {
      for (const batch of batches) folding.add(batch)
      return batches.length === 1 && batches[0].place === undefined ? runOne(batches[0]) : inOneTransaction(batches)
    }).pipe(
      Effect.onExit((exit) =>
        Effect.suspend(() => {
          for (const batch of batches) folding.delete(batch)
          if (exit._tag !== "Success") return Effect.void
          for (const batch of batches) {
            batch.folded = true
            heldRows -= rowsOf(batch).length
            unplaced.delete(batch)
          }
          const folded = new Set(batches)
          state.kept = state.kept.filter((batch) => !folded.has(batch))
          markFolded()
          // A journal INSERT that landed while the commit ran made rows it could not delete: delete them now (a
          // later one finds the batch folded and deletes its own; `ChargeJournal.write`).
          const late = batches.filter((batch) => batch.place?._tag === "Table" && !inTable.has(batch))
          return late.length === 0 || journal === undefined
            ? Effect.void
            : journal.forgetWithin(late.map((batch) => batch.id)).pipe(Effect.ignore)
        })
      ),
      Effect.catchCause(sqlErrorOf)
    )
  }

  const commit = <E>(given: Alongside<E> | undefined, final: boolean) =>
    leases.gate.withPermits(1)(Effect.gen(function* () {
      const collectNow = given === undefined || Effect.isEffect(given) ? undefined : given
      if (collectNow !== undefined) state.collector = collectNow
      // The charges and (through a function `alongside`) the rows of this batch, taken in one step.
      const taken = snapshot(leases.accounts.values(), final, leases.now(), idleMillis)
      const collect = collectNow ?? (final ? state.collector : undefined)
      const alongside = (collect === undefined ? given : collect()) as
        | Effect.Effect<void, unknown>
        | RowsAlongside<unknown>
        | undefined
      if (alongside !== undefined || taken.length > 0 || (final && leases.accounts.size > 0)) {
        keep({ id: crypto.randomUUID(), instance, alongside, taken, final, place: undefined })
      }
      if (state.kept.length > 0) {
        yield* fold(state.kept.slice()) as Effect.Effect<void, E | SqlError.SqlError>
        yield* pruneCommitIds
      }
      if (!final) yield* leases.renew
      leases.prune()
    })).pipe(Effect.uninterruptible)

  const take = (collect: () => RowsAlongside<unknown> | undefined): Batch | undefined => {
    const taken = snapshotCharges(leases.accounts.values())
    const alongside = collect()
    if (taken.length === 0 && alongside === undefined) return undefined
    const batch: Batch = { id: crypto.randomUUID(), instance, alongside, taken, final: false, place: undefined }
    keep(batch)
    return batch
  }

  const foldForeign = (batches: ReadonlyArray<Batch>) =>
    // A record read back writes its rows with the batch's own statements: its only failure is a `SqlError`.
    (batches.length === 0
      ? Effect.void
      : inOneTransaction(batches).pipe(Effect.catchCause(sqlErrorOf))) as Effect.Effect<
        void,
        SqlError.SqlError
      >

  const withdraw = (requestId: string, attempt: number, keys: ReadonlyArray<string>, amount: bigint): boolean => {
    for (const batch of state.kept) {
      if (batch.place !== undefined || folding.has(batch)) continue
      const rows = rowsOf(batch)
      const index = rows.findIndex((row) => row.requestId === requestId && row.attempt === attempt)
      if (index < 0) continue
      const row = rows[index]
      if (row.cost !== amount) return false
      ;(rows as Array<UsageRow>)[index] = { ...row, cost: 0n, status: 503, error: "quota_ledger_unavailable" }
      batch.taken = withdrawn(batch.taken, keys, amount)
      return true
    }
    return false
  }

  return {
    commit,
    take,
    withdraw,
    kept: () => state.kept,
    unjournaled: () => {
      for (const batch of unplaced) if (batch.place !== undefined) unplaced.delete(batch)
      return [...unplaced]
    },
    adopt: (batches) => {
      state.kept = [...batches, ...state.kept]
      for (const batch of batches) {
        heldRows += rowsOf(batch).length
        if (batch.place === undefined) unplaced.add(batch)
      }
    },
    foldForeign,
    pending: () => state.kept.flatMap((batch) => batch.taken),
    heldRows: () => heldRows
  }
}
