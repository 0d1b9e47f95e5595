/**
 * The usage log on PostgreSQL: a row the database would reject (NUL or a lone
 * surrogate in its text, a fractional or oversized count) is made safe when
 * recorded; a row the database still rejects is set aside in a minimal form
 * without stopping the rows and charges around it; `used_quota` keeps equal
 * to the sum of the logged costs.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { Context, Effect, Layer, type Scope } from "effect"
import { SqlClient } from "effect/sql"
import type { Principal } from "../../src/services/Auth.ts"
import { QuotaLedger } from "../../src/billing/QuotaLedger.ts"
import { UsageLog, type UsageRow } from "../../src/billing/UsageLog.ts"
import { layerPostgres } from "../../src/storage/Database.ts"
import { freshPostgres } from "../support/Gateway.ts"

const principal = (userId: bigint, tokenId: bigint): Principal => ({
  tokenId,
  tokenName: "main",
  userId,
  group: "default",
  models: undefined,
  unlimitedQuota: true,
  expiresAt: undefined,
  tokenLimits: undefined,
  userLimits: undefined
})

/** Ledger and usage log (flushing every 20 ms) on `url`, open until the scope closes. */
const gateway = (url: string) =>
  Layer.build(
    UsageLog.layer(20).pipe(
      Layer.provideMerge(QuotaLedger.layer({ chunk: 50_000n })),
      Layer.provideMerge(layerPostgres(url, 4))
    )
  ).pipe(
    Effect.map((context) => ({
      ledger: Context.get(context, QuotaLedger),
      usage: Context.get(context, UsageLog),
      sql: Context.get(context, SqlClient.SqlClient)
    }))
  )

const seed = (sql: SqlClient.SqlClient) =>
  Effect.gen(function* () {
    const [user] = yield* sql<{ readonly id: bigint }>`
      INSERT INTO users (username, group_name, quota) VALUES ('alice', 'default', 10000000) RETURNING id`
    const [token] = yield* sql<{ readonly id: bigint }>`
      INSERT INTO tokens (user_id, name, key_hash, key_prefix, remain_quota)
      VALUES (${user.id}, 'main', 'hash-alice', 'sk-test', NULL) RETURNING id`
    return { userId: user.id, tokenId: token.id }
  })

const row = (ids: { userId: bigint; tokenId: bigint }, requestId: string, cost: bigint): UsageRow => ({
  requestId,
  attempt: 1,
  userId: ids.userId,
  tokenId: ids.tokenId,
  channelId: 1,
  model: "gpt-test",
  upstreamModel: "gpt-test-upstream",
  promptTokens: 10,
  completionTokens: 20,
  cachedTokens: 0,
  reasoningTokens: 0,
  cost,
  latencyMs: 12,
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

/** Settles one charge of `cost` and records its row, as the relay does. */
const charge = (
  ledger: QuotaLedger["Service"],
  usage: UsageLog["Service"],
  who: Principal,
  usageRow: UsageRow
) =>
  Effect.gen(function* () {
    const hold = yield* ledger.reserve(who, usageRow.cost)
    const charged = yield* ledger.settle(hold, usageRow.cost)
    usage.record({ ...usageRow, cost: charged })
  })

const totals = (sql: SqlClient.SqlClient, userId: bigint) =>
  Effect.gen(function* () {
    const [sums] = yield* sql<{ rows: bigint; cost: string | null; used: bigint }>`
      SELECT count(*)::bigint AS rows, sum(cost)::text AS cost,
        (SELECT used_quota FROM users WHERE id = ${userId}) AS used
      FROM usage_logs`
    return { rows: Number(sums.rows), cost: BigInt(sums.cost ?? "0"), used: BigInt(sums.used) }
  })

Deno.test(
  "usage log: rows with NUL, lone surrogates and bad counts are cleaned when recorded, and nothing stops",
  withDatabase((url) =>
    Effect.gen(function* () {
      const { ledger, usage, sql } = yield* gateway(url)
      const ids = yield* seed(sql)
      const who = principal(ids.userId, ids.tokenId)
      const cut = "x".repeat(499) + "\ud83d\ude00" // a vendor message cut at 500 characters mid-pair
      const bad: ReadonlyArray<UsageRow> = [
        { ...row(ids, "req-nul", 100n), error: "upstream said \u0000 nothing", model: "gpt\u0000test" },
        { ...row(ids, "req-surrogate", 200n), error: cut.slice(0, 500), upstreamModel: "m\ud800x\udc00" },
        { ...row(ids, "req-fraction", 300n), promptTokens: 1.5, completionTokens: 1e21, latencyMs: -4 },
        { ...row(ids, "req-nan", 400n), cachedTokens: Number.NaN, reasoningTokens: Infinity, status: 2 ** 40 },
        { ...row(ids, "req-huge", 500n), error: "e".repeat(3_000_000), requestId: "r".repeat(10_000) }
      ]
      for (const usageRow of bad) yield* charge(ledger, usage, who, usageRow)
      yield* charge(ledger, usage, who, row(ids, "req-good", 600n))
      yield* usage.flush
      // Later rows keep flowing on the ticks.
      yield* charge(ledger, usage, who, row(ids, "req-later", 700n))
      yield* Effect.sleep("200 millis")

      const sums = yield* totals(sql, ids.userId)
      deepStrictEqual(sums, { rows: 7, cost: 2_800n, used: 2_800n })
      const stored = yield* sql<
        {
          request_id: string
          model: string
          upstream_model: string | null
          error: string | null
          prompt_tokens: number
          completion_tokens: number
          cached_tokens: number
          reasoning_tokens: number
          latency_ms: number
          status: number
        }
      >`SELECT request_id, model, upstream_model, error, prompt_tokens, completion_tokens, cached_tokens,
          reasoning_tokens, latency_ms, status FROM usage_logs ORDER BY cost`
      const byCost = stored.map((entry) => ({ ...entry, error: entry.error?.slice(0, 40) ?? null }))
      strictEqual(byCost[0].error, "upstream said  nothing")
      strictEqual(byCost[0].model, "gpttest")
      ok(!stored[1].error!.includes("\ud83d"), "the cut pair is dropped")
      strictEqual(stored[1].error, "x".repeat(499))
      strictEqual(stored[1].upstream_model, "m\ufffdx\ufffd")
      deepStrictEqual(
        [stored[2].prompt_tokens, stored[2].completion_tokens, stored[2].latency_ms],
        [1, 2_147_483_647, 0]
      )
      deepStrictEqual([stored[3].cached_tokens, stored[3].reasoning_tokens, stored[3].status], [0, 0, 2_147_483_647])
      ok(stored[4].error!.length <= 2_000, "a huge error text is bounded")
      ok(stored[4].request_id.length <= 200, "a huge request id is bounded")
    })
  )
)

Deno.test(
  "usage log: a row the database still rejects is set aside in a minimal form; its batch and charge go through",
  withDatabase((url) =>
    Effect.gen(function* () {
      const { ledger, usage, sql } = yield* gateway(url)
      const ids = yield* seed(sql)
      const who = principal(ids.userId, ids.tokenId)
      // A rule the database enforces and the gateway does not know about.
      yield* sql`ALTER TABLE usage_logs ADD CONSTRAINT no_forbidden_model CHECK (model <> 'forbidden')`
      for (let index = 0; index < 40; index += 1) {
        const usageRow = row(ids, `req-${index}`, BigInt(index + 1))
        yield* charge(ledger, usage, who, index === 17 ? { ...usageRow, model: "forbidden" } : usageRow)
      }
      yield* usage.flush
      const sums = yield* totals(sql, ids.userId)
      deepStrictEqual(sums, { rows: 40, cost: 820n, used: 820n })
      const [aside] = yield* sql<{ request_id: string; model: string; cost: bigint; error: string }>`
        SELECT request_id, model, cost, error FROM usage_logs WHERE request_id = 'req-17'`
      strictEqual(aside.cost, 18n)
      strictEqual(aside.model, "")
      ok(aside.error.includes("set aside"), aside.error)
    })
  )
)

Deno.test(
  "usage log: writeWithin and adjustWithin commit together or not at all; the row is cleaned, its negative cost kept",
  withDatabase((url) =>
    Effect.gen(function* () {
      const { ledger, usage, sql } = yield* gateway(url)
      const ids = yield* seed(sql)
      const who = principal(ids.userId, ids.tokenId)
      yield* charge(ledger, usage, who, row(ids, "submit", 300_000n))
      yield* usage.flush
      const refund = {
        ...row(ids, "submit", -120_000n),
        attempt: 0,
        model: "gpt-\u0000test\ud800",
        promptTokens: 0,
        completionTokens: 0,
        error: "Re-priced: 120000 quota units refunded."
      }
      // Outside a transaction both refuse to run (a defect): the caller's transaction is their guard.
      strictEqual((yield* Effect.exit(usage.writeWithin(refund)))._tag, "Failure")
      strictEqual((yield* Effect.exit(ledger.adjustWithin(ids, 120_000n)))._tag, "Failure")
      strictEqual((yield* totals(sql, ids.userId)).rows, 1)
      // A transaction that fails after both wrote leaves nothing of either.
      const failed = yield* Effect.exit(sql.withTransaction(Effect.gen(function* () {
        strictEqual(yield* ledger.adjustWithin(ids, 120_000n), 120_000n)
        yield* usage.writeWithin(refund)
        return yield* Effect.fail("the caller's own write failed")
      })))
      strictEqual(failed._tag, "Failure")
      deepStrictEqual(yield* totals(sql, ids.userId), { rows: 1, cost: 300_000n, used: 300_000n })
      // Committed: the balance and the row together, the logged costs still equal to used_quota.
      yield* sql.withTransaction(Effect.gen(function* () {
        strictEqual(yield* ledger.adjustWithin(ids, 120_000n), 120_000n)
        yield* usage.writeWithin(refund)
      }))
      deepStrictEqual(yield* totals(sql, ids.userId), { rows: 2, cost: 180_000n, used: 180_000n })
      const [written] = yield* sql<{ model: string; cost: bigint }>`
        SELECT model, cost FROM usage_logs WHERE request_id = 'submit' AND attempt = 0`
      deepStrictEqual({ model: written.model, cost: BigInt(written.cost) }, { model: "gpt-test", cost: -120_000n })
      const [user] = yield* sql<{ quota: bigint }>`SELECT quota FROM users WHERE id = ${ids.userId}`
      strictEqual(BigInt(user.quota), 10_000_000n - 180_000n)
    })
  )
)
