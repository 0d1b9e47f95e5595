/**
 * Holds and settlements on the current windows of a principal's budgets,
 * around the balance's own (`BalanceHolds`): a principal without budgets
 * takes the balance's path unchanged; else every window is held first, then
 * the balance, and a settlement books the windows in the very step the
 * balance's charge is booked, so a commit takes both or neither.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { AppliedBudget } from "../../domain/BudgetPeriod.ts"
import type { BudgetExceeded, InsufficientQuota, InvalidRequest, LedgerUnavailable } from "../../errors/GatewayError.ts"
import { windowOf } from "../../domain/BudgetPeriod.ts"
import type { Principal } from "../../services/Auth.ts"
import { type BalanceHolds, unavailable } from "./BalanceHolds.ts"
import { budgetOwnerId, budgetRefusal, isCurrent, type KnownWindow, windowKey } from "./BudgetWindows.ts"
import {
  type Account,
  bookBudgets,
  boundCost,
  budgetRoom,
  budgetTarget,
  covers,
  type Hold,
  outOfRange,
  releaseBudgets,
  remainingAfter,
  take,
  takeBudgetExtra,
  topUpWant,
  wantsRefill
} from "./LeaseMath.ts"
import type { Leases } from "./Leases.ts"
import type { LeaseStore } from "./LeaseStore.ts"

/**
 * `QuotaLedger.reserve` and `settle` with budgets.
 *
 * @category models
 */
export interface BudgetHolds {
  /** `QuotaLedger.reserve`: see there. */
  readonly reserve: (
    principal: Principal,
    amount: bigint
  ) => Effect.Effect<Hold, InsufficientQuota | BudgetExceeded | InvalidRequest | LedgerUnavailable>
  /** `QuotaLedger.settle`: see there. */
  readonly settle: (hold: Hold, requested: bigint, onBooked?: (charged: bigint) => void) => Effect.Effect<bigint>
  /** The budget windows' accounts a settled hold charged (none: no budget), while the hold is referenced. */
  readonly chargedBudgets: (hold: Hold) => ReadonlyArray<Account>
}

/** A budget window a request is charged to: its `budget_periods` row id, its budget and its end (epoch ms). */
interface HeldWindow {
  readonly id: bigint
  readonly budget: AppliedBudget
  readonly end: number | undefined
}

/**
 * Budget holds over `balances`, leasing from `leases` and making window rows
 * in `store`; `clock` (epoch ms) is the time budgets' periods are read from.
 */
export const makeBudgetHolds = (options: {
  readonly leases: Leases
  readonly store: LeaseStore
  readonly balances: BalanceHolds
  readonly clock: () => number
}): BudgetHolds => {
  const { leases, store, balances, clock } = options
  const { gate, fenced, renewNow, topUp, refillLater } = leases

  /** A budget's window and its account, per `windowKey`, reused until the window ends. */
  const windows = new Map<string, KnownWindow>()
  /** The window keys of a principal's budgets, made once per principal object. */
  const windowKeys = new WeakMap<Principal, ReadonlyArray<string>>()
  /** The budget accounts a hold took, so its settlement books them (the `Hold` shape stays the balance's). */
  const budgetHolds = new WeakMap<Hold, ReadonlyArray<Account>>()
  /** The windows a settled hold charged, for a charge taken back (`QuotaLedger.withdraw`). */
  const settledBudgets = new WeakMap<Hold, ReadonlyArray<Account>>()

  const keysOf = (principal: Principal): ReadonlyArray<string> => {
    let keys = windowKeys.get(principal)
    if (keys === undefined) {
      keys = (principal.budgets ?? []).map((budget) => windowKey(principal, budget))
      windowKeys.set(principal, keys)
    }
    return keys
  }

  /**
   * The live account of a budget window: `accountOf`'s, so one that `prune` dropped (nothing leased, held
   * or pending) is made again rather than used detached, where its charges would never be committed.
   */
  const windowAccount = (id: bigint, budget: AppliedBudget, end: number | undefined) => {
    const account = leases.accountOf("budget", id, true)
    const slot = account.budget
    if (slot === undefined || slot.amount !== budget.amount || slot.end !== end) {
      account.budget = { owner: budget.owner, period: budget.period, amount: budget.amount, end }
      account.target = budgetTarget(budget.amount)
    }
    return account
  }

  /** The accounts of the principal's current windows when each is known (no database), else `undefined`. */
  const knownAccounts = (principal: Principal, now: number): Array<Account> | undefined => {
    const budgets = principal.budgets ?? []
    const keys = keysOf(principal)
    const found: Array<Account> = []
    for (let index = 0; index < budgets.length; index++) {
      const known = windows.get(keys[index])
      if (known === undefined || !isCurrent(known, now)) return undefined
      found.push(windowAccount(known.id, budgets[index], known.end))
    }
    return found
  }

  /**
   * The windows of `principal`'s budgets that contain now (each with the budget it is of): synchronous while each
   * window is known, else one statement per new window. Spend is charged to these windows, the ones the request
   * started in. Windows, not accounts: an account made here would hold nothing while the statements of the next
   * windows run, and a commit meanwhile would prune it, leaving a detached account whose charges no commit writes
   * (the key charged, its budget window not); `holdBudgets` makes the accounts and counts their hold in one step.
   */
  const budgetWindows = (principal: Principal) =>
    Effect.suspend(() => {
      const now = clock()
      const found: Array<HeldWindow> = []
      const missing: Array<{ key: string; budget: AppliedBudget; start: number; end: number | undefined }> = []
      const keys = keysOf(principal)
      for (const [index, budget] of (principal.budgets ?? []).entries()) {
        const key = keys[index]
        const known = windows.get(key)
        if (known !== undefined && isCurrent(known, now)) {
          found.push({ id: known.id, budget, end: known.end })
          continue
        }
        const { start, end } = windowOf(budget.period, budget.timezone, now)
        missing.push({ key, budget, start, end })
      }
      if (missing.length === 0) return Effect.succeed(found)
      return Effect.forEach(missing, ({ key, budget, start, end }) =>
        store.periodRow(budget, budgetOwnerId(principal, budget), start, end).pipe(Effect.map((id): HeldWindow => {
          windows.set(key, { start, end, id })
          return { id, budget, end }
        }))).pipe(
          Effect.map((made) => [...found, ...made]),
          Effect.catchTag("SqlError", unavailable)
        )
    })

  /**
   * Holds `amount` in the account of every window, as the balance's holds do: the accounts are made (or found)
   * and their hold counted in one synchronous step, so no commit prunes one before it is held; then the amount is
   * taken synchronously when each lease covers it, else under the gate with top-ups (the amount is taken under the
   * gate too). Returns the accounts held. Fails with `BudgetExceeded` for the first window that cannot cover it.
   */
  const holdBudgets = (held: ReadonlyArray<HeldWindow>, amount: bigint) =>
    Effect.suspend((): Effect.Effect<ReadonlyArray<Account>, BudgetExceeded | LedgerUnavailable> => {
      const accounts = held.map(({ id, budget, end }) => windowAccount(id, budget, end))
      for (const account of accounts) account.holds += 1
      if (accounts.every((account) => covers(account, amount)) && !fenced()) {
        const now = leases.now()
        for (const account of accounts) take(account, amount, now)
        return Effect.as(Effect.forEach(accounts, refillLater, { discard: true }), accounts)
      }
      return gate.withPermits(1)(Effect.gen(function* () {
        if (fenced()) yield* renewNow
        for (const account of accounts) {
          while (!covers(account, amount)) {
            const shortfall = amount - account.free
            const { taken, available } = yield* topUp(account, shortfall, topUpWant(shortfall, account.target))
              .pipe(Effect.andThen((result) => Effect.as(renewNow, result)))
            if (taken === 0n) {
              return yield* budgetRefusal(account.budget!, amount, remainingAfter(available, account.free), clock())
            }
          }
        }
        const now = leases.now()
        for (const account of accounts) take(account, amount, now)
        return accounts
      })).pipe(
        Effect.catchTag("SqlError", unavailable),
        Effect.onError(() =>
          Effect.sync(() => {
            for (const account of accounts) account.holds -= 1
          })
        )
      )
    })

  const release = (accounts: ReadonlyArray<Account>, amount: bigint) =>
    Effect.sync(() => releaseBudgets(accounts, amount))

  // The balance's hold unchanged when the principal has no budget; else the budgets' first, then the balance's.
  const reserve = (
    principal: Principal,
    amount: bigint
  ): Effect.Effect<Hold, InsufficientQuota | BudgetExceeded | InvalidRequest | LedgerUnavailable> => {
    if (principal.budgets === undefined || principal.budgets.length === 0 || outOfRange(amount)) {
      return balances.reserve(principal, amount)
    }
    // The steady state: every window known and covered by its lease, so the budget holds are taken here.
    const known = knownAccounts(principal, clock())
    if (known !== undefined && !fenced() && known.every((account) => covers(account, amount))) {
      const now = leases.now()
      for (const account of known) {
        account.holds += 1
        take(account, amount, now)
      }
      const balance = balances.reserve(principal, amount).pipe(
        Effect.map((hold) => {
          budgetHolds.set(hold, known)
          return hold
        }),
        Effect.onError(() => release(known, amount))
      )
      return Effect.uninterruptible(
        known.some(wantsRefill)
          ? Effect.andThen(Effect.forEach(known, refillLater, { discard: true }), balance)
          : balance
      )
    }
    return Effect.uninterruptible(Effect.gen(function* () {
      const accounts = yield* holdBudgets(yield* budgetWindows(principal), amount)
      const hold = yield* balances.reserve(principal, amount).pipe(Effect.onError(() => release(accounts, amount)))
      budgetHolds.set(hold, accounts)
      return hold
    }))
  }

  /** Takes `excess` beyond a hold from the budget windows' leases (topping them up if needed), capped at what remains. */
  const takeExcess = (accounts: ReadonlyArray<Account>, excess: bigint) =>
    Effect.gen(function* () {
      if (budgetRoom(accounts) < excess) {
        yield* gate.withPermits(1)(Effect.forEach(accounts, (account) =>
          account.free >= excess
            ? Effect.void
            : topUp(account, 0n, topUpWant(excess - account.free, account.target)).pipe(
              Effect.catch((error) =>
                Effect.logWarning("Could not top a budget lease up", error.message)
              )
            ), { discard: true }))
      }
      return takeBudgetExtra(accounts, excess)
    })

  // The balance's settlement unchanged for a hold without budgets; else the budgets bound the excess and are
  // booked with the balance's charge, in the same synchronous step.
  const settle = (hold: Hold, requested: bigint, onBooked?: (charged: bigint) => void): Effect.Effect<bigint> =>
    Effect.suspend(() => {
      const accounts = budgetHolds.get(hold)
      if (accounts === undefined || hold.settled) return balances.settle(hold, requested, onBooked)
      budgetHolds.delete(hold)
      settledBudgets.set(hold, accounts)
      const cost = boundCost(requested)
      const withBudgets = (held: bigint) => (charged: bigint) => {
        bookBudgets(accounts, held, charged, leases.now())
        onBooked?.(charged)
      }
      if (cost <= hold.amount) return balances.settle(hold, cost, withBudgets(hold.amount))
      return takeExcess(accounts, cost - hold.amount).pipe(
        Effect.flatMap((extra) => balances.settle(hold, hold.amount + extra, withBudgets(hold.amount + extra))),
        Effect.uninterruptible
      )
    })

  return { reserve, settle, chargedBudgets: (hold) => settledBudgets.get(hold) ?? [] }
}
