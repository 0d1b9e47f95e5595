/**
 * Browser sessions on PostgreSQL, timed by Effect's `Clock` and driven here by
 * `TestClock`, so each limit is checked to the millisecond with no real wait:
 * a session unused for `idleMillis` ends (each use moves that point on), a
 * session ends `maxMillis` after login whatever its use, and its last-seen
 * time is written at most once a minute.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { type SessionOptions, Sessions } from "../../src/accounts/Sessions.ts"
import { hashKey } from "../../src/domain/KeyHash.ts"
import { layerPostgres } from "../../src/storage/Database.ts"
import { freshPostgres } from "../support/Gateway.ts"

const HOUR = 3_600_000

/** A fixed start (2030-01-01T00:00:00Z), later than any row the store writes by itself. */
const T0 = Date.UTC(2030, 0, 1)

/**
 * Runs `body` on a fresh migrated database with one user (its id given), the
 * store built on the live clock and `body` under a `TestClock` set to `T0`.
 */
const onStore = (
  options: SessionOptions,
  body: (sessions: typeof Sessions.Service, sql: SqlClient.SqlClient, userId: bigint) => Effect.Effect<void, unknown>
) =>
async () => {
  const database = await freshPostgres()
  try {
    await Effect.runPromise(
      Effect.gen(function* () {
        const context = yield* Layer.build(
          Sessions.layer(options).pipe(Layer.provideMerge(layerPostgres(database.url, 2)))
        )
        const sql = Context.get(context, SqlClient.SqlClient)
        const [user] = yield* sql<{ id: bigint }>`
          INSERT INTO users (username, group_name, quota) VALUES ('alice', 'default', 0) RETURNING id`
        yield* Effect.andThen(TestClock.setTime(T0), body(Context.get(context, Sessions), sql, BigInt(user.id))).pipe(
          Effect.provide(TestClock.layer())
        )
      }).pipe(Effect.scoped, Effect.orDie)
    )
  } finally {
    await database.drop()
  }
}

const live = (sessions: typeof Sessions.Service, id: string) => Effect.map(sessions.resolve(id), Option.isSome)

Deno.test(
  "sessions: one unused for idleMillis ends, to the millisecond; each use moves that point on",
  onStore({ idleMillis: 12 * HOUR, maxMillis: 7 * 24 * HOUR }, (sessions, _sql, userId) =>
    Effect.gen(function* () {
      const id = yield* sessions.create(userId)
      yield* TestClock.adjust(12 * HOUR - 1)
      strictEqual(yield* live(sessions, id), true, "1 ms before it goes idle")
      // That use counts: idle is measured from it now.
      yield* TestClock.adjust(12 * HOUR - 1)
      strictEqual(yield* live(sessions, id), true, "a use keeps it alive another idleMillis")
      yield* TestClock.adjust(12 * HOUR)
      strictEqual(yield* live(sessions, id), false, "idleMillis without a use: ended")
    }))
)

Deno.test(
  "sessions: one ends maxMillis after login, however often it is used",
  onStore({ idleMillis: 12 * HOUR, maxMillis: 24 * HOUR }, (sessions, _sql, userId) =>
    Effect.gen(function* () {
      const id = yield* sessions.create(userId)
      for (const step of [10 * HOUR, 10 * HOUR, 4 * HOUR - 1]) {
        yield* TestClock.adjust(step)
        strictEqual(yield* live(sessions, id), true)
      }
      yield* TestClock.adjust(1)
      strictEqual(yield* live(sessions, id), false, "maxMillis after login: ended")
      // A new login starts a new lifetime.
      const next = yield* sessions.create(userId)
      yield* TestClock.adjust(12 * HOUR - 1)
      strictEqual(yield* live(sessions, next), true)
    }))
)

Deno.test(
  "sessions: the last-seen time is written at most once a minute",
  onStore({ idleMillis: 12 * HOUR, maxMillis: 24 * HOUR }, (sessions, sql, userId) =>
    Effect.gen(function* () {
      const id = yield* sessions.create(userId)
      const lastSeen = Effect.map(
        sql<{ lastSeen: Date }>`SELECT last_seen_at AS "lastSeen" FROM sessions WHERE id_hash = ${hashKey(id)}`,
        (rows) => new Date(rows[0].lastSeen).getTime() - T0
      ).pipe(Effect.orDie)
      const seen: Array<number> = [yield* lastSeen]
      for (const step of [30_000, 30_000, 1, 59_999, 1]) {
        yield* TestClock.adjust(step)
        strictEqual(yield* live(sessions, id), true)
        seen.push(yield* lastSeen)
      }
      // Written at login (0), then only once more than a minute passed since the last write (60,001 ms).
      deepStrictEqual(seen, [0, 0, 0, 60_001, 60_001, 60_001])
    }))
)
