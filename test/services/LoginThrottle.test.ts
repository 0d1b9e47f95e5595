/**
 * The login throttle with a hand-driven clock: blocked after the set number
 * of failures within the window, for as long as the window since the first
 * failure lasts; a success forgets the failures; names are compared without
 * case.
 */
import { strictEqual } from "node:assert/strict"
import { makeLoginThrottle } from "../../src/services/LoginThrottle.ts"

Deno.test("login throttle: blocks after maxFailures in the window, until the window passes", () => {
  let now = 1_000_000
  const throttle = makeLoginThrottle({ maxFailures: 3, windowMillis: 60_000 }, () => now)
  for (let attempt = 0; attempt < 2; attempt++) {
    throttle.failed("Alice")
    strictEqual(throttle.blockedFor("alice"), undefined)
  }
  throttle.failed("ALICE")
  strictEqual(throttle.blockedFor("alice"), 60)
  now += 45_000
  strictEqual(throttle.blockedFor("alice"), 15)
  strictEqual(throttle.blockedFor("bob"), undefined)
  now += 15_000
  strictEqual(throttle.blockedFor("alice"), undefined)
})

Deno.test("login throttle: a success forgets the failures", () => {
  const throttle = makeLoginThrottle({ maxFailures: 2, windowMillis: 60_000 }, () => 0)
  throttle.failed("carol")
  throttle.succeeded("carol")
  throttle.failed("carol")
  strictEqual(throttle.blockedFor("carol"), undefined)
  throttle.failed("carol")
  strictEqual(throttle.blockedFor("carol"), 60)
})
