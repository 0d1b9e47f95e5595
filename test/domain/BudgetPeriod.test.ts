/**
 * Budget windows: midnight UTC by default, midnight in the budget's time zone
 * (daylight saving included), ISO weeks from Monday, months from the first,
 * and a total that never ends; stored budgets decode defensively.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { budgetsJson, isTimeZone, storedBudgets, usd, windowOf } from "../../src/domain/BudgetPeriod.ts"

const iso = (window: { start: number; end: number | undefined }) => ({
  start: new Date(window.start).toISOString(),
  end: window.end === undefined ? undefined : new Date(window.end).toISOString()
})

Deno.test("windowOf: a day rolls over at midnight UTC by default and at local midnight in a time zone", () => {
  const now = Date.UTC(2026, 10, 27, 23, 30)
  deepStrictEqual(iso(windowOf("day", "UTC", now)), {
    start: "2026-11-27T00:00:00.000Z",
    end: "2026-11-28T00:00:00.000Z"
  })
  // 08:30 on the 28th in Tokyo (UTC+9): the day began at 15:00 UTC on the 27th.
  deepStrictEqual(iso(windowOf("day", "Asia/Tokyo", now)), {
    start: "2026-11-27T15:00:00.000Z",
    end: "2026-11-28T15:00:00.000Z"
  })
})

Deno.test("windowOf: a day across a daylight-saving change is 23 hours long", () => {
  // 29 March 2026: Europe/Paris goes from UTC+1 to UTC+2.
  const window = windowOf("day", "Europe/Paris", Date.UTC(2026, 2, 29, 12))
  deepStrictEqual(iso(window), { start: "2026-03-28T23:00:00.000Z", end: "2026-03-29T22:00:00.000Z" })
  strictEqual((window.end! - window.start) / 3_600_000, 23)
})

Deno.test("windowOf: weeks start on Monday, months on the first, a total never ends", () => {
  const now = Date.UTC(2026, 10, 27, 12) // a Friday
  deepStrictEqual(iso(windowOf("week", "UTC", now)), {
    start: "2026-11-23T00:00:00.000Z",
    end: "2026-11-30T00:00:00.000Z"
  })
  deepStrictEqual(iso(windowOf("month", "UTC", now)), {
    start: "2026-11-01T00:00:00.000Z",
    end: "2026-12-01T00:00:00.000Z"
  })
  deepStrictEqual(windowOf("total", "UTC", now), { start: 0, end: undefined })
})

Deno.test("isTimeZone, usd, storedBudgets: names checked, amounts printed in USD, bad entries skipped", () => {
  strictEqual(isTimeZone("America/New_York"), true)
  strictEqual(isTimeZone("Mars/Olympus"), false)
  strictEqual(isTimeZone(""), false)
  strictEqual(usd(5_000_000n), "$5")
  strictEqual(usd(250_000n), "$0.25")
  strictEqual(usd(125n), "$0.000125")
  const json = budgetsJson([{ amount: 5_000_000n, period: "day", timezone: "UTC" }])
  deepStrictEqual(storedBudgets(JSON.parse(json!)), [{ amount: 5_000_000n, period: "day", timezone: "UTC" }])
  deepStrictEqual(storedBudgets([{ amount: 5, period: "day" }, { amount: "1", period: "year" }, null, "x"]), [])
  deepStrictEqual(storedBudgets(null), [])
  strictEqual(budgetsJson([]), null)
})
