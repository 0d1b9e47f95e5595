/**
 * The health rollup's pass arithmetic: a first pass starts at the oldest usage row (the retained 32 days at
 * most, now when there is none); later passes refold the hour before the previous end; no pass goes past the buckets
 * closed 15 minutes ago, folds more than six hours, or leaves a gap; repeated passes catch up whatever the start, and
 * every bound is a whole bucket.
 */
import { ok, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import {
  coarseRange,
  planFold,
  ROLLUP_BUCKET_SECONDS,
  ROLLUP_COARSE_SECONDS,
  ROLLUP_REFOLD_SECONDS,
  ROLLUP_RETAIN_SECONDS,
  ROLLUP_SETTLE_SECONDS,
  ROLLUP_SPAN_SECONDS
} from "../../../src/accounts/health/FoldPlan.ts"

const now = 1_800_000_123

/** A pass's inputs: the previous end (or none), how long after `now` it runs, the oldest usage row (or none). */
const PASS_INPUTS = [
  fc.option(fc.integer({ min: now - 30 * 86_400, max: now + 3_600 }), { nil: null }),
  fc.integer({ min: 0, max: 86_400 }),
  fc.option(fc.integer({ min: now - 30 * 86_400, max: now }), { nil: null })
] as const

Deno.test("fold plan: the first pass starts at the oldest row (retention at most), the next refolds the last hour", () => {
  const target = Math.floor((now - ROLLUP_SETTLE_SECONDS) / ROLLUP_BUCKET_SECONDS) * ROLLUP_BUCKET_SECONDS
  const first = planFold(null, now, now - 40 * 86_400)
  strictEqual(first.from, first.retainFrom)
  strictEqual(first.to - first.from, ROLLUP_SPAN_SECONDS)
  strictEqual(first.caughtUp, false)
  const recent = planFold(null, now, target - 1_000)
  strictEqual(recent.from, target - 1_800)
  strictEqual(recent.caughtUp, true)
  // No usage row at all: nothing to fold before now, the pass is caught up at once.
  const empty = planFold(null, now, null)
  strictEqual(empty.from, target)
  strictEqual(empty.to, target)
  strictEqual(empty.caughtUp, true)
  const steady = planFold(target, now)
  strictEqual(steady.from, target - ROLLUP_REFOLD_SECONDS)
  strictEqual(steady.to, target)
  strictEqual(steady.caughtUp, true)
})

Deno.test("fold plan: bounded, gap-free, whole buckets, and caught up after enough passes", () => {
  fc.assert(
    fc.property(
      ...PASS_INPUTS,
      (previous, later, oldest) => {
        const folded = previous === null ? null : Math.floor(previous / ROLLUP_BUCKET_SECONDS) * ROLLUP_BUCKET_SECONDS
        const at = now + later
        const plan = planFold(folded, at, oldest)
        for (const bound of [plan.from, plan.to, plan.retainFrom]) strictEqual(bound % ROLLUP_BUCKET_SECONDS, 0)
        ok(plan.to >= plan.from && plan.to - plan.from <= ROLLUP_SPAN_SECONDS)
        ok(plan.to <= at - ROLLUP_SETTLE_SECONDS + 1e-9)
        ok(plan.from >= plan.retainFrom && plan.retainFrom >= at - ROLLUP_RETAIN_SECONDS - ROLLUP_BUCKET_SECONDS)
        // No gap: the pass starts at or before where the last one ended (unless that is past retention).
        if (folded !== null && folded >= plan.retainFrom) ok(plan.from <= folded)
        let state = plan
        for (let pass = 0; pass < 160 && !state.caughtUp; pass++) state = planFold(state.to, at)
        ok(state.caughtUp, "caught up within 160 passes (32 days at five new hours a pass)")
      }
    )
  )
})

Deno.test("fold plan: the coarse tier sums again every whole 2-hour bucket a pass touched, and none still open", () => {
  fc.assert(
    fc.property(
      ...PASS_INPUTS,
      (previous, later, oldest) => {
        const folded = previous === null ? null : Math.floor(previous / ROLLUP_BUCKET_SECONDS) * ROLLUP_BUCKET_SECONDS
        const plan = planFold(folded, now + later, oldest)
        const coarse = coarseRange(plan)
        strictEqual(coarse.from % ROLLUP_COARSE_SECONDS, 0)
        strictEqual(coarse.to % ROLLUP_COARSE_SECONDS, 0)
        ok(coarse.to >= coarse.from && coarse.to <= plan.to, "whole buckets only: each ends by the pass's end")
        // Every 15-minute bucket the pass recomputed lies in a coarse bucket summed now, unless that one is still open.
        for (let bucket = plan.from; bucket < plan.to; bucket += ROLLUP_BUCKET_SECONDS) {
          const start = Math.floor(bucket / ROLLUP_COARSE_SECONDS) * ROLLUP_COARSE_SECONDS
          const whole = start + ROLLUP_COARSE_SECONDS <= plan.to
          strictEqual(start >= coarse.from && start < coarse.to, whole, `bucket ${bucket}`)
        }
      }
    )
  )
})
