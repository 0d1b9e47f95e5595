/**
 * The task store on PostgreSQL, with two store instances (two gateways) on
 * one database: due tasks are claimed by one instance only, a live claim
 * keeps a task from the other, a task belongs to its owner only, and a task's
 * final bill is made once however many instances (or retried polls) end it
 * at the same time — the refund credits the user and the limited token once,
 * with one usage row whose negative cost keeps the logged costs equal to
 * `used_quota`; an extra charge on re-pricing is capped at what the balances
 * hold beyond every live quota lease, and a refund can be leased at once.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import type { Principal } from "../../src/services/Auth.ts"
import { type LeaseOptions, QuotaLedger } from "../../src/billing/QuotaLedger.ts"
import { type NewTask, TaskStore } from "../../src/tasks/TaskStore.ts"
import { UsageLog } from "../../src/billing/UsageLog.ts"
import { Ledger } from "../../src/billing/Ledger.ts"
import { layerPostgres } from "../../src/storage/Database.ts"
import { startCommitCutter } from "../support/CommitCutter.ts"
import { freshPostgres } from "../support/Gateway.ts"

/**
 * A gateway instance of its own on `database` (own pool, own task-store instance name, own ledger leasing per
 * `lease`), as `src/App.ts` builds it: the store bills through the ledger and the usage log on one client.
 */
const instanceOn = (
  database: Layer.Layer<SqlClient.SqlClient, unknown>,
  lease: Partial<LeaseOptions> = {}
) =>
  Layer.build(
    TaskStore.layer.pipe(
      Layer.provideMerge(Ledger.layer),
      Layer.provideMerge(UsageLog.layer(20).pipe(Layer.provideMerge(QuotaLedger.layer({ chunk: 50_000n, ...lease })))),
      Layer.provideMerge(database)
    )
  ).pipe(
    Effect.map((context) => ({
      store: Context.get(context, TaskStore),
      ledger: Context.get(context, QuotaLedger),
      usageLog: Context.get(context, UsageLog),
      sql: Context.get(context, SqlClient.SqlClient)
    }))
  )

/** `instanceOn` the PostgreSQL database at `url` (migrated first). */
const instance = (url: string, lease: Partial<LeaseOptions> = {}) => instanceOn(layerPostgres(url, 4), lease)

type Instance = Effect.Success<ReturnType<typeof instance>>

const principal = (owner: { userId: bigint; tokenId: bigint }, unlimitedQuota = false): Principal => ({
  tokenId: owner.tokenId,
  tokenName: "main",
  userId: owner.userId,
  group: "default",
  models: undefined,
  unlimitedQuota,
  expiresAt: undefined,
  tokenLimits: undefined,
  userLimits: undefined
})

/** The usage row of a request's accepted attempt, charged `cost`. */
const rowOf = (owner: { userId: bigint; tokenId: bigint }, requestId: string, cost: bigint) => ({
  requestId,
  attempt: 1,
  userId: owner.userId,
  tokenId: owner.tokenId,
  channelId: 7,
  model: "sora-2",
  upstreamModel: "sora-2",
  promptTokens: 0,
  completionTokens: 0,
  cachedTokens: 0,
  reasoningTokens: 0,
  cost,
  latencyMs: 1,
  stream: false,
  status: 200,
  error: null
})

/** Settles `hold` at `cost` as a request does (its usage row booked in the same step) and waits for the commit. */
const settleLogged = (
  on: Instance,
  owner: { userId: bigint; tokenId: bigint },
  hold: Effect.Success<ReturnType<Instance["ledger"]["reserve"]>>,
  cost: bigint
) =>
  Effect.gen(function* () {
    const requestId = crypto.randomUUID().replaceAll("-", "")
    yield* on.ledger.settle(hold, cost, (charged) => on.usageLog.record(rowOf(owner, requestId, charged)))
    yield* on.usageLog.flush
  })

/**
 * Charges `cost` to `owner` the way a request does — hold, settle with its usage row booked in the same step —
 * and waits until the ledger committed both.
 */
const charge = (on: Instance, owner: { userId: bigint; tokenId: bigint }, cost: bigint, requestId: string) =>
  Effect.gen(function* () {
    const hold = yield* on.ledger.reserve(principal(owner), cost)
    yield* on.ledger.settle(hold, cost, (charged) => on.usageLog.record(rowOf(owner, requestId, charged)))
    yield* on.usageLog.flush
  })

/**
 * Commits `on`'s ledger (which leases with `idleMillis: 0`) until it holds no lease on `owner`'s balances: a
 * background top-up started by the last hold may lease again after a commit handed the lease back.
 */
const untilUnleased = (on: Instance, owner: { userId: bigint; tokenId: bigint }) =>
  Effect.gen(function* () {
    for (let tries = 0; tries < 100; tries++) {
      yield* on.ledger.commit(Effect.void)
      const [row] = yield* on.sql<{ count: bigint }>`SELECT count(*)::bigint AS count FROM quota_leases
        WHERE (subject = 'user' AND subject_id = ${owner.userId}) OR (subject = 'token' AND subject_id = ${owner.tokenId})`
      if (BigInt(row.count) === 0n) return
      yield* Effect.sleep("10 millis")
    }
    throw new Error("The ledger kept a lease on the balances")
  })

/** The logged costs of the user and of the token, beside their `used_quota`: equal at every committed point. */
const sums = (sql: SqlClient.SqlClient, owner: { userId: bigint; tokenId: bigint }) =>
  Effect.map(
    sql<{ logged: bigint; used: bigint; tokenLogged: bigint; tokenUsed: bigint }>`
      SELECT (SELECT COALESCE(SUM(cost), 0)::bigint FROM usage_logs WHERE user_id = ${owner.userId}) AS logged,
        (SELECT used_quota FROM users WHERE id = ${owner.userId}) AS used,
        (SELECT COALESCE(SUM(cost), 0)::bigint FROM usage_logs WHERE token_id = ${owner.tokenId}) AS "tokenLogged",
        (SELECT used_quota FROM tokens WHERE id = ${owner.tokenId}) AS "tokenUsed"`,
    ([row]) => ({
      logged: BigInt(row.logged),
      used: BigInt(row.used),
      tokenLogged: BigInt(row.tokenLogged),
      tokenUsed: BigInt(row.tokenUsed)
    })
  )

/** A user with `quota` (already charged `charged`, as a settled submit leaves it) and a token with `remain`. */
const seed = (sql: SqlClient.SqlClient, quota: bigint, remain: bigint | null, charged: bigint) =>
  Effect.gen(function* () {
    const name = `u${crypto.randomUUID().slice(0, 8)}`
    const [user] = yield* sql<{ readonly id: bigint }>`
      INSERT INTO users (username, group_name, quota, used_quota) VALUES (${name}, 'default', ${quota}, ${charged})
      RETURNING id`
    const [token] = yield* sql<{ readonly id: bigint }>`
      INSERT INTO tokens (user_id, name, key_hash, key_prefix, remain_quota, used_quota)
      VALUES (${user.id}, 'main', ${name}, 'sk-test', ${remain}, ${charged}) RETURNING id`
    return { userId: BigInt(user.id), tokenId: BigInt(token.id) }
  })

const newTask = (owner: { userId: bigint; tokenId: bigint }, channelId: number, charged: bigint): NewTask => ({
  publicId: `video_${crypto.randomUUID().replaceAll("-", "")}`,
  kind: "video",
  userId: owner.userId,
  tokenId: owner.tokenId,
  channelId,
  keyPosition: 0,
  upstreamId: `up_${crypto.randomUUID()}`,
  model: "sora-2",
  upstreamModel: "sora-2",
  request: { model: "sora-2", prompt: "a \u0000 prompt with NUL and \ud800 a lone surrogate", seconds: 4 },
  status: "queued",
  requestId: crypto.randomUUID().replaceAll("-", ""),
  billing: { ratio: "1000000000", perSecond: "100000000", free: false, seconds: 4 },
  quotaCharged: charged,
  nextPollAt: Date.now() - 1000,
  deadlineAt: Date.now() + 60_000
})

/** The submit's settled usage row, as the ledger commits it with the charge. */
const logCharge = (sql: SqlClient.SqlClient, task: NewTask, cost: bigint) =>
  sql`INSERT INTO usage_logs (request_id, attempt, user_id, token_id, model, cost, status)
    VALUES (${task.requestId}, 1, ${task.userId}, ${task.tokenId}, ${task.model}, ${cost}, 200)`

const balancesOf = (sql: SqlClient.SqlClient, userId: bigint) =>
  Effect.map(
    sql<{ quota: bigint; used: bigint; remain: bigint | null; tokenUsed: bigint }>`
      SELECT u.quota, u.used_quota AS used, t.remain_quota AS remain, t.used_quota AS "tokenUsed"
      FROM users u JOIN tokens t ON t.user_id = u.id WHERE u.id = ${userId}`,
    ([row]) => ({
      quota: BigInt(row.quota),
      used: BigInt(row.used),
      remain: row.remain === null ? null : BigInt(row.remain),
      tokenUsed: BigInt(row.tokenUsed)
    })
  )

const run = <A>(body: (url: string) => Effect.Effect<A, unknown, import("effect").Scope.Scope>) => async () => {
  const database = await freshPostgres()
  try {
    await Effect.runPromise(Effect.scoped(body(database.url)) as Effect.Effect<A, unknown, never>)
  } finally {
    await database.drop()
  }
}

Deno.test(
  "TaskStore: a batch of running tasks is recorded together; its claims released, final tasks left alone",
  run((url) =>
    Effect.gen(function* () {
      const one = yield* instance(url)
      const two = yield* instance(url)
      const owner = yield* seed(one.sql, 1_000_000n, null, 0n)
      const tasks = Array.from({ length: 30 }, () => newTask(owner, 7, 400_000n))
      for (const task of tasks) yield* one.store.insert(task)
      const claimed = yield* one.store.claimDue(7, 30, 60_000)
      strictEqual(claimed.length, 30)
      // The last one ends before the batch is recorded: the batch must not bring it back.
      const ended = claimed[29]
      yield* one.sql`UPDATE tasks SET status = 'completed', progress = 100, settled = TRUE WHERE id = ${ended.id}`
      const batch = claimed.map((task, index) => ({
        task,
        state: { status: index % 2 === 0 ? "in_progress" as const : "queued" as const, progress: index * 5 }
      }))
      yield* one.store.advanceMany(batch, 0)
      yield* one.store.advanceMany([], 0)
      for (const [index, task] of claimed.slice(0, 29).entries()) {
        const stored = yield* one.store.find(task.publicId, owner.userId)
        strictEqual(stored.status, index % 2 === 0 ? "in_progress" : "queued")
        strictEqual(stored.progress, Math.min(99, index * 5), "progress is kept within 0–99")
      }
      const final = yield* one.store.find(ended.publicId, owner.userId)
      strictEqual(final.status, "completed")
      strictEqual(final.progress, 100)
      // Released and due at once (next poll 0 ms away): the other instance claims the 29 running ones.
      strictEqual((yield* two.store.claimDue(7, 50, 60_000)).length, 29)
    })
  )
)

Deno.test(
  "TaskStore: two instances claim disjoint due tasks; a live claim keeps the other out; reads are the owner's",
  run((url) =>
    Effect.gen(function* () {
      const one = yield* instance(url)
      const two = yield* instance(url)
      const owner = yield* seed(one.sql, 1_000_000n, 1_000_000n, 0n)
      const stranger = yield* seed(one.sql, 1_000_000n, null, 0n)
      const tasks = Array.from({ length: 40 }, () => newTask(owner, 7, 400_000n))
      for (const task of tasks) yield* one.store.insert(task)
      const [a, b] = yield* Effect.all([
        one.store.claimDue(7, 25, 60_000),
        two.store.claimDue(7, 25, 60_000)
      ], { concurrency: 2 })
      const claimedA = new Set(a.map((task) => task.publicId))
      ok(b.every((task) => !claimedA.has(task.publicId)), "a task was claimed by both instances")
      strictEqual(a.length + b.length, 40)
      deepStrictEqual(yield* one.store.claimDue(7, 50, 60_000), [])
      deepStrictEqual(yield* two.store.claimDue(8, 50, 60_000), [])
      // The prompt's NUL and lone surrogate survive the round trip.
      const found = yield* one.store.find(tasks[0].publicId, owner.userId)
      strictEqual(found.request.prompt, tasks[0].request.prompt)
      const denied = yield* Effect.flip(one.store.find(tasks[0].publicId, stranger.userId))
      strictEqual(denied._tag, "NotFound")
      const odd = yield* Effect.flip(one.store.find("'; DROP TABLE tasks; --", owner.userId))
      strictEqual(odd._tag, "NotFound")
      // A released task becomes due again only after its next poll time.
      yield* one.store.advance(a[0], { status: "in_progress", progress: 30 }, 60_000)
      deepStrictEqual(yield* two.store.claimOne(a[0].id, 60_000, 60_000), undefined)
      strictEqual((yield* one.store.find(a[0].publicId, owner.userId)).progress, 30)
      // A read finds its state stale past `minAgeMillis` and claims it on demand, once.
      strictEqual((yield* two.store.claimOne(a[0].id, 60_000, 0))?.publicId, a[0].publicId)
      deepStrictEqual(yield* one.store.claimOne(a[0].id, 60_000, 0), undefined)
    })
  )
)

Deno.test(
  "TaskStore: a failed task is refunded exactly once when several instances end it at once",
  run((url) =>
    Effect.gen(function* () {
      const one = yield* instance(url)
      const two = yield* instance(url)
      const owner = yield* seed(one.sql, 600_000n, 600_000n, 400_000n)
      const task = newTask(owner, 7, 400_000n)
      yield* one.store.insert(task)
      const [claimed] = yield* one.store.claimDue(7, 1, 60_000)
      const end = { status: "failed" as const, error: { code: "moderation_blocked", message: "no" }, cost: 0n }
      // Before the submit's charge is committed, the task cannot end (nothing is written).
      const pending = yield* Effect.flip(one.store.finish(claimed, end))
      strictEqual(pending._tag, "TaskChargePending")
      strictEqual((yield* one.store.find(task.publicId, owner.userId)).settled, false)
      yield* logCharge(one.sql, task, 400_000n)
      const results = yield* Effect.all([
        one.store.finish(claimed, end),
        two.store.finish(claimed, end),
        one.store.finish(claimed, end),
        two.store.finish(claimed, end)
      ], { concurrency: 4 })
      strictEqual(results.filter((result) => result.ended).length, 1)
      deepStrictEqual(results.filter((result) => result.ended)[0].refunded, 400_000n)
      deepStrictEqual(yield* balancesOf(one.sql, owner.userId), {
        quota: 1_000_000n,
        used: 0n,
        remain: 1_000_000n,
        tokenUsed: 0n
      })
      const rows = yield* one.sql<{ cost: bigint; attempt: number }>`
        SELECT cost, attempt FROM usage_logs WHERE request_id = ${task.requestId}`
      deepStrictEqual(rows.map((row) => [BigInt(row.cost), row.attempt] as const).toSorted((a, b) => a[1] - b[1]), [
        [-400_000n, 0],
        [400_000n, 1]
      ])
      const stored = yield* one.store.find(task.publicId, owner.userId)
      strictEqual(stored.status, "failed")
      strictEqual(stored.progress, 100)
      strictEqual(stored.errorCode, "moderation_blocked")
      strictEqual(stored.refunded, 400_000n)
      strictEqual(stored.quotaCharged, 0n)
      // Ended: never claimed again.
      deepStrictEqual(yield* two.store.claimDue(7, 10, 1), [])
    })
  )
)

Deno.test(
  "TaskStore: re-pricing refunds the difference, or charges it capped at the balances; unlimited tokens stay unlimited",
  run((url) =>
    Effect.gen(function* () {
      const { store, sql } = yield* instance(url)
      const cheaper = yield* seed(sql, 1_000_000n, null, 500_000n)
      const first = newTask(cheaper, 7, 500_000n)
      yield* store.insert(first)
      yield* logCharge(sql, first, 500_000n)
      const [a] = yield* store.claimDue(7, 1, 60_000)
      deepStrictEqual(yield* store.finish(a, { status: "completed", cost: 400_000n }), {
        ended: true,
        refunded: 100_000n
      })
      deepStrictEqual(yield* balancesOf(sql, cheaper.userId), {
        quota: 1_100_000n,
        used: 400_000n,
        remain: null,
        tokenUsed: 400_000n
      })
      const dearer = yield* seed(sql, 50_000n, 30_000n, 400_000n)
      const second = newTask(dearer, 9, 400_000n)
      yield* store.insert(second)
      yield* logCharge(sql, second, 400_000n)
      const [b] = yield* store.claimDue(9, 1, 60_000)
      // 200,000 more wanted; the token holds 30,000: that is what is charged.
      deepStrictEqual(yield* store.finish(b, { status: "completed", cost: 600_000n }), {
        ended: true,
        refunded: -30_000n
      })
      deepStrictEqual(yield* balancesOf(sql, dearer.userId), {
        quota: 20_000n,
        used: 430_000n,
        remain: 0n,
        tokenUsed: 430_000n
      })
    })
  )
)

Deno.test(
  "TaskStore: a submit never charged (abandoned after its task row) is refunded nothing once its wait is over",
  run((url) =>
    Effect.gen(function* () {
      const { store, sql } = yield* instance(url)
      const owner = yield* seed(sql, 1_000_000n, 1_000_000n, 0n)
      const task = newTask(owner, 7, 400_000n)
      yield* store.insert(task)
      yield* sql`UPDATE tasks SET created_at = now() - interval '1 hour' WHERE public_id = ${task.publicId}`
      const [claimed] = yield* store.claimDue(7, 1, 60_000)
      deepStrictEqual(
        yield* store.finish(claimed, { status: "failed", error: { code: "timeout", message: "late" }, cost: 0n }),
        { ended: true, refunded: 0n }
      )
      deepStrictEqual(yield* balancesOf(sql, owner.userId), {
        quota: 1_000_000n,
        used: 0n,
        remain: 1_000_000n,
        tokenUsed: 0n
      })
    })
  )
)

Deno.test(
  "TaskStore: refunds and re-prices charged through the ledger are made once when two instances each end a task " +
    "twice at once; the logged costs still equal used_quota",
  run((url) =>
    Effect.gen(function* () {
      // Idle leases are handed back at each commit, so the debit below finds the balance unleased.
      const one = yield* instance(url, { idleMillis: 0 })
      const two = yield* instance(url, { idleMillis: 0 })
      const owner = yield* seed(one.sql, 1_000_000n, 800_000n, 0n)
      // Three submits, charged as requests are: 400,000 + 200,000 + 100,000.
      const cheaper = newTask(owner, 7, 400_000n)
      const dearer = newTask(owner, 7, 200_000n)
      const failed = newTask(owner, 7, 100_000n)
      for (const task of [cheaper, dearer, failed]) {
        yield* one.store.insert(task)
        yield* charge(one, owner, task.quotaCharged, task.requestId)
      }
      yield* untilUnleased(one, owner)
      deepStrictEqual(yield* balancesOf(one.sql, owner.userId), {
        quota: 300_000n,
        used: 700_000n,
        remain: 100_000n,
        tokenUsed: 700_000n
      })
      const claimed = yield* one.store.claimDue(7, 3, 60_000)
      strictEqual(claimed.length, 3)
      const byId = new Map(claimed.map((task) => [task.publicId, task]))
      const ends = [
        { task: byId.get(cheaper.publicId)!, end: { status: "completed" as const, cost: 300_000n } },
        { task: byId.get(dearer.publicId)!, end: { status: "completed" as const, cost: 250_000n } },
        {
          task: byId.get(failed.publicId)!,
          end: { status: "failed" as const, error: { code: "timeout", message: "late" }, cost: 0n }
        }
      ]
      const results = yield* Effect.forEach(
        ends.flatMap(({ task, end }) =>
          [one, two, one, two].map((on) => Effect.map(on.store.finish(task, end), (result) => ({ task, result })))
        ),
        (finish) => finish,
        { concurrency: "unbounded" }
      )
      const endedOnce = (publicId: string) =>
        results.filter(({ task, result }) => task.publicId === publicId && result.ended).map(({ result }) =>
          result.refunded
        )
      deepStrictEqual(endedOnce(cheaper.publicId), [100_000n])
      deepStrictEqual(endedOnce(dearer.publicId), [-50_000n])
      deepStrictEqual(endedOnce(failed.publicId), [100_000n])
      // 1,000,000 − 700,000 + 100,000 − 50,000 + 100,000; the token likewise from 800,000.
      deepStrictEqual(yield* balancesOf(one.sql, owner.userId), {
        quota: 450_000n,
        used: 550_000n,
        remain: 250_000n,
        tokenUsed: 550_000n
      })
      const adjustments = yield* one.sql<{ cost: bigint }>`
        SELECT cost FROM usage_logs WHERE user_id = ${owner.userId} AND attempt = 0 ORDER BY cost`
      deepStrictEqual(adjustments.map((row) => BigInt(row.cost)), [-100_000n, -100_000n, 50_000n])
      const totals = yield* sums(one.sql, owner)
      strictEqual(totals.logged, totals.used)
      strictEqual(totals.tokenLogged, totals.tokenUsed)
      strictEqual(totals.used, 550_000n)
    })
  )
)

Deno.test(
  "TaskStore: an extra charge leaves another instance's live lease whole; a refund can be leased at once",
  run((url) =>
    Effect.gen(function* () {
      const one = yield* instance(url, { idleMillis: 0 })
      // Another gateway serving the same user: it keeps its lease while requests come.
      const other = yield* instance(url, { chunk: 10_000n, idleMillis: 60_000 })
      const owner = yield* seed(one.sql, 1_000_000n, 1_000_000n, 0n)
      const longer = newTask(owner, 7, 400_000n)
      const failing = newTask(owner, 7, 100_000n)
      for (const task of [longer, failing]) {
        yield* one.store.insert(task)
        yield* charge(one, owner, task.quotaCharged, task.requestId)
      }
      yield* untilUnleased(one, owner)
      // 500,000 left. A hold of 5,000 makes the other instance lease 5,000 + 64 × 5,000 of the user and the token.
      const small = yield* other.ledger.reserve(principal(owner), 5_000n)
      const [lease] = yield* one.sql<{ amount: bigint }>`
        SELECT COALESCE(SUM(amount), 0)::bigint AS amount FROM quota_leases WHERE subject = 'user'
        AND subject_id = ${owner.userId}`
      strictEqual(BigInt(lease.amount), 325_000n)
      const claimed = yield* one.store.claimDue(7, 2, 60_000)
      const byId = new Map(claimed.map((task) => [task.publicId, task]))
      // Re-priced at 800,000: 400,000 more wanted; 500,000 − 325,000 leased = 175,000 is all that may be taken.
      deepStrictEqual(yield* one.store.finish(byId.get(longer.publicId)!, { status: "completed", cost: 800_000n }), {
        ended: true,
        refunded: -175_000n
      })
      deepStrictEqual(yield* balancesOf(one.sql, owner.userId), {
        quota: 325_000n,
        used: 675_000n,
        remain: 325_000n,
        tokenUsed: 675_000n
      })
      // The other instance can still spend its whole lease, and the balance covers it exactly.
      yield* settleLogged(other, owner, small, 5_000n)
      const rest = yield* other.ledger.reserve(principal(owner), 320_000n)
      yield* settleLogged(other, owner, rest, 320_000n)
      const over = yield* Effect.flip(other.ledger.reserve(principal(owner), 1n))
      strictEqual(over._tag, "InsufficientQuota")
      deepStrictEqual(yield* balancesOf(one.sql, owner.userId), {
        quota: 0n,
        used: 1_000_000n,
        remain: 0n,
        tokenUsed: 1_000_000n
      })
      // A refund raises the balance: the other instance leases it at its next hold.
      deepStrictEqual(
        yield* one.store.finish(byId.get(failing.publicId)!, {
          status: "failed",
          error: { code: "moderation_blocked", message: "no" },
          cost: 0n
        }),
        { ended: true, refunded: 100_000n }
      )
      const after = yield* other.ledger.reserve(principal(owner), 100_000n)
      yield* settleLogged(other, owner, after, 100_000n)
      deepStrictEqual(yield* balancesOf(one.sql, owner.userId), {
        quota: 0n,
        used: 1_000_000n,
        remain: 0n,
        tokenUsed: 1_000_000n
      })
      const totals = yield* sums(one.sql, owner)
      strictEqual(totals.logged, totals.used)
      strictEqual(totals.tokenLogged, totals.tokenUsed)
    })
  )
)

Deno.test(
  "TaskStore: a final bill whose COMMIT went through but was never acknowledged is not made again on retry",
  async () => {
    const database = await freshPostgres()
    const cutter = startCommitCutter(database.url)
    try {
      await Effect.runPromise(Effect.scoped(Effect.gen(function* () {
        // The other instance reaches PostgreSQL directly (and migrates it); this one through the proxy that cuts a
        // COMMIT, on a connection that has sent none yet (a COMMIT prepared before is sent by name, unseen).
        const two = yield* instance(database.url, { idleMillis: 0 })
        const one = yield* instanceOn(PgClient.layer({ url: Redacted.make(cutter.url), maxConnections: 1 }), {
          idleMillis: 0
        })
        const owner = yield* seed(two.sql, 1_000_000n, 1_000_000n, 0n)
        const task = newTask(owner, 7, 400_000n)
        yield* two.store.insert(task)
        yield* charge(two, owner, task.quotaCharged, task.requestId)
        const [claimed] = yield* two.store.claimDue(7, 1, 60_000)
        const end = { status: "failed" as const, error: { code: "timeout", message: "late" }, cost: 0n }
        // The transaction that ends the task commits on the server; its answer never reaches the instance.
        cutter.arm(1, "completed_at = now()")
        const lost = yield* Effect.exit(one.store.finish(claimed, end))
        strictEqual(lost._tag, "Failure")
        strictEqual(cutter.cuts(), 1)
        // Retried (by the same instance, then by the other): the task is found ended, nothing is refunded again.
        deepStrictEqual(yield* one.store.finish(claimed, end), { ended: false, refunded: 0n })
        deepStrictEqual(yield* two.store.finish(claimed, end), { ended: false, refunded: 0n })
        deepStrictEqual(yield* balancesOf(two.sql, owner.userId), {
          quota: 1_000_000n,
          used: 0n,
          remain: 1_000_000n,
          tokenUsed: 0n
        })
        const rows = yield* two.sql<{ cost: bigint }>`
          SELECT cost FROM usage_logs WHERE request_id = ${task.requestId} ORDER BY attempt`
        deepStrictEqual(rows.map((row) => BigInt(row.cost)), [-400_000n, 400_000n])
        strictEqual((yield* two.store.find(task.publicId, owner.userId)).refunded, 400_000n)
        const totals = yield* sums(two.sql, owner)
        strictEqual(totals.logged, totals.used)
        strictEqual(totals.tokenLogged, totals.tokenUsed)
      })) as Effect.Effect<void, unknown, never>)
    } finally {
      await cutter.close()
      await database.drop()
    }
  }
)
