/**
 * `Auth` bounds what a caller's key can cost it: an over-long key is refused
 * before it is hashed, cached or looked up, and made-up keys are remembered
 * apart from the known ones, so a flood of them cannot evict a busy key; a
 * key's expiry is read from Effect's `Clock` (driven here by `TestClock`).
 */
import { strictEqual } from "node:assert/strict"
import { Effect, Option } from "effect"
import { TestClock } from "effect/testing"
import { Auth, type KeyLookup, MAX_KEY_LENGTH, type ResolvedKey } from "../../src/services/Auth.ts"
import { hashKey } from "../../src/domain/KeyHash.ts"

const KNOWN = "sk-test-known-0001"

const resolved: ResolvedKey = {
  enabled: true,
  principal: {
    tokenId: 1n,
    tokenName: "main",
    userId: 1n,
    group: "default",
    models: undefined,
    unlimitedQuota: false,
    expiresAt: undefined,
    tokenLimits: undefined,
    userLimits: undefined
  }
}

/** A lookup that knows `KNOWN` and records every digest it was asked for. */
const countingLookup = () => {
  const asked: Array<string> = []
  const lookup: KeyLookup = (keyHash) =>
    Effect.sync(() => {
      asked.push(keyHash)
      return keyHash === hashKey(KNOWN) ? Option.some(resolved) : Option.none()
    })
  return { asked, lookup }
}

const run = <A>(lookup: KeyLookup, body: (auth: typeof Auth.Service) => Effect.Effect<A>) =>
  Effect.runPromise(Effect.flatMap(Auth, body).pipe(Effect.provide(Auth.layerLookup(lookup, 60_000))))

const reasonOf = (auth: typeof Auth.Service, key: string | undefined) =>
  auth.authenticate(key, undefined).pipe(Effect.match({
    onFailure: (error) => error._tag === "InvalidApiKey" ? error.reason : error._tag,
    onSuccess: () => "ok"
  }))

Deno.test("Auth: a key longer than MAX_KEY_LENGTH is unknown without a lookup", async () => {
  const { asked, lookup } = countingLookup()
  await run(lookup, (auth) =>
    Effect.gen(function* () {
      strictEqual(yield* reasonOf(auth, "sk-test-" + "x".repeat(MAX_KEY_LENGTH)), "unknown")
      strictEqual(yield* reasonOf(auth, "sk-test-" + "y".repeat(4 * 1024 * 1024)), "unknown")
      strictEqual(asked.length, 0, "no lookup for an over-long key")
      strictEqual(yield* reasonOf(auth, "k".repeat(MAX_KEY_LENGTH)), "unknown")
      strictEqual(asked.length, 1, "a key of exactly MAX_KEY_LENGTH is still looked up")
      strictEqual(yield* reasonOf(auth, KNOWN), "ok")
    }))
})

Deno.test("Auth: unknown keys are remembered and cannot evict a known key", async () => {
  const { asked, lookup } = countingLookup()
  await run(lookup, (auth) =>
    Effect.gen(function* () {
      strictEqual(yield* reasonOf(auth, KNOWN), "ok")
      strictEqual(yield* reasonOf(auth, "sk-test-made-up"), "unknown")
      strictEqual(yield* reasonOf(auth, "sk-test-made-up"), "unknown")
      strictEqual(
        asked.filter((digest) => digest === hashKey("sk-test-made-up")).length,
        1,
        "an unknown key is remembered"
      )
      // More made-up keys than both caches hold together.
      for (let index = 0; index < 120_000; index++) yield* reasonOf(auth, `sk-test-flood-${index}`)
      const before = asked.length
      strictEqual(yield* reasonOf(auth, KNOWN), "ok")
      strictEqual(asked.length, before, "the known key is still cached after the flood")
      strictEqual(yield* reasonOf(auth, undefined), "missing")
      strictEqual(yield* reasonOf(auth, ""), "missing")
    }))
})

Deno.test("Auth: a key expires at its expires_at second exactly, by Effect's Clock (TestClock)", () => {
  const expiresAt = 1_800_000_000
  const expiring: ResolvedKey = { ...resolved, principal: { ...resolved.principal, expiresAt } }
  const lookup: KeyLookup = (keyHash) =>
    Effect.succeed(keyHash === hashKey(KNOWN) ? Option.some(expiring) : Option.none())
  return Effect.runPromise(
    Effect.gen(function* () {
      const auth = yield* Auth
      yield* TestClock.setTime(expiresAt * 1000 - 60_000)
      strictEqual(yield* reasonOf(auth, KNOWN), "ok")
      yield* TestClock.adjust(59_999)
      strictEqual(yield* reasonOf(auth, KNOWN), "ok", "1 ms before its expiry the key still works")
      yield* TestClock.adjust(1)
      strictEqual(yield* reasonOf(auth, KNOWN), "expired")
    }).pipe(Effect.provide(Auth.layerLookup(lookup, 60_000)), Effect.provide(TestClock.layer()))
  )
})
