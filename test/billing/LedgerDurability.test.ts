/**
 * The quota ledger on PostgreSQL when the database misbehaves: a commit whose
 * outcome is unknown (the transaction committed, the gateway saw a failure) is
 * retried without a second row or a second charge; an instance that has not
 * reached its database for longer than the lease stale time serves no hold
 * (`LedgerUnavailable`, a 503 `quota_ledger_unavailable`) and serves again
 * once it reaches it. A commit whose connection dies mid-transaction (its
 * ROLLBACK failing too) is kept and re-run, and the usage log goes on; every
 * committed point has `used_quota` equal to the logged costs, even when a
 * charge lands while a commit waits for the ledger.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Fiber, Layer, Redacted, type Scope } from "effect"
import { SqlClient, SqlError } from "effect/sql"
import { envelopeBody, toProblem } from "../../src/errors/Envelope.ts"
import { LedgerUnavailable } from "../../src/errors/GatewayError.ts"
import type { Principal } from "../../src/services/Auth.ts"
import { QuotaLedger } from "../../src/billing/QuotaLedger.ts"
import { UsageLog, type UsageRow } from "../../src/billing/UsageLog.ts"
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
 * `sql` whose outermost transactions (and the ledger's single-statement commits) fail once after committing while
 * `seam.armed` is set: what the gateway sees when the connection is lost right after the server committed.
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
  // The ledger's single-statement commit commits on its own: its outcome is lost the same way.
  const unsafe = (text: string, params?: ReadonlyArray<unknown>) =>
    sql.unsafe(text, params as Array<unknown>).pipe(
      Effect.tap(() => {
        if (!text.startsWith("WITH claim AS") || !seam.armed) return Effect.void
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
  return new Proxy(sql, {
    get: (target, property, receiver) =>
      property === "withTransaction"
        ? withTransaction
        : property === "unsafe"
        ? unsafe
        : Reflect.get(target, property, receiver)
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
      strictEqual(ledger.serving(), true)

      yield* Effect.promise(() => admin(`ALTER DATABASE ${name} WITH ALLOW_CONNECTIONS false`))
      yield* Effect.promise(() =>
        admin(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${name}'`)
      )
      // Within the stale time the lease still covers holds without the database.
      const covered = yield* ledger.reserve(who, 1_000n)
      yield* ledger.settle(covered, 1_000n)
      yield* Effect.sleep("500 millis")
      // Fenced: `serving` (what GET /readyz reads) says so before any hold is asked for.
      strictEqual(ledger.serving(), false)
      const refused = yield* Effect.flip(ledger.reserve(who, 1_000n))
      strictEqual(refused._tag, "LedgerUnavailable")

      yield* Effect.promise(() => admin(`ALTER DATABASE ${name} WITH ALLOW_CONNECTIONS true`))
      const again = yield* ledger.reserve(who, 1_000n)
      yield* ledger.settle(again, 1_000n)
      strictEqual(ledger.serving(), true)
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

/**
 * `sql` whose outermost transactions can be made to misbehave: `killNext` ends the next one's own connection
 * (`pg_terminate_backend(pg_backend_pid())`) after its work, so the transaction fails and its ROLLBACK fails
 * too, as when every connection is killed mid-transaction; `delayNext` holds the next one for that many ms
 * before it starts. After every committed outermost transaction `observe` runs (outside it).
 */
const seamed = (
  sql: SqlClient.SqlClient,
  seam: { killNext: boolean; killed: number; delayNext: number },
  observe: Effect.Effect<void, unknown> = Effect.void
): SqlClient.SqlClient => {
  let depth = 0
  const withTransaction: SqlClient.SqlClient["withTransaction"] = (effect) =>
    Effect.suspend(() => {
      depth += 1
      const outermost = depth === 1
      const delay = outermost ? seam.delayNext : 0
      if (outermost) seam.delayNext = 0
      const kill = outermost && seam.killNext
      if (kill) seam.killNext = false
      const work = kill
        ? Effect.tap(effect, () =>
          Effect.andThen(
            Effect.sync(() => seam.killed += 1),
            sql`SELECT pg_terminate_backend(pg_backend_pid())`
          ))
        : effect
      return Effect.andThen(Effect.sleep(delay), sql.withTransaction(work)).pipe(
        Effect.tap(() => outermost ? Effect.orDie(observe) : Effect.void),
        Effect.ensuring(Effect.sync(() => depth -= 1))
      )
    })
  return new Proxy(sql, {
    get: (target, property, receiver) =>
      property === "withTransaction" ? withTransaction : Reflect.get(target, property, receiver)
  })
}

/** The user's `used_quota` and the sum of the logged costs. */
const sums = (sql: SqlClient.SqlClient, userId: bigint) =>
  Effect.map(
    sql<{ used: bigint; logged: string; rows: bigint }>`
      SELECT (SELECT used_quota FROM users WHERE id = ${userId}) AS used,
        (SELECT coalesce(sum(cost), 0)::text FROM usage_logs) AS logged,
        (SELECT count(*)::bigint FROM usage_logs) AS rows`,
    ([row]) => ({ used: row.used, logged: BigInt(row.logged), rows: row.rows })
  )

Deno.test(
  "ledger: a commit whose connection dies mid-transaction (ROLLBACK failing too) is kept and retried; the log goes on",
  withDatabase((url) =>
    Effect.gen(function* () {
      const seam = { killNext: false, killed: 0, delayNext: 0 }
      const database = yield* Layer.build(layerPostgres(url, 4))
      const real = Context.get(database, SqlClient.SqlClient)
      const built = yield* Layer.build(
        UsageLog.layer(20).pipe(
          // A death inside the transaction of several statements.
          Layer.provideMerge(QuotaLedger.layer({ chunk: 50_000n, singleStatement: false })),
          Layer.provide(Layer.succeed(SqlClient.SqlClient, seamed(real, seam)))
        )
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
      seam.killNext = true
      // The next tick writes the five rows and their charges, then its connection dies before COMMIT.
      while (seam.killed === 0) yield* Effect.sleep("10 millis")
      for (let index = 0; index < 5; index += 1) yield* charge(`after-${index}`, 2_000n)
      // No flush: the usage log's own ticks must go on after the failed commit and re-run it.
      let now = yield* sums(real, ids.userId)
      for (let wait = 0; wait < 100 && now.rows < 10n; wait += 1) {
        yield* Effect.sleep("20 millis")
        now = yield* sums(real, ids.userId)
      }
      deepStrictEqual(now, { used: 15_000n, logged: 15_000n, rows: 10n })
    })
  )
)

Deno.test(
  "ledger: every commit writes the rows of exactly the charges it writes, even when a charge lands while it waits",
  withDatabase((url) =>
    Effect.gen(function* () {
      const seam = { killNext: false, killed: 0, delayNext: 0 }
      const database = yield* Layer.build(layerPostgres(url, 4))
      const real = Context.get(database, SqlClient.SqlClient)
      const seen: Array<{ used: bigint; logged: bigint; rows: bigint }> = []
      let userId = 0n
      const observe = Effect.suspend(() => sums(real, userId)).pipe(Effect.map((now) => seen.push(now)))
      // Ticks far apart: the test drives the writes.
      const built = yield* Layer.build(
        UsageLog.layer(60_000).pipe(
          // The seam waits inside the transaction of several statements.
          Layer.provideMerge(QuotaLedger.layer({ chunk: 1_000n, singleStatement: false })),
          Layer.provide(Layer.succeed(SqlClient.SqlClient, seamed(real, seam, observe)))
        )
      )
      const ledger = Context.get(built, QuotaLedger)
      const usage = Context.get(built, UsageLog)
      const ids = yield* seed(real, 10_000_000n, null)
      userId = ids.userId
      const who = principal(ids.userId, ids.tokenId, true)
      const first = yield* ledger.reserve(who, 500n)
      const second = yield* ledger.reserve(who, 500n)
      usage.record(usageRow(ids, "first", yield* ledger.settle(first, 400n)))
      // A hold beyond the lease tops it up under the ledger's gate, slowly; a flush waits behind it.
      seam.delayNext = 300
      const topUp = yield* Effect.forkChild(ledger.reserve(who, 1_000_000n))
      yield* Effect.sleep("50 millis")
      const flush = yield* Effect.forkChild(usage.flush)
      yield* Effect.sleep("50 millis")
      // A request settles and logs while the flush waits.
      usage.record(usageRow(ids, "second", yield* ledger.settle(second, 300n)))
      yield* ledger.settle(yield* Fiber.join(topUp), 0n)
      yield* Fiber.join(flush)
      yield* usage.flush
      ok(seen.length > 0, "no commit observed")
      const off = seen.filter((point) => point.used !== point.logged)
      deepStrictEqual(off, [], `committed points where used_quota differs from the logged costs: ${off.length}`)
      deepStrictEqual(seen.at(-1), { used: 700n, logged: 700n, rows: 2n })
    })
  )
)

Deno.test(
  "ledger: settle calls onBooked with the charged amount in the step it books, so a commit has both or neither",
  withDatabase((url) =>
    Effect.gen(function* () {
      const built = yield* Layer.build(
        UsageLog.layer(60_000).pipe(
          Layer.provideMerge(QuotaLedger.layer({ chunk: 1_000n })),
          Layer.provideMerge(layerPostgres(url, 4))
        )
      )
      const ledger = Context.get(built, QuotaLedger)
      const usage = Context.get(built, UsageLog)
      const sql = Context.get(built, SqlClient.SqlClient)
      const ids = yield* seed(sql, 10_000_000n, 5_000_000n)
      const who = principal(ids.userId, ids.tokenId)
      const booked: Array<bigint> = []
      const record = (requestId: string) => (charged: bigint) => {
        booked.push(charged)
        usage.record(usageRow(ids, requestId, charged))
      }
      // Within the hold, and above it (the excess taken from the lease).
      const within = yield* ledger.reserve(who, 1_000n)
      const charged = yield* ledger.settle(within, 600n, record("within"))
      const above = yield* ledger.reserve(who, 1_000n)
      yield* ledger.settle(above, 1_500n, record("above"))
      // Settled again: nothing charged, nothing recorded.
      yield* ledger.settle(above, 1_500n, record("again"))
      deepStrictEqual([charged, booked], [600n, [600n, 1_500n]])
      yield* usage.flush
      deepStrictEqual(yield* sums(sql, ids.userId), { used: 2_100n, logged: 2_100n, rows: 2n })
    })
  )
)
