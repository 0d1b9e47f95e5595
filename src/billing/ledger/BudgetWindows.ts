/**
 * Budgets' part of the lease arithmetic, over plain values: which window of
 * a budget a moment falls in (known windows cached per budget key), the key
 * of a principal's budget window, and the refusal for a window that cannot
 * cover a hold.
 *
 * @since 0.1.0
 */
import { type AppliedBudget, type BudgetPeriod, usd } from "../../domain/BudgetPeriod.ts"
import { BudgetExceeded } from "../../errors/GatewayError.ts"
import type { Principal } from "../../services/Auth.ts"
import type { BudgetSlot } from "./LeaseMath.ts"

/**
 * A budget window this instance has a `budget_periods` row for: `[start, end)`
 * in epoch ms (`end` undefined: the window never ends) and the row's id.
 *
 * @category models
 */
export interface KnownWindow {
  readonly start: number
  readonly end: number | undefined
  readonly id: bigint
}

/** Whether `now` (epoch ms) falls in the window. */
export const isCurrent = (window: KnownWindow, now: number): boolean =>
  now >= window.start && (window.end === undefined || now < window.end)

/** The key of a principal's budget window cache entry: `owner:ownerId:period:timezone`. */
export const windowKey = (principal: Principal, budget: AppliedBudget): string =>
  `${budget.owner}:${
    budget.owner === "token" ? principal.tokenId : principal.userId
  }:${budget.period}:${budget.timezone}`

/** Whose id a budget is stored under: the token's or the user's. */
export const budgetOwnerId = (principal: Principal, budget: AppliedBudget): bigint =>
  budget.owner === "token" ? principal.tokenId : principal.userId

const periodNames: Record<BudgetPeriod, string> = {
  day: "daily",
  week: "weekly",
  month: "monthly",
  total: "total"
}

/**
 * The refusal for a budget window (`slot`) that cannot cover `amount`:
 * `remaining` (floored at 0) is what is left of it, `now` (epoch ms) gives
 * the `retryAfterSeconds` of a window that resets (at least 1).
 */
export const budgetRefusal = (slot: BudgetSlot, amount: bigint, remaining: bigint, now: number): BudgetExceeded => {
  const whose = slot.owner === "token" ? "key's" : "user's"
  const left = remaining > 0n ? remaining : 0n
  const resets = slot.end === undefined ? "it does not reset" : `it resets at ${new Date(slot.end).toISOString()}`
  return new BudgetExceeded({
    message: `The ${whose} ${periodNames[slot.period]} budget of ${usd(slot.amount)} is used up: ` +
      `${usd(left)} of it is left and this request needs up to ${usd(amount)}; ${resets}.`,
    ...(slot.end === undefined ? {} : { retryAfterSeconds: Math.max(1, Math.ceil((slot.end - now) / 1000)) })
  })
}
