/**
 * What one pass of the health rollup folds (`src/accounts/HealthRollup.ts`), as plain arithmetic on epoch seconds:
 * the rollup holds 15-minute buckets that closed at least `ROLLUP_SETTLE_SECONDS` ago; each pass recomputes from
 * `ROLLUP_REFOLD_SECONDS` before the previous pass's end (so usage rows written late into a folded bucket count), the
 * first from the oldest usage row, at most `ROLLUP_SPAN_SECONDS` at once (a first pass over a full table catches up in
 * several), never before the retained `ROLLUP_RETAIN_SECONDS`, and drops the buckets older than that. The coarse
 * tier's 2-hour buckets (`ROLLUP_COARSE_SECONDS`) are summed again from the 15-minute ones a pass touched, once whole
 * (`coarseRange`).
 *
 * @since 0.5.0
 */

/**
 * The rollup's bucket, seconds (divides the day view's 15-minute and the week view's 2-hour buckets).
 *
 * @category constants
 */
export const ROLLUP_BUCKET_SECONDS = 900

/**
 * The coarse tier's bucket, seconds (`health_rollup_coarse`, migration `0027`): the week view's 2-hour bucket, a
 * multiple of `ROLLUP_BUCKET_SECONDS`.
 *
 * @category constants
 */
export const ROLLUP_COARSE_SECONDS = 7_200

/** Buckets closed more recently than this (seconds) are read from `usage_logs`, not the rollup. @category constants */
export const ROLLUP_SETTLE_SECONDS = 900

/** How far before the previous pass's end each pass recomputes, seconds. @category constants */
export const ROLLUP_REFOLD_SECONDS = 3_600

/** The most one pass folds, seconds of usage rows (its cost bound). @category constants */
export const ROLLUP_SPAN_SECONDS = 6 * 3_600

/**
 * How long the rollup keeps a bucket, seconds: the dashboard's 30 UTC days of daily usage (`usage_rollup`) and two
 * days' slack (the health views read a week at most).
 *
 * @category constants
 */
export const ROLLUP_RETAIN_SECONDS = 32 * 86_400

/**
 * One pass: recompute the buckets in `[from, to)`, drop those before `retainFrom`; `caughtUp` when `to` is the
 * newest bucket boundary a pass may reach now. All epoch seconds, multiples of `ROLLUP_BUCKET_SECONDS`.
 *
 * @category models
 */
export interface FoldPlan {
  readonly from: number
  readonly to: number
  readonly retainFrom: number
  readonly caughtUp: boolean
}

const floorTo = (seconds: number) => Math.floor(seconds / ROLLUP_BUCKET_SECONDS) * ROLLUP_BUCKET_SECONDS

/**
 * The pass to run at `nowSeconds` (epoch seconds) after the rollup was folded until `foldedUntil` (epoch seconds;
 * `null` before the first pass, or after a reset). A first pass starts at the bucket of `oldestRow`, the oldest usage
 * row's time within retention (epoch seconds; `null`: none, so there is nothing to fold before now).
 *
 * @category planning
 */
export const planFold = (foldedUntil: number | null, nowSeconds: number, oldestRow: number | null = null): FoldPlan => {
  const target = floorTo(nowSeconds - ROLLUP_SETTLE_SECONDS)
  const retainFrom = floorTo(nowSeconds - ROLLUP_RETAIN_SECONDS)
  const from = foldedUntil === null
    ? (oldestRow === null ? target : Math.min(target, Math.max(retainFrom, floorTo(oldestRow))))
    : Math.max(retainFrom, floorTo(Math.min(foldedUntil, target) - ROLLUP_REFOLD_SECONDS))
  const to = Math.max(from, Math.min(target, from + ROLLUP_SPAN_SECONDS))
  return { from, to, retainFrom, caughtUp: to >= target }
}

/**
 * The coarse buckets a pass of `plan` sums again from the 15-minute rows: those starting in `[from, to)` (epoch
 * seconds, multiples of `ROLLUP_COARSE_SECONDS`), every one holding a 15-minute bucket the pass recomputed and all
 * of its own folded (so one written late into a whole coarse bucket is summed again, and a coarse bucket is first
 * written by the pass that folds its last 15 minutes).
 *
 * @category planning
 */
export const coarseRange = (plan: FoldPlan): { readonly from: number; readonly to: number } => {
  const from = Math.floor(plan.from / ROLLUP_COARSE_SECONDS) * ROLLUP_COARSE_SECONDS
  return { from, to: Math.max(from, Math.floor(plan.to / ROLLUP_COARSE_SECONDS) * ROLLUP_COARSE_SECONDS) }
}
