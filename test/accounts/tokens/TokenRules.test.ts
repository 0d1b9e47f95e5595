/**
 * The rules of a user's keys over plain values: only a digest and a prefix
 * stored, limits and expiry as stored, a key's budgets within the user's,
 * and the playground token's digest and names.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import { hashKey } from "../../../src/domain/KeyHash.ts"
import {
  budgetRefusal,
  expiryDate,
  limitsJson,
  playgroundDigest,
  playgroundName,
  storedKey
} from "../../../src/accounts/tokens/TokenRules.ts"

Deno.test("TokenRules: a new key is stored as its SHA-256 digest and a 7-character prefix, never in full", () => {
  fc.assert(fc.property(fc.stringMatching(/^sk-[A-Za-z0-9]{48}$/), (key) => {
    const stored = storedKey(key)
    strictEqual(stored.hash, hashKey(key))
    ok(/^[0-9a-f]{64}$/.test(stored.hash))
    strictEqual(stored.prefix, `${key.slice(0, 7)}…`)
    ok(!stored.prefix.includes(key.slice(7)))
  }))
})

Deno.test("TokenRules: the playground digest is no SHA-256 hex digest, so no presented key matches it", () => {
  fc.assert(fc.property(fc.bigInt({ min: 1n, max: 2n ** 62n }), fc.string(), (userId, key) => {
    const digest = playgroundDigest(userId)
    strictEqual(digest, `playground:${userId}`)
    ok(digest !== hashKey(key))
  }))
})

Deno.test("TokenRules: the playground token is named Playground, then 2 to 9, then a random suffix", () => {
  let drawn = 0
  const suffix = () => {
    drawn++
    return "abcd1234"
  }
  deepStrictEqual(
    Array.from({ length: 10 }, (_, index) => playgroundName(index + 1, suffix)),
    ["Playground", ...Array.from({ length: 8 }, (_, index) => `Playground ${index + 2}`), "Playground abcd1234"]
  )
  strictEqual(drawn, 1)
})

Deno.test("TokenRules: empty limits are stored as none; expiry is epoch seconds", () => {
  strictEqual(limitsJson(undefined), null)
  strictEqual(limitsJson(null), null)
  strictEqual(limitsJson({}), null)
  strictEqual(limitsJson({ rpm: 5 }), JSON.stringify({ rpm: 5 }))
  strictEqual(expiryDate(null), null)
  strictEqual(expiryDate(undefined), null)
  strictEqual(expiryDate(1_700_000_000)?.toISOString(), "2023-11-14T22:13:20.000Z")
})

Deno.test("TokenRules: a key's budget may not exceed the user's of the same period", () => {
  const user = [{ amount: "5000000", period: "day", timezone: "UTC" }]
  strictEqual(budgetRefusal(user, undefined), undefined)
  strictEqual(budgetRefusal(user, []), undefined)
  strictEqual(budgetRefusal(user, [{ amount: 5, period: "day" }]), undefined)
  // A period the user has no budget for is not capped.
  strictEqual(budgetRefusal(user, [{ amount: 100, period: "month" }]), undefined)
  strictEqual(budgetRefusal(undefined, [{ amount: 100, period: "day" }]), undefined)
  deepStrictEqual(budgetRefusal(user, [{ amount: 1, period: "month" }, { amount: 5.5, period: "day" }]), {
    message: "budgets[1].amount: a key's day budget cannot exceed the user's ($5).",
    param: "budgets[1].amount"
  })
})
