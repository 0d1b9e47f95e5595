/**
 * The ledger's lease table (`quota_leases`, migrations/0003_quota_leases.ts)
 * and the balances it leases from: taking a lease under the balance's row
 * lock, renewing this instance's lease rows (fencing), making a budget
 * window's row, reading a caller's stored balances, and adjusting balances
 * inside a caller's transaction without uncovering a live lease. The
 * arithmetic is `LeaseMath`'s; what a commit writes is `CommitSql`'s.
 *
 * @since 0.1.0
 */
import { Cause, Effect } from "effect"
import { type SqlClient, SqlError } from "effect/sql"
import { type AppliedBudget, storedBudgets } from "../../domain/BudgetPeriod.ts"
import {
  type Account,
  type BalanceOwner,
  type Balances,
  boundAdjustment,
  debitCap,
  leaseGrant,
  MAX_AMOUNT,
  type Subject
} from "./LeaseMath.ts"

/**
 * A failed transaction's cause with the `SqlError` it died of as its failure:
 * `effect/sql` turns a failed ROLLBACK (the connection died mid-transaction)
 * into a defect, and with it the statement's own failure. Other causes pass.
 */
export const sqlErrorOf = <E>(cause: Cause.Cause<E>): Effect.Effect<never, E | SqlError.SqlError> => {
  if (Cause.hasFails(cause)) return Effect.failCause(cause)
  const died = cause.reasons.find((reason) => Cause.isDieReason(reason) && SqlError.isSqlError(reason.defect))
  return died !== undefined && Cause.isDieReason(died) && SqlError.isSqlError(died.defect)
    ? Effect.fail(died.defect)
    : Effect.failCause(cause)
}

/**
 * The SQL side of one instance's leases (`instance`: its id in
 * `quota_leases`). A lease renewed within `staleMillis` counts; an older one
 * belongs to a dead instance.
 *
 * @category models
 */
export interface LeaseStore {
  /**
   * In one transaction under the balance's row lock, drops the balance's
   * stale leases and takes up to `want` more into this instance's lease if
   * at least `need` is available (`LeaseMath.leaseGrant`: `balance − live
   * leases`, the account's uncommitted `returned` counted back). Returns what
   * was taken and what was available; the caller adds `taken` to the
   * account. A connection that died mid-transaction fails with its `SqlError`.
   */
  readonly lease: (
    account: Account,
    need: bigint,
    want: bigint
  ) => Effect.Effect<{ readonly taken: bigint; readonly available: bigint }, SqlError.SqlError>
  /** Renews every lease row of this instance now; returns the keys (`subject:id`) of the rows it found. */
  readonly renew: Effect.Effect<ReadonlySet<string>, SqlError.SqlError>
  /**
   * The id of the `budget_periods` row of the window `[start, end)` (epoch
   * ms; `end` undefined for a total budget) of `budget` owned by
   * `subjectId`, made on first use (idempotent across instances).
   */
  readonly periodRow: (
    budget: AppliedBudget,
    subjectId: bigint,
    start: number,
    end: number | undefined
  ) => Effect.Effect<bigint, SqlError.SqlError>
  /** The stored balances of a token and its user (`undefined`: no such token). */
  readonly storedBalances: (tokenId: bigint) => Effect.Effect<Balances | undefined, SqlError.SqlError>
  /** `QuotaLedger.adjustWithin`: see there. */
  readonly adjustWithin: (owner: BalanceOwner, amount: bigint) => Effect.Effect<bigint, SqlError.SqlError>
}

/** The lease store of instance `instance` over `sql`, counting leases renewed within `staleMillis`. */
export const makeLeaseStore = (sql: SqlClient.SqlClient, instance: string, staleMillis: number): LeaseStore => {
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

  const lease = (account: Account, need: bigint, want: bigint) =>
    sql.withTransaction(Effect.gen(function* () {
      const [row] = account.subject === "budget"
        ? yield* budgetBalance(account.id)
        : account.subject === "user"
        ? yield* sql<{ readonly balance: bigint | null }>`
          SELECT quota AS balance FROM users WHERE id = ${account.id} FOR UPDATE`
        : yield* sql<{ readonly balance: bigint | null }>`
          SELECT remain_quota AS balance FROM tokens WHERE id = ${account.id} FOR UPDATE`
      // A dead instance's lease goes only once its journaled charges are folded (`billing/journal/ChargeJournal.ts`):
      // until then it still covers them, so they can never become spendable again.
      yield* sql`DELETE FROM quota_leases WHERE subject = ${account.subject} AND subject_id = ${account.id}
        AND renewed_at < now() - ${staleMillis} * interval '1 millisecond'
        AND NOT EXISTS (SELECT 1 FROM charge_journal j WHERE j.instance_id = quota_leases.instance_id)`
      const [leases] = yield* sql<{ readonly leased: bigint }>`
        SELECT COALESCE(SUM(amount), 0)::bigint AS leased FROM quota_leases
        WHERE subject = ${account.subject} AND subject_id = ${account.id}`
      const grant = leaseGrant(row?.balance ?? 0n, leases?.leased ?? 0n, account.returned, need, want)
      if (grant.taken === 0n) return grant
      yield* sql`INSERT INTO quota_leases (instance_id, subject, subject_id, amount)
        VALUES (${instance}, ${account.subject}, ${account.id}, ${grant.taken})
        ON CONFLICT (subject, subject_id, instance_id)
        DO UPDATE SET amount = quota_leases.amount + EXCLUDED.amount, renewed_at = now()`
      return grant
    })).pipe(
      // A connection that died mid-transaction is a failure to reach the database, not a defect.
      Effect.catchCause(sqlErrorOf)
    )

  const renew = Effect.suspend(() =>
    sql<{ readonly subject: Subject; readonly id: string }>`
      UPDATE quota_leases SET renewed_at = now() WHERE instance_id = ${instance}
      RETURNING subject, subject_id::text AS id`
  ).pipe(Effect.map((rows) => new Set(rows.map((row) => `${row.subject}:${row.id}`))))

  const periodRow = (budget: AppliedBudget, subjectId: bigint, start: number, end: number | undefined) =>
    sql<{ readonly id: bigint }>`
      INSERT INTO budget_periods (subject, subject_id, period, period_start, period_end)
      VALUES (${budget.owner}, ${subjectId}, ${budget.period},
        ${new Date(start)}, ${end === undefined ? null : new Date(end)})
      ON CONFLICT (subject, subject_id, period, period_start) DO UPDATE SET period = EXCLUDED.period
      RETURNING id`.pipe(Effect.map(([row]) => BigInt(row.id)))

  const storedBalances = (tokenId: bigint) =>
    sql<Balances>`
      SELECT t.remain_quota AS "tokenRemain", t.used_quota AS "tokenUsed", u.quota AS "userQuota",
             u.used_quota AS "userUsed"
      FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.id = ${tokenId}`.pipe(Effect.map(([row]) => row))

  /**
   * What no instance holds of a balance: `balance` less every lease renewed within `staleMillis`, or of an instance
   * whose journaled charges are not folded yet.
   */
  const unleased = (subject: Subject, id: bigint, balance: bigint) =>
    Effect.map(
      sql<{ readonly leased: bigint }>`
        SELECT COALESCE(SUM(amount), 0)::bigint AS leased FROM quota_leases l
        WHERE subject = ${subject} AND subject_id = ${id}
          AND (renewed_at >= now() - ${staleMillis} * interval '1 millisecond'
            OR EXISTS (SELECT 1 FROM charge_journal j WHERE j.instance_id = l.instance_id))`,
      ([row]) => BigInt(balance) - BigInt(row?.leased ?? 0n)
    )

  /**
   * Row locks in the order of every ledger commit (users, then tokens); a debit is capped at the balance less
   * every lease renewed within `staleMillis` (a dead instance's no longer counts).
   */
  const adjustWithin = Effect.fn("QuotaLedger.adjustWithin")(function* (owner: BalanceOwner, amount: bigint) {
    const open = yield* Effect.serviceOption(sql.transactionService)
    if (open._tag === "None") {
      return yield* Effect.die(new Error("QuotaLedger.adjustWithin runs inside the caller's transaction"))
    }
    const bounded = boundAdjustment(amount)
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
    const userUnleased = yield* unleased("user", owner.userId, user.balance)
    const tokenUnleased = token.balance === null ? undefined : yield* unleased("token", owner.tokenId, token.balance)
    const extra = debitCap(-bounded, userUnleased, tokenUnleased)
    if (extra <= 0n) return 0n
    yield* sql`UPDATE users SET quota = quota - ${extra}, used_quota = used_quota + ${extra}
      WHERE id = ${owner.userId}`
    yield* sql`UPDATE tokens SET remain_quota = CASE WHEN remain_quota IS NULL THEN NULL
        ELSE remain_quota - ${extra} END, used_quota = used_quota + ${extra}
      WHERE id = ${owner.tokenId}`
    return -extra
  })

  return { lease, renew, periodRow, storedBalances, adjustWithin }
}
