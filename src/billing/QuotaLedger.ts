/**
 * Quota accounting: pre-consume an estimate before the upstream call, settle
 * to the exact cost after it, refund everything on failure — without a
 * database write per request.
 *
 * Each gateway instance leases part of a balance (a user's `quota`, a limited
 * token's `remain_quota`) into memory with one conditional statement under a
 * row lock: it may take at most `balance − every live lease`, recorded in
 * `quota_leases`. Holds and refunds then move amounts inside the lease, in
 * memory and synchronously, so concurrent requests can never spend more than
 * was leased and a lease can never exceed the stored balance. Settled charges
 * are written with the usage log rows of the same period, in one transaction
 * (`commit`), so at every committed point `used_quota` equals the sum of the
 * logged costs. A balance idle for a second has its lease handed back; a
 * crashed instance's lease stops counting after two minutes
 * (migrations/0003_quota_leases.ts).
 *
 * Exactly once: every commit carries an id written in its own transaction
 * (`ledger_commits`, migrations/0004_exactly_once.ts). A commit that fails
 * (its outcome may be unknown: the connection lost at COMMIT) keeps its exact
 * batch — usage rows, charges, hand-backs, id — and the next commit re-runs it
 * first; the re-run begins by inserting the id, which finds it (waiting, if
 * the first try is still in flight) when the first try did commit, and then
 * writes nothing. Charges are never put back into memory, so never applied
 * twice. A transaction whose connection died mid-way fails its ROLLBACK too,
 * which `effect/sql` reports as a defect rather than a failure; such a batch
 * is kept all the same, and the commit fails with the `SqlError`.
 *
 * Rows and charges together: a commit given a function (`Alongside`) calls it
 * in the same synchronous step as it takes the settled charges, so the rows it
 * returns to write are exactly those of the charges written with them,
 * provided each row is recorded in the step its charge is booked (`settle`'s
 * `onBooked`). The final commit (layer close) calls the last such function
 * too, so a row recorded after the usage log's last flush still goes with its
 * charge.
 *
 * Fencing: an instance that has not renewed its lease rows for `staleMillis`
 * (the time after which another instance may drop them) serves no hold from
 * its lease; `reserve` first reaches the database again, or fails with
 * `LedgerUnavailable` (503).
 *
 * Amounts are quota units (micro-USD) as bigints, bounded to PostgreSQL BIGINT.
 *
 * This module is the service and its layer, which composes the parts in
 * `ledger/`: the lease arithmetic over plain values (`LeaseMath`,
 * `BudgetWindows`), the lease table's SQL (`LeaseStore`), this instance's
 * leases in memory with renewal and fencing (`Leases`, `Fencing`), holds and
 * settlements on balances and budgets (`BalanceHolds`, `BudgetHolds`), the
 * exactly-once group commit (`CommitBatcher`, writing `CommitSql`'s
 * statements), `Pruning` and `LedgerMetrics`.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Layer, type Scope, Semaphore } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { ChargeJournal } from "./journal/ChargeJournal.ts"
import type { BudgetExceeded, InsufficientQuota, InvalidRequest, LedgerUnavailable } from "../errors/GatewayError.ts"
import type { Principal } from "../services/Auth.ts"
import { makeBalanceHolds } from "./ledger/BalanceHolds.ts"
import { makeBudgetHolds } from "./ledger/BudgetHolds.ts"
import { type Alongside, makeCommitBatcher, type RowsAlongside } from "./ledger/CommitBatcher.ts"
import {
  accountKey,
  type BalanceOwner,
  type Balances,
  type Hold,
  pendingCharge,
  withPending
} from "./ledger/LeaseMath.ts"
import { makeLeases } from "./ledger/Leases.ts"
import { makeLeaseStore } from "./ledger/LeaseStore.ts"
import { registerLedgerMetrics } from "./ledger/LedgerMetrics.ts"
import { startGroupCommit } from "./usage-log/GroupCommit.ts"
import { makeUsageRowStore } from "./usage-log/UsageRowStore.ts"

/** The ledger's models, defined with the part that computes them (`ledger/`), under the names importers use. */
export { MAX_AMOUNT } from "./ledger/LeaseMath.ts"
export type { BalanceOwner, Balances, Hold } from "./ledger/LeaseMath.ts"
export type { Alongside, RowsAlongside } from "./ledger/CommitBatcher.ts"

/** How the ledger leases. @category models */
export interface LeaseOptions {
  /** Quota units taken beyond the shortfall when a lease is topped up (default 1,000,000 = 1 USD). */
  readonly chunk: bigint
  /** A balance with no hold for this long hands its lease back at the next commit (default 1,000 ms). */
  readonly idleMillis: number
  /**
   * A lease not renewed for this long belongs to a dead instance and stops counting (default 120,000 ms); an
   * instance that has not renewed its own for this long stops serving holds from them (fencing).
   */
  readonly staleMillis: number
  /**
   * The time budgets' periods are read from (epoch ms; default the layer's `Clock`, as every other time the ledger
   * reads): tests move it across a rollover.
   */
  readonly clock: (() => number) | undefined
  /**
   * Write a commit as one statement when it can be (default true; see `ledger/CommitBatcher.ts`); false always uses the
   * transaction of several statements (tests of what happens inside it).
   */
  readonly singleStatement: boolean
}

const defaults: LeaseOptions = {
  chunk: 1_000_000n,
  idleMillis: 1_000,
  staleMillis: 120_000,
  clock: undefined,
  singleStatement: true
}

/** @category services */
export class QuotaLedger extends Context.Service<QuotaLedger, {
  /**
   * Holds `amount` of the token's (unless unlimited) and the user's balance,
   * or fails with `InsufficientQuota` naming which balance is short; and of
   * the current window of every budget of the principal (`budgets`), or fails
   * with `BudgetExceeded` naming the budget and its reset. A
   * negative or oversized amount is an `InvalidRequest`. Fails with
   * `LedgerUnavailable` when the lease needs the database (a top-up, or a
   * renewal overdue by `staleMillis`) and the database cannot be reached.
   */
  readonly reserve: (
    principal: Principal,
    amount: bigint
  ) => Effect.Effect<Hold, InsufficientQuota | BudgetExceeded | InvalidRequest | LedgerUnavailable>
  /**
   * Charges `cost` against the hold: refunds `amount - cost`, or takes the
   * excess when the cost is higher (never below zero: the excess is capped at
   * what remains). Returns what was charged. Uninterruptible; idempotent.
   * The user's `request_count` counts charged requests: a hold released with
   * cost 0 (a failed request) leaves it alone. `onBooked` is called with the
   * charged amount in the very step the charge is booked (before any other
   * fiber runs, so before any commit can take the charge): the place to
   * record the request's usage row (`UsageLog.record`), which then always
   * travels in the same commit as its charge. A second settle of the same hold
   * calls it not at all.
   */
  readonly settle: (hold: Hold, cost: bigint, onBooked?: (charged: bigint) => void) => Effect.Effect<bigint>
  /**
   * Runs `alongside` (the usage log's insert) and writes the charges settled
   * since the last commit, plus idle leases handed back, in one transaction;
   * with nothing to write (no `alongside`, no charge, no lease to hand back) it
   * opens none, so an idle gateway does not touch the database on every tick.
   * A function `alongside` is called in the step the charges are taken (see
   * `Alongside`), after a pending re-run succeeded; the last one given is also
   * called by the final commit when the layer closes.
   * Renews this instance's lease rows when a quarter of `staleMillis` has passed
   * since the last renewal (a failed renewal is logged, not failed: the write
   * is done). On failure nothing is lost nor doubled: the failed transaction's
   * batch (`alongside` included) is kept and re-run first by the next commit,
   * and written at most once (see the module doc); while that re-run fails,
   * a commit fails before running its own `alongside`.
   */
  readonly commit: <E = never>(alongside?: Alongside<E>) => Effect.Effect<void, E | SqlError.SqlError>
  /** The caller's balances: stored values with the charges not yet committed. */
  readonly balances: (principal: Principal) => Effect.Effect<Balances>
  /**
   * Whether this instance may serve holds from its leases: false while its
   * lease rows went unrenewed for `staleMillis` (fencing; `GET /readyz`).
   */
  readonly serving: () => boolean
  /**
   * Applies a signed adjustment of `amount` quota units to the balances of
   * `owner` (the user, and the token unless unlimited) inside the caller's
   * open transaction, so it commits or rolls back with whatever the caller
   * writes beside it (the exactly-once guard, the usage row: `UsageLog.writeWithin`).
   * Positive is a credit (a refund): `quota` / `remain_quota` rise and
   * `used_quota` falls by `amount`, visible at once to every instance's lease
   * top-up (which reads the balance). Negative is a debit (an extra charge):
   * capped at what no instance holds — the balance less every live lease of
   * it, this instance's included — on both the user and a limited token, so
   * no lease is left uncovered. Returns what was applied: `amount` for a
   * credit, minus what was taken for a debit (0 when nothing could be).
   * `request_count` is left alone. Fails with the `SqlError` of a statement
   * (the caller's transaction then rolls back); called with no transaction
   * open, it dies. An amount beyond ±`MAX_AMOUNT` is bounded to it.
   */
  readonly adjustWithin: (owner: BalanceOwner, amount: bigint) => Effect.Effect<bigint, SqlError.SqlError>
  /**
   * With a charge journal (`ChargeJournal` in the layer's context), the effect that makes every charge booked
   * and every row `collect` gives durable before it resolves: the batch of both is taken in one step and written
   * to the journal (one append, or one group-committed INSERT shared by every caller meanwhile), and the next
   * commit folds it. Resolves true once written; false when no journal could write it (`ChargeJournal.write`):
   * the caller withholds the answer's end. `undefined` without a journal (the caller then waits for a commit).
   * `collect` is the usage log's row taker (`Alongside`), called in the step the charges are taken.
   */
  readonly durableWith: (
    collect: () => RowsAlongside<unknown> | undefined
  ) => Effect.Effect<Effect.Effect<boolean> | undefined, never, Scope.Scope>
  /** How many usage rows the batches not yet committed hold (the usage log's queue bound counts them). */
  readonly heldRows: () => number
  /**
   * Takes back what `hold` was charged (`charged`, booked with the usage row `(requestId, attempt)`) when no
   * journal holds its batch and no commit is writing it (`durable` answered false): the charge is not written,
   * the row is logged with cost 0 and status 503, and the amount goes back to the leases. For an answer withheld
   * whole (a JSON answer answered 503 `quota_ledger_unavailable`), so a failed request is not charged. Returns
   * whether it did; false: the charge stands (it is durable after all, or being committed), and the answer may be
   * delivered. Synchronous.
   */
  readonly withdraw: (hold: Hold, charged: bigint, requestId: string, attempt: number) => boolean
}>()("sluice/billing/QuotaLedger") {
  /** SQL-backed, leasing per `options`; hands every lease back when the layer closes. */
  static readonly layer = (options: Partial<LeaseOptions> = {}) =>
    Layer.effect(
      QuotaLedger,
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const { chunk, idleMillis, staleMillis, singleStatement, ...rest } = { ...defaults, ...options }
        const effectClock = yield* Clock.Clock
        const now = () => effectClock.currentTimeMillisUnsafe()
        const clock = rest.clock ?? now
        const instance = crypto.randomUUID()
        const store = makeLeaseStore(sql, instance, staleMillis)
        // Serializes lease top-ups, commits and balance reads, so each sees the lease rows and the
        // in-memory deltas in agreement.
        const gate = yield* Semaphore.make(1)
        const leases = makeLeases({ store, gate, scope: yield* Effect.scope, chunk, staleMillis, now })
        const balanceHolds = makeBalanceHolds(leases, chunk)
        const holds = makeBudgetHolds({ leases, store, balances: balanceHolds, clock })
        const journal = yield* Effect.serviceOption(ChargeJournal)
        const batcher = makeCommitBatcher({
          sql,
          instance,
          leases,
          idleMillis,
          oneStatement: singleStatement,
          writeRows: makeUsageRowStore(sql).writeRows,
          journal: journal._tag === "Some" ? journal.value.hooks : undefined
        })

        const balances = (principal: Principal): Effect.Effect<Balances> =>
          gate.withPermits(1)(
            store.storedBalances(principal.tokenId).pipe(
              Effect.map((row) => {
                const pending = (key: string) => pendingCharge(leases.accounts.get(key), batcher.pending(), key)
                return withPending(
                  row,
                  pending(accountKey("token", principal.tokenId)),
                  pending(accountKey("user", principal.userId))
                )
              }),
              // The ledger's own rules (docs/BILLING.md) decide its failures; this read keeps them unchanged.
              Effect.orDie
            )
          )

        // On close (after the usage log's last flush): write what is pending and delete every lease row of this
        // instance (a hold still open then is never settled here).
        yield* Effect.addFinalizer(() =>
          batcher.commit<never>(undefined, true).pipe(
            Effect.catch((error) => Effect.logError("Could not hand quota leases back", error.message))
          )
        )
        yield* registerLedgerMetrics(leases.accounts, () => batcher.kept().length)

        // Recovery: the journal file's records past its folded position are folded before the gateway serves.
        if (journal._tag === "Some" && journal.value.recovered.length > 0) {
          batcher.adopt(journal.value.recovered)
          yield* batcher.commit<never>(undefined, false).pipe(
            Effect.tap(() => Effect.logInfo("Charge journal recovered", { records: journal.value.recovered.length })),
            Effect.catch((error) =>
              Effect.logError("Could not fold the recovered charge journal; will retry", error.message)
            )
          )
        }

        /** A dead instance's journal rows (and this one's orphans), folded at most every quarter of `staleMillis`. */
        const foreignAt = { last: now() }
        const foldForeign = journal._tag === "None" || !journal.value.table ? Effect.void : Effect.suspend(() => {
          if (now() - foreignAt.last < staleMillis / 4) return Effect.void
          foreignAt.last = now()
          return journal.value.foreign(instance, staleMillis, 500).pipe(
            Effect.flatMap((batches) => {
              const kept = new Set(batcher.kept().map((batch) => batch.id))
              const orphans = batches.filter((batch) => !kept.has(batch.id))
              return orphans.length === 0 ? Effect.void : batcher.foldForeign(orphans).pipe(
                Effect.andThen(Effect.logInfo("Folded another instance's charge journal", {
                  records: orphans.length
                }))
              )
            }),
            Effect.catch((error) => Effect.logWarning("Could not fold a dead instance's charge journal", error.message))
          )
        })

        const durableWith = (collect: () => RowsAlongside<unknown> | undefined) =>
          Effect.gen(function* () {
            if (journal._tag === "None") return undefined
            const { write, table } = journal.value
            const takeAndWrite = Effect.suspend(() => {
              batcher.take(collect)
              return write(batcher.unjournaled())
            })
            // The file is written in the caller's step; the table by one INSERT for every caller meanwhile.
            if (!table) return takeAndWrite
            const group = yield* startGroupCommit(takeAndWrite, 3_600_000)
            return group.durable
          })

        return QuotaLedger.of({
          reserve: holds.reserve,
          settle: holds.settle,
          commit: <E = never>(alongside?: Alongside<E>) =>
            Effect.andThen(batcher.commit(alongside, false), foldForeign),
          balances,
          serving: () => !leases.fenced(),
          adjustWithin: store.adjustWithin,
          durableWith,
          heldRows: batcher.heldRows,
          withdraw: (hold, charged, requestId, attempt) => {
            const keys = [
              accountKey("token", hold.tokenId),
              accountKey("user", hold.userId),
              ...holds.chargedBudgets(hold).map((account) => accountKey(account.subject, account.id))
            ]
            if (!batcher.withdraw(requestId, attempt, keys, charged)) return false
            for (const key of keys) {
              const account = leases.accounts.get(key)
              if (account?.limited === true) account.free += charged
            }
            return true
          }
        })
      })
    )
}
