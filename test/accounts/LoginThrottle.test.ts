/**
 * The login throttle's counters with a hand-driven clock: an attempt takes
 * its slot before the password is checked, so parallel attempts cannot all
 * pass; a full counter refuses until its window ends; a success forgets the
 * name's count and hands back the address's slot only; names are compared
 * without case; IPv6 addresses count by their /64. The Redis store shares
 * its counts between two stores (two instances). The password hasher runs
 * bcrypt in a worker and refuses past its queue. The memory layer's windows
 * run on Effect's `Clock`, driven here by `TestClock`.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import type { RateLimited } from "../../src/errors/GatewayError.ts"
import { LoginThrottle, memoryCounters, redisCounters, type ThrottleOptions } from "../../src/accounts/LoginThrottle.ts"
import { addressKey } from "../../src/http/ClientAddress.ts"
import { PasswordHasher } from "../../src/accounts/PasswordHasher.ts"

const OPTIONS: ThrottleOptions = {
  maxFailures: 3,
  windowMillis: 60_000,
  addressMaxFailures: 5,
  registrationsPerAddress: 2,
  registrationWindowMillis: 60_000
}

const outcome = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.runPromise(Effect.match(effect, { onFailure: (error) => error, onSuccess: () => "ok" as const }))

Deno.test("login throttle: parallel attempts at one name take slots before any is checked", async () => {
  const throttle = LoginThrottle.make(OPTIONS, memoryCounters(() => 0))
  const answers = await Promise.all(
    Array.from({ length: 20 }, (_, index) => outcome(throttle.attempt("Alice", `10.0.0.${index}`)))
  )
  strictEqual(answers.filter((answer) => answer === "ok").length, 3)
  for (const answer of answers.filter((answer) => answer !== "ok")) {
    deepStrictEqual([(answer as { _tag: string })._tag, (answer as { retryAfterSeconds: number }).retryAfterSeconds], [
      "RateLimited",
      60
    ])
  }
})

Deno.test("login throttle: a full name waits out its window; a success forgets the name only", async () => {
  let now = 1_000_000
  const throttle = LoginThrottle.make(OPTIONS, memoryCounters(() => now))
  for (let attempt = 0; attempt < 3; attempt++) strictEqual(await outcome(throttle.attempt("bob", "10.0.0.1")), "ok")
  const refused = await outcome(throttle.attempt("BOB", "10.0.0.2"))
  strictEqual((refused as { retryAfterSeconds: number }).retryAfterSeconds, 60)
  now += 45_000
  strictEqual(
    (await outcome(throttle.attempt("bob", "10.0.0.2")) as { retryAfterSeconds: number }).retryAfterSeconds,
    15
  )
  now += 15_000
  const attempt = await Effect.runPromise(throttle.attempt("bob", "10.0.0.1"))
  await Effect.runPromise(attempt.succeeded)
  for (let attempt = 0; attempt < 3; attempt++) strictEqual(await outcome(throttle.attempt("bob", "10.0.0.3")), "ok")
})

Deno.test("login throttle: one address spraying many names is refused past its cap", async () => {
  const throttle = LoginThrottle.make(OPTIONS, memoryCounters(() => 0))
  const answers = []
  for (let index = 0; index < 8; index++) answers.push(await outcome(throttle.attempt(`name${index}`, "203.0.113.9")))
  deepStrictEqual(answers.map((answer) => answer === "ok"), [true, true, true, true, true, false, false, false])
  strictEqual(await outcome(throttle.attempt("name9", "203.0.113.10")), "ok")
  // Addresses of one IPv6 /64 share a counter.
  strictEqual(addressKey("2001:db8:1:2::5"), addressKey("2001:db8:1:2:ffff::1"))
  strictEqual(addressKey("::ffff:10.1.2.3"), "10.1.2.3")
  strictEqual(addressKey(undefined), "unknown")
})

Deno.test("login throttle: an attempt with no address to count (a proxy's, everyone's) takes its name's slot only", async () => {
  const throttle = LoginThrottle.make(OPTIONS, memoryCounters(() => 0))
  const answers = []
  for (let index = 0; index < 8; index++) answers.push(await outcome(throttle.attempt(`name${index}`, undefined)))
  deepStrictEqual(answers, Array(8).fill("ok"), "no address counter fills")
  for (let attempt = 0; attempt < 3; attempt++) strictEqual(await outcome(throttle.attempt("carol", undefined)), "ok")
  strictEqual((await outcome(throttle.attempt("carol", undefined)) as RateLimited)._tag, "RateLimited")
  // Such attempts leave the counters of real addresses alone.
  for (let index = 0; index < 5; index++) strictEqual(await outcome(throttle.attempt(`d${index}`, "10.0.0.9")), "ok")
  strictEqual((await outcome(throttle.attempt("d5", "10.0.0.9")) as RateLimited)._tag, "RateLimited")
})

Deno.test("login throttle: registrations per address are capped", async () => {
  const throttle = LoginThrottle.make(OPTIONS, memoryCounters(() => 0))
  const answers = []
  for (let index = 0; index < 3; index++) answers.push(await outcome(throttle.register("198.51.100.4")))
  deepStrictEqual(answers.map((answer) => answer === "ok"), [true, true, false])
})

Deno.test("login throttle: two instances on one Redis share their counts", async () => {
  const url = Deno.env.get("SLUICE_TEST_REDIS") ?? "redis://127.0.0.1:6379"
  const prefix = `sluice-test:${crypto.randomUUID()}:`
  const first = redisCounters(url, prefix, memoryCounters(Date.now))
  const second = redisCounters(url, prefix, memoryCounters(Date.now))
  try {
    const a = LoginThrottle.make(OPTIONS, first)
    const b = LoginThrottle.make(OPTIONS, second)
    const answers = await Promise.all([
      ...Array.from({ length: 5 }, () => outcome(a.attempt("carol", "10.0.0.1"))),
      ...Array.from({ length: 5 }, () => outcome(b.attempt("carol", "10.0.0.2")))
    ])
    strictEqual(answers.filter((answer) => answer === "ok").length, 3)
    strictEqual(first.outage?.(), undefined)
  } finally {
    await first.close()
    await second.close()
  }
})

Deno.test("password hasher: hashes and checks off the main thread; past its queue it refuses at once", async () => {
  await Effect.runPromise(
    Effect.gen(function* () {
      const hasher = yield* PasswordHasher
      const hash = yield* hasher.hash("correct horse battery")
      strictEqual(yield* hasher.verify("correct horse battery", hash), true)
      strictEqual(yield* hasher.verify("wrong horse battery", hash), false)
      strictEqual(yield* hasher.verify("anything at all", undefined), false)
      const burst = yield* Effect.all(
        Array.from({ length: 10 }, () => Effect.result(hasher.verify("guess-password", hash))),
        { concurrency: "unbounded" }
      )
      // One runs, two wait, the other seven are refused without waiting.
      strictEqual(burst.filter((result) => result._tag === "Success").length, 3)
      for (const result of burst.filter((result) => result._tag === "Failure")) {
        strictEqual((result as { failure: { retryAfterSeconds: number } }).failure.retryAfterSeconds, 1)
      }
    }).pipe(Effect.provide(PasswordHasher.layer({ workers: 1, queue: 2 })), Effect.scoped)
  )
})

Deno.test("login throttle (layerMemory): the windows follow Effect's Clock to the millisecond (TestClock)", () =>
  Effect.runPromise(
    Effect.gen(function* () {
      const throttle = yield* LoginThrottle
      const waitOf = (effect: Effect.Effect<unknown, RateLimited>) =>
        Effect.match(effect, { onFailure: (error) => error.retryAfterSeconds, onSuccess: () => 0 })
      for (let attempt = 0; attempt < 3; attempt++) yield* throttle.attempt("dave", "10.0.0.1")
      strictEqual(yield* waitOf(throttle.attempt("dave", "10.0.0.2")), 60)
      yield* TestClock.adjust(45_000)
      strictEqual(yield* waitOf(throttle.attempt("dave", "10.0.0.2")), 15)
      yield* TestClock.adjust(14_999)
      strictEqual(yield* waitOf(throttle.attempt("dave", "10.0.0.2")), 1, "1 ms before the window ends: refused")
      yield* TestClock.adjust(1)
      strictEqual(yield* waitOf(throttle.attempt("dave", "10.0.0.2")), 0, "the window ended: admitted")
      // Registrations: 2 per address per window, never handed back.
      yield* throttle.register("198.51.100.7")
      yield* TestClock.adjust(30_000)
      yield* throttle.register("198.51.100.7")
      strictEqual(yield* waitOf(throttle.register("198.51.100.7")), 30, "the window opened by the first sign-up")
      yield* TestClock.adjust(30_000)
      strictEqual(yield* waitOf(throttle.register("198.51.100.7")), 0)
    }).pipe(Effect.provide(LoginThrottle.layerMemory(OPTIONS)), Effect.provide(TestClock.layer()))
  ))
