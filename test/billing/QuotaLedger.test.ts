/**
 * The quota ledger's leases on PostgreSQL: two gateway instances sharing one
 * balance never hold more than it, charges and hand-backs leave it exact, a
 * crashed instance's lease stops counting, a cost above the hold is capped,
 * and an idle lease goes back to the table.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { Context, Effect, Layer, type Scope } from "effect"
import { SqlClient } from "effect/sql"
import type {
  BudgetExceeded,
  InsufficientQuota,
  InvalidRequest,
  LedgerUnavailable
} from "../../src/errors/GatewayError.ts"
import type { Principal } from "../../src/services/Auth.ts"
import { type Hold, QuotaLedger } from "../../src/billing/QuotaLedger.ts"
import { layerPostgres } from "../../src/storage/Database.ts"
import { freshPostgres } from "../support/Gateway.ts"

const principal = (userId: bigint, tokenId: bigint, unlimitedQuota: boolean): Principal => ({
  tokenId,
  tokenName: "main",
  userId,
  group: "default",
  models: undefined,
  unlimitedQuota,
  expiresAt: undefined,
  tokenLimits: undefined,
  userLimits: undefined
})

type Ledger = QuotaLedger["Service"]

/** A ledger instance of its own (own pool, own instance id) on `url`, open until the scope closes. */
const instance = (url: string, idleMillis = 60_000, staleMillis = 120_000) =>
  Layer.build(
    QuotaLedger.layer({ chunk: 50_000n, idleMillis, staleMillis }).pipe(Layer.provideMerge(layerPostgres(url, 4)))
  ).pipe(
    Effect.map((context) => ({
      ledger: Context.get(context, QuotaLedger),
      sql: Context.get(context, SqlClient.SqlClient)
    }))
  )

/** Creates user `quota` with one token (`remain` null = unlimited) and returns their ids. */
const seed = (sql: SqlClient.SqlClient, quota: bigint, remain: bigint | null) =>
  Effect.gen(function* () {
    const name = `u${crypto.randomUUID().slice(0, 8)}`
    const [user] = yield* sql<{ readonly id: bigint }>`
      INSERT INTO users (username, group_name, quota) VALUES (${name}, 'default', ${quota}) RETURNING id`
    const [token] = yield* sql<{ readonly id: bigint }>`
      INSERT INTO tokens (user_id, name, key_hash, key_prefix, remain_quota)
      VALUES (${user.id}, 'main', ${name}, 'sk-test', ${remain}) RETURNING id`
    return { userId: user.id, tokenId: token.id }
  })

const balances = (sql: SqlClient.SqlClient, userId: bigint) =>
  Effect.gen(function* () {
    const [row] = yield* sql<
      { quota: bigint; used: bigint; remain: bigint | null; token_used: bigint; requests: bigint }
    >`
      SELECT u.quota, u.used_quota AS used, t.remain_quota AS remain, t.used_quota AS token_used,
             u.request_count AS requests
      FROM users u JOIN tokens t ON t.user_id = u.id WHERE u.id = ${userId}`
    const [leases] = yield* sql<{ count: bigint }>`
      SELECT count(*)::bigint AS count FROM quota_leases l JOIN tokens t ON t.id = l.subject_id AND l.subject = 'token'
      WHERE t.user_id = ${userId}
      UNION ALL SELECT count(*)::bigint FROM quota_leases WHERE subject = 'user' AND subject_id = ${userId}`
    return { ...row, leases: BigInt(leases.count) }
  })

const attempt = (
  effect: Effect.Effect<Hold, InsufficientQuota | BudgetExceeded | InvalidRequest | LedgerUnavailable>
) => Effect.result(effect)

const withDatabase = (test: (url: string) => Effect.Effect<void, unknown, Scope.Scope>) => async () => {
  const database = await freshPostgres()
  try {
    await Effect.runPromise(Effect.scoped(test(database.url)) as Effect.Effect<void>)
  } finally {
    await database.drop()
  }
}

Deno.test(
  "ledger: two instances on one balance never hold more than it, and settle it exactly",
  withDatabase((url) =>
    Effect.gen(function* () {
      const granted = 1_000_000n
      const tokenGranted = 600_000n
      const amount = 10_000n
      const cost = 3_000n
      let ids = { userId: 0n, tokenId: 0n }
      let successes = 0
      yield* Effect.scoped(Effect.gen(function* () {
        const first = yield* instance(url)
        const second = yield* instance(url)
        ids = yield* seed(first.sql, granted, tokenGranted)
        const who = principal(ids.userId, ids.tokenId, false)
        const ledgers: ReadonlyArray<Ledger> = [first.ledger, second.ledger]
        const results = yield* Effect.forEach(
          Array.from({ length: 200 }, (_, index) => ledgers[index % 2]),
          (ledger) => attempt(ledger.reserve(who, amount)).pipe(Effect.map((result) => ({ ledger, result }))),
          { concurrency: "unbounded" }
        )
        const holds = results.flatMap(({ ledger, result }) =>
          result._tag === "Success" ? [{ ledger, hold: result.success }] : []
        )
        successes = holds.length
        ok(successes * Number(amount) <= Number(tokenGranted), `${successes} holds fit in the token's balance`)
        ok(successes >= 40, `most of the balance is usable (${successes} holds)`)
        for (const { result } of results) {
          if (result._tag === "Failure") strictEqual(result.failure._tag, "InsufficientQuota")
        }
        for (const { ledger, hold } of holds) {
          strictEqual(yield* ledger.settle(hold, cost), cost)
          strictEqual(yield* ledger.settle(hold, cost), 0n, "a second settle charges nothing")
        }
        yield* Effect.forEach(ledgers, (ledger) => ledger.commit(Effect.void))
        // Before the instances close, the API view matches the stored charges.
        const view = yield* first.ledger.balances(who)
        strictEqual(view.userUsed, BigInt(successes) * cost)
      }))
      // Both instances closed: every lease is back, and the balances are exact.
      const { sql } = yield* instance(url)
      const after = yield* balances(sql, ids.userId)
      const spent = BigInt(successes) * cost
      deepStrictEqual(
        {
          quota: after.quota,
          used: after.used,
          remain: after.remain,
          tokenUsed: after.token_used,
          leases: after.leases
        },
        { quota: granted - spent, used: spent, remain: tokenGranted - spent, tokenUsed: spent, leases: 0n }
      )
      strictEqual(after.requests, BigInt(successes))
    })
  )
)

Deno.test(
  "ledger: a lease its instance stopped renewing stops counting after two minutes",
  withDatabase((url) =>
    Effect.gen(function* () {
      const { ledger, sql } = yield* instance(url)
      const live = yield* seed(sql, 100_000n, null)
      const crashed = yield* seed(sql, 100_000n, null)
      for (const [ids, age] of [[live, "10 seconds"], [crashed, "3 minutes"]] as const) {
        yield* sql`INSERT INTO quota_leases (instance_id, subject, subject_id, amount, renewed_at)
          VALUES ('other-instance', 'user', ${ids.userId}, 100000, now() - ${age}::interval)`
      }
      const refused = yield* Effect.flip(ledger.reserve(principal(live.userId, live.tokenId, true), 1_000n))
      strictEqual(refused._tag, "InsufficientQuota")
      strictEqual(refused._tag === "InsufficientQuota" && refused.scope, "user")
      const hold = yield* ledger.reserve(principal(crashed.userId, crashed.tokenId, true), 100_000n)
      strictEqual(hold.amount, 100_000n)
      const [stale] = yield* sql<{ count: bigint }>`
        SELECT count(*)::bigint AS count FROM quota_leases WHERE instance_id = 'other-instance'`
      strictEqual(BigInt(stale.count), 1n, "the dead lease row is gone, the live one stays")
    })
  )
)

Deno.test(
  "ledger: a cost above the hold takes what remains and no more; an idle lease goes back",
  withDatabase((url) =>
    Effect.gen(function* () {
      const { ledger, sql } = yield* instance(url, 50)
      const ids = yield* seed(sql, 50_000n, null)
      const who = principal(ids.userId, ids.tokenId, true)
      const hold = yield* ledger.reserve(who, 10_000n)
      strictEqual(yield* ledger.settle(hold, 80_000n), 50_000n)
      const refused = yield* Effect.flip(ledger.reserve(who, 1n))
      strictEqual(refused._tag, "InsufficientQuota")

      const other = yield* seed(sql, 40_000n, 30_000n)
      const second = principal(other.userId, other.tokenId, false)
      const small = yield* ledger.reserve(second, 5_000n)
      strictEqual(yield* ledger.settle(small, 1_234n), 1_234n)
      yield* Effect.sleep("80 millis")
      yield* ledger.commit(Effect.void)
      for (
        const [id, quota, used, remain] of [[ids.userId, 0n, 50_000n, null], [other.userId, 38_766n, 1_234n, 28_766n]]
      ) {
        const after = yield* balances(sql, id as bigint)
        deepStrictEqual(
          { quota: after.quota, used: after.used, remain: after.remain, leases: after.leases },
          { quota, used, remain, leases: 0n }
        )
      }
    })
  )
)

Deno.test(
  "ledger: a lease held by a long request keeps being renewed, so no other instance can take it",
  withDatabase((url) =>
    Effect.gen(function* () {
      const first = yield* instance(url, 100, 300)
      const second = yield* instance(url, 60_000, 300)
      const ids = yield* seed(first.sql, 100_000n, null)
      const who = principal(ids.userId, ids.tokenId, true)
      // The whole balance is held (nothing free) for longer than the stale time, with commits meanwhile.
      const hold = yield* first.ledger.reserve(who, 100_000n)
      for (let round = 0; round < 4; round += 1) {
        yield* Effect.sleep("200 millis")
        yield* first.ledger.commit(Effect.void)
      }
      const refused = yield* Effect.flip(second.ledger.reserve(who, 1n))
      strictEqual(refused._tag, "InsufficientQuota")
      strictEqual(yield* first.ledger.settle(hold, 60_000n), 60_000n)
      // Idle now: the next commit hands the 40,000 left back, and the other instance can lease it.
      yield* Effect.sleep("150 millis")
      yield* first.ledger.commit(Effect.void)
      const held = yield* second.ledger.reserve(who, 40_000n)
      strictEqual(held.amount, 40_000n)
    })
  )
)

Deno.test(
  "ledger: commits with nothing to write leave the lease rows alone until a renewal is due",
  withDatabase((url) =>
    Effect.gen(function* () {
      // Stale after 2 s: renewals every 500 ms at most.
      const { ledger, sql } = yield* instance(url, 60_000, 2_000)
      const ids = yield* seed(sql, 100_000n, null)
      const who = principal(ids.userId, ids.tokenId, true)
      const hold = yield* ledger.reserve(who, 10_000n)
      const renewedAt = sql<{ at: string }>`
        SELECT renewed_at::text AS at FROM quota_leases WHERE subject = 'user' AND subject_id = ${ids.userId}`
      const [leased] = yield* renewedAt
      for (let round = 0; round < 3; round += 1) {
        yield* Effect.sleep("20 millis")
        yield* ledger.commit()
      }
      const [idle] = yield* renewedAt
      strictEqual(idle.at, leased.at, "no renewal within a quarter of the stale time")
      yield* Effect.sleep("550 millis")
      yield* ledger.commit()
      const [renewed] = yield* renewedAt
      ok(renewed.at > leased.at, `renewed once due (${leased.at} → ${renewed.at})`)
      strictEqual(yield* ledger.settle(hold, 1_000n), 1_000n)
      yield* ledger.commit()
      strictEqual((yield* balances(sql, ids.userId)).used, 1_000n)
    })
  )
)

Deno.test(
  "ledger: a background top-up that ends after a commit handed the lease back is not lost to a forgotten account",
  withDatabase((url) =>
    Effect.gen(function* () {
      // Idle leases go back at every commit: a commit may run between a hold's background top-up starting and
      // ending, find the account empty and forget it; the top-up's lease must still be handed back.
      const { ledger, sql } = yield* instance(url, 0)
      const other = yield* instance(url, 60_000)
      const ids = yield* seed(sql, 1_000_000n, 1_000_000n)
      const who = principal(ids.userId, ids.tokenId, false)
      // Holds large beside the balance: each leases all of it and starts a top-up for more.
      for (let round = 0; round < 5; round += 1) {
        const hold = yield* ledger.reserve(who, 100_000n)
        strictEqual(yield* ledger.settle(hold, 100_000n), 100_000n)
        yield* ledger.commit(Effect.void)
      }
      let leases = -1n
      for (let tries = 0; tries < 100 && leases !== 0n; tries += 1) {
        yield* Effect.sleep("10 millis")
        yield* ledger.commit(Effect.void)
        leases = (yield* balances(sql, ids.userId)).leases
      }
      strictEqual(leases, 0n, "every lease went back")
      // The whole remainder can be held by another instance.
      const held = yield* other.ledger.reserve(who, 500_000n)
      strictEqual(held.amount, 500_000n)
    })
  )
)
