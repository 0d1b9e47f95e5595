/**
 * The fold's exactly-once claim, as a property on a real PostgreSQL database:
 * whatever subsets of a set of batches are folded, in whatever order and how
 * often (a retry after a lost COMMIT, a journal record folded again after a
 * crash, a dead instance's record folded by two live ones), each batch's
 * charge and usage row are written exactly once.
 */
import { deepStrictEqual } from "node:assert/strict"
import fc from "fast-check"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { type Batch, makeCommitBatcher } from "../../src/billing/ledger/CommitBatcher.ts"
import { newAccount } from "../../src/billing/ledger/LeaseMath.ts"
import type { Leases } from "../../src/billing/ledger/Leases.ts"
import { makeUsageRowStore } from "../../src/billing/usage-log/UsageRowStore.ts"
import type { UsageRow } from "../../src/billing/UsageLog.ts"
import { layerPostgres } from "../../src/storage/Database.ts"
import { freshPostgres } from "../support/Gateway.ts"

const account = (subject: "user" | "token", id: bigint) => newAccount(subject, id, subject === "user", 0n)

const row = (userId: bigint, tokenId: bigint, requestId: string, cost: bigint): UsageRow => ({
  requestId,
  attempt: 1,
  userId,
  tokenId,
  channelId: null,
  model: "gpt-test",
  upstreamModel: null,
  promptTokens: 1,
  completionTokens: 1,
  cachedTokens: 0,
  reasoningTokens: 0,
  cost,
  latencyMs: 1,
  stream: false,
  status: 200,
  error: null
})

/** A batch of one charge of `cost` to the user and token, as a journal record of instance `instance` holds it. */
const batchOf = (id: string, instance: string, userId: bigint, tokenId: bigint, cost: bigint): Batch => ({
  id,
  instance,
  alongside: { _tag: "Rows", rows: [row(userId, tokenId, `request-${id}`, cost)] },
  taken: [
    { account: account("token", tokenId), charged: cost, returned: 0n, requests: 0 },
    { account: account("user", userId), charged: cost, returned: 0n, requests: 1 }
  ],
  final: false,
  place: { _tag: "Table" }
})

Deno.test({
  name: "fold: any sequence of folds of any subsets writes each batch's charge and row exactly once",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const database = await freshPostgres()
    try {
      await Effect.runPromise(Effect.scoped(Effect.gen(function* () {
        const context = yield* Layer.build(layerPostgres(database.url, 2))
        const sql = Context.get(context, SqlClient.SqlClient)
        // Only `foldForeign` is used: it needs the SQL and the rows' writer, not this instance's leases.
        const batcher = makeCommitBatcher({
          sql,
          instance: "this-instance",
          leases: { now: () => Date.now() } as unknown as Leases,
          idleMillis: 1_000,
          oneStatement: true,
          writeRows: makeUsageRowStore(sql).writeRows,
          journal: undefined
        })
        let run = 0
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(
              fc.array(fc.integer({ min: 1, max: 1_000_000 }), { minLength: 1, maxLength: 8 }),
              fc.array(fc.array(fc.nat(), { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 6 }),
              fc.array(fc.constantFrom("this-instance", "dead-instance"), { minLength: 8, maxLength: 8 }),
              async (costs, folds, instances) => {
                run += 1
                const [user] = await Effect.runPromise(sql<{ readonly id: bigint }>`
                  INSERT INTO users (username, group_name, quota) VALUES (${`user-${run}`}, 'default', 100000000)
                  RETURNING id`)
                const [token] = await Effect.runPromise(sql<{ readonly id: bigint }>`
                  INSERT INTO tokens (user_id, name, key_hash, key_prefix) VALUES (${user.id}, 'k', ${`h-${run}`}, 'sk')
                  RETURNING id`)
                const batches = costs.map((cost, index) =>
                  batchOf(`run-${run}-${index}`, instances[index], BigInt(user.id), BigInt(token.id), BigInt(cost))
                )
                // The given subsets (indexes taken modulo the batches), then every batch once more.
                for (const fold of [...folds, batches.map((_, index) => index)]) {
                  const subset = [...new Set(fold.map((index) => batches[index % batches.length]))]
                  await Effect.runPromise(batcher.foldForeign(subset))
                }
                const [sums] = await Effect.runPromise(sql<{ rows: bigint; used: bigint; requests: bigint }>`
                  SELECT (SELECT count(*) FROM usage_logs WHERE user_id = ${user.id})::bigint AS rows,
                    (SELECT used_quota FROM users WHERE id = ${user.id}) AS used,
                    (SELECT request_count FROM users WHERE id = ${user.id}) AS requests`)
                deepStrictEqual(
                  { rows: Number(sums.rows), used: BigInt(sums.used), requests: Number(sums.requests) },
                  {
                    rows: costs.length,
                    used: costs.reduce((sum, cost) => sum + BigInt(cost), 0n),
                    requests: costs.length
                  }
                )
              }
            ),
            { numRuns: 25 }
          )
        )
      })))
    } finally {
      await database.drop()
    }
  }
})
