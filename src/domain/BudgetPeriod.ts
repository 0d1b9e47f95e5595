/**
 * Budget periods: which window of spend a moment falls in. A `day` starts at
 * midnight, a `week` at midnight on Monday (ISO 8601), a `month` at midnight
 * on its first day, all in the budget's time zone (an IANA name, default
 * `UTC`); a `total` budget has one window that never ends. Time-zone
 * arithmetic (daylight saving included) is `@date-fns/tz`'s `TZDate` with
 * `date-fns`' `startOf*` / `add*`.
 *
 * @since 0.1.0
 */
import { TZDate } from "@date-fns/tz"
// One module each: the package's index loads all of its ~250 functions (about 4 MiB resident).
import { addDays } from "date-fns/addDays"
import { addMonths } from "date-fns/addMonths"
import { addWeeks } from "date-fns/addWeeks"
import { startOfDay } from "date-fns/startOfDay"
import { startOfISOWeek } from "date-fns/startOfISOWeek"
import { startOfMonth } from "date-fns/startOfMonth"
import { Schema } from "effect"

/** How often a budget's spend starts again from zero. @category models */
export type BudgetPeriod = "day" | "week" | "month" | "total"

/** The periods, in the order they are listed and checked. @category models */
export const BUDGET_PERIODS: ReadonlyArray<BudgetPeriod> = ["day", "week", "month", "total"]

/**
 * One budget as stored (`tokens.budgets`, `users.budgets`): `amount` in quota
 * units (micro-USD), at most one budget per period on a key or a user.
 *
 * @category models
 */
export interface Budget {
  readonly amount: bigint
  readonly period: BudgetPeriod
  /** IANA time-zone name the period rolls over in; `UTC` when not set. */
  readonly timezone: string
}

/**
 * A period's window in epoch milliseconds: `[start, end)`; `end` is
 * `undefined` for a `total` budget (it never resets).
 *
 * @category models
 */
export interface Window {
  readonly start: number
  readonly end: number | undefined
}

/**
 * Whether `name` is a time zone this runtime knows (an IANA name such as
 * `Europe/Paris`, or `UTC`).
 *
 * @category validation
 */
export const isTimeZone = (name: string): boolean => {
  if (name.length === 0 || name.length > 64) return false
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: name })
    return true
  } catch {
    return false
  }
}

/**
 * The window of `period` (in `timezone`) that contains `now` (epoch ms).
 * A time zone the runtime does not know counts as UTC (names are validated
 * where budgets are written).
 *
 * @category periods
 */
export const windowOf = (period: BudgetPeriod, timezone: string, now: number): Window => {
  if (period === "total") return { start: 0, end: undefined }
  const zone = isTimeZone(timezone) ? timezone : "UTC"
  const at = new TZDate(now, zone)
  switch (period) {
    case "day": {
      const start = startOfDay(at)
      return { start: start.getTime(), end: addDays(start, 1).getTime() }
    }
    case "week": {
      const start = startOfISOWeek(at)
      return { start: start.getTime(), end: addWeeks(start, 1).getTime() }
    }
    case "month": {
      const start = startOfMonth(at)
      return { start: start.getTime(), end: addMonths(start, 1).getTime() }
    }
  }
}

/**
 * A budget's amount as text for a message: USD with up to six decimals
 * (`$5`, `$0.25`, `$0.000125`).
 *
 * @category formatting
 */
export const usd = (amount: bigint): string => {
  const whole = amount / 1_000_000n
  const fraction = (amount % 1_000_000n).toString().padStart(6, "0").replace(/0+$/, "")
  return fraction === "" ? `$${whole}` : `$${whole}.${fraction}`
}

/**
 * A budget that applies to a caller: its key's (`token`) or its user's.
 *
 * @category models
 */
export interface AppliedBudget extends Budget {
  readonly owner: "token" | "user"
}

/**
 * The budgets stored in a `budgets` JSON column (`[{amount, period,
 * timezone}]`, `amount` a decimal string of quota units). Entries that do not
 * have this shape are skipped (the writers validate, so there are none);
 * `null` is no budget.
 *
 * @category decoding
 */
export const storedBudgets = (value: unknown): ReadonlyArray<Budget> => {
  if (!Array.isArray(value)) return []
  return value.flatMap((entry): ReadonlyArray<Budget> => {
    if (typeof entry !== "object" || entry === null) return []
    const { amount, period, timezone } = entry as Record<string, unknown>
    if (typeof amount !== "string" || !/^\d{1,19}$/.test(amount)) return []
    if (typeof period !== "string" || !(BUDGET_PERIODS as ReadonlyArray<string>).includes(period)) return []
    return [{
      amount: BigInt(amount),
      period: period as BudgetPeriod,
      timezone: typeof timezone === "string" ? timezone : "UTC"
    }]
  })
}

/**
 * The JSON stored for a list of budgets (see `storedBudgets`); `null` for an
 * empty list.
 *
 * @category encoding
 */
export const budgetsJson = (budgets: ReadonlyArray<Budget>): string | null =>
  budgets.length === 0 ? null : JSON.stringify(
    budgets.map((budget) => ({ amount: String(budget.amount), period: budget.period, timezone: budget.timezone }))
  )

/** The largest budget in USD: its micro-USD stay a safe integer. */
const MAX_USD = Math.floor(Number.MAX_SAFE_INTEGER / 1_000_000)

/**
 * One budget as written in the bootstrap file and the API: `amount` in USD
 * (at most six decimals count), `period`, and an optional IANA `timezone`
 * (default `UTC`).
 *
 * @category schemas
 */
export const BudgetSpec = Schema.Struct({
  amount: Schema.Number.check(
    Schema.isFinite(),
    Schema.isGreaterThanOrEqualTo(0),
    Schema.isLessThanOrEqualTo(MAX_USD)
  ),
  period: Schema.Literals(["day", "week", "month", "total"]),
  timezone: Schema.optional(
    Schema.String.check(
      Schema.makeFilter((value: string) => isTimeZone(value) ? true : "must be an IANA time zone such as Europe/Paris")
    )
  )
})

/**
 * A list of budgets: at most one per period.
 *
 * @category schemas
 */
export const BudgetList = Schema.Array(BudgetSpec).check(
  Schema.makeFilter((list: ReadonlyArray<{ readonly period: string }>) =>
    new Set(list.map((budget) => budget.period)).size === list.length ? true : "must have at most one budget per period"
  )
)

/**
 * Budgets as stored, from their written form (USD to quota units, rounded to
 * the micro-USD).
 *
 * @category decoding
 */
export const fromSpec = (list: typeof BudgetList.Type): ReadonlyArray<Budget> =>
  list.map((budget) => ({
    amount: BigInt(Math.round(budget.amount * 1_000_000)),
    period: budget.period,
    timezone: budget.timezone ?? "UTC"
  }))

/**
 * A stored budget in its written form (quota units to USD).
 *
 * @category encoding
 */
export const toSpec = (budget: Budget): { amount: number; period: BudgetPeriod; timezone: string } => ({
  amount: Number(budget.amount) / 1_000_000,
  period: budget.period,
  timezone: budget.timezone
})
