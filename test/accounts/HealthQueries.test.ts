/**
 * The health view's window arithmetic: each window ends at the first bucket boundary after now, spans exactly its
 * length, and holds a whole number of buckets (60, 96, 84), whatever now is.
 */
import { ok, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import { FAILURE_KINDS, HEALTH_WINDOWS, type HealthWindow, windowOf } from "../../src/accounts/HealthQueries.ts"

Deno.test("health windows: end at the next bucket boundary, span the window, whole buckets", () => {
  const counts: Record<HealthWindow, number> = { hour: 60, day: 96, week: 84 }
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 253402300799000 }),
      fc.constantFrom<HealthWindow>("hour", "day", "week"),
      (now, window) => {
        const { seconds, bucketSeconds } = HEALTH_WINDOWS[window]
        const { start, end } = windowOf(window, now)
        strictEqual(end - start, seconds)
        strictEqual(end % bucketSeconds, 0)
        ok(end * 1000 > now && (end - bucketSeconds) * 1000 <= now, "now is in the last bucket")
        strictEqual(seconds / bucketSeconds, counts[window])
      }
    )
  )
})

Deno.test("health failure kinds: every upstream failure kind, then cancelled and other, each once", () => {
  strictEqual(new Set(FAILURE_KINDS).size, FAILURE_KINDS.length)
  ok(FAILURE_KINDS.includes("server") && FAILURE_KINDS.includes("timeout"))
  strictEqual(FAILURE_KINDS.at(-2), "cancelled")
  strictEqual(FAILURE_KINDS.at(-1), "other")
})
