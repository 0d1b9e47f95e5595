import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import {
  boundedLimit,
  boundedTokens,
  boundedWindowMs,
  maxAmount,
  rateLimited,
  retryAfterSeconds,
  toRules
} from "../../../src/services/rate-limit/Rules.ts"

Deno.test("boundedLimit: no limit for undefined, non-finite and < 1; floored and capped otherwise", () => {
  deepStrictEqual(
    [undefined, Number.NaN, Number.POSITIVE_INFINITY, -3, 0, 0.5, 1, 7.9, 1e20].map(boundedLimit),
    [0, 0, 0, 0, 0, 0, 1, 7, maxAmount]
  )
})

Deno.test("boundedTokens and boundedWindowMs clamp to integers in range", () => {
  deepStrictEqual([-1, Number.NaN, 12.7, 1e20].map(boundedTokens), [0, 0, 12, maxAmount])
  deepStrictEqual([undefined, 0, -5, Number.NaN, 1_500.4].map(boundedWindowMs), [60_000, 60_000, 60_000, 60_000, 1_500])
})

Deno.test("retryAfterSeconds rounds up and is at least 1", () => {
  deepStrictEqual([-10, 0, 1, 999, 1_000, 1_001, 59_999].map(retryAfterSeconds), [1, 1, 1, 1, 1, 2, 60])
})

Deno.test("toRules merges a repeated key with the stricter limit and drops subjects without limits", () => {
  deepStrictEqual(
    toRules([
      { key: "token:1", limits: { rpm: 10, tpm: 0 } },
      { key: "user:1", limits: {} },
      { key: "token:1", limits: { rpm: 5, tpm: 100, concurrency: -1 } }
    ]),
    [{ key: "token:1", rpm: 5, tpm: 100, concurrency: 0 }]
  )
})

Deno.test("rateLimited names every limit (in the caller's words, never an internal id) and takes the longest wait", () => {
  const error = rateLimited([
    { key: "token:1", limit: "rpm", allowed: 5, retryAfterMs: 2_500 },
    { key: "user:1", limit: "concurrency", allowed: 2, retryAfterMs: 1_000 }
  ], 60_000)
  strictEqual(error._tag, "RateLimited")
  strictEqual(error.retryAfterSeconds, 3)
  strictEqual(
    error.message,
    "Rate limit reached: 5 requests per minute for this API key; 2 concurrent requests for this account"
  )
})

Deno.test("property: any limits become bounded integer rules", () => {
  const limit = fc.option(fc.oneof(fc.double(), fc.integer()), { nil: undefined })
  fc.assert(
    fc.property(
      fc.array(fc.record({ key: fc.string(), limits: fc.record({ rpm: limit, tpm: limit, concurrency: limit }) })),
      (subjects) => {
        const rules = toRules(subjects)
        ok(new Set(rules.map((rule) => rule.key)).size === rules.length)
        for (const rule of rules) {
          for (const value of [rule.rpm, rule.tpm, rule.concurrency]) {
            ok(Number.isSafeInteger(value) && value >= 0 && value <= maxAmount)
          }
          ok(rule.rpm + rule.tpm + rule.concurrency > 0)
        }
      }
    )
  )
})
