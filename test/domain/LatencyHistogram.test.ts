/**
 * The health rollup's latency histogram: 61 ascending bounds, `bucketOf` as SQL's `width_bucket` numbers them, and
 * percentiles from the counts — exact for evenly spread values (1..100 ms gives `percentile_cont`'s 50.5 and 95.05),
 * and for any set below 1,000,000 ms within the bucket holding the rank (at most a third of the value off, exact below
 * 10 ms), compared with `percentile_cont`'s definition on random sets.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import { bucketOf, LATENCY_BOUNDS_MS, LATENCY_BUCKETS, percentileOf } from "../../src/domain/LatencyHistogram.ts"

const histogramOf = (values: ReadonlyArray<number>) => {
  const counts = Array.from({ length: LATENCY_BUCKETS }, () => 0)
  for (const value of values) counts[bucketOf(value) - 1]++
  return counts
}

/** `percentile_cont(p)` of `values` (PostgreSQL docs, "Aggregate Functions": interpolated between neighbours). */
const exact = (values: ReadonlyArray<number>, p: number) => {
  const sorted = values.toSorted((a, b) => a - b)
  const rank = p * (sorted.length - 1)
  const below = Math.floor(rank)
  return sorted[below] + ((sorted[below + 1] ?? sorted[below]) - sorted[below]) * (rank - below)
}

Deno.test("latency histogram: 61 ascending bounds from 0, ten a decade from 10 ms, the last at 1,000,000 ms", () => {
  strictEqual(LATENCY_BUCKETS, 61)
  strictEqual(LATENCY_BOUNDS_MS[0], 0)
  strictEqual(LATENCY_BOUNDS_MS.at(-1), 1_000_000)
  ok(LATENCY_BOUNDS_MS.every((bound, index) => index === 0 || bound > LATENCY_BOUNDS_MS[index - 1]))
  deepStrictEqual(LATENCY_BOUNDS_MS.slice(10, 21), [10, 12, 15, 20, 25, 30, 40, 50, 60, 80, 100])
  // No bucket from 10 ms up is wider than a third of its lower bound.
  for (let index = 10; index + 1 < LATENCY_BUCKETS; index++) {
    ok(LATENCY_BOUNDS_MS[index + 1] - LATENCY_BOUNDS_MS[index] <= LATENCY_BOUNDS_MS[index] / 3 + 1e-9)
  }
  deepStrictEqual([bucketOf(0), bucketOf(9), bucketOf(10), bucketOf(11), bucketOf(12)], [1, 10, 11, 11, 12])
  deepStrictEqual([bucketOf(999_999), bucketOf(1_000_000), bucketOf(5_000_000)], [60, 61, 61])
})

Deno.test("latency histogram: evenly spread values give percentile_cont's value, an empty set none", () => {
  const values = Array.from({ length: 100 }, (_, index) => index + 1)
  const counts = histogramOf(values)
  strictEqual(percentileOf(counts, 1, 100, 0.5), 50.5)
  ok(Math.abs(percentileOf(counts, 1, 100, 0.95)! - 95.05) < 1e-9)
  strictEqual(percentileOf(counts, 1, 100, 0), 1)
  strictEqual(percentileOf(counts, 1, 100, 1), 100)
  strictEqual(percentileOf(histogramOf([]), 0, 0, 0.5), null)
  strictEqual(percentileOf(histogramOf([4_000_000]), 4_000_000, 4_000_000, 0.95), 4_000_000)
  // The open last bucket: its one value is the set's maximum.
  ok(Math.abs(percentileOf(histogramOf([0, 1_500_002]), 0, 1_500_002, 0.95)! - 1_425_001.9) < 1e-6)
})

Deno.test("latency histogram: any set's p50 and p95 lie within a third of percentile_cont's, exact below 10 ms", () => {
  fc.assert(
    fc.property(
      fc.array(fc.oneof(fc.integer({ min: 0, max: 9 }), fc.integer({ min: 0, max: 999_999 })), {
        minLength: 1,
        maxLength: 300
      }),
      fc.constantFrom(0.5, 0.95),
      (values, p) => {
        const estimate = percentileOf(histogramOf(values), Math.min(...values), Math.max(...values), p)!
        const truth = exact(values, p)
        ok(Math.abs(estimate - truth) <= truth / 3 + 1, `${estimate} for ${truth}`)
        if (Math.max(...values) < 10) ok(Math.abs(estimate - truth) < 1e-9, `${estimate} for ${truth} below 10 ms`)
      }
    ),
    { numRuns: 2000 }
  )
})
