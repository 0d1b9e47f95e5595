/**
 * Budget utilisation on `/metrics`: `sluice_budget_utilization_ratio` (spent
 * this period ÷ the budget) for the `top` most used budget windows of the
 * whole gateway (default 20), labelled `subject` (`token` or `user`), `id`
 * (the database id, never a name: names are caller text) and `period`.
 * Top-N rather than per key, so the series stay bounded whatever the number
 * of keys: a window that leaves the top N is unregistered. Read from the
 * database every `refreshSeconds` (default 15), so every instance reports the
 * same figures.
 *
 * @since 0.1.0
 */
import { Context, Duration, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { CurrentMetrics } from "../observability/Metrics.ts"

/** The ratio of one window, by its labels. */
interface Utilisation {
  readonly subject: string
  readonly id: string
  readonly period: string
  readonly ratio: number
}

/** @category services */
export class BudgetMetrics extends Context.Service<BudgetMetrics, {
  /** Reads the top windows now and updates the gauges (also run on its schedule). */
  readonly refresh: Effect.Effect<void>
}>()("sluice/billing/BudgetMetrics") {
  /** SQL-backed; does nothing when metrics are off. */
  static readonly layer = (options: { readonly top?: number; readonly refreshSeconds?: number } = {}) =>
    Layer.effect(
      BudgetMetrics,
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const metrics = yield* CurrentMetrics
        const top = options.top ?? 20
        const current = new Map<string, { ratio: number; remove: () => void }>()

        const read = sql<Utilisation>`
          SELECT w.subject, w.subject_id::text AS id, w.period,
                 CASE WHEN w.amount = 0 THEN 1 ELSE w.spent::float8 / w.amount::float8 END AS ratio
          FROM (
            SELECT p.subject, p.subject_id, p.period, p.spent,
                   (SELECT (b ->> 'amount')::numeric FROM jsonb_array_elements(
                      CASE p.subject WHEN 'token' THEN (SELECT budgets FROM tokens WHERE id = p.subject_id)
                      ELSE (SELECT budgets FROM users WHERE id = p.subject_id) END) b
                    WHERE b ->> 'period' = p.period LIMIT 1) AS amount
            FROM budget_periods p
            WHERE p.period_end IS NULL OR p.period_end > now()
          ) w
          WHERE w.amount IS NOT NULL
          ORDER BY ratio DESC, w.subject, w.subject_id LIMIT ${top}`

        const refresh = Effect.suspend(() => {
          if (metrics === undefined) return Effect.void
          return read.pipe(
            Effect.map((rows) => {
              const seen = new Set<string>()
              for (const row of rows) {
                const key = `${row.subject}:${row.id}:${row.period}`
                seen.add(key)
                const known = current.get(key)
                if (known !== undefined) {
                  known.ratio = Number(row.ratio)
                  continue
                }
                const entry = { ratio: Number(row.ratio), remove: () => {} }
                entry.remove = metrics.pullLabelled(
                  "sluice_budget_utilization_ratio",
                  "Spent this period ÷ budget, for the most used budget windows (top N)",
                  { subject: row.subject, id: row.id, period: row.period },
                  () => entry.ratio
                )
                current.set(key, entry)
              }
              for (const [key, entry] of current) {
                if (seen.has(key)) continue
                entry.remove()
                current.delete(key)
              }
            }),
            Effect.catch((error) => Effect.logWarning("Could not read budget utilisation", error.message))
          )
        })

        if (metrics !== undefined) {
          yield* refresh.pipe(
            Effect.repeat(Schedule.spaced(Duration.seconds(options.refreshSeconds ?? 15))),
            Effect.forkScoped
          )
          yield* Effect.addFinalizer(() =>
            Effect.sync(() => {
              for (const entry of current.values()) entry.remove()
              current.clear()
            })
          )
        }
        return BudgetMetrics.of({ refresh })
      })
    )
}
