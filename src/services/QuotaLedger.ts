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
 * @since 0.1.0
 */
import { Cause, Context, Effect, Layer, Semaphore } from "effect"
import { SqlClient, SqlError } from "effect/sql"
import { CurrentMetrics } from "../observability/Metrics.ts"
import { BudgetExceeded, InsufficientQuota, InvalidRequest, LedgerUnavailable } from "../errors/GatewayError.ts"
import { type AppliedBudget, type BudgetPeriod, storedBudgets, usd, windowOf } from "../domain/BudgetPeriod.ts"
import { insertUsageRows, isRowRejection } from "../storage/UsageRowsSql.ts"
import type { Principal } from "./Auth.ts"
import { enqueueBudgetThresholds, enqueueLowBalances, lowBalanceEvents } from "./WebhookOutbox.ts"

/** The largest amount a ledger operation accepts (PostgreSQL BIGINT). @category models */
export const MAX_AMOUNT = 9_223_372_036_854_775_807n

/** Whose balance an account leases from: a user's, a token's, or one window of a budget (a `budget_periods` row). */
type Subject = "user" | "token" | "budget"

/** What a budget account stands for: whose budget, which period, and the window it leases from. */
interface BudgetSlot {
  readonly owner: "token" | "user"
  readonly period: BudgetPeriod
  readonly amount: bigint
  readonly end: number | undefined
}

/**
 * One balance as this instance sees it. `free` is leased and not held;
 * `charged`, `returned` and `requests` are what the next commit writes.
 */
interface Account {
  readonly subject: Subject
  readonly id: bigint
  /** False for an unlimited token: nothing to lease, only charges to record. */
  readonly limited: boolean
  free: bigint
  charged: bigint
  returned: bigint
  requests: number
  holds: number
  lastUsed: number
  /** The lease size this account tops up to (grows with the holds it serves); a refill starts below half of it. */
  target: bigint
  /** A background refill is running. */
  refilling: boolean
  /** Set on a budget account (subject `budget`). */
  budget?: BudgetSlot
}

/**
 * Quota held for one request. `settled` flips once, so a hold is never
 * settled twice.
 *
 * @category models
 */
export interface Hold {
  readonly tokenId: bigint
  readonly userId: bigint
  readonly amount: bigint
  settled: boolean
}

/** A caller's balances in quota units, unflushed charges included. `tokenRemain` is null for an unlimited token. */
export interface Balances {
  readonly tokenRemain: bigint | null
  readonly tokenUsed: bigint
  readonly userQuota: bigint
  readonly userUsed: bigint
}

/** Whose balances an adjustment moves: a user and one of their tokens (ids). @category models */
export interface BalanceOwner {
  readonly userId: bigint
  readonly tokenId: bigint
}

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
  /** The time budgets' periods are read from (epoch ms; default `Date.now`): tests move it across a rollover. */
  readonly clock: () => number
  /**
   * Write a commit as one statement when it can be (default true; see `runBatch`); false always uses the
   * transaction of several statements (tests of what happens inside it).
   */
  readonly singleStatement: boolean
}

const defaults: LeaseOptions = {
  chunk: 1_000_000n,
  idleMillis: 1_000,
  staleMillis: 120_000,
  clock: () => Date.now(),
  singleStatement: true
}

const min = (left: bigint, right: bigint) => left < right ? left : right

/**
 * A failed transaction's cause with the `SqlError` it died of as its failure:
 * `effect/sql` turns a failed ROLLBACK (the connection died mid-transaction)
 * into a defect, and with it the statement's own failure. Other causes pass.
 */
const sqlErrorOf = <E>(cause: Cause.Cause<E>): Effect.Effect<never, E | SqlError.SqlError> => {
  if (Cause.hasFails(cause)) return Effect.failCause(cause)
  const died = cause.reasons.find((reason) => Cause.isDieReason(reason) && SqlError.isSqlError(reason.defect))
  return died !== undefined && Cause.isDieReason(died) && SqlError.isSqlError(died.defect)
    ? Effect.fail(died.defect)
    : Effect.failCause(cause)
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
        const { chunk, idleMillis, staleMillis, clock, singleStatement: oneStatement } = { ...defaults, ...options }
        const instance = crypto.randomUUID()
        const accounts = new Map<string, Account>()
        // Serializes lease top-ups, commits and balance reads, so each sees the lease rows and the
        // in-memory deltas in agreement.
        const gate = yield* Semaphore.make(1)
        const layerScope = yield* Effect.scope

        const accountOf = (subject: Subject, id: bigint, limited: boolean): Account => {
          const key = `${subject}:${id}`
          let account = accounts.get(key)
          if (account === undefined) {
            account = {
              subject,
              id,
              limited,
              free: 0n,
              charged: 0n,
              returned: 0n,
              requests: 0,
              holds: 0,
              lastUsed: 0,
              target: chunk,
              refilling: false
            }
            accounts.set(key, account)
          }
          return account
        }

        // --- Budgets (separate from the balance functions above and below, which only branch on the subject) ---

        /**
         * The room of one budget window, locked for the top-up's transaction:
         * the budget's amount (read from its owner's `budgets` now, so an edit
         * applies at once) less what was charged in the window. A budget no
         * longer set has no cap: its room is the largest amount.
         */
        const budgetBalance = (periodId: bigint) =>
          Effect.gen(function* () {
            const [period] = yield* sql<
              {
                readonly subject: "token" | "user"
                readonly subjectId: bigint
                readonly period: string
                readonly spent: bigint
              }
            >`SELECT subject, subject_id AS "subjectId", period, spent FROM budget_periods WHERE id = ${periodId}
              FOR UPDATE`
            if (period === undefined) return [{ balance: 0n }]
            const [owner] = period.subject === "token"
              ? yield* sql<{ readonly budgets: unknown }>`SELECT budgets FROM tokens WHERE id = ${period.subjectId}`
              : yield* sql<{ readonly budgets: unknown }>`SELECT budgets FROM users WHERE id = ${period.subjectId}`
            const budget = storedBudgets(owner?.budgets).find((entry) => entry.period === period.period)
            return [{ balance: (budget === undefined ? MAX_AMOUNT : budget.amount) - period.spent }]
          })

        /**
         * Adds the charges of budget accounts to their windows' `spent` (the same transaction as the usage rows),
         * and raises a `budget.threshold` webhook event for each threshold the spend crossed, in that transaction too.
         */
        const writeBudgetSpend = (taken: ReadonlyArray<{ readonly account: Account; readonly charged: bigint }>) =>
          Effect.suspend(() => {
            const spent = taken.filter((entry) => entry.account.subject === "budget" && entry.charged > 0n)
            if (spent.length === 0) return Effect.void
            return sql<
              {
                readonly id: bigint
                readonly subject: "token" | "user"
                readonly subjectId: bigint
                readonly userId: bigint
                readonly period: string
                readonly periodStart: Date
                readonly periodEnd: Date | null
                readonly before: bigint
                readonly after: bigint
              }
            >`UPDATE budget_periods p SET spent = p.spent + d.charged
              FROM unnest(${spent.map((entry) => String(entry.account.id))}::bigint[],
                ${spent.map((entry) => String(entry.charged))}::bigint[]) AS d(id, charged)
              WHERE p.id = d.id
              RETURNING p.id, p.subject, p.subject_id AS "subjectId", p.period, p.period_start AS "periodStart",
                p.period_end AS "periodEnd", p.spent - d.charged AS before, p.spent AS after,
                CASE p.subject WHEN 'user' THEN p.subject_id
                  ELSE (SELECT user_id FROM tokens WHERE id = p.subject_id) END AS "userId"`.pipe(
              Effect.flatMap((rows) =>
                enqueueBudgetThresholds(
                  sql,
                  rows.filter((row) => row.userId !== null).map((row) => ({
                    periodId: BigInt(row.id),
                    subject: row.subject,
                    subjectId: BigInt(row.subjectId),
                    userId: BigInt(row.userId),
                    period: row.period,
                    periodStart: new Date(row.periodStart),
                    periodEnd: row.periodEnd === null ? null : new Date(row.periodEnd),
                    before: BigInt(row.before),
                    after: BigInt(row.after)
                  }))
                )
              )
            )
          })

        /**
         * Takes up to `want` more into the account's lease if at least `need`
         * is available (`balance − live leases`, this instance's uncommitted
         * returns counted back). Returns what was taken and what was available.
         */
        const topUp = (account: Account, need: bigint, want: bigint) =>
          sql.withTransaction(Effect.gen(function* () {
            const [row] = account.subject === "budget"
              ? yield* budgetBalance(account.id)
              : account.subject === "user"
              ? yield* sql<{ readonly balance: bigint | null }>`
                SELECT quota AS balance FROM users WHERE id = ${account.id} FOR UPDATE`
              : yield* sql<{ readonly balance: bigint | null }>`
                SELECT remain_quota AS balance FROM tokens WHERE id = ${account.id} FOR UPDATE`
            yield* sql`DELETE FROM quota_leases WHERE subject = ${account.subject} AND subject_id = ${account.id}
              AND renewed_at < now() - ${staleMillis} * interval '1 millisecond'`
            const [leases] = yield* sql<{ readonly leased: bigint }>`
              SELECT COALESCE(SUM(amount), 0)::bigint AS leased FROM quota_leases
              WHERE subject = ${account.subject} AND subject_id = ${account.id}`
            const available = (row?.balance ?? 0n) - (leases?.leased ?? 0n) + account.returned
            if (available < need || available <= 0n) return { taken: 0n, available }
            const taken = min(available, want)
            yield* sql`INSERT INTO quota_leases (instance_id, subject, subject_id, amount)
              VALUES (${instance}, ${account.subject}, ${account.id}, ${taken})
              ON CONFLICT (subject, subject_id, instance_id)
              DO UPDATE SET amount = quota_leases.amount + EXCLUDED.amount, renewed_at = now()`
            return { taken, available }
          })).pipe(
            // A connection that died mid-transaction is a failure to reach the database, not a defect.
            Effect.catchCause(sqlErrorOf),
            Effect.tap(({ taken }) => Effect.sync(() => account.free += taken))
          )

        const take = (account: Account, amount: bigint) => {
          if (account.limited) account.free -= amount
          account.lastUsed = Date.now()
        }

        /** Whether the account's lease should be topped up in the background (see `refillLater`). */
        const wantsRefill = (account: Account) =>
          account.limited && !account.refilling && account.free * 2n < account.target

        /**
         * Tops the lease up in the background once it falls below half its
         * target, so requests under steady load find it covered and never wait
         * for the database (nor for a commit holding the gate).
         */
        const refillLater = (account: Account) =>
          !wantsRefill(account) ? Effect.void : Effect.suspend(
            () => {
              account.refilling = true
              return gate.withPermits(1)(
                Effect.suspend(() =>
                  account.free >= account.target ? Effect.void : topUp(account, 0n, account.target - account.free)
                )
              ).pipe(
                Effect.catch((error) => Effect.logWarning("Could not top a quota lease up", error.message)),
                Effect.ensuring(Effect.sync(() => {
                  account.refilling = false
                })),
                Effect.forkIn(layerScope),
                Effect.asVoid
              )
            }
          )

        const covers = (account: Account, amount: bigint) => !account.limited || account.free >= amount

        /** Takes a covered hold out of both leases; starts a background refill where one runs low. */
        const holdOf = (principal: Principal, amount: bigint, token: Account, user: Account): Effect.Effect<Hold> => {
          take(token, amount)
          take(user, amount)
          const hold: Hold = { tokenId: principal.tokenId, userId: principal.userId, amount, settled: false }
          return wantsRefill(token) || wantsRefill(user)
            ? Effect.as(Effect.andThen(refillLater(token), refillLater(user)), hold)
            : Effect.succeed(hold)
        }

        /** Tops up whichever lease does not cover `amount`, under the gate, until both do (or one cannot). */
        const topUpToCover = (token: Account, user: Account, amount: bigint) =>
          gate.withPermits(1)(Effect.gen(function* () {
            // Overdue: the leases may be gone; renewing finds out (and zeroes what is gone) or fails.
            if (fenced()) yield* renewNow
            // Holds taken on the fast path while this fiber waits may use up a top-up: loop until both cover.
            while (!covers(token, amount) || !covers(user, amount)) {
              for (const account of [token, user]) {
                if (covers(account, amount)) continue
                const shortfall = amount - account.free
                // Enough for many holds of this size, so a burst of them takes few trips to the database.
                if (amount * 64n > account.target) account.target = min(amount * 64n, MAX_AMOUNT)
                const { taken, available } = yield* topUp(
                  account,
                  shortfall,
                  min(shortfall + account.target, MAX_AMOUNT)
                ).pipe(Effect.andThen((result) => Effect.as(renewNow, result)))
                if (taken === 0n) {
                  return yield* new InsufficientQuota({
                    required: amount,
                    remaining: (available > 0n ? available : 0n) + account.free,
                    scope: account.subject === "user" ? "user" : "token"
                  })
                }
              }
            }
          })).pipe(
            Effect.catchTag("SqlError", (error) =>
              Effect.logWarning("Quota ledger cannot reach the database", error.reason._tag).pipe(
                Effect.andThen(Effect.fail(new LedgerUnavailable()))
              ))
          )

        // Synchronous when both leases already cover the amount (the steady state) and the lease rows were renewed
        // within `staleMillis`; otherwise reaches the database first.
        const reserveBalances = (
          principal: Principal,
          amount: bigint
        ): Effect.Effect<Hold, InsufficientQuota | InvalidRequest | LedgerUnavailable> =>
          Effect.suspend((): Effect.Effect<Hold, InsufficientQuota | InvalidRequest | LedgerUnavailable> => {
            if (amount < 0n || amount > MAX_AMOUNT) {
              return Effect.fail(new InvalidRequest({ message: `Quota amount out of range: ${amount}`, param: "" }))
            }
            const token = accountOf("token", principal.tokenId, !principal.unlimitedQuota)
            const user = accountOf("user", principal.userId, true)
            // Counted as held from here, so a commit meanwhile neither hands the lease back nor forgets the account.
            token.holds += 1
            user.holds += 1
            if (covers(token, amount) && covers(user, amount) && !fenced()) {
              return holdOf(principal, amount, token, user)
            }
            return topUpToCover(token, user, amount).pipe(
              Effect.onExit((exit) =>
                Effect.sync(() => {
                  if (exit._tag === "Success") {
                    return
                  }
                  token.holds -= 1
                  user.holds -= 1
                })
              ),
              Effect.andThen(Effect.suspend(() =>
                holdOf(principal, amount, token, user)
              ))
            )
          })

        /** Takes `excess` beyond a hold from the leases (topping them up if needed), capped at what remains. */
        const takeExcess = (token: Account, user: Account, excess: bigint) =>
          Effect.gen(function* () {
            const room = () => min(token.limited ? token.free : MAX_AMOUNT, user.free)
            if (room() < excess) {
              yield* gate.withPermits(1)(Effect.gen(function* () {
                for (const account of [token, user]) {
                  if (!account.limited || account.free >= excess) continue
                  const shortfall = excess - account.free
                  yield* topUp(account, 0n, min(shortfall + chunk, MAX_AMOUNT)).pipe(
                    // The excess is capped at what the leases hold; the database is needed for more.
                    Effect.catch((error) => Effect.logWarning("Could not top a quota lease up", error.message))
                  )
                }
              }))
            }
            const extra = min(excess, room())
            if (token.limited) token.free -= extra
            user.free -= extra
            return extra
          })

        /** Books a settled charge: refunds the rest of the hold (and any excess taken) to both leases. */
        const book = (hold: Hold, token: Account, user: Account, charged: bigint, extra: bigint): bigint => {
          const refund = hold.amount + extra - charged
          for (const account of [token, user]) {
            if (account.limited) account.free += refund
            account.charged += charged
            account.holds -= 1
            account.lastUsed = Date.now()
          }
          if (charged > 0n) user.requests += 1
          return charged
        }

        // Synchronous when the cost is within the hold (the usual case); an excess is taken from the leases.
        const settleBalances = (
          hold: Hold,
          requested: bigint,
          onBooked?: (charged: bigint) => void
        ): Effect.Effect<bigint> =>
          Effect.suspend(() => {
            if (hold.settled) return Effect.succeed(0n)
            hold.settled = true
            const cost = requested < 0n ? 0n : requested > MAX_AMOUNT ? MAX_AMOUNT : requested
            const token = accounts.get(`token:${hold.tokenId}`)!
            const user = accounts.get(`user:${hold.userId}`)!
            // Booking and `onBooked` in one synchronous step: no commit can take the charge without its row.
            const booked = (charged: bigint, extra: bigint) => {
              book(hold, token, user, charged, extra)
              onBooked?.(charged)
              return charged
            }
            if (cost <= hold.amount) return Effect.succeed(booked(cost, 0n))
            return takeExcess(token, user, cost - hold.amount).pipe(
              Effect.map((extra) => booked(hold.amount + extra, extra)),
              Effect.uninterruptible
            )
          })

        // --- Budgets: holds and settlements on the budget windows, around the balance's own ---

        /** A budget's window and its account, per `owner:id:period:timezone`, reused until the window ends. */
        const windows = new Map<string, { readonly start: number; readonly end: number | undefined; id: bigint }>()

        /**
         * The live account of a budget window: `accountOf`'s, so one that `prune` dropped (nothing leased, held
         * or pending) is made again rather than used detached, where its charges would never be committed.
         */
        const windowAccount = (id: bigint, budget: AppliedBudget, end: number | undefined) => {
          const account = accountOf("budget", id, true)
          const slot = account.budget
          if (slot === undefined || slot.amount !== budget.amount || slot.end !== end) {
            account.budget = { owner: budget.owner, period: budget.period, amount: budget.amount, end }
            account.target = budgetTarget(budget.amount)
          }
          return account
        }

        /** The window keys of a principal's budgets (`owner:id:period:timezone`), made once per principal object. */
        const windowKeys = new WeakMap<Principal, ReadonlyArray<string>>()
        const keysOf = (principal: Principal): ReadonlyArray<string> => {
          let keys = windowKeys.get(principal)
          if (keys === undefined) {
            keys = (principal.budgets ?? []).map((budget) =>
              `${budget.owner}:${
                budget.owner === "token" ? principal.tokenId : principal.userId
              }:${budget.period}:${budget.timezone}`
            )
            windowKeys.set(principal, keys)
          }
          return keys
        }

        /** The accounts of the principal's current windows when each is known (no database), else `undefined`. */
        const knownAccounts = (principal: Principal, now: number): Array<Account> | undefined => {
          const budgets = principal.budgets ?? []
          const keys = keysOf(principal)
          const found: Array<Account> = []
          for (let index = 0; index < budgets.length; index++) {
            const known = windows.get(keys[index])
            if (known === undefined || now < known.start || (known.end !== undefined && now >= known.end)) {
              return undefined
            }
            found.push(windowAccount(known.id, budgets[index], known.end))
          }
          return found
        }
        /** The budget accounts a hold took, so its settlement books them (the `Hold` shape stays the balance's). */
        const budgetHolds = new WeakMap<Hold, ReadonlyArray<Account>>()

        /** The `budget_periods` row of a window, made on first use (idempotent across instances). */
        const periodRow = (principal: Principal, budget: AppliedBudget, start: number, end: number | undefined) =>
          sql<{ readonly id: bigint }>`
            INSERT INTO budget_periods (subject, subject_id, period, period_start, period_end)
            VALUES (${budget.owner}, ${
            budget.owner === "token" ? principal.tokenId : principal.userId
          }, ${budget.period},
              ${new Date(start)}, ${end === undefined ? null : new Date(end)})
            ON CONFLICT (subject, subject_id, period, period_start) DO UPDATE SET period = EXCLUDED.period
            RETURNING id`.pipe(Effect.map(([row]) => BigInt(row.id)))

        /**
         * The accounts of the windows of `principal`'s budgets that contain
         * now: synchronous while each window is known, else one statement per
         * new window. Spend is charged to these windows, the ones the request
         * started in.
         */
        const budgetAccounts = (principal: Principal) =>
          Effect.suspend(() => {
            const now = clock()
            const found: Array<Account> = []
            const missing: Array<{ key: string; budget: AppliedBudget; start: number; end: number | undefined }> = []
            const keys = keysOf(principal)
            for (const [index, budget] of (principal.budgets ?? []).entries()) {
              const key = keys[index]
              const known = windows.get(key)
              if (known !== undefined && now >= known.start && (known.end === undefined || now < known.end)) {
                found.push(windowAccount(known.id, budget, known.end))
                continue
              }
              const { start, end } = windowOf(budget.period, budget.timezone, now)
              missing.push({ key, budget, start, end })
            }
            if (missing.length === 0) return Effect.succeed(found)
            return Effect.forEach(missing, ({ key, budget, start, end }) =>
              periodRow(principal, budget, start, end).pipe(Effect.map((id) => {
                windows.set(key, { start, end, id })
                return windowAccount(id, budget, end)
              }))).pipe(
                Effect.map((made) => [...found, ...made]),
                Effect.catchTag(
                  "SqlError",
                  (error) =>
                    Effect.logWarning("Quota ledger cannot reach the database", error.reason._tag).pipe(
                      Effect.andThen(Effect.fail(new LedgerUnavailable()))
                    )
                )
              )
          })

        /**
         * The lease a budget window tops up to: an eighth of the budget (beyond the shortfall of a hold), so that
         * with several instances most of a small budget stays in the table for whichever instance needs it, rather
         * than idle in one instance's lease while another refuses.
         */
        const budgetTarget = (amount: bigint) => amount / 8n > 0n ? amount / 8n : 1n

        const periodNames: Record<BudgetPeriod, string> = {
          day: "daily",
          week: "weekly",
          month: "monthly",
          total: "total"
        }

        /** The refusal for a budget window that cannot cover `amount` (`remaining` counted by the caller). */
        const exceeded = (account: Account, amount: bigint, remaining: bigint) => {
          const slot = account.budget!
          const whose = slot.owner === "token" ? "key's" : "user's"
          const left = remaining > 0n ? remaining : 0n
          const resets = slot.end === undefined
            ? "it does not reset"
            : `it resets at ${new Date(slot.end).toISOString()}`
          return new BudgetExceeded({
            message: `The ${whose} ${periodNames[slot.period]} budget of ${usd(slot.amount)} is used up: ` +
              `${usd(left)} of it is left and this request needs up to ${usd(amount)}; ${resets}.`,
            ...(slot.end === undefined
              ? {}
              : { retryAfterSeconds: Math.max(1, Math.ceil((slot.end - clock()) / 1000)) })
          })
        }

        /**
         * Holds `amount` in every budget account, as the balance's holds do:
         * synchronously when each lease covers it, else under the gate with
         * top-ups (the amount is taken under the gate too). Fails with
         * `BudgetExceeded` for the first window that cannot cover it.
         */
        const holdBudgets = (accounts: ReadonlyArray<Account>, amount: bigint) =>
          Effect.suspend((): Effect.Effect<void, BudgetExceeded | LedgerUnavailable> => {
            for (const account of accounts) account.holds += 1
            if (accounts.every((account) => covers(account, amount)) && !fenced()) {
              for (const account of accounts) take(account, amount)
              return Effect.forEach(accounts, refillLater, { discard: true })
            }
            return gate.withPermits(1)(Effect.gen(function* () {
              if (fenced()) yield* renewNow
              for (const account of accounts) {
                while (!covers(account, amount)) {
                  const shortfall = amount - account.free
                  const { taken, available } = yield* topUp(
                    account,
                    shortfall,
                    min(shortfall + account.target, MAX_AMOUNT)
                  )
                    .pipe(Effect.andThen((result) => Effect.as(renewNow, result)))
                  if (taken === 0n) {
                    return yield* exceeded(account, amount, (available > 0n ? available : 0n) + account.free)
                  }
                }
              }
              for (const account of accounts) take(account, amount)
            })).pipe(
              Effect.catchTag(
                "SqlError",
                (error) =>
                  Effect.logWarning("Quota ledger cannot reach the database", error.reason._tag).pipe(
                    Effect.andThen(Effect.fail(new LedgerUnavailable()))
                  )
              ),
              Effect.onError(() =>
                Effect.sync(() => {
                  for (const account of accounts) account.holds -= 1
                })
              )
            )
          })

        /** Gives a budget hold back whole (the balance's hold failed after it was taken). */
        const releaseBudgets = (accounts: ReadonlyArray<Account>, amount: bigint) =>
          Effect.sync(() => {
            for (const account of accounts) {
              account.free += amount
              account.holds -= 1
            }
          })

        // The balance's hold unchanged when the principal has no budget; else the budgets' first, then the balance's.
        const reserve = (
          principal: Principal,
          amount: bigint
        ): Effect.Effect<Hold, InsufficientQuota | BudgetExceeded | InvalidRequest | LedgerUnavailable> => {
          if (principal.budgets === undefined || principal.budgets.length === 0 || amount < 0n || amount > MAX_AMOUNT) {
            return reserveBalances(principal, amount)
          }
          // The steady state: every window known and covered by its lease, so the budget holds are taken here.
          const known = knownAccounts(principal, clock())
          if (known !== undefined && !fenced() && known.every((account) => covers(account, amount))) {
            for (const account of known) {
              account.holds += 1
              take(account, amount)
            }
            const balance = reserveBalances(principal, amount).pipe(
              Effect.map((hold) => {
                budgetHolds.set(hold, known)
                return hold
              }),
              Effect.onError(() => releaseBudgets(known, amount))
            )
            return Effect.uninterruptible(
              known.some(wantsRefill)
                ? Effect.andThen(Effect.forEach(known, refillLater, { discard: true }), balance)
                : balance
            )
          }
          return Effect.uninterruptible(Effect.gen(function* () {
            const accounts = yield* budgetAccounts(principal)
            yield* holdBudgets(accounts, amount)
            const hold = yield* reserveBalances(principal, amount).pipe(
              Effect.onError(() => releaseBudgets(accounts, amount))
            )
            budgetHolds.set(hold, accounts)
            return hold
          }))
        }

        /** Takes `excess` beyond a hold from the budget windows' leases (topping them up if needed), capped at what remains. */
        const takeBudgetExcess = (accounts: ReadonlyArray<Account>, excess: bigint) =>
          Effect.gen(function* () {
            const room = () => accounts.reduce((least, account) => min(least, account.free), MAX_AMOUNT)
            if (room() < excess) {
              yield* gate.withPermits(1)(Effect.forEach(accounts, (account) =>
                account.free >= excess
                  ? Effect.void
                  : topUp(account, 0n, min(excess - account.free + account.target, MAX_AMOUNT)).pipe(
                    Effect.catch((error) => Effect.logWarning("Could not top a budget lease up", error.message))
                  ), { discard: true }))
            }
            const extra = min(excess, room() > 0n ? room() : 0n)
            for (const account of accounts) account.free -= extra
            return extra
          })

        /**
         * Books a settled charge on the budget windows of its hold: refunds
         * the rest of the hold and of any excess taken; called in the step the
         * balance's charge is booked, so a commit takes both or neither.
         */
        const bookBudgets = (accounts: ReadonlyArray<Account>, held: bigint, charged: bigint) => {
          for (const account of accounts) {
            account.free += held - charged
            account.charged += charged
            account.holds -= 1
            account.lastUsed = Date.now()
          }
        }

        // The balance's settlement unchanged for a hold without budgets; else the budgets bound the excess and are
        // booked with the balance's charge, in the same synchronous step.
        const settle = (hold: Hold, requested: bigint, onBooked?: (charged: bigint) => void): Effect.Effect<bigint> =>
          Effect.suspend(() => {
            const accounts = budgetHolds.get(hold)
            if (accounts === undefined || hold.settled) return settleBalances(hold, requested, onBooked)
            budgetHolds.delete(hold)
            const cost = requested < 0n ? 0n : requested > MAX_AMOUNT ? MAX_AMOUNT : requested
            const withBudgets = (held: bigint) => (charged: bigint) => {
              bookBudgets(accounts, held, charged)
              onBooked?.(charged)
            }
            if (cost <= hold.amount) return settleBalances(hold, cost, withBudgets(hold.amount))
            return takeBudgetExcess(accounts, cost - hold.amount).pipe(
              Effect.flatMap((extra) => settleBalances(hold, hold.amount + extra, withBudgets(hold.amount + extra))),
              Effect.uninterruptible
            )
          })

        /** Moves idle (or, with `all`, every) free lease to `returned` and takes the pending deltas out. */
        const snapshot = (all: boolean) => {
          const now = Date.now()
          const taken: Array<{ account: Account; charged: bigint; returned: bigint; requests: number }> = []
          for (const account of accounts.values()) {
            if (account.free > 0n && account.holds === 0 && (all || now - account.lastUsed >= idleMillis)) {
              account.returned += account.free
              account.free = 0n
            }
            if (account.charged === 0n && account.returned === 0n && account.requests === 0) continue
            taken.push({ account, charged: account.charged, returned: account.returned, requests: account.requests })
            account.charged = 0n
            account.returned = 0n
            account.requests = 0
          }
          return taken
        }

        const writeDeltas = (taken: ReturnType<typeof snapshot>) =>
          Effect.gen(function* () {
            const users = taken.filter((entry) => entry.account.subject === "user" && entry.charged > 0n)
            const tokens = taken.filter((entry) => entry.account.subject === "token" && entry.charged > 0n)
            const leases = taken.filter((entry) => entry.account.limited)
            const ids = (entries: typeof taken) => entries.map((entry) => String(entry.account.id))
            if (users.length > 0) {
              // Charges come out of leases, so the balance covers them; GREATEST only guards the one case where a
              // lease expired unrenewed (a database outage longer than staleMillis): a floor, never a stuck batch.
              yield* sql`UPDATE users u SET quota = GREATEST(u.quota - d.charged, 0), used_quota = u.used_quota + d.charged,
                  request_count = u.request_count + d.requests
                FROM unnest(${ids(users)}::bigint[], ${users.map((entry) => String(entry.charged))}::bigint[],
                  ${users.map((entry) => entry.requests)}::bigint[]) AS d(id, charged, requests)
                WHERE u.id = d.id`
            }
            if (tokens.length > 0) {
              yield* sql`UPDATE tokens t SET remain_quota = CASE WHEN t.remain_quota IS NULL THEN NULL
                    ELSE GREATEST(t.remain_quota - d.charged, 0) END,
                  used_quota = t.used_quota + d.charged
                FROM unnest(${ids(tokens)}::bigint[], ${tokens.map((entry) => String(entry.charged))}::bigint[])
                  AS d(id, charged)
                WHERE t.id = d.id`
            }
            yield* writeBudgetSpend(taken)
            yield* enqueueLowBalances(
              sql,
              users.map((entry) => ({ userId: entry.account.id, charged: entry.charged }))
            )
            if (leases.length > 0) {
              yield* sql`UPDATE quota_leases l SET amount = GREATEST(l.amount - d.delta, 0)
                FROM unnest(${leases.map((entry) => entry.account.subject)}::text[], ${ids(leases)}::bigint[],
                  ${leases.map((entry) => String(entry.charged + entry.returned))}::bigint[])
                  AS d(subject, id, delta)
                WHERE l.instance_id = ${instance} AND l.subject = d.subject AND l.subject_id = d.id`
              yield* sql`DELETE FROM quota_leases WHERE instance_id = ${instance} AND amount = 0`
            }
          })

        /**
         * When `renew` last tried (epoch ms); from the start, since a lease row is fresh when made: every row is
         * renewed within a quarter of `staleMillis` (and a commit tick) of its making or last renewal.
         */
        let renewedAt = Date.now()
        /**
         * When the last successful renewal of every lease row of this instance started (epoch ms): the rows were
         * at least this fresh. Past `staleMillis` another instance may have dropped them, so none is served from.
         */
        let reachedAt = Date.now()
        const fenced = () => Date.now() - reachedAt > staleMillis

        /**
         * Renews every lease row of this instance now (held parts too: a
         * stream may hold for many minutes); a lease found gone (it went
         * unrenewed past `staleMillis`) no longer backs this instance's free
         * amount. With no account there is no lease to renew.
         */
        const renewNow: Effect.Effect<void, SqlError.SqlError> = Effect.suspend(() => {
          const started = Date.now()
          renewedAt = started
          if (accounts.size === 0) {
            reachedAt = started
            return Effect.void
          }
          return sql<{ readonly subject: Subject; readonly id: string }>`
            UPDATE quota_leases SET renewed_at = now() WHERE instance_id = ${instance}
            RETURNING subject, subject_id::text AS id`.pipe(
            Effect.map((rows) => {
              const alive = new Set(rows.map((row) => `${row.subject}:${row.id}`))
              for (const account of accounts.values()) {
                if (account.limited && account.free > 0n && !alive.has(`${account.subject}:${account.id}`)) {
                  account.free = 0n
                }
              }
              reachedAt = started
            })
          )
        })

        /** `renewNow` once a quarter of the stale time has passed: three renewals can fail before a lease may go. */
        const renew = Effect.suspend(() =>
          Date.now() - renewedAt < staleMillis / 4 && !fenced() ? Effect.void : renewNow.pipe(
            Effect.catch((error) => Effect.logWarning("Could not renew the quota leases", error.message))
          )
        )

        /**
         * Forgets accounts with nothing leased, held or pending, nor a background refill running (it would lease
         * into an account no longer in the map: a lease no hold could use and no commit would hand back).
         */
        const prune = () => {
          for (const [key, account] of accounts) {
            if (
              account.holds === 0 && account.free === 0n && account.charged === 0n && account.returned === 0n &&
              account.requests === 0 && !account.refilling
            ) accounts.delete(key)
          }
        }

        /** A commit whose transaction failed, kept whole to be re-run first (see the module doc). */
        interface Batch {
          readonly id: string
          readonly alongside: Effect.Effect<void, unknown> | RowsAlongside<unknown> | undefined
          readonly taken: ReturnType<typeof snapshot>
          /** The final commit: hands every lease row of this instance back. */
          readonly final: boolean
        }
        let retry: Batch | undefined
        let lastPrune = 0
        /** The last function `alongside` given to `commit`: the final commit collects with it too. */
        let collector: (() => Effect.Effect<void, unknown> | RowsAlongside<unknown> | undefined) | undefined

        /**
         * Writes a batch in one transaction that first claims its id: an id already there means an earlier try of
         * this batch committed, and nothing more is written. However the transaction ends other than committed
         * (a failure, or a defect: a ROLLBACK on a dead connection dies), the batch is kept to be re-run, and a
         * `SqlError` found as a defect becomes the failure again.
         */
        const runBatch = (batch: Batch) => {
          const rows = batch.alongside !== undefined && isRows(batch.alongside) ? batch.alongside : undefined
          // Budget spend comes back to raise its threshold events: such a batch takes the statements.
          const single = oneStatement && !batch.final &&
            (batch.alongside === undefined || rows?.tuples !== undefined) &&
            !batch.taken.some((entry) => entry.account.subject === "budget" && entry.charged > 0n)
          return (single
            ? singleStatement(batch, rows?.tuples).pipe(
              // A row the database refused: the statements, which set it aside alone.
              Effect.catchIf(
                (error) => rows !== undefined && isRowRejection(error),
                () => inTransaction(batch, rows?.write)
              )
            )
            : inTransaction(batch, rows?.write ?? (batch.alongside as Effect.Effect<void, unknown> | undefined))).pipe(
              Effect.onExit((exit) =>
                Effect.sync(() => {
                  retry = exit._tag === "Success" ? undefined : batch
                })
              ),
              Effect.catchCause(sqlErrorOf)
            )
        }

        /** The batch in a transaction of several statements (see `runBatch`). */
        const inTransaction = (batch: Batch, alongside: Effect.Effect<void, unknown> | undefined) =>
          sql.withTransaction(Effect.gen(function* () {
            const claimed = yield* sql`INSERT INTO ledger_commits (id) VALUES (${batch.id})
              ON CONFLICT (id) DO NOTHING RETURNING id`
            if (claimed.length === 0) return
            if (alongside !== undefined) yield* alongside
            yield* writeDeltas(batch.taken)
            if (batch.final) yield* sql`DELETE FROM quota_leases WHERE instance_id = ${instance}`
          }))

        /**
         * The batch as one statement (atomic on its own: one round trip, no BEGIN or COMMIT): the id claimed, and
         * only if it was claimed, the usage rows inserted and the charges and lease changes written — what
         * `inTransaction` does in nine. A delivered answer waits for its commit, so on a lightly loaded gateway
         * every answer makes one; this keeps that to one statement.
         */
        const singleStatement = (batch: Batch, tuples: string | undefined) => {
          const taken = batch.taken
          const users = taken.filter((entry) => entry.account.subject === "user" && entry.charged > 0n)
          const tokens = taken.filter((entry) => entry.account.subject === "token" && entry.charged > 0n)
          const leases = taken.filter((entry) => entry.account.limited)
          const ids = (entries: typeof taken) => entries.map((entry) => String(entry.account.id))
          const claimed = "EXISTS (SELECT 1 FROM claim)"
          const parts = [
            `claim AS (INSERT INTO ledger_commits (id) VALUES ($1) ON CONFLICT (id) DO NOTHING RETURNING id)`
          ]
          const params: Array<unknown> = [batch.id]
          const param = (value: unknown) => {
            params.push(value)
            return `$${params.length}`
          }
          if (tuples !== undefined) {
            parts.push(`logged AS (${insertUsageRows(`${param(tuples)}::jsonb`, claimed)} RETURNING 1)`)
          }
          if (users.length > 0) {
            parts.push(`charged_users AS (UPDATE users u SET quota = GREATEST(u.quota - d.charged, 0),
                used_quota = u.used_quota + d.charged, request_count = u.request_count + d.requests
              FROM unnest(${param(ids(users))}::bigint[], ${
              param(users.map((entry) => String(entry.charged)))
            }::bigint[], ${param(users.map((entry) => entry.requests))}::bigint[]) AS d(id, charged, requests)
              WHERE u.id = d.id AND ${claimed} RETURNING u.id, u.quota, u.used_quota, d.charged)`)
            parts.push(`low_balances AS (${lowBalanceEvents("charged_users")} RETURNING 1)`)
          }
          if (tokens.length > 0) {
            parts.push(`charged_tokens AS (UPDATE tokens t SET remain_quota = CASE WHEN t.remain_quota IS NULL THEN NULL
                ELSE GREATEST(t.remain_quota - d.charged, 0) END, used_quota = t.used_quota + d.charged
              FROM unnest(${param(ids(tokens))}::bigint[], ${
              param(tokens.map((entry) => String(entry.charged)))
            }::bigint[]) AS d(id, charged)
              WHERE t.id = d.id AND ${claimed} RETURNING 1)`)
          }
          if (leases.length > 0) {
            const deltas = `unnest(${param(leases.map((entry) => entry.account.subject))}::text[], ${
              param(ids(leases))
            }::bigint[], ${
              param(leases.map((entry) => String(entry.charged + entry.returned)))
            }::bigint[]) AS d(subject, id, delta)`
            const mine = `l.instance_id = ${param(instance)} AND l.subject = d.subject AND l.subject_id = d.id`
            // A lease that falls to zero is deleted, any other lowered (two statements on disjoint rows).
            parts.push(`leases_kept AS (UPDATE quota_leases l SET amount = l.amount - d.delta FROM ${deltas}
              WHERE ${mine} AND l.amount > d.delta AND ${claimed} RETURNING 1)`)
            parts.push(`leases_gone AS (DELETE FROM quota_leases l USING ${deltas}
              WHERE ${mine} AND l.amount <= d.delta AND ${claimed} RETURNING 1)`)
          }
          return sql.unsafe(`WITH ${parts.join(",\n")} SELECT count(*) AS claimed FROM claim`, params).pipe(
            Effect.asVoid
          )
        }

        /** Forgets commit ids older than a week, at most once an hour. */
        const pruneCommitIds = Effect.suspend(() => {
          if (Date.now() - lastPrune < 3_600_000) return Effect.void
          lastPrune = Date.now()
          return sql`DELETE FROM ledger_commits WHERE committed_at < now() - interval '7 days'`.pipe(
            Effect.catch((error) => Effect.logWarning("Could not prune ledger commit ids", error.message)),
            Effect.asVoid
          )
        })

        const commitWith = <E>(given: Alongside<E> | undefined, final: boolean) =>
          gate.withPermits(1)(Effect.gen(function* () {
            const collectNow = given === undefined || Effect.isEffect(given) ? undefined : given
            if (collectNow !== undefined) collector = collectNow
            if (retry !== undefined) yield* runBatch(retry) as Effect.Effect<void, E | SqlError.SqlError>
            // The charges and (through a function `alongside`) the rows of this batch, taken in one step.
            const taken = snapshot(final)
            const collect = collectNow ?? (final ? collector : undefined)
            const alongside = (collect === undefined ? given : collect()) as
              | Effect.Effect<void, E>
              | RowsAlongside<E>
              | undefined
            if (alongside !== undefined || taken.length > 0 || (final && accounts.size > 0)) {
              yield* runBatch({ id: crypto.randomUUID(), alongside, taken, final }) as Effect.Effect<
                void,
                E | SqlError.SqlError
              >
              yield* pruneCommitIds
            }
            if (!final) yield* renew
            prune()
          })).pipe(Effect.uninterruptible)

        const commit = <E = never>(alongside?: Alongside<E>) => commitWith(alongside, false)

        const balances = (principal: Principal): Effect.Effect<Balances> =>
          gate.withPermits(1)(
            sql<Balances>`
              SELECT t.remain_quota AS "tokenRemain", t.used_quota AS "tokenUsed", u.quota AS "userQuota",
                     u.used_quota AS "userUsed"
              FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.id = ${principal.tokenId}`.pipe(
              Effect.map(([row]) => {
                const pendingOf = (key: string) =>
                  (accounts.get(key)?.charged ?? 0n) +
                  (retry?.taken ?? []).reduce(
                    (sum, entry) => `${entry.account.subject}:${entry.account.id}` === key ? sum + entry.charged : sum,
                    0n
                  )
                const token = pendingOf(`token:${principal.tokenId}`)
                const user = pendingOf(`user:${principal.userId}`)
                return {
                  tokenRemain: row?.tokenRemain === null || row?.tokenRemain === undefined
                    ? null
                    : row.tokenRemain - token,
                  tokenUsed: (row?.tokenUsed ?? 0n) + token,
                  userQuota: (row?.userQuota ?? 0n) - user,
                  userUsed: (row?.userUsed ?? 0n) + user
                }
              }),
              Effect.orDie
            )
          )

        // On close (after the usage log's last flush): write what is pending and delete every lease row of this
        // instance (a hold still open then is never settled here).
        yield* Effect.addFinalizer(() =>
          commitWith<never>(undefined, true).pipe(
            Effect.catch((error) => Effect.logError("Could not hand quota leases back", error.message))
          )
        )

        const metrics = yield* CurrentMetrics
        if (metrics !== undefined) {
          const live = (account: Account) => account.limited && (account.free > 0n || account.holds > 0)
          const unregister = [
            metrics.pull("sluice_quota_leases", "Balances this instance holds a quota lease on", () => {
              let count = 0
              for (const account of accounts.values()) if (live(account)) count++
              return count
            }),
            metrics.pull("sluice_quota_leased_amount", "Quota units leased to this instance and not held", () => {
              let free = 0n
              for (const account of accounts.values()) if (account.limited) free += account.free
              return Number(free)
            })
          ]
          yield* Effect.addFinalizer(() => Effect.sync(() => unregister.forEach((remove) => remove())))
        }

        /**
         * `adjustWithin`: row locks in the order of every ledger commit (users, then tokens); a debit is capped at
         * the balance less every lease renewed within `staleMillis` (a dead instance's no longer counts).
         */
        const adjustWithin = Effect.fn("QuotaLedger.adjustWithin")(function* (owner: BalanceOwner, amount: bigint) {
          const open = yield* Effect.serviceOption(sql.transactionService)
          if (open._tag === "None") {
            return yield* Effect.die(new Error("QuotaLedger.adjustWithin runs inside the caller's transaction"))
          }
          const bounded = amount > MAX_AMOUNT ? MAX_AMOUNT : amount < -MAX_AMOUNT ? -MAX_AMOUNT : amount
          if (bounded === 0n) return 0n
          if (bounded > 0n) {
            yield* sql`UPDATE users SET quota = quota + ${bounded}, used_quota = GREATEST(used_quota - ${bounded}, 0)
              WHERE id = ${owner.userId}`
            yield* sql`UPDATE tokens SET remain_quota = CASE WHEN remain_quota IS NULL THEN NULL
                ELSE remain_quota + ${bounded} END, used_quota = GREATEST(used_quota - ${bounded}, 0)
              WHERE id = ${owner.tokenId} AND user_id = ${owner.userId}`
            return bounded
          }
          const [user] = yield* sql<{ readonly balance: bigint }>`
            SELECT quota AS balance FROM users WHERE id = ${owner.userId} FOR UPDATE`
          const [token] = yield* sql<{ readonly balance: bigint | null }>`
            SELECT remain_quota AS balance FROM tokens WHERE id = ${owner.tokenId} AND user_id = ${owner.userId}
            FOR UPDATE`
          if (user === undefined || token === undefined) return 0n
          const unleased = (subject: Subject, id: bigint, balance: bigint) =>
            Effect.map(
              sql<{ readonly leased: bigint }>`
                SELECT COALESCE(SUM(amount), 0)::bigint AS leased FROM quota_leases
                WHERE subject = ${subject} AND subject_id = ${id}
                  AND renewed_at >= now() - ${staleMillis} * interval '1 millisecond'`,
              ([row]) => BigInt(balance) - BigInt(row?.leased ?? 0n)
            )
          let extra = min(-bounded, yield* unleased("user", owner.userId, user.balance))
          if (token.balance !== null) extra = min(extra, yield* unleased("token", owner.tokenId, token.balance))
          if (extra <= 0n) return 0n
          yield* sql`UPDATE users SET quota = quota - ${extra}, used_quota = used_quota + ${extra}
            WHERE id = ${owner.userId}`
          yield* sql`UPDATE tokens SET remain_quota = CASE WHEN remain_quota IS NULL THEN NULL
              ELSE remain_quota - ${extra} END, used_quota = used_quota + ${extra}
            WHERE id = ${owner.tokenId}`
          return -extra
        })

        return QuotaLedger.of({ reserve, settle, commit, balances, serving: () => !fenced(), adjustWithin })
      })
    )
}
