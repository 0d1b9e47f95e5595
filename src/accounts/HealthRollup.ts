/**
 * The health rollup: per 15-minute bucket, channel, model and failure kind, the attempts, tokens, cost and a latency
 * histogram of `usage_logs` (`health_rollup`, migration `0024`), which the day and week views of `GET /api/health/*`
 * read for their closed buckets instead of every usage row (`src/accounts/HealthQueries.ts`).
 *
 * Kept by a background pass on every instance, every `intervalSeconds`: in one transaction it locks the state row
 * (`health_rollup_state`, `FOR UPDATE SKIP LOCKED`: while one instance folds, the others skip their pass), recomputes
 * the buckets of its range from `usage_logs` (delete, then insert the aggregate: idempotent, a bucket is never added
 * to twice), drops the buckets past retention and moves `folded_until`. The range is `planFold`'s
 * (`health/FoldPlan.ts`): buckets closed at least 15 minutes ago, from an hour before the previous end, so usage rows
 * written late (the usage log writes off the hot path) still count once the next pass ran; a first pass (or one after
 * `folded_until` was reset to `NULL`, which empties the rollup) starts from the oldest retained usage row and catches
 * up six hours at a time. In the same transaction the coarse tier (`health_rollup_coarse`, migration `0027`: 2-hour
 * buckets, what the week view reads) sums again the whole 2-hour buckets the pass touched from the 15-minute rows
 * (`coarseRange`), and the usage rollup (`usage_rollup`, the same migration: per user, key and model, what a user's
 * daily usage reads) is recomputed over the same range (`UsageRollupSql.ts`). Storage failures are logged and the
 * pass runs again at the next interval.
 *
 * @since 0.5.0
 */
import { Clock, Context, Duration, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { epochSeconds } from "../domain/Page.ts"
import { FAILURE_KINDS } from "./health/HealthStats.ts"
import {
  coarseRange,
  type FoldPlan,
  planFold,
  ROLLUP_REFOLD_SECONDS,
  ROLLUP_RETAIN_SECONDS,
  ROLLUP_SPAN_SECONDS
} from "./health/FoldPlan.ts"
import { coarseAggregate, readFoldedUntil, ROLLUP_COLUMNS, ROLLUP_TABLES, usageAggregate } from "./health/RollupSql.ts"
import { foldUsage } from "./UsageRollupSql.ts"

/** What one pass did: folded a range, found another instance folding (`busy`). @category models */
export type FoldOutcome =
  | { readonly _tag: "Folded"; readonly plan: FoldPlan; readonly rows: number }
  | { readonly _tag: "Busy" }

/** The most passes one round runs to catch up (a full retention at `ROLLUP_SPAN_SECONDS` a pass, and some). */
const MAX_PASSES = Math.ceil(ROLLUP_RETAIN_SECONDS / (ROLLUP_SPAN_SECONDS - ROLLUP_REFOLD_SECONDS)) + 2

/** @category services */
export class HealthRollup extends Context.Service<HealthRollup, {
  /** One pass at the `Clock`'s now. Storage failures are defects. */
  readonly foldOnce: Effect.Effect<FoldOutcome>
  /** Passes until the rollup is caught up with now (or another instance holds the state row). */
  readonly catchUp: Effect.Effect<void>
  /** Every bucket before this (epoch seconds) is folded; `null` before the first pass. */
  readonly foldedUntil: Effect.Effect<number | null>
}>()("sluice/accounts/HealthRollup") {
  /** On the SQL store; folds every `intervalSeconds` (0: never, the views then read `usage_logs` alone). */
  static readonly layer = (intervalSeconds: number) =>
    Layer.effect(
      HealthRollup,
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const known = FAILURE_KINDS.filter((kind) => kind !== "other")

        const foldOnce = Effect.gen(function* () {
          const [state] = yield* sql<{ readonly foldedUntil: Date | null }>`
            SELECT folded_until AS "foldedUntil" FROM health_rollup_state WHERE id = 1 FOR UPDATE SKIP LOCKED`
          if (state === undefined) return { _tag: "Busy" } as const
          const now = yield* Clock.currentTimeMillis
          const nowSeconds = Math.floor(now / 1000)
          const folded = epochSeconds(state.foldedUntil)
          let oldest: number | null = null
          if (folded === null) {
            // A first pass (or after a reset): the rollup starts again from the oldest retained usage row.
            for (const table of ROLLUP_TABLES) yield* sql`DELETE FROM ${sql(table)}`
            const [row] = yield* sql<{ readonly oldest: Date | null }>`
              SELECT min(created_at) AS oldest FROM usage_logs
              WHERE created_at >= ${new Date((nowSeconds - ROLLUP_RETAIN_SECONDS) * 1000)}`
            oldest = epochSeconds(row?.oldest ?? null)
          }
          const plan = planFold(folded, nowSeconds, oldest)
          const from = new Date(plan.from * 1000)
          const to = new Date(plan.to * 1000)
          let rows = 0
          if (plan.to > plan.from) {
            yield* sql`DELETE FROM health_rollup WHERE bucket_start >= ${from} AND bucket_start < ${to}`
            const inserted = yield* sql<{ readonly n: number }>`
              WITH ins AS (INSERT INTO health_rollup (${sql.literal(ROLLUP_COLUMNS)})
                ${usageAggregate(sql, known, from, to, [])} RETURNING 1)
              SELECT count(*)::int AS n FROM ins`
            rows = inserted[0]?.n ?? 0
            yield* foldUsage(sql, from, to)
          }
          const coarse = coarseRange(plan)
          if (coarse.to > coarse.from) {
            const coarseFrom = new Date(coarse.from * 1000)
            const coarseTo = new Date(coarse.to * 1000)
            yield* sql`DELETE FROM health_rollup_coarse WHERE bucket_start >= ${coarseFrom} AND bucket_start < ${coarseTo}`
            yield* sql`INSERT INTO health_rollup_coarse (${sql.literal(ROLLUP_COLUMNS)})
              ${coarseAggregate(sql, coarseFrom, coarseTo)}`
          }
          const retainFrom = new Date(plan.retainFrom * 1000)
          for (const table of ROLLUP_TABLES) yield* sql`DELETE FROM ${sql(table)} WHERE bucket_start < ${retainFrom}`
          yield* sql`UPDATE health_rollup_state SET folded_until = ${to}, folded_at = ${new Date(now)} WHERE id = 1`
          return { _tag: "Folded", plan, rows } as const
        }).pipe(sql.withTransaction, Effect.orDie, Effect.withSpan("HealthRollup.foldOnce"))

        const catchUp = Effect.gen(function* () {
          for (let pass = 0; pass < MAX_PASSES; pass++) {
            const outcome = yield* foldOnce
            if (outcome._tag === "Busy" || outcome.plan.caughtUp) return
          }
        })

        const foldedUntil = readFoldedUntil(sql).pipe(Effect.orDie)

        if (intervalSeconds > 0) {
          yield* catchUp.pipe(
            Effect.catchCause((cause) =>
              Effect.logWarning("The health rollup pass failed; it runs again later", cause)
            ),
            Effect.repeat(Schedule.spaced(Duration.seconds(intervalSeconds))),
            Effect.forkScoped
          )
        }
        return HealthRollup.of({ foldOnce, catchUp, foldedUntil })
      })
    )
}
