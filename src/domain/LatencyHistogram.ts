/**
 * The fixed latency histogram of the health rollup (`health_rollup.latency_counts`, migration `0024`): 61 buckets
 * with log-spaced lower bounds in milliseconds — every millisecond from 0 to 9, then ten bounds per decade
 * (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × 10ⁿ) from 10 ms to 8 s × 10, and a last bucket from 1,000,000 ms (16 min 40 s)
 * up. Bucket `i` (1-based, as SQL's `width_bucket(latency_ms, LATENCY_BOUNDS_MS)` numbers it) holds the latencies
 * in `[LATENCY_BOUNDS_MS[i - 1], LATENCY_BOUNDS_MS[i])`; a bucket is at most a third of its lower bound wide.
 *
 * A percentile is estimated the way `percentile_cont` computes it (the value at rank `p × (n − 1)` of the sorted
 * values, interpolated between neighbours), with each bucket's values taken as spread evenly over its integer
 * milliseconds: exact when they are (and always below 10 ms, where a bucket is one millisecond), otherwise off by
 * less than the width of the bucket holding the rank, so at most a third of the value (the last bucket is open: there
 * the estimate lies between 1,000,000 ms and the set's maximum); the estimate is kept within the set's own minimum and
 * maximum.
 * The bounds are fixed with the table: changing them needs a new migration that refolds the rollup.
 *
 * @since 0.5.0
 */

const decade = [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8]

/**
 * The lower bounds of the buckets, milliseconds, ascending (61 of them; the first is 0).
 *
 * @category histogram
 */
export const LATENCY_BOUNDS_MS: ReadonlyArray<number> = [
  0,
  1,
  2,
  3,
  4,
  5,
  6,
  7,
  8,
  9,
  ...[10, 100, 1_000, 10_000, 100_000].flatMap((scale) => decade.map((step) => Math.round(step * scale))),
  1_000_000
]

/** How many buckets the histogram has (`LATENCY_BOUNDS_MS.length`). @category histogram */
export const LATENCY_BUCKETS = LATENCY_BOUNDS_MS.length

/**
 * The 1-based bucket of a latency in milliseconds, as `width_bucket(latency_ms, LATENCY_BOUNDS_MS)` gives it (a
 * negative latency, which no usage row holds, counts in the first bucket).
 *
 * @category histogram
 */
export const bucketOf = (latencyMs: number): number => {
  let index = 1
  while (index < LATENCY_BUCKETS && latencyMs >= LATENCY_BOUNDS_MS[index]) index++
  return index
}

/**
 * The `p`-th percentile (0 to 1) of the latencies counted in `counts` (one count per bucket, `LATENCY_BUCKETS` of
 * them), milliseconds; `min` and `max` are the set's smallest and largest latency. `null` for an empty set.
 *
 * @category histogram
 */
export const percentileOf = (
  counts: ReadonlyArray<number>,
  min: number,
  max: number,
  p: number
): number | null => {
  const total = counts.reduce((sum, count) => sum + count, 0)
  if (total === 0) return null
  const rank = p * (total - 1)
  // The value at 0-based position `position` of the sorted set, under the even spread inside its bucket.
  const valueAt = (position: number): number => {
    let before = 0
    for (let index = 0; index < counts.length; index++) {
      const count = counts[index]
      if (count > 0 && position < before + count) {
        const low = Math.max(LATENCY_BOUNDS_MS[index], min)
        const high = Math.min(index + 1 < LATENCY_BUCKETS ? LATENCY_BOUNDS_MS[index + 1] - 1 : max, max)
        const top = Math.max(high, low)
        if (count > 1) return low + (top - low) * (position - before) / (count - 1)
        // One value: the set's maximum in the last bucket with any, its minimum in the first, else the middle.
        return before + count === total ? top : before === 0 ? low : (low + top) / 2
      }
      before += count
    }
    return max
  }
  const below = Math.floor(rank)
  const lower = valueAt(below)
  const value = rank === below ? lower : lower + (valueAt(below + 1) - lower) * (rank - below)
  return Math.min(Math.max(value, min), max)
}
