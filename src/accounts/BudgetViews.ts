/**
 * Budgets as callers see them (`GET /api/user/self`, the key listing): each
 * budget with what was charged in its current window and when the window
 * resets. The spend is the committed one (the quota ledger commits with the
 * usage log, every few tens of milliseconds), so a request that just ended
 * may show a moment later.
 *
 * @since 0.1.0
 */
import { Clock, Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { type Budget, type BudgetPeriod, storedBudgets, windowOf } from "../domain/BudgetPeriod.ts"
import type { StorageUnavailable } from "../errors/GatewayError.ts"
import { storageFailure } from "../storage/StorageFailure.ts"

/**
 * One budget with its current window: `amount` and `spent` in USD,
 * `spent_quota` in quota units, `resets_at` in epoch seconds (`null` for a
 * `total` budget, which never resets).
 *
 * @category models
 */
export interface BudgetView {
  readonly amount: number
  readonly period: BudgetPeriod
  readonly timezone: string
  readonly spent: number
  readonly spent_quota: number
  readonly period_start: number
  readonly resets_at: number | null
}

/**
 * The views of the budgets stored for each of `owners` (their ids and
 * `budgets` JSON), by owner id; an owner without budgets maps to `null`.
 * One query for all of them; the periods are those current at the time of
 * Effect's `Clock`. Fails with `StorageUnavailable` when the spend cannot be read.
 *
 * @category queries
 */
export const budgetViews = (
  sql: SqlClient.SqlClient,
  subject: "token" | "user",
  owners: ReadonlyArray<{ readonly id: bigint; readonly budgets: unknown }>
): Effect.Effect<Map<bigint, ReadonlyArray<BudgetView> | null>, StorageUnavailable> => {
  const parsed = owners.map((owner) => ({ id: BigInt(owner.id), budgets: storedBudgets(owner.budgets) }))
  const withBudgets = parsed.filter((owner) => owner.budgets.length > 0)
  const empty = new Map(parsed.map((owner) => [owner.id, null] as const))
  if (withBudgets.length === 0) return Effect.succeed(empty)
  return Effect.flatMap(
    Clock.currentTimeMillis,
    (now) =>
      sql<{ readonly subjectId: bigint; readonly period: string; readonly start: Date; readonly spent: bigint }>`
    SELECT subject_id AS "subjectId", period, period_start AS start, spent FROM budget_periods
    WHERE subject = ${subject} AND subject_id = ANY(${withBudgets.map((owner) => String(owner.id))}::bigint[])
      AND (period_end IS NULL OR period_end > ${new Date(now)})`.pipe(
        Effect.map((rows) => {
          const spentOf = (id: bigint, budget: Budget, start: number) =>
            rows.find((row) =>
              BigInt(row.subjectId) === id && row.period === budget.period && new Date(row.start).getTime() === start
            )?.spent ?? 0n
          const views = new Map<bigint, ReadonlyArray<BudgetView> | null>(empty)
          for (const owner of withBudgets) {
            views.set(
              owner.id,
              owner.budgets.map((budget) => {
                const window = windowOf(budget.period, budget.timezone, now)
                const spent = BigInt(spentOf(owner.id, budget, window.start))
                return {
                  amount: Number(budget.amount) / 1_000_000,
                  period: budget.period,
                  timezone: budget.timezone,
                  spent: Number(spent) / 1_000_000,
                  spent_quota: Number(spent),
                  period_start: Math.floor(window.start / 1000),
                  resets_at: window.end === undefined ? null : Math.floor(window.end / 1000)
                }
              })
            )
          }
          return views
        }),
        storageFailure("budgets.spend")
      )
  )
}
