/**
 * The router's cooldown arithmetic over plain records, as properties over
 * arbitrary sequences of attempt outcomes: a cooldown starts at exactly every
 * `cooldownFailures`-th failure in a row, lasts `cooldownSeconds` doubled per
 * earlier strike up to `cooldownMaxSeconds` (from the `now` given, to the
 * millisecond), and a success clears it all; a probe ends the cooldown but
 * keeps the strikes; the shared state decides which channels are down.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import {
  cooldownLength,
  endCooldown,
  type HealthBook,
  healthOf,
  type HealthSettings,
  isCooling,
  recordFailure,
  recordSuccess,
  syncDown
} from "../../../src/services/routing/ChannelHealth.ts"

const settings = fc.record({
  cooldownFailures: fc.integer({ min: 1, max: 5 }),
  cooldownSeconds: fc.integer({ min: 1, max: 120 }),
  cooldownMaxSeconds: fc.integer({ min: 1, max: 3_600 })
})

/** An attempt at a time (epoch ms, non-decreasing by construction below). */
const steps = fc.array(fc.record({ ok: fc.boolean(), after: fc.integer({ min: 0, max: 100_000 }) }), {
  maxLength: 60
})

Deno.test("channel health: cooldowns start at every cooldownFailures-th failure in a row and double up to the cap", () => {
  fc.assert(
    fc.property(settings, steps, (config: HealthSettings, attempts) => {
      const book: HealthBook = new Map()
      let now = 1_000_000
      let run = 0
      let strikes = 0
      let until = 0
      for (const attempt of attempts) {
        now += attempt.after
        const health = healthOf(book, 7)
        if (attempt.ok) {
          recordSuccess(health)
          run = 0
          strikes = 0
          until = 0
          strictEqual(isCooling(book, 7, now), false)
          continue
        }
        const seconds = recordFailure(health, config, now)
        run += 1
        if (run < config.cooldownFailures) {
          strictEqual(seconds, undefined)
        } else {
          const expected = Math.min(config.cooldownSeconds * 2 ** strikes, config.cooldownMaxSeconds)
          strictEqual(seconds, expected)
          strictEqual(seconds, cooldownLength(config, strikes))
          run = 0
          strikes += 1
          until = now + expected * 1000
        }
        deepStrictEqual({ ...health }, { failures: run, strikes, cooldownUntil: until, down: false })
        if (until > 0) strictEqual(isCooling(book, 7, until - 1), true)
        strictEqual(isCooling(book, 7, until), false)
      }
    })
  )
})

Deno.test("channel health: a probe ends the cooldown and the failure count, the strikes stay until a request succeeds", () => {
  const config: HealthSettings = { cooldownFailures: 2, cooldownSeconds: 30, cooldownMaxSeconds: 600 }
  const book: HealthBook = new Map()
  const health = healthOf(book, 1)
  recordFailure(health, config, 0)
  strictEqual(recordFailure(health, config, 0), 30)
  endCooldown(health)
  strictEqual(isCooling(book, 1, 1), false)
  recordFailure(health, config, 1_000)
  strictEqual(recordFailure(health, config, 1_000), 60)
  recordSuccess(health)
  recordFailure(health, config, 2_000)
  strictEqual(recordFailure(health, config, 2_000), 30)
})

Deno.test("channel health: a channel with no record is healthy and gets one on first use", () => {
  const book: HealthBook = new Map()
  strictEqual(isCooling(book, 3, 0), false)
  strictEqual(book.size, 0)
  deepStrictEqual(healthOf(book, 3), { failures: 0, strikes: 0, cooldownUntil: 0, down: false })
  strictEqual(healthOf(book, 3), book.get(3))
})

Deno.test("channel health: syncDown makes exactly the shared row's unhealthy channels down here", () => {
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.integer({ min: 1, max: 30 })),
      fc.uniqueArray(fc.integer({ min: 1, max: 30 })),
      (known, down) => {
        const book: HealthBook = new Map()
        for (const id of known) healthOf(book, id).down = id % 2 === 0
        syncDown(book, new Set(down))
        for (const [id, health] of book) strictEqual(health.down, down.includes(id))
        for (const id of down) strictEqual(book.get(id)?.down, true)
      }
    )
  )
})
