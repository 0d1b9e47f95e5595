/**
 * A task's deadline is read from Effect's `Clock`: polled 1 ms before its
 * deadline (by `TestClock`) a task goes on, polled at its deadline it fails
 * with code `timeout` and its whole charge is refunded, once. The store and
 * the poller run on PostgreSQL and the live clock; only the polls run under
 * the `TestClock`.
 */
import { strictEqual } from "node:assert/strict"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { GatewaySettings } from "../../src/services/GatewaySettings.ts"
import { QuotaLedger } from "../../src/billing/QuotaLedger.ts"
import { UsageLog } from "../../src/billing/UsageLog.ts"
import { Ledger } from "../../src/billing/Ledger.ts"
import { Catalog } from "../../src/storage/Catalog.ts"
import { layerPostgres } from "../../src/storage/Database.ts"
import { TaskPoller } from "../../src/tasks/TaskPoller.ts"
import { type NewTask, TaskStore } from "../../src/tasks/TaskStore.ts"
import { UpstreamClient } from "../../src/upstreams/transport/UpstreamClient.ts"
import { freshPostgres } from "../support/Gateway.ts"

/** The task's deadline: 2030-01-01T00:00:00Z (the store's own times are the database's, long before). */
const DEADLINE = Date.UTC(2030, 0, 1)

const CHARGED = 4_000n

/** The store, the ledger, the usage log and the poller on the fresh database at `url`, as `src/App.ts` builds them. */
const services = (url: string) =>
  Layer.build(
    TaskPoller.layer().pipe(
      Layer.provideMerge(TaskStore.layer),
      Layer.provideMerge(Ledger.layer),
      Layer.provideMerge(UsageLog.layer(20).pipe(Layer.provideMerge(QuotaLedger.layer({ chunk: 50_000n })))),
      Layer.provideMerge(Layer.mergeAll(Catalog.layer, UpstreamClient.layer, GatewaySettings.layer(undefined))),
      Layer.provideMerge(layerPostgres(url, 4))
    )
  )

/** A user and a token already charged `CHARGED` for the task's submit (its usage row logged, as the ledger does). */
const seed = (sql: SqlClient.SqlClient) =>
  Effect.gen(function* () {
    const [user] = yield* sql<{ readonly id: bigint }>`
      INSERT INTO users (username, group_name, quota, used_quota) VALUES ('alice', 'default', 1000000, ${CHARGED})
      RETURNING id`
    const [token] = yield* sql<{ readonly id: bigint }>`
      INSERT INTO tokens (user_id, name, key_hash, key_prefix, remain_quota, used_quota)
      VALUES (${user.id}, 'main', 'alice-main', 'sk-test', NULL, ${CHARGED}) RETURNING id`
    return { userId: BigInt(user.id), tokenId: BigInt(token.id) }
  })

/** The image task (its generation in the background where it was submitted: only the deadline concerns the poller). */
const imageTask = (owner: { userId: bigint; tokenId: bigint }): NewTask => ({
  publicId: `imgtask_${crypto.randomUUID().replaceAll("-", "")}`,
  kind: "image",
  userId: owner.userId,
  tokenId: owner.tokenId,
  channelId: 7,
  keyPosition: 0,
  upstreamId: null,
  model: "gpt-image-1",
  upstreamModel: "gpt-image-1",
  request: { model: "gpt-image-1", prompt: "a lake" },
  status: "in_progress",
  requestId: crypto.randomUUID().replaceAll("-", ""),
  billing: { ratio: "1000000000", perSecond: "100000000", free: false, seconds: 4 },
  quotaCharged: CHARGED,
  // Due at once by the database's clock, so each `refresh` below claims it.
  nextPollAt: 0,
  deadlineAt: DEADLINE
})

Deno.test("task deadline: polled 1 ms before it the task goes on; at it, it fails with timeout and is refunded once", async () => {
  const database = await freshPostgres()
  try {
    await Effect.runPromise(
      Effect.gen(function* () {
        const context = yield* services(database.url)
        const store = Context.get(context, TaskStore)
        const poller = Context.get(context, TaskPoller)
        const usageLog = Context.get(context, UsageLog)
        const sql = Context.get(context, SqlClient.SqlClient)
        const owner = yield* seed(sql)
        const task = imageTask(owner)
        yield* sql`INSERT INTO usage_logs (request_id, attempt, user_id, token_id, model, cost, status)
          VALUES (${task.requestId}, 1, ${owner.userId}, ${owner.tokenId}, ${task.model}, ${CHARGED}, 200)`
        yield* store.insert(task)
        const stored = () => store.find(task.publicId, owner.userId)
        const used = Effect.map(
          sql<{ used: bigint; tokenUsed: bigint; logged: bigint }>`
            SELECT u.used_quota AS used, t.used_quota AS "tokenUsed",
              (SELECT COALESCE(SUM(cost), 0)::bigint FROM usage_logs WHERE user_id = u.id) AS logged
            FROM users u JOIN tokens t ON t.user_id = u.id WHERE u.id = ${owner.userId}`,
          ([row]) => [BigInt(row.used), BigInt(row.tokenUsed), BigInt(row.logged)].join()
        )

        strictEqual(yield* used, [CHARGED, CHARGED, CHARGED].join())
        // The polls run under the TestClock; the store, the ledger and their schedules stay on the live clock.
        const { before, after } = yield* Effect.gen(function* () {
          // 1 ms before the deadline: the poll backs the task off by the 1 ms left; it goes on.
          yield* TestClock.setTime(DEADLINE - 1)
          const before = yield* poller.refresh(yield* stored())
          // At the deadline (polled again once the database's clock passed the 1 ms back-off): failed.
          yield* TestClock.setTime(DEADLINE)
          let after = yield* stored()
          for (let tries = 0; tries < 50 && after.status === "in_progress"; tries++) {
            yield* TestClock.withLive(Effect.sleep("5 millis"))
            after = yield* poller.refresh(after)
          }
          return { before, after }
        }).pipe(Effect.provide(TestClock.layer()))
        strictEqual(before.status, "in_progress")
        strictEqual(before.pollFailures, 1, "the poll before the deadline ran and backed the task off")
        strictEqual(after.status, "failed")
        strictEqual(after.errorCode, "timeout")
        yield* usageLog.flush
        strictEqual(yield* used, "0,0,0", "the whole charge refunded; the logged costs still sum to used_quota")
        // A later poll changes nothing: the refund was made once.
        yield* poller.refresh(after)
        yield* usageLog.flush
        strictEqual(yield* used, "0,0,0")
      }).pipe(Effect.scoped, Effect.orDie)
    )
  } finally {
    await database.drop()
  }
})
