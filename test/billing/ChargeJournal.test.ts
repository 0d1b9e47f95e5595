/**
 * The charge journal under the ledger, with its services built from their
 * layers on a real PostgreSQL database and a real journal directory: an
 * answer's charge is one journal record until the next commit folds it,
 * exactly once; a fold whose COMMIT is lost is retried without a second
 * charge; a dead instance's journal is folded by a live one before its stale
 * lease is dropped; a refused INSERT spills to the file and is folded once;
 * with no journal at all `durable` is false and a withdrawn charge is never
 * billed; the file's records past its folded position are folded when the
 * ledger opens, once, even when one of them was already committed.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { Context, Effect, Layer, type Scope } from "effect"
import { SqlClient, SqlError } from "effect/sql"
import { encodeBatch } from "../../src/billing/journal/BatchRecord.ts"
import { ChargeJournal, type ChargeJournalOptions } from "../../src/billing/journal/ChargeJournal.ts"
import { openJournalFile } from "../../src/billing/journal/JournalFile.ts"
import { newAccount } from "../../src/billing/ledger/LeaseMath.ts"
import { QuotaLedger } from "../../src/billing/QuotaLedger.ts"
import { UsageLog, type UsageRow } from "../../src/billing/UsageLog.ts"
import type { Principal } from "../../src/services/Auth.ts"
import { layerPostgres } from "../../src/storage/Database.ts"
import { startCommitCutter } from "../support/CommitCutter.ts"
import { freshPostgres } from "../support/Gateway.ts"

/** Who `ids` is; a token seeded with no `remain_quota` is unlimited. */
interface Ids {
  readonly userId: bigint
  readonly tokenId: bigint
  readonly unlimited: boolean
}

const principal = (ids: Ids): Principal => ({
  tokenId: ids.tokenId,
  tokenName: "main",
  userId: ids.userId,
  group: "default",
  models: undefined,
  unlimitedQuota: ids.unlimited,
  expiresAt: undefined,
  tokenLimits: undefined,
  userLimits: undefined
})

const seed = (sql: SqlClient.SqlClient, name: string, quota: bigint, remain: bigint | null) =>
  Effect.gen(function* () {
    const [user] = yield* sql<{ readonly id: bigint }>`
      INSERT INTO users (username, group_name, quota) VALUES (${name}, 'default', ${quota}) RETURNING id`
    const [token] = yield* sql<{ readonly id: bigint }>`
      INSERT INTO tokens (user_id, name, key_hash, key_prefix, remain_quota)
      VALUES (${user.id}, 'main', ${`hash-${name}`}, 'sk-test', ${remain}) RETURNING id`
    return { userId: BigInt(user.id), tokenId: BigInt(token.id), unlimited: remain === null } satisfies Ids
  })

const usageRow = (ids: { userId: bigint; tokenId: bigint }, requestId: string, cost: bigint): UsageRow => ({
  requestId,
  attempt: 1,
  userId: ids.userId,
  tokenId: ids.tokenId,
  channelId: null,
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

/** The ledger, the usage log (committing every `interval` ms) and the journal per `journal`, over `sql`. */
const billing = (
  sql: Layer.Layer<SqlClient.SqlClient>,
  journal: ChargeJournalOptions,
  options: { readonly interval?: number; readonly staleMillis?: number } = {}
) =>
  Layer.build(
    UsageLog.layer(options.interval ?? 3_600_000).pipe(
      Layer.provideMerge(QuotaLedger.layer({ chunk: 100_000n, staleMillis: options.staleMillis ?? 120_000 })),
      Layer.provideMerge(ChargeJournal.layer(journal)),
      Layer.provide(sql)
    )
  )

/** Books a charge of `cost` for `requestId` the way a settlement does: the row in the step the charge is booked. */
const charge = (
  ledger: typeof QuotaLedger.Service,
  usage: typeof UsageLog.Service,
  ids: Ids,
  requestId: string,
  cost: bigint
) =>
  Effect.gen(function* () {
    const hold = yield* ledger.reserve(principal(ids), 10_000n)
    const charged = yield* ledger.settle(hold, cost, (amount) => usage.record(usageRow(ids, requestId, amount)))
    return { hold, charged }
  })

const totals = (sql: SqlClient.SqlClient, ids: { userId: bigint; tokenId: bigint }) =>
  Effect.map(
    sql<{ rows: bigint; cost: string; used: bigint; quota: bigint; remain: bigint | null; journal: bigint }>`
      SELECT (SELECT count(*) FROM usage_logs WHERE user_id = ${ids.userId})::bigint AS rows,
        (SELECT COALESCE(sum(cost), 0) FROM usage_logs WHERE user_id = ${ids.userId})::text AS cost,
        (SELECT used_quota FROM users WHERE id = ${ids.userId}) AS used,
        (SELECT quota FROM users WHERE id = ${ids.userId}) AS quota,
        (SELECT remain_quota FROM tokens WHERE id = ${ids.tokenId}) AS remain,
        (SELECT count(*) FROM charge_journal)::bigint AS journal`,
    ([row]) => ({
      rows: Number(row.rows),
      cost: BigInt(row.cost),
      used: BigInt(row.used),
      quota: BigInt(row.quota),
      remain: row.remain === null ? null : BigInt(row.remain),
      journal: Number(row.journal)
    })
  )

const withDatabase = (test: (url: string, dir: string) => Effect.Effect<void, unknown, Scope.Scope>) => async () => {
  const database = await freshPostgres()
  const dir = await Deno.makeTempDir({ prefix: "sluice_journal_" })
  try {
    await Effect.runPromise(Effect.scoped(test(database.url, dir)) as Effect.Effect<void>)
  } finally {
    await database.drop()
    await Deno.remove(dir, { recursive: true }).catch(() => undefined)
  }
}

/** `sql` whose statements naming `charge_journal` in an INSERT fail while `refused.on` (a refused journal write). */
const refusingJournal = (sql: SqlClient.SqlClient, refused: { on: boolean }): SqlClient.SqlClient =>
  new Proxy(sql, {
    apply: (target, self, args: [TemplateStringsArray, ...Array<unknown>]) => {
      const text = Array.isArray(args[0]) ? args[0].join("?") : ""
      if (refused.on && text.includes("INSERT INTO charge_journal")) {
        return Effect.fail(
          new SqlError.SqlError({
            reason: new SqlError.ConnectionError({ cause: new Error("refused"), message: "refused" })
          })
        )
      }
      return Reflect.apply(target, self, args)
    }
  })

Deno.test(
  "journal (PostgreSQL): an answer's charge is one journal row until the next commit folds it, exactly once",
  withDatabase((url) =>
    Effect.gen(function* () {
      const database = yield* Layer.build(layerPostgres(url, 4))
      const sql = Context.get(database, SqlClient.SqlClient)
      const built = yield* billing(Layer.succeedContext(database), { table: true, dir: undefined, fsync: false })
      const ledger = Context.get(built, QuotaLedger)
      const usage = Context.get(built, UsageLog)
      const ids = yield* seed(sql, "alice", 10_000_000n, 5_000_000n)
      for (let index = 0; index < 3; index += 1) yield* charge(ledger, usage, ids, `req-${index}`, 1_000n)
      strictEqual(yield* usage.durable, true)
      const journaled = yield* totals(sql, ids)
      deepStrictEqual({ rows: journaled.rows, used: journaled.used, journal: journaled.journal }, {
        rows: 0,
        used: 0n,
        journal: 1
      })
      // The balance a caller reads counts the journaled charges at once.
      strictEqual((yield* ledger.balances(principal(ids))).userUsed, 3_000n)
      yield* usage.flush
      deepStrictEqual(yield* totals(sql, ids), {
        rows: 3,
        cost: 3_000n,
        used: 3_000n,
        quota: 10_000_000n - 3_000n,
        remain: 5_000_000n - 3_000n,
        journal: 0
      })
    })
  )
)

Deno.test(
  "journal (PostgreSQL): a fold whose COMMIT is lost is retried without a second row or charge",
  withDatabase((url) =>
    Effect.gen(function* () {
      const cutter = startCommitCutter(url)
      yield* Effect.addFinalizer(() => Effect.promise(() => cutter.close()))
      const database = yield* Layer.build(layerPostgres(cutter.url, 4))
      const sql = Context.get(database, SqlClient.SqlClient)
      const built = yield* billing(Layer.succeedContext(database), { table: true, dir: undefined, fsync: false })
      const ledger = Context.get(built, QuotaLedger)
      const usage = Context.get(built, UsageLog)
      const ids = yield* seed(sql, "bob", 10_000_000n, null)
      // The lease is taken before the cut is armed: no top-up's COMMIT is the one cut.
      for (let index = 0; index < 4; index += 1) yield* charge(ledger, usage, ids, `req-${index}`, 2_000n)
      strictEqual(yield* usage.durable, true)
      cutter.arm(1, "DELETE FROM charge_journal")
      // The fold's transaction commits on the server; the gateway sees its connection die at COMMIT.
      yield* usage.flush
      strictEqual(cutter.cuts(), 1)
      yield* usage.flush
      deepStrictEqual(yield* totals(sql, ids), {
        rows: 4,
        cost: 8_000n,
        used: 8_000n,
        quota: 10_000_000n - 8_000n,
        remain: null,
        journal: 0
      })
    })
  )
)

Deno.test(
  "journal (PostgreSQL): a dead instance's journal is folded by a live one before its stale lease is dropped",
  withDatabase((url) =>
    Effect.gen(function* () {
      const database = yield* Layer.build(layerPostgres(url, 6))
      const sql = Context.get(database, SqlClient.SqlClient)
      const table = { table: true, dir: undefined, fsync: false }
      const ids = yield* seed(sql, "carol", 1_000_000n, null)
      // Instance A charges, journals, and then never commits nor renews again: it is dead for the database.
      const dead = yield* billing(Layer.succeedContext(database), table, { staleMillis: 1_000 })
      const deadLedger = Context.get(dead, QuotaLedger)
      const deadUsage = Context.get(dead, UsageLog)
      for (let index = 0; index < 3; index += 1) yield* charge(deadLedger, deadUsage, ids, `dead-${index}`, 5_000n)
      strictEqual(yield* deadUsage.durable, true)
      const [deadLease] = yield* sql<{ amount: bigint }>`SELECT amount FROM quota_leases WHERE subject = 'user'`
      ok(BigInt(deadLease.amount) > 0n)
      // Instance B, once A's lease is stale.
      const live = yield* billing(Layer.succeedContext(database), table, { staleMillis: 1_000 })
      const ledger = Context.get(live, QuotaLedger)
      const usage = Context.get(live, UsageLog)
      yield* Effect.sleep("1200 millis")
      // B's top-up runs past A's stale lease: it stays while A's journal is unfolded.
      yield* charge(ledger, usage, ids, "live-0", 1_000n)
      const leases = yield* sql<{ instances: bigint }>`
        SELECT count(DISTINCT instance_id)::bigint AS instances FROM quota_leases WHERE subject = 'user'`
      strictEqual(Number(leases[0].instances), 2, "the dead instance's lease still covers its journaled charges")
      // B's next commit folds A's journal (and its own charge).
      yield* usage.flush
      deepStrictEqual(yield* totals(sql, ids), {
        rows: 4,
        cost: 16_000n,
        used: 16_000n,
        quota: 1_000_000n - 16_000n,
        remain: null,
        journal: 0
      })
      // Folded, A's lease goes at the next top-up that meets it.
      yield* Effect.sleep("1100 millis")
      // A hold beyond B's lease tops it up, meeting A's stale lease under the balance's row lock.
      const beyond = yield* ledger.reserve(principal(ids), 500_000n)
      yield* ledger.settle(beyond, 0n)
      const after = yield* sql<{ instances: bigint }>`
        SELECT count(DISTINCT instance_id)::bigint AS instances FROM quota_leases WHERE subject = 'user'`
      ok(Number(after[0].instances) <= 1, "the dead instance's lease is dropped once its charges are folded")
    })
  )
)

Deno.test(
  "journal (PostgreSQL): a refused INSERT spills to the file; the next commit folds it once and marks it folded",
  withDatabase((url, dir) =>
    Effect.gen(function* () {
      const database = yield* Layer.build(layerPostgres(url, 4))
      const sql = Context.get(database, SqlClient.SqlClient)
      const refused = { on: false }
      const flaky = Layer.succeed(SqlClient.SqlClient, refusingJournal(sql, refused))
      const options = { table: true, dir, fsync: false }
      const ids = yield* seed(sql, "dave", 10_000_000n, null)
      yield* Effect.scoped(Effect.gen(function* () {
        const built = yield* billing(flaky, options)
        const ledger = Context.get(built, QuotaLedger)
        const usage = Context.get(built, UsageLog)
        yield* charge(ledger, usage, ids, "before", 1_000n)
        refused.on = true
        yield* charge(ledger, usage, ids, "spilled", 2_000n)
        strictEqual(yield* usage.durable, true, "the spill file holds the charge")
        strictEqual((yield* totals(sql, ids)).journal, 0, "nothing reached the table")
        refused.on = false
        yield* usage.flush
        deepStrictEqual(yield* totals(sql, ids), {
          rows: 2,
          cost: 3_000n,
          used: 3_000n,
          quota: 10_000_000n - 3_000n,
          remain: null,
          journal: 0
        })
      }))
      // Reopened on the same directory: nothing left to fold, nothing folded twice.
      const reopened = yield* Layer.build(
        ChargeJournal.layer(options).pipe(Layer.provide(Layer.succeedContext(database)))
      )
      strictEqual(Context.get(reopened, ChargeJournal).recovered.length, 0)
      strictEqual((yield* totals(sql, ids)).used, 3_000n)
    })
  )
)

Deno.test(
  "journal (PostgreSQL): with no journal at all durable is false, and a withdrawn charge is never billed",
  withDatabase((url) =>
    Effect.gen(function* () {
      const database = yield* Layer.build(layerPostgres(url, 4))
      const sql = Context.get(database, SqlClient.SqlClient)
      const refused = { on: false }
      const flaky = Layer.succeed(SqlClient.SqlClient, refusingJournal(sql, refused))
      const ids = yield* seed(sql, "erin", 10_000_000n, 4_000_000n)
      const built = yield* billing(flaky, { table: true, dir: undefined, fsync: false })
      const ledger = Context.get(built, QuotaLedger)
      const usage = Context.get(built, UsageLog)
      yield* charge(ledger, usage, ids, "kept", 1_000n)
      strictEqual(yield* usage.durable, true)
      refused.on = true
      const { hold, charged } = yield* charge(ledger, usage, ids, "withheld", 3_000n)
      strictEqual(yield* usage.durable, false)
      strictEqual(ledger.withdraw(hold, charged, "withheld", 1), true)
      // Taken back once: a second try finds nothing to take.
      strictEqual(ledger.withdraw(hold, charged, "withheld", 1), false)
      strictEqual((yield* ledger.balances(principal(ids))).userUsed, 1_000n)
      refused.on = false
      yield* usage.flush
      deepStrictEqual(yield* totals(sql, ids), {
        rows: 2,
        cost: 1_000n,
        used: 1_000n,
        quota: 10_000_000n - 1_000n,
        remain: 4_000_000n - 1_000n,
        journal: 0
      })
      const [row] = yield* sql<{ cost: bigint; status: number; error: string }>`
        SELECT cost, status, error FROM usage_logs WHERE request_id = 'withheld'`
      deepStrictEqual({ ...row, cost: BigInt(row.cost) }, { cost: 0n, status: 503, error: "quota_ledger_unavailable" })
      // The amount went back to the lease: the whole rest of the token's balance can still be held.
      const whole = yield* ledger.reserve(principal(ids), 4_000_000n - 1_000n)
      yield* ledger.settle(whole, 0n)
    })
  )
)

/** A record as a crashed ledger left it in the journal file: one charge of `cost` to the user and token. */
const crashedRecord = (id: string, ids: { userId: bigint; tokenId: bigint }, requestId: string, cost: bigint) => {
  const account = (subject: "user" | "token", id: bigint) => newAccount(subject, id, subject === "user", 0n)
  return new TextEncoder().encode(encodeBatch({
    id,
    instance: "crashed-instance",
    taken: [
      { account: account("token", ids.tokenId), charged: cost, returned: 0n, requests: 0 },
      { account: account("user", ids.userId), charged: cost, returned: 0n, requests: 1 }
    ],
    rows: [usageRow(ids, requestId, cost)]
  }))
}

Deno.test(
  "journal (file): records past the folded position are folded when the ledger opens, once, even one already committed",
  withDatabase((url, dir) =>
    Effect.gen(function* () {
      const database = yield* Layer.build(layerPostgres(url, 4))
      const sql = Context.get(database, SqlClient.SqlClient)
      const ids = yield* seed(sql, "frank", 10_000_000n, null)
      // What a crash leaves: three records appended, none marked folded; the second's commit had gone through.
      yield* Effect.scoped(Effect.gen(function* () {
        const file = yield* openJournalFile(dir)
        file.append(crashedRecord("commit-a", ids, "crash-a", 1_000n))
        file.append(crashedRecord("commit-b", ids, "crash-b", 2_000n))
        file.append(crashedRecord("commit-c", ids, "crash-c", 4_000n))
      }))
      yield* sql`INSERT INTO ledger_commits (id) VALUES ('commit-b')`
      yield* sql`INSERT INTO usage_logs (request_id, attempt, user_id, token_id, model, cost, stream, status)
        VALUES ('crash-b', 1, ${ids.userId}, ${ids.tokenId}, 'gpt-test', 2000, false, 200)`
      yield* sql`UPDATE users SET quota = quota - 2000, used_quota = used_quota + 2000 WHERE id = ${ids.userId}`
      const options = { table: false, dir, fsync: true }
      yield* Effect.scoped(Effect.gen(function* () {
        const built = yield* billing(Layer.succeedContext(database), options)
        // Folded while the layer was built, before anything could be served.
        deepStrictEqual(yield* totals(sql, ids), {
          rows: 3,
          cost: 7_000n,
          used: 7_000n,
          quota: 10_000_000n - 7_000n,
          remain: null,
          journal: 0
        })
        const ledger = Context.get(built, QuotaLedger)
        const usage = Context.get(built, UsageLog)
        yield* charge(ledger, usage, ids, "after", 8_000n)
        strictEqual(yield* usage.durable, true)
      }))
      // Opened again: what was folded (at open, and the last charge at close) is not folded again.
      yield* Effect.scoped(Effect.gen(function* () {
        const built = yield* billing(Layer.succeedContext(database), options)
        strictEqual(Context.get(built, ChargeJournal).recovered.length, 0)
      }))
      const final = yield* totals(sql, ids)
      deepStrictEqual({ rows: final.rows, cost: final.cost, used: final.used }, {
        rows: 4,
        cost: 15_000n,
        used: 15_000n
      })
    })
  )
)
