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
import { Clock, Context, Effect, Layer, Semaphore } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import type { BudgetExceeded, InsufficientQuota, InvalidRequest, LedgerUnavailable } from "../errors/GatewayError.ts"
import type { Principal } from "./Auth.ts"
import { makeBalanceHolds } from "./ledger/BalanceHolds.ts"
import { makeBudgetHolds } from "./ledger/BudgetHolds.ts"
import { type Alongside, makeCommitBatcher } from "./ledger/CommitBatcher.ts"
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
}>()("sluice/services/QuotaLedger") {
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
        const batcher = makeCommitBatcher({ sql, instance, leases, idleMillis, oneStatement: singleStatement })

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
        yield* registerLedgerMetrics(leases.accounts)

        return QuotaLedger.of({
          reserve: holds.reserve,
          settle: holds.settle,
          commit: <E = never>(alongside?: Alongside<E>) => batcher.commit(alongside, false),
          balances,
          serving: () => !leases.fenced(),
          adjustWithin: store.adjustWithin
        })
      })
    )
}
