/**
 * The channel router over a real catalog (PostgreSQL), with its time and
 * chance from Effect: the weighted order inside a tier is drawn from the
 * `Random` the router is built with (one seed, one sequence of orders, and
 * the shares follow the weights), and a cooldown lasts exactly
 * `cooldownSeconds` (doubled on a repeat) by the `Clock` it is built with,
 * driven here by `TestClock`.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { Context, Effect, Layer, Random } from "effect"
import type { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { applyBootstrap } from "../../src/config/ApplyBootstrap.ts"
import type { Principal } from "../../src/services/Auth.ts"
import { type Candidate, ChannelRouter, type HealthSettings } from "../../src/services/ChannelRouter.ts"
import { Catalog } from "../../src/storage/Catalog.ts"
import { layerPostgres } from "../../src/storage/Database.ts"
import { basicConfig, freshPostgres } from "../support/Gateway.ts"

const MODEL = "gpt-test"

const principal: Principal = {
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

const SETTINGS: HealthSettings = { cooldownFailures: 3, cooldownSeconds: 30, cooldownMaxSeconds: 600 }

/** Channels `a`, `b`, `c` in one tier, weights 1, 3 and 6 (nothing listens at their address: no call is made). */
const channels = [{ name: "a", weight: 1 }, { name: "b", weight: 3 }, { name: "c", weight: 6 }].map((channel) => ({
  ...channel,
  type: "openai" as const,
  base_url: "http://127.0.0.1:9",
  keys: [`sk-test-${channel.name}-upstream`],
  models: [MODEL]
}))

/**
 * Runs `body` with the catalog of `channels` loaded from a fresh database
 * (built on the live clock); `body` builds its routers itself, so each takes
 * the `Clock` and `Random` it runs under.
 */
const withCatalog = (body: Effect.Effect<void, never, Catalog | SqlClient.SqlClient>) => async () => {
  const database = await freshPostgres()
  try {
    await Effect.runPromise(
      Effect.gen(function* () {
        const store = yield* Layer.build(layerPostgres(database.url, 2))
        yield* applyBootstrap(basicConfig("http://127.0.0.1:9", { channels, users: [] })).pipe(Effect.provide(store))
        const catalog = yield* Layer.build(Catalog.layer).pipe(Effect.provide(store))
        yield* body.pipe(Effect.provide(Context.merge(store, catalog)))
      }).pipe(Effect.scoped, Effect.orDie) as Effect.Effect<void>
    )
  } finally {
    await database.drop()
  }
}

/** A router built now (with the current `Clock` and `Random`). */
const router = Effect.map(Layer.build(ChannelRouter.layer(SETTINGS)), (context) => Context.get(context, ChannelRouter))

const names = (candidates: ReadonlyArray<Candidate>) => candidates.map((candidate) => candidate.channel.name).join("")

Deno.test(
  "router: the weighted order comes from the seeded Random; one seed, one sequence; shares follow the weights",
  withCatalog(
    Effect.gen(function* () {
      /** The first `rounds` orders of a router built under `seed`. */
      const orders = (seed: string, rounds: number) =>
        Effect.gen(function* () {
          const built = yield* router
          const out: Array<string> = []
          for (let index = 0; index < rounds; index++) out.push(names(yield* built.candidates(principal, MODEL)))
          return out
        }).pipe(Effect.scoped, Random.withSeed(seed))
      const first = yield* orders("router", 10_000)
      deepStrictEqual(yield* orders("router", 10_000), first, "the same seed gives the same orders")
      ok((yield* orders("another", 100)).join() !== first.slice(0, 100).join(), "another seed, other orders")
      for (const channel of channels) {
        const share = first.filter((order) => order[0] === channel.name).length / first.length
        ok(Math.abs(share - channel.weight / 10) <= 0.03, `${channel.name} first in ${share} of the orders`)
      }
      ok(first.every((order) => [...order].sort().join("") === "abc"), "every channel once in every order")
    }).pipe(Effect.orDie)
  )
)

Deno.test(
  "router: a cooldown lasts cooldownSeconds to the millisecond (TestClock), the channel tried last meanwhile; a repeat doubles it",
  withCatalog(
    Effect.gen(function* () {
      const built = yield* router
      const c = (yield* built.candidates(principal, MODEL)).find((candidate) => candidate.channel.name === "c")!
      const stateOf = () => built.health().find((view) => view.name === "c")!.state
      const fail = Effect.forEach([1, 2, 3], () => built.report(c, { _tag: "Retryable", reason: "server" }))
      yield* TestClock.setTime(1_000_000)

      yield* built.report(c, { _tag: "Retryable", reason: "server" })
      yield* built.report(c, { _tag: "Retryable", reason: "server" })
      strictEqual(stateOf(), "healthy", "two failures: no cooldown yet")
      yield* built.report(c, { _tag: "Retryable", reason: "server" })
      strictEqual(stateOf(), "cooling")
      strictEqual(built.health().find((view) => view.name === "c")!.cooldownUntil, 1_030)
      for (let index = 0; index < 20; index++) {
        strictEqual(names(yield* built.candidates(principal, MODEL)).at(-1), "c", "a cooling channel goes last")
      }
      deepStrictEqual(built.unhealthy().map((candidate) => candidate.channel.name), ["c"])
      yield* TestClock.adjust(29_999)
      strictEqual(stateOf(), "cooling", "1 ms before the cooldown ends")
      yield* TestClock.adjust(1)
      strictEqual(stateOf(), "healthy")
      deepStrictEqual(
        built.unhealthy().map((candidate) => candidate.channel.name),
        ["c"],
        "the prober still tests it: a channel is unhealthy until a success announces its recovery"
      )

      // The second cooldown in a row lasts twice as long.
      yield* fail
      yield* TestClock.adjust(59_999)
      strictEqual(stateOf(), "cooling")
      yield* TestClock.adjust(1)
      strictEqual(stateOf(), "healthy")
      // A success forgets the strikes: the next cooldown is the first length again.
      yield* built.report(c, { _tag: "Success" })
      deepStrictEqual(built.unhealthy(), [], "a success ends it")
      yield* fail
      yield* TestClock.adjust(30_000)
      strictEqual(stateOf(), "healthy")
    }).pipe(Effect.scoped, Effect.provide(TestClock.layer()), Effect.orDie)
  )
)
