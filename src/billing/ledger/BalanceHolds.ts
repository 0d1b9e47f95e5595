/**
 * Holds and settlements on a caller's balances (the token's, unless
 * unlimited, and the user's): synchronous while both leases cover the amount
 * and this instance is not fenced (the steady state), else under the gate
 * with top-ups from the table. Budgets wrap these (`BudgetHolds`).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { InsufficientQuota, InvalidRequest, LedgerUnavailable } from "../../errors/GatewayError.ts"
import type { Principal } from "../../services/Auth.ts"
import {
  type Account,
  accountKey,
  balanceRoom,
  bookBalances,
  boundCost,
  covers,
  grownTarget,
  type Hold,
  min,
  outOfRange,
  remainingAfter,
  take,
  takeBalanceExtra,
  topUpWant,
  wantsRefill
} from "./LeaseMath.ts"
import type { Leases } from "./Leases.ts"

/**
 * The balance side of `QuotaLedger.reserve` and `settle`.
 *
 * @category models
 */
export interface BalanceHolds {
  /**
   * Holds `amount` of the token's (unless unlimited) and the user's balance,
   * or fails with `InsufficientQuota` naming which is short; `InvalidRequest`
   * for an amount out of range; `LedgerUnavailable` when the database is
   * needed and cannot be reached.
   */
  readonly reserve: (
    principal: Principal,
    amount: bigint
  ) => Effect.Effect<Hold, InsufficientQuota | InvalidRequest | LedgerUnavailable>
  /**
   * Charges `requested` (bounded to `[0, MAX_AMOUNT]`) against the hold,
   * calling `onBooked` in the step the charge is booked; 0 for a hold
   * already settled. An excess beyond the hold is taken from the leases,
   * capped at what they hold.
   */
  readonly settle: (hold: Hold, requested: bigint, onBooked?: (charged: bigint) => void) => Effect.Effect<bigint>
}

/** Logs that the ledger cannot reach the database and fails with `LedgerUnavailable` (503). */
export const unavailable = (error: { readonly reason: { readonly _tag: string } }) =>
  Effect.logWarning("Quota ledger cannot reach the database", error.reason._tag).pipe(
    Effect.andThen(Effect.fail(new LedgerUnavailable()))
  )

/** The balance holds of `leases`; `chunk` is what an excess tops a lease up by beyond the shortfall. */
export const makeBalanceHolds = (leases: Leases, chunk: bigint): BalanceHolds => {
  const { gate, fenced, renewNow, topUp, refillLater } = leases

  /** Takes a covered hold out of both leases; starts a background refill where one runs low. */
  const holdOf = (principal: Principal, amount: bigint, token: Account, user: Account): Effect.Effect<Hold> => {
    const now = leases.now()
    take(token, amount, now)
    take(user, amount, now)
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
          account.target = grownTarget(account.target, amount)
          const { taken, available } = yield* topUp(account, shortfall, topUpWant(shortfall, account.target)).pipe(
            Effect.andThen((result) => Effect.as(renewNow, result))
          )
          if (taken === 0n) {
            return yield* new InsufficientQuota({
              required: amount,
              remaining: remainingAfter(available, account.free),
              scope: account.subject === "user" ? "user" : "token"
            })
          }
        }
      }
    })).pipe(Effect.catchTag("SqlError", unavailable))

  // Synchronous when both leases already cover the amount (the steady state) and the lease rows were renewed
  // within `staleMillis`; otherwise reaches the database first.
  const reserve = (
    principal: Principal,
    amount: bigint
  ): Effect.Effect<Hold, InsufficientQuota | InvalidRequest | LedgerUnavailable> =>
    Effect.suspend((): Effect.Effect<Hold, InsufficientQuota | InvalidRequest | LedgerUnavailable> => {
      if (outOfRange(amount)) {
        return Effect.fail(new InvalidRequest({ message: `Quota amount out of range: ${amount}`, param: "" }))
      }
      const token = leases.accountOf("token", principal.tokenId, !principal.unlimitedQuota)
      const user = leases.accountOf("user", principal.userId, true)
      // Counted as held from here, so a commit meanwhile neither hands the lease back nor forgets the account.
      token.holds += 1
      user.holds += 1
      if (covers(token, amount) && covers(user, amount) && !fenced()) return holdOf(principal, amount, token, user)
      return topUpToCover(token, user, amount).pipe(
        Effect.onExit((exit) =>
          Effect.sync(() => {
            if (exit._tag === "Success") return
            token.holds -= 1
            user.holds -= 1
          })
        ),
        Effect.andThen(Effect.suspend(() => holdOf(principal, amount, token, user)))
      )
    })

  /** Takes `excess` beyond a hold from the leases (topping them up if needed), capped at what remains. */
  const takeExcess = (token: Account, user: Account, excess: bigint) =>
    Effect.gen(function* () {
      if (balanceRoom(token, user) < excess) {
        yield* gate.withPermits(1)(Effect.forEach([token, user], (account) =>
          !account.limited || account.free >= excess
            ? Effect.void
            : topUp(account, 0n, topUpWant(excess - account.free, chunk)).pipe(
              // The excess is capped at what the leases hold; the database is needed for more.
              Effect.catch((error) =>
                Effect.logWarning("Could not top a quota lease up", error.message)
              )
            ), { discard: true }))
      }
      const extra = min(excess, balanceRoom(token, user))
      takeBalanceExtra(token, user, extra)
      return extra
    })

  // Synchronous when the cost is within the hold (the usual case); an excess is taken from the leases.
  const settle = (hold: Hold, requested: bigint, onBooked?: (charged: bigint) => void): Effect.Effect<bigint> =>
    Effect.suspend(() => {
      if (hold.settled) return Effect.succeed(0n)
      hold.settled = true
      const cost = boundCost(requested)
      const token = leases.accounts.get(accountKey("token", hold.tokenId))!
      const user = leases.accounts.get(accountKey("user", hold.userId))!
      // Booking and `onBooked` in one synchronous step: no commit can take the charge without its row.
      const booked = (charged: bigint, extra: bigint) => {
        bookBalances(hold.amount, token, user, charged, extra, leases.now())
        onBooked?.(charged)
        return charged
      }
      if (cost <= hold.amount) return Effect.succeed(booked(cost, 0n))
      return takeExcess(token, user, cost - hold.amount).pipe(
        Effect.map((extra) => booked(hold.amount + extra, extra)),
        Effect.uninterruptible
      )
    })

  return { reserve, settle }
}
