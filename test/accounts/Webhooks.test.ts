/**
 * The webhook service on PostgreSQL: keys about to expire raise one
 * `key.expiring` event each however many scans run (two instances
 * included), delivered signed; a delivery that keeps failing is retried with
 * a growing delay and marked failed once its event is 24 hours old.
 */
import { ok, strictEqual } from "node:assert/strict"
import { Context, Effect, Layer, type Scope } from "effect"
import { SqlClient } from "effect/sql"
import { Webhook } from "standardwebhooks"
import { Webhooks } from "../../src/accounts/Webhooks.ts"
import { layerPostgres } from "../../src/storage/Database.ts"
import { freshPostgres } from "../support/Gateway.ts"

const withDatabase = (test: (url: string) => Effect.Effect<void, unknown, Scope.Scope>) => async () => {
  const database = await freshPostgres()
  try {
    await Effect.runPromise(Effect.scoped(test(database.url)) as Effect.Effect<void>)
  } finally {
    await database.drop()
  }
}

const instance = (url: string) =>
  Layer.build(
    Webhooks.layer({ allowHosts: ["127.0.0.1"], pollMillis: 100, scanMillis: 100 }).pipe(
      Layer.provideMerge(layerPostgres(url, 4))
    )
  ).pipe(
    Effect.map((context) => ({
      webhooks: Context.get(context, Webhooks),
      sql: Context.get(context, SqlClient.SqlClient)
    }))
  )

Deno.test({
  name: "webhooks: an expiring key raises one key.expiring event across scans and instances, delivered signed",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: withDatabase((url) =>
    Effect.gen(function* () {
      const received: Array<{ id: string; type: string; data: Record<string, unknown> }> = []
      let secret = ""
      const receiver = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
        const event = new Webhook(secret).verify(await request.text(), Object.fromEntries(request.headers)) as {
          type: string
          data: Record<string, unknown>
        }
        received.push({ id: request.headers.get("webhook-id")!, ...event })
        return new Response(null, { status: 204 })
      })
      yield* Effect.addFinalizer(() => Effect.promise(() => receiver.shutdown()))
      const first = yield* instance(url)
      yield* instance(url)
      const sql = first.sql
      const [user] = yield* sql<{ id: bigint }>`
        INSERT INTO users (username, group_name, quota) VALUES ('owner', 'default', 0) RETURNING id`
      yield* sql`INSERT INTO tokens (user_id, name, key_hash, key_prefix, expires_at) VALUES
        (${user.id}, 'soon', 'hash-soon', 'sk-test', now() + interval '1 day'),
        (${user.id}, 'later', 'hash-later', 'sk-test', now() + interval '30 days'),
        (${user.id}, 'gone', 'hash-gone', 'sk-test', now() - interval '1 day')`
      const endpoint = yield* first.webhooks.create({ id: BigInt(user.id), admin: false }, {
        url: `http://127.0.0.1:${receiver.addr.port}/hook`,
        events: ["key.expiring"]
      })
      secret = endpoint.secret
      // Several scans on each instance.
      yield* Effect.sleep("1500 millis")
      strictEqual(received.length, 1, JSON.stringify(received))
      strictEqual(received[0].type, "key.expiring")
      strictEqual(received[0].data.name, "soon")
      ok(typeof received[0].data.expires_at === "string")
    })
  )
})

Deno.test({
  name: "webhooks: a failing delivery is retried with a growing delay and marked failed after 24 hours",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: withDatabase((url) =>
    Effect.gen(function* () {
      let calls = 0
      const receiver = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
        await request.text()
        calls++
        return new Response("no", { status: 500 })
      })
      yield* Effect.addFinalizer(() => Effect.promise(() => receiver.shutdown()))
      const { webhooks, sql } = yield* instance(url)
      const [user] = yield* sql<{ id: bigint }>`
        INSERT INTO users (username, group_name, quota) VALUES ('owner', 'default', 0) RETURNING id`
      const caller = { id: BigInt(user.id), admin: false }
      const endpoint = yield* webhooks.create(caller, {
        url: `http://127.0.0.1:${receiver.addr.port}/hook`,
        events: ["budget.threshold"]
      })
      const fresh = yield* webhooks.sendTest(caller, BigInt(endpoint.id))
      const old = yield* webhooks.sendTest(caller, BigInt(endpoint.id))
      yield* sql`UPDATE webhook_outbox SET created_at = now() - interval '25 hours' WHERE id = ${old}`
      yield* Effect.sleep("2500 millis")
      const log = yield* webhooks.deliveries(caller, BigInt(endpoint.id))
      const freshRow = log.find((row) => row.id === fresh)!
      const oldRow = log.find((row) => row.id === old)!
      strictEqual(oldRow.status, "failed")
      strictEqual(oldRow.attempts, 1)
      strictEqual(oldRow.last_status, 500)
      ok(oldRow.last_error !== null && oldRow.last_error.includes("HTTP 500"), String(oldRow.last_error))
      strictEqual(freshRow.status, "pending")
      // 2 s after the first attempt, then 4 s: two attempts in 2.5 s.
      strictEqual(freshRow.attempts, 2, JSON.stringify(freshRow))
      ok(!(oldRow.last_error ?? "").includes("?"), "the URL's query is never in the log")
      ok(calls >= 3)
    })
  )
})
