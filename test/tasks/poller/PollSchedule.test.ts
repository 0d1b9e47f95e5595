/**
 * The poller's schedule with plain values: the backoff doubles from twice
 * the poll interval up to its cap (the exponent itself capped at 16), a read
 * polls on demand at 1 s or the poll interval when shorter, and a channel's
 * claims ask for a batch, or what is left of its cycle, then nothing.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { DEFAULT_POLLER_OPTIONS } from "../../../src/tasks/poller/PollerOptions.ts"
import { backoffMillis, claimLimit, onDemandAgeMillis } from "../../../src/tasks/poller/PollSchedule.ts"

Deno.test("backoffMillis: the interval × 2^(failures + 1), at most the cap", () => {
  deepStrictEqual(
    [0, 1, 2, 3, 4, 5].map((failures) => backoffMillis(5_000, 300_000, failures)),
    [10_000, 20_000, 40_000, 80_000, 160_000, 300_000]
  )
  strictEqual(backoffMillis(1, Number.MAX_SAFE_INTEGER, 15), 65_536, "2^16")
  strictEqual(backoffMillis(1, Number.MAX_SAFE_INTEGER, 1_000), 65_536, "the exponent stops at 16")
})

Deno.test("onDemandAgeMillis: 1 s, or the poll interval when shorter", () => {
  strictEqual(onDemandAgeMillis(5_000), 1_000)
  strictEqual(onDemandAgeMillis(1_000), 1_000)
  strictEqual(onDemandAgeMillis(200), 200)
})

Deno.test("claimLimit: a batch, then what is left of the cycle, then 0", () => {
  const options = { batchPerChannel: 100, cyclePerChannel: 250 }
  deepStrictEqual([0, 100, 200, 240, 250, 300].map((polled) => claimLimit(options, polled)), [100, 100, 50, 10, 0, 0])
  strictEqual(claimLimit(DEFAULT_POLLER_OPTIONS, 4_950), 50)
  strictEqual(claimLimit({ batchPerChannel: 0, cyclePerChannel: 10 }, 0), 0, "an empty batch claims nothing")
})
