/**
 * The budget invariant of the quota ledger, for generated interleavings: a
 * key with a daily budget and its user with a monthly one, a burst of
 * concurrent requests of random holds and costs (some above the hold, some
 * refused by a budget or a balance, some failed and released at 0) while
 * commits tick back to back and idle leases go back, end with the key's
 * `used_quota`, the user's, and both windows' `spent` all equal to the sum of
 * what was charged, each window within its budget and every lease handed back
 * once the instance closes. On PGlite and on PostgreSQL.
 */
import { ok, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import { Context, Effect, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { AppliedBudget } from "../../src/domain/BudgetPeriod.ts"
import type { Principal } from "../../src/services/Auth.ts"
import { QuotaLedger } from "../../src/billing/QuotaLedger.ts"
import { layerPglite, layerPostgres } from "../../src/storage/Database.ts"
import { freshPostgres } from "../support/Gateway.ts"
import { freshPglite } from "../support/PgliteTemplate.ts"

/** One request of a scenario: its hold, what it costs (0: failed), and whether it yields before settling. */
interface Request {
  readonly hold: bigint
  readonly cost: bigint
  readonly pause: boolean
}

/** A scenario: the balances, the two budgets (quota units) and the requests sent at once. */
interface Scenario {
  readonly quota: bigint
  readonly remain: bigint | null
  readonly daily: bigint
  readonly monthly: bigint
  readonly idleMillis: number
  readonly requests: ReadonlyArray<Request>
}

const scenario: fc.Arbitrary<Scenario> = fc.record({
  quota: fc.bigInt({ min: 2_000n, max: 40_000n }),
  remain: fc.option(fc.bigInt({ min: 1_000n, max: 40_000n }), { nil: null }),
  daily: fc.bigInt({ min: 500n, max: 20_000n }),
  monthly: fc.bigInt({ min: 500n, max: 40_000n }),
  idleMillis: fc.constantFrom(0, 1, 60_000),
  requests: fc.array(
    fc.record({
      hold: fc.bigInt({ min: 1n, max: 2_500n }),
      cost: fc.oneof(fc.constant(0n), fc.bigInt({ min: 1n, max: 4_000n })),
      pause: fc.boolean()
    }),
    { minLength: 1, maxLength: 24 }
  )
})

/** Runs one scenario on `sql` with a ledger instance of its own; returns what it charged and what was stored. */
const run = (sql: SqlClient.SqlClient, given: Scenario) =>
  Effect.gen(function* () {
    const name = `u${crypto.randomUUID().slice(0, 8)}`
    const [user] = yield* sql<{ readonly id: bigint }>`
      INSERT INTO users (username, group_name, quota, budgets) VALUES (${name}, 'default', ${given.quota},
        ${JSON.stringify([{ amount: String(given.monthly), period: "month" }])}::jsonb) RETURNING id`
    const [token] = yield* sql<{ readonly id: bigint }>`
      INSERT INTO tokens (user_id, name, key_hash, key_prefix, remain_quota, budgets)
      VALUES (${user.id}, 'main', ${name}, 'sk-test', ${given.remain},
        ${JSON.stringify([{ amount: String(given.daily), period: "day" }])}::jsonb) RETURNING id`
    const budgets: ReadonlyArray<AppliedBudget> = [
      { amount: given.daily, period: "day", timezone: "UTC", owner: "token" },
      { amount: given.monthly, period: "month", timezone: "UTC", owner: "user" }
    ]
    const who: Principal = {
      tokenId: BigInt(token.id),
      tokenName: "main",
      userId: BigInt(user.id),
      group: "default",
      models: undefined,
      unlimitedQuota: given.remain === null,
      expiresAt: undefined,
      tokenLimits: undefined,
      userLimits: undefined,
      budgets
    }
    let charged = 0n
    yield* Effect.scoped(Effect.gen(function* () {
      const context = yield* Layer.build(
        QuotaLedger.layer({ chunk: 5_000n, idleMillis: given.idleMillis }).pipe(
          Layer.provide(Layer.succeed(SqlClient.SqlClient, sql))
        )
      )
      const ledger = Context.get(context, QuotaLedger)
      let running = true
      const ticks = yield* Effect.forkChild(Effect.gen(function* () {
        while (running) {
          yield* ledger.commit()
          yield* Effect.yieldNow
        }
      }))
      yield* Effect.forEach(given.requests, (request) =>
        Effect.result(ledger.reserve(who, request.hold)).pipe(
          Effect.flatMap((held) =>
            held._tag === "Failure"
              ? Effect.sync(() =>
                ok(held.failure._tag === "BudgetExceeded" || held.failure._tag === "InsufficientQuota")
              )
              : (request.pause ? Effect.yieldNow : Effect.void).pipe(
                Effect.andThen(ledger.settle(held.success, request.cost)),
                Effect.map((amount) => {
                  charged += amount
                })
              )
          )
        ), { concurrency: "unbounded", discard: true })
      running = false
      yield* Fiber.join(ticks)
      yield* ledger.commit(Effect.void)
    }))
    const [stored] = yield* sql<{ readonly tokenUsed: bigint; readonly userUsed: bigint }>`
      SELECT t.used_quota AS "tokenUsed", u.used_quota AS "userUsed" FROM tokens t JOIN users u ON u.id = t.user_id
      WHERE t.id = ${token.id}`
    const spent = yield* sql<{ readonly subject: string; readonly spent: bigint }>`
      SELECT subject, spent FROM budget_periods
      WHERE (subject = 'token' AND subject_id = ${token.id}) OR (subject = 'user' AND subject_id = ${user.id})`
    const [leases] = yield* sql<{ readonly count: bigint }>`
      SELECT count(*)::bigint AS count FROM quota_leases`
    return {
      charged,
      tokenUsed: BigInt(stored.tokenUsed),
      userUsed: BigInt(stored.userUsed),
      daily: spent.filter((row) => row.subject === "token").map((row) => BigInt(row.spent)),
      monthly: spent.filter((row) => row.subject === "user").map((row) => BigInt(row.spent)),
      leases: BigInt(leases.count)
    }
  })

const check = (sql: SqlClient.SqlClient) =>
  Effect.promise(() =>
    fc.assert(
      fc.asyncProperty(scenario, async (given) => {
        const found = await Effect.runPromise(run(sql, given).pipe(Effect.orDie))
        strictEqual(found.tokenUsed, found.charged, "the key's used quota is every charge")
        strictEqual(found.userUsed, found.charged, "the user's used quota is every charge")
        const one = (windows: ReadonlyArray<bigint>) => windows.length === 0 ? 0n : windows[0]
        ok(found.daily.length <= 1 && found.monthly.length <= 1, "one window per budget")
        strictEqual(one(found.daily), found.charged, "the key's daily window's spend is every charge")
        strictEqual(one(found.monthly), found.charged, "the user's monthly window's spend is every charge")
        ok(found.charged <= given.daily && found.charged <= given.monthly, `${found.charged} within the budgets`)
        strictEqual(found.leases, 0n, "every lease is handed back at close")
      }),
      { numRuns: 20 }
    )
  )

Deno.test("budget ledger property: on PGlite, key used = user used = each window's spend = the charges", async () => {
  const store = await freshPglite()
  try {
    await Effect.runPromise(Effect.scoped(
      Effect.gen(function* () {
        yield* check(yield* SqlClient.SqlClient)
      }).pipe(Effect.provide(layerPglite(store.dataDir)))
    ) as Effect.Effect<void>)
  } finally {
    await store.remove()
  }
})

Deno.test("budget ledger property: on PostgreSQL, key used = user used = each window's spend = the charges", async () => {
  const database = await freshPostgres()
  try {
    await Effect.runPromise(Effect.scoped(
      Effect.gen(function* () {
        yield* check(yield* SqlClient.SqlClient)
      }).pipe(Effect.provide(layerPostgres(database.url, 4)))
    ) as Effect.Effect<void>)
  } finally {
    await database.drop()
  }
})
