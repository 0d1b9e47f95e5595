/**
 * The rules of a user's keys over plain values: what is stored of a new key
 * (its SHA-256 digest and display prefix, never the key), limits and expiry
 * as stored, a key's budgets within the user's, and the console playground's
 * token (its digest that no key matches, its name, its listed prefix). Pure.
 *
 * @since 0.1.0
 */
import { type BudgetList, fromSpec, storedBudgets, usd } from "../../domain/BudgetPeriod.ts"
import { hashKey, keyPrefix } from "../../domain/KeyHash.ts"
import type { TokenLimits } from "./TokenViews.ts"

/**
 * The stored digest of a user's playground token: not a SHA-256 hex digest,
 * so no key a caller presents can ever match it (the token has no key), and
 * unique per user (`tokens.key_hash` is unique).
 *
 * @category constants
 */
export const playgroundDigest = (userId: bigint): string => `playground:${userId}`

/** The masked text the playground token lists instead of a key prefix. @category constants */
export const PLAYGROUND_PREFIX = "no key: console only"

/**
 * The name the playground token takes on the `attempt`-th try (1 to 10):
 * `Playground`, then `Playground 2` to `Playground 9`, then `Playground` and
 * a suffix from `randomSuffix` (called only then) when nine names are taken.
 */
export const playgroundName = (attempt: number, randomSuffix: () => string): string =>
  attempt === 1 ? "Playground" : attempt < 10 ? `Playground ${attempt}` : `Playground ${randomSuffix()}`

/** What is stored of a new key: its SHA-256 hex digest and its display prefix (first 7 characters). */
export const storedKey = (key: string): { readonly hash: string; readonly prefix: string } => ({
  hash: hashKey(key),
  prefix: keyPrefix(key)
})

/** Limits as stored: `null` for none (an empty object is none too), else JSON text. */
export const limitsJson = (limits: TokenLimits | null | undefined): string | null =>
  limits === null || limits === undefined || Object.keys(limits).length === 0 ? null : JSON.stringify(limits)

/** An expiry in epoch seconds as a date; `null` or absent is none. */
export const expiryDate = (seconds: number | null | undefined): Date | null =>
  seconds === null || seconds === undefined ? null : new Date(seconds * 1000)

/**
 * Why a key's `budgets` are refused, or `undefined` when each is within the
 * user's budget of the same period (`userBudgets`: the user's stored JSON;
 * a period the user has no budget for is not capped). `param` names the
 * first budget over its cap.
 */
export const budgetRefusal = (
  userBudgets: unknown,
  budgets: typeof BudgetList.Type | null | undefined
): { readonly message: string; readonly param: string } | undefined => {
  if (budgets === undefined || budgets === null || budgets.length === 0) return undefined
  const caps = storedBudgets(userBudgets)
  const wanted = fromSpec(budgets)
  const index = wanted.findIndex((budget) =>
    caps.some((cap) => cap.period === budget.period && budget.amount > cap.amount)
  )
  if (index < 0) return undefined
  const cap = caps.find((entry) => entry.period === wanted[index].period)!
  return {
    message: `budgets[${index}].amount: a key's ${wanted[index].period} budget cannot exceed the user's (${
      usd(cap.amount)
    }).`,
    param: `budgets[${index}].amount`
  }
}
