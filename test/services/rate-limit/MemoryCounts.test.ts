import { deepStrictEqual, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import { makeMemoryCounts } from "../../../src/services/rate-limit/MemoryCounts.ts"
import type { Refusal, Rule } from "../../../src/services/rate-limit/Rules.ts"

const windowMs = 1_000

Deno.test("an entry counts while now < stamp + window", () => {
  const counts = makeMemoryCounts(windowMs)
  const rules: ReadonlyArray<Rule> = [{ key: "a", rpm: 1, tpm: 0, concurrency: 0 }]
  deepStrictEqual(counts.admit(rules, 5_000), [])
  deepStrictEqual(counts.admit(rules, 5_999), [{ key: "a", limit: "rpm", allowed: 1, retryAfterMs: 1 }])
  deepStrictEqual(counts.admit(rules, 6_000), [])
})

Deno.test("the sweep forgets idle subjects but keeps those with requests in flight", () => {
  const counts = makeMemoryCounts(windowMs)
  counts.admit([{ key: "idle", rpm: 1, tpm: 0, concurrency: 0 }], 0)
  counts.admit([{ key: "busy", rpm: 0, tpm: 0, concurrency: 1 }], 0)
  strictEqual(counts.size(), 2)
  counts.admit([{ key: "other", rpm: 0, tpm: 5, concurrency: 0 }], 2_000)
  strictEqual(counts.size(), 1) // "busy" stays; "other" had nothing to record
})

/** A deliberately naive model of one subject: every stamp kept, sums recomputed each time. */
const reference = (rule: Rule) => {
  const requests: Array<number> = []
  const tokens: Array<{ readonly at: number; readonly amount: number }> = []
  let inFlight = 0
  const waitUntilBelow = (entries: ReadonlyArray<{ readonly at: number; readonly amount: number }>, limit: number) => {
    let total = entries.reduce((sum, entry) => sum + entry.amount, 0)
    for (const entry of entries) {
      total -= entry.amount
      if (total < limit) return entry.at + windowMs
    }
    return Number.NaN
  }
  return {
    admit: (now: number): ReadonlyArray<Refusal> => {
      const inWindow = requests.filter((at) => at > now - windowMs).map((at) => ({ at, amount: 1 }))
      const tokensInWindow = tokens.filter((entry) => entry.at > now - windowMs)
      const refusals: Array<Refusal> = []
      if (rule.rpm > 0 && inWindow.length >= rule.rpm) {
        refusals.push({
          key: rule.key,
          limit: "rpm",
          allowed: rule.rpm,
          retryAfterMs: waitUntilBelow(inWindow, rule.rpm) - now
        })
      }
      const sum = tokensInWindow.reduce((total, entry) => total + entry.amount, 0)
      if (rule.tpm > 0 && sum >= rule.tpm) {
        refusals.push({
          key: rule.key,
          limit: "tpm",
          allowed: rule.tpm,
          retryAfterMs: waitUntilBelow(tokensInWindow, rule.tpm) - now
        })
      }
      if (rule.concurrency > 0 && inFlight >= rule.concurrency) {
        refusals.push({ key: rule.key, limit: "concurrency", allowed: rule.concurrency, retryAfterMs: 1_000 })
      }
      if (refusals.length === 0) {
        if (rule.rpm > 0) requests.push(now)
        if (rule.concurrency > 0) inFlight += 1
      }
      return refusals
    },
    release: (amount: number, now: number) => {
      if (rule.tpm > 0 && amount > 0) tokens.push({ at: now, amount })
      if (rule.concurrency > 0) inFlight = Math.max(0, inFlight - 1)
    }
  }
}

const operation = fc.oneof(
  fc.record({ kind: fc.constant("wait" as const), milliseconds: fc.integer({ min: 0, max: 700 }) }),
  fc.record({ kind: fc.constant("acquire" as const) }),
  fc.record({ kind: fc.constant("release" as const), tokens: fc.integer({ min: 0, max: 40 }) })
)

Deno.test("property: the sliding logs agree with a naive model on every decision and Retry-After", () => {
  fc.assert(
    fc.property(
      fc.record({
        rpm: fc.integer({ min: 0, max: 5 }),
        tpm: fc.integer({ min: 0, max: 100 }),
        concurrency: fc.integer({ min: 0, max: 3 })
      }),
      fc.array(operation, { maxLength: 80 }),
      (limits, operations) => {
        const rule: Rule = { key: "s", ...limits }
        const counts = makeMemoryCounts(windowMs)
        const model = reference(rule)
        let now = 1_000_000
        let held = 0
        for (const step of operations) {
          if (step.kind === "wait") now += step.milliseconds
          else if (step.kind === "acquire") {
            const actual = counts.admit([rule], now)
            deepStrictEqual(actual, model.admit(now))
            if (actual.length === 0) held += 1
          } else if (held > 0) {
            held -= 1
            counts.release([rule], step.tokens, now)
            model.release(step.tokens, now)
          }
        }
      }
    )
  )
})
