/**
 * Budgets in the quota ledger on PostgreSQL: two instances sharing one budget
 * window never hold nor charge more than it, the window's `spent` equals the
 * charges, a refusal names the budget and its reset, a cost above the hold is
 * capped by the budget, a refused balance gives the budget hold back, a
 * rollover under load charges each request to the window it started in, and
 * a window made while commits run (a first request's statements) is charged
 * with the key.
 */
import { ok, strictEqual } from "node:assert/strict"
import { Context, Effect, Fiber, Layer, type Scope } from "effect"
import { SqlClient } from "effect/sql"
import type { AppliedBudget } from "../../src/domain/BudgetPeriod.ts"
import type { Principal } from "../../src/services/Auth.ts"
import { type Hold, QuotaLedger } from "../../src/billing/QuotaLedger.ts"
import { layerPostgres } from "../../src/storage/Database.ts"
import { freshPostgres } from "../support/Gateway.ts"

const principal = (ids: { userId: bigint; tokenId: bigint }, budgets: ReadonlyArray<AppliedBudget>): Principal => ({
  tokenId: ids.tokenId,
  tokenName: "main",
  userId: ids.userId,
  group: "default",
  models: undefined,
  unlimitedQuota: true,
  expiresAt: undefined,
  tokenLimits: undefined,
  userLimits: undefined,
  budgets
})

/** A ledger instance of its own on `url`, reading budget windows from `clock`. */
const instance = (url: string, clock: () => number = () => Date.now(), idleMillis = 60_000) =>
  Layer.build(
    QuotaLedger.layer({ chunk: 20_000n, idleMillis, clock }).pipe(Layer.provideMerge(layerPostgres(url, 4)))
  ).pipe(
    Effect.map((context) => ({
      ledger: Context.get(context, QuotaLedger),
      sql: Context.get(context, SqlClient.SqlClient)
    }))
  )

/** A user with `quota` and one unlimited token, both with the given stored budgets. */
const seed = (sql: SqlClient.SqlClient, quota: bigint, budgets: { token?: string; user?: string }) =>
  Effect.gen(function* () {
    const name = `u${crypto.randomUUID().slice(0, 8)}`
    const [user] = yield* sql<{ readonly id: bigint }>`
      INSERT INTO users (username, group_name, quota, budgets) VALUES (${name}, 'default', ${quota},
        ${budgets.user ?? null}::jsonb) RETURNING id`
    const [token] = yield* sql<{ readonly id: bigint }>`
      INSERT INTO tokens (user_id, name, key_hash, key_prefix, remain_quota, budgets)
      VALUES (${user.id}, 'main', ${name}, 'sk-test', NULL, ${budgets.token ?? null}::jsonb) RETURNING id`
    return { userId: BigInt(user.id), tokenId: BigInt(token.id) }
  })

const windows = (sql: SqlClient.SqlClient, subject: string, id: bigint) =>
  sql<{ readonly start: Date; readonly spent: bigint }>`
    SELECT period_start AS start, spent FROM budget_periods WHERE subject = ${subject} AND subject_id = ${id}
    ORDER BY period_start`.pipe(
    Effect.map((rows) => rows.map((row) => ({ start: row.start, spent: BigInt(row.spent) })))
  )

const withDatabase = (test: (url: string) => Effect.Effect<void, unknown, Scope.Scope>) => async () => {
  const database = await freshPostgres()
  try {
    await Effect.runPromise(Effect.scoped(test(database.url)) as Effect.Effect<void>)
  } finally {
    await database.drop()
  }
}

const day = (amount: bigint, owner: "token" | "user" = "token"): AppliedBudget => ({
  amount,
  period: "day",
  timezone: "UTC",
  owner
})

Deno.test(
  "budgets: two instances on one daily budget never hold more than it, and its window's spent is the charges",
  withDatabase((url) =>
    Effect.gen(function* () {
      const budget = 200_000n
      const amount = 7_000n
      let charged = 0n
      let ids = { userId: 0n, tokenId: 0n }
      yield* Effect.scoped(Effect.gen(function* () {
        const first = yield* instance(url)
        const second = yield* instance(url)
        ids = yield* seed(first.sql, 10_000_000n, { token: JSON.stringify([{ amount: "200000", period: "day" }]) })
        const who = principal(ids, [day(budget)])
        const results = yield* Effect.forEach(
          Array.from({ length: 120 }, (_, index) => index % 2 === 0 ? first.ledger : second.ledger),
          (ledger) => Effect.result(ledger.reserve(who, amount)).pipe(Effect.map((result) => ({ ledger, result }))),
          { concurrency: "unbounded" }
        )
        const holds: Array<{ ledger: QuotaLedger["Service"]; hold: Hold }> = []
        for (const { ledger, result } of results) {
          if (result._tag === "Success") holds.push({ ledger, hold: result.success })
          else {
            strictEqual(result.failure._tag, "BudgetExceeded")
            if (result.failure._tag !== "BudgetExceeded") continue
            ok(result.failure.message.includes("key's daily budget of $0.2"), result.failure.message)
            ok(result.failure.message.includes("it resets at "), result.failure.message)
            const wait = result.failure.retryAfterSeconds ?? 0
            ok(wait >= 1 && wait <= 86_400, `Retry-After within a day (${wait} s)`)
          }
        }
        ok(BigInt(holds.length) * amount <= budget, `${holds.length} holds of ${amount} fit in ${budget}`)
        ok(holds.length >= 20, `most of the budget is usable (${holds.length} holds)`)
        // Settle at varied costs, some above the hold: the budget caps the excess.
        for (const [index, { ledger, hold }] of holds.entries()) {
          charged += yield* ledger.settle(hold, index % 3 === 0 ? 9_000n : 4_000n)
        }
        yield* first.ledger.commit(Effect.void)
        yield* second.ledger.commit(Effect.void)
      }))
      const { sql } = yield* instance(url)
      const spent = yield* windows(sql, "token", ids.tokenId)
      strictEqual(spent.length, 1)
      strictEqual(spent[0].spent, charged, "the window's spent equals the charges")
      ok(charged <= budget, `charged ${charged} ≤ budget ${budget}`)
      const [leases] = yield* sql<{ count: bigint }>`SELECT count(*)::bigint AS count FROM quota_leases`
      strictEqual(BigInt(leases.count), 0n, "every lease is handed back at close")
    })
  )
)

Deno.test(
  "budgets: a cost above the hold is capped at the budget; a refused balance gives the budget hold back",
  withDatabase((url) =>
    Effect.gen(function* () {
      const { ledger, sql } = yield* instance(url)
      const ids = yield* seed(sql, 30_000n, { user: JSON.stringify([{ amount: "50000", period: "total" }]) })
      const who = principal(ids, [{ amount: 50_000n, period: "total", timezone: "UTC", owner: "user" }])
      // The balance (30,000) refuses a hold the budget (50,000) could cover: the budget keeps all of it.
      const refused = yield* Effect.flip(ledger.reserve(who, 40_000n))
      strictEqual(refused._tag, "InsufficientQuota")
      const hold = yield* ledger.reserve(who, 20_000n)
      strictEqual(yield* ledger.settle(hold, 25_000n), 25_000n)
      // 25,000 left of the budget but 5,000 of the balance: the balance is short first.
      const excess = yield* ledger.reserve(who, 1_000n)
      strictEqual(yield* ledger.settle(excess, 90_000n), 5_000n, "capped by the balance")
      yield* ledger.commit(Effect.void)
      const [spent] = yield* windows(sql, "user", ids.userId)
      strictEqual(spent.spent, 30_000n)

      const other = yield* seed(sql, 10_000_000n, { token: JSON.stringify([{ amount: "50000", period: "total" }]) })
      const capped = principal(other, [{ amount: 50_000n, period: "total", timezone: "UTC", owner: "token" }])
      const big = yield* ledger.reserve(capped, 10_000n)
      strictEqual(yield* ledger.settle(big, 1_000_000n), 50_000n, "capped by the budget")
      const over = yield* Effect.flip(ledger.reserve(capped, 1n))
      strictEqual(over._tag, "BudgetExceeded")
      ok(over._tag === "BudgetExceeded" && over.retryAfterSeconds === undefined, "a total budget has no reset")
      ok(over._tag === "BudgetExceeded" && over.message.includes("it does not reset"), over.message)
      yield* ledger.commit(Effect.void)
      const [tokenSpent] = yield* windows(sql, "token", other.tokenId)
      strictEqual(tokenSpent.spent, 50_000n)
    })
  )
)

Deno.test(
  "budgets: a rollover under load charges each request to the window it started in, on two instances",
  withDatabase((url) =>
    Effect.gen(function* () {
      // 23:59:59.900 UTC: the clock crosses midnight while holds are open.
      let now = Date.UTC(2026, 10, 27, 23, 59, 59, 900)
      const clock = () => now
      const budget = 100_000n
      let ids = { userId: 0n, tokenId: 0n }
      const chargedBy = new Map<string, bigint>([["before", 0n], ["after", 0n]])
      yield* Effect.scoped(Effect.gen(function* () {
        const first = yield* instance(url, clock)
        const second = yield* instance(url, clock)
        ids = yield* seed(first.sql, 10_000_000n, { token: JSON.stringify([{ amount: "100000", period: "day" }]) })
        const who = principal(ids, [day(budget)])
        const ledgers = [first.ledger, second.ledger]
        const reserveMany = (count: number) =>
          Effect.forEach(
            Array.from({ length: count }, (_, index) => ledgers[index % 2]),
            (ledger) =>
              Effect.result(ledger.reserve(who, 3_000n)).pipe(
                Effect.map((result) => ({ ledger, hold: result._tag === "Success" ? result.success : undefined }))
              ),
            { concurrency: "unbounded" }
          )
        const before = yield* reserveMany(60)
        now += 200
        const after = yield* reserveMany(60)
        // The early holds settle after midnight, interleaved with the late ones.
        const settleAll = (
          held: ReadonlyArray<{ ledger: QuotaLedger["Service"]; hold: Hold | undefined }>,
          label: string
        ) =>
          Effect.forEach(held, ({ ledger, hold }) =>
            hold === undefined ? Effect.void : ledger.settle(hold, 2_500n).pipe(
              Effect.map((charged) => chargedBy.set(label, chargedBy.get(label)! + charged))
            ), { concurrency: "unbounded", discard: true })
        yield* Effect.all([settleAll(before, "before"), settleAll(after, "after")], { concurrency: "unbounded" })
        yield* first.ledger.commit(Effect.void)
        yield* second.ledger.commit(Effect.void)
      }))
      const { sql } = yield* instance(url)
      const spent = yield* windows(sql, "token", ids.tokenId)
      strictEqual(spent.length, 2, "one window each side of midnight")
      strictEqual(spent[0].start.toISOString(), "2026-11-27T00:00:00.000Z")
      strictEqual(spent[1].start.toISOString(), "2026-11-28T00:00:00.000Z")
      strictEqual(spent[0].spent, chargedBy.get("before"), "the early requests are charged to the old day")
      strictEqual(spent[1].spent, chargedBy.get("after"), "the late ones to the new day")
      ok(spent[0].spent <= budget && spent[1].spent <= budget, `each day ≤ ${budget}: ${spent.map((w) => w.spent)}`)
      ok(spent[0].spent > 0n && spent[1].spent > 0n, "both windows were used")
    })
  )
)

Deno.test(
  "budgets: a window whose account was pruned between commits (lease handed back) still gets every charge",
  withDatabase((url) =>
    Effect.gen(function* () {
      const { ledger, sql } = yield* instance(url, () => Date.now(), 5)
      const ids = yield* seed(sql, 10_000_000n, { token: JSON.stringify([{ amount: "100000", period: "day" }]) })
      const who = principal(ids, [day(100_000n)])
      let charged = 0n
      for (let round = 0; round < 4; round++) {
        const hold = yield* ledger.reserve(who, 2_000n)
        charged += yield* ledger.settle(hold, 1_500n)
        yield* ledger.commit(Effect.void)
        // Idle past idleMillis: the next commit hands the lease back and forgets the account.
        yield* Effect.sleep("20 millis")
        yield* ledger.commit(Effect.void)
        const [leases] = yield* sql<{ count: bigint }>`SELECT count(*)::bigint AS count FROM quota_leases
          WHERE subject = 'budget'`
        strictEqual(BigInt(leases.count), 0n, "the budget lease went back")
      }
      const [spent] = yield* windows(sql, "token", ids.tokenId)
      strictEqual(spent.spent, charged)
      strictEqual(charged, 6_000n)
    })
  )
)

Deno.test(
  "budgets: a window made while a commit runs between the statements of a first request keeps its charge",
  withDatabase((url) =>
    Effect.gen(function* () {
      const { ledger, sql } = yield* instance(url)
      const ids = yield* seed(sql, 10_000_000n, {
        token: JSON.stringify([{ amount: "2000", period: "day" }]),
        user: JSON.stringify([{ amount: "1000000", period: "month" }])
      })
      const who = principal(ids, [day(2_000n), { amount: 1_000_000n, period: "month", timezone: "UTC", owner: "user" }])
      // Commits back to back, as the usage log's ticks under load: one lands while a window's row is being made.
      let running = true
      const ticks = yield* Effect.forkChild(Effect.gen(function* () {
        while (running) {
          yield* ledger.commit()
          yield* Effect.yieldNow
        }
      }))
      const hold = yield* ledger.reserve(who, 300n)
      const charged = yield* ledger.settle(hold, 36n)
      running = false
      yield* Fiber.join(ticks)
      yield* ledger.commit(Effect.void)
      const [tokenWindow] = yield* windows(sql, "token", ids.tokenId)
      const [userWindow] = yield* windows(sql, "user", ids.userId)
      const [used] = yield* sql<
        { readonly used: bigint }
      >`SELECT used_quota AS used FROM tokens WHERE id = ${ids.tokenId}`
      strictEqual(charged, 36n)
      strictEqual(BigInt(used.used), 36n, "the key's used quota has the charge")
      strictEqual(tokenWindow.spent, 36n, "the key's daily window has the charge")
      strictEqual(userWindow.spent, 36n, "the user's monthly window has the charge")
    })
  )
)
