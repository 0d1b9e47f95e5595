/**
 * The quota ledger on PostgreSQL when the database misbehaves: a commit whose
 * outcome is unknown (the transaction committed, the gateway saw a failure) is
 * retried without a second row or a second charge; an instance that has not
 * reached its database for longer than the lease stale time serves no hold
 * (`LedgerUnavailable`, a 503 `quota_ledger_unavailable`) and serves again
 * once it reaches it.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted, type Scope } from "effect"
import { SqlClient, SqlError } from "effect/sql"
import { envelopeBody, toProblem } from "../../src/errors/Envelope.ts"
import { LedgerUnavailable } from "../../src/errors/GatewayError.ts"
import type { Principal } from "../../src/services/Auth.ts"
import { QuotaLedger } from "../../src/services/QuotaLedger.ts"
import { UsageLog, type UsageRow } from "../../src/services/UsageLog.ts"
import { layerPostgres } from "../../src/storage/Database.ts"
import { freshPostgres, POSTGRES_URL } from "../support/Gateway.ts"

const principal = (userId: bigint, tokenId: bigint, unlimitedQuota = false): Principal => ({
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

/**
 * `sql` whose outermost transactions fail once after committing while `seam.armed` is set: what the gateway
 * sees when the connection is lost right after the server committed.
 */
const lostAtCommit = (sql: SqlClient.SqlClient, seam: { armed: boolean; tripped: number }): SqlClient.SqlClient => {
  let depth = 0
  const withTransaction: SqlClient.SqlClient["withTransaction"] = (effect) =>
    Effect.suspend(() => {
      depth += 1
      const outermost = depth === 1
      return sql.withTransaction(effect).pipe(
        Effect.ensuring(Effect.sync(() => depth -= 1)),
        Effect.tap(() => {
          if (!outermost || !seam.armed) return Effect.void
          seam.armed = false
          seam.tripped += 1
          const message = "Connection terminated unexpectedly"
          return Effect.fail(
            new SqlError.SqlError({
              reason: new SqlError.ConnectionError({ cause: new Error(message), message, operation: "commit" })
            })
          )
        })
      )
    })
  return new Proxy(sql, {
    get: (target, property, receiver) =>
      property === "withTransaction" ? withTransaction : Reflect.get(target, property, receiver)
  })
}

const seed = (sql: SqlClient.SqlClient, quota: bigint, remain: bigint | null) =>
  Effect.gen(function* () {
    const [user] = yield* sql<{ readonly id: bigint }>`
      INSERT INTO users (username, group_name, quota) VALUES ('alice', 'default', ${quota}) RETURNING id`
    const [token] = yield* sql<{ readonly id: bigint }>`
      INSERT INTO tokens (user_id, name, key_hash, key_prefix, remain_quota)
      VALUES (${user.id}, 'main', 'hash-alice', 'sk-test', ${remain}) RETURNING id`
    return { userId: user.id, tokenId: token.id }
  })

const usageRow = (ids: { userId: bigint; tokenId: bigint }, requestId: string, cost: bigint): UsageRow => ({
  requestId,
  attempt: 1,
  userId: ids.userId,
  tokenId: ids.tokenId,
  channelId: 1,
  model: "gpt-test",
  upstreamModel: null,
  promptTokens: 10,
  completionTokens: 20,
  cachedTokens: 0,
  reasoningTokens: 0,
  cost,
  latencyMs: 5,
  stream: false,
  status: 200,
  error: null
})

const withDatabase = (test: (url: string) => Effect.Effect<void, unknown, Scope.Scope>) => async () => {
  const database = await freshPostgres()
  try {
    await Effect.runPromise(Effect.scoped(test(database.url)) as Effect.Effect<void>)
  } finally {
    await database.drop()
  }
}

Deno.test(
  "ledger: a commit that committed but reported a failure is retried without a second row or charge",
  withDatabase((url) =>
    Effect.gen(function* () {
      const seam = { armed: false, tripped: 0 }
      const database = yield* Layer.build(layerPostgres(url, 4))
      const real = Context.get(database, SqlClient.SqlClient)
      const flaky = Layer.succeed(SqlClient.SqlClient, lostAtCommit(real, seam))
      const built = yield* Layer.build(
        UsageLog.layer(20).pipe(Layer.provideMerge(QuotaLedger.layer({ chunk: 50_000n })), Layer.provide(flaky))
      )
      const ledger = Context.get(built, QuotaLedger)
      const usage = Context.get(built, UsageLog)
      const ids = yield* seed(real, 10_000_000n, 5_000_000n)
      const who = principal(ids.userId, ids.tokenId)
      const charge = (requestId: string, cost: bigint) =>
        Effect.gen(function* () {
          const hold = yield* ledger.reserve(who, 10_000n)
          usage.record(usageRow(ids, requestId, yield* ledger.settle(hold, cost)))
        })
      for (let index = 0; index < 5; index += 1) yield* charge(`before-${index}`, 1_000n)
      seam.armed = true
      // The next tick commits the five rows and their charges, then sees "connection terminated".
      while (seam.tripped === 0) yield* Effect.sleep("10 millis")
      for (let index = 0; index < 5; index += 1) yield* charge(`after-${index}`, 2_000n)
      yield* Effect.sleep("150 millis")
      yield* usage.flush
      const [sums] = yield* real<{ rows: bigint; ids: bigint; cost: string; used: bigint; token_used: bigint }>`
        SELECT count(*)::bigint AS rows, count(DISTINCT request_id)::bigint AS ids, sum(cost)::text AS cost,
          (SELECT used_quota FROM users WHERE id = ${ids.userId}) AS used,
          (SELECT used_quota FROM tokens WHERE id = ${ids.tokenId}) AS token_used
        FROM usage_logs`
      deepStrictEqual(
        { rows: sums.rows, ids: sums.ids, cost: BigInt(sums.cost), used: sums.used, tokenUsed: sums.token_used },
        { rows: 10n, ids: 10n, cost: 15_000n, used: 15_000n, tokenUsed: 15_000n }
      )
      const [user] = yield* real<{ quota: bigint; requests: bigint }>`
        SELECT quota, request_count AS requests FROM users WHERE id = ${ids.userId}`
      deepStrictEqual(user, { quota: 10_000_000n - 15_000n, requests: 10n })
    })
  )
)

/** Runs `statement` on the server's maintenance database (outside the pool under test). */
const admin = (statement: string) =>
  Effect.runPromise(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(statement)).pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(POSTGRES_URL), maxConnections: 1 })),
      Effect.scoped
    ) as Effect.Effect<unknown, unknown, never>
  )

Deno.test(
  "ledger: an instance that cannot reach its database past the stale time serves no hold, then serves again",
  withDatabase((url) =>
    Effect.gen(function* () {
      const name = url.slice(url.lastIndexOf("/") + 1)
      const built = yield* Layer.build(
        QuotaLedger.layer({ chunk: 100_000n, staleMillis: 400 }).pipe(Layer.provideMerge(layerPostgres(url, 2)))
      )
      const ledger = Context.get(built, QuotaLedger)
      const sql = Context.get(built, SqlClient.SqlClient)
      const ids = yield* seed(sql, 10_000_000n, null)
      const who = principal(ids.userId, ids.tokenId, true)
      // Leases 100,000 + the hold into memory.
      const first = yield* ledger.reserve(who, 1_000n)
      yield* ledger.settle(first, 1_000n)

      yield* Effect.promise(() => admin(`ALTER DATABASE ${name} WITH ALLOW_CONNECTIONS false`))
      yield* Effect.promise(() =>
        admin(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${name}'`)
      )
      // Within the stale time the lease still covers holds without the database.
      const covered = yield* ledger.reserve(who, 1_000n)
      yield* ledger.settle(covered, 1_000n)
      yield* Effect.sleep("500 millis")
      const refused = yield* Effect.flip(ledger.reserve(who, 1_000n))
      strictEqual(refused._tag, "LedgerUnavailable")

      yield* Effect.promise(() => admin(`ALTER DATABASE ${name} WITH ALLOW_CONNECTIONS true`))
      const again = yield* ledger.reserve(who, 1_000n)
      yield* ledger.settle(again, 1_000n)
      yield* ledger.commit()
      const [user] = yield* sql<{ used: bigint }>`SELECT used_quota AS used FROM users WHERE id = ${ids.userId}`
      strictEqual(user.used, 3_000n)
    })
  )
)

Deno.test("ledger: LedgerUnavailable renders as a 503 platform_api_error quota_ledger_unavailable", () => {
  const problem = toProblem(new LedgerUnavailable())
  strictEqual(problem.status, 503)
  const body = envelopeBody("gateway", problem) as { error: { type: string; code: string; message: string } }
  deepStrictEqual([body.error.type, body.error.code], ["platform_api_error", "quota_ledger_unavailable"])
  ok(body.error.message.includes("cannot reach its database"), body.error.message)
})
