/**
 * A user's daily usage (`UsageQueries.daily`, the dashboard's `GET /api/user/self/usage`) on PGlite at a fixed time:
 * with usage rows over 40 days for two users (two keys, two models, one row a minute old, one past the rollup's
 * retention), the answer equals the rows grouped by UTC day and model — before the rollup's first pass (the rows
 * alone), after it (the folded buckets from `usage_rollup`, the rest from the rows), with rows added since (read as
 * the open tail), and for 366 days (the days past retention from the rows); the other user's rows never count.
 */
import { deepStrictEqual, ok } from "node:assert/strict"
import { Clock, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { HealthRollup } from "../../src/accounts/HealthRollup.ts"
import { UsageQueries } from "../../src/accounts/UsageQueries.ts"
import { layerPglite } from "../../src/storage/Database.ts"
import { freshPglite } from "../support/PgliteTemplate.ts"

const NOW = Date.UTC(2026, 0, 10, 12, 7, 30)
const seconds = Math.floor(NOW / 1000)

/** `effect` with the `Clock`'s now at `NOW`; sleeping stays the live clock's. */
const atNow = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Clock.clockWith(Effect.succeed), (live) =>
    Effect.provideService(effect, Clock.Clock, {
      ...live,
      currentTimeMillisUnsafe: () => NOW,
      currentTimeMillis: Effect.succeed(NOW),
      currentTimeNanosUnsafe: () => BigInt(NOW) * 1_000_000n,
      currentTimeNanos: Effect.succeed(BigInt(NOW) * 1_000_000n)
    }))

/** Usage rows `[seconds ago, user, token, model, prompt, completion, cost]`. */
const insert = (rows: ReadonlyArray<readonly [number, number, number, string, number, number, number]>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    for (const [index, [ago, user, token, model, prompt, completion, cost]] of rows.entries()) {
      yield* sql`INSERT INTO usage_logs (request_id, user_id, token_id, model, prompt_tokens, completion_tokens, cost,
          status, created_at)
        VALUES (${`daily-${index}-${crypto.randomUUID()}`}, ${user}, ${token}, ${model}, ${prompt}, ${completion},
          ${cost}, 200, ${new Date((seconds - ago) * 1000)})`
    }
  })

/** The rows' own answer: user `user`'s rows from the UTC day `days - 1` before today, by day and model. */
const exact = (user: number, days: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const today = new Date(NOW)
    const since = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() - days + 1))
    const rows = yield* sql<
      { day: string; model: string; requests: string; prompt: string; completion: string; quota: string }
    >`
      SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, model, count(*)::text AS requests,
             sum(prompt_tokens)::text AS prompt, sum(completion_tokens)::text AS completion, sum(cost)::text AS quota
      FROM usage_logs WHERE user_id = ${user} AND created_at >= ${since} GROUP BY 1, 2 ORDER BY 1, 2`
    return rows.map((row) => ({
      date: row.day,
      model: row.model,
      requests: Number(row.requests),
      prompt_tokens: Number(row.prompt),
      completion_tokens: Number(row.completion),
      quota: Number(row.quota)
    }))
  })

const seed = [
  // Every 37 minutes over 40 days, two users, two keys of user 1, two models.
  ...Array.from({ length: 1_560 }, (_, index) =>
    [
      120 + index * 2_220,
      1 + (index % 5 === 0 ? 1 : 0),
      index % 5 === 0 ? 3 : 1 + index % 2,
      index % 3 === 0 ? "model-a" : "model-b",
      10 + index % 13,
      3 + index % 7,
      100 + index % 91
    ] as const),
  [60, 1, 1, "model-a", 5, 5, 50]
] as const

Deno.test("daily usage on PGlite: equal to the usage rows before and after the rollup, with a tail and past retention", async () => {
  const copy = await freshPglite()
  try {
    const layer = Layer.mergeAll(HealthRollup.layer(0), UsageQueries.layer).pipe(
      Layer.provideMerge(layerPglite(copy.dataDir))
    )
    await Effect.runPromise(
      Effect.gen(function* () {
        const usage = yield* UsageQueries
        const rollup = yield* HealthRollup
        const sql = yield* SqlClient.SqlClient
        yield* insert(seed)
        const check = (label: string) =>
          Effect.gen(function* () {
            for (const user of [1, 2]) {
              for (const days of [1, 7, 30, 366]) {
                const answer = yield* atNow(usage.daily(BigInt(user), days))
                deepStrictEqual(answer, yield* exact(user, days), `${label}: user ${user}, ${days} days`)
              }
            }
          })
        yield* check("before the first pass")
        yield* atNow(rollup.catchUp)
        const [{ rows }] = yield* sql<{ rows: number }>`SELECT count(*)::int AS rows FROM usage_rollup`
        ok(rows > 1_000, `${rows} rollup rows`)
        yield* check("after the catch-up")
        // Rows since the last pass, in a folded bucket's day and in the open tail, count at once.
        yield* insert([[30, 1, 2, "model-b", 7, 7, 70], [600, 2, 3, "model-a", 1, 1, 10]])
        yield* check("with rows since")
        // A bucket's rollup row changed behind the view's back shows: the folded buckets are read from the rollup.
        yield* sql`UPDATE usage_rollup SET cost = cost + 1
          WHERE bucket_start = (SELECT max(bucket_start) FROM usage_rollup WHERE user_id = 1) AND user_id = 1`
        const changed = yield* atNow(usage.daily(1n, 30))
        const truth = yield* exact(1, 30)
        ok(
          changed.reduce((sum, day) => sum + day.quota, 0) === truth.reduce((sum, day) => sum + day.quota, 0) + 1,
          "the 30 days read the rollup"
        )
      }).pipe(Effect.provide(layer), Effect.scoped) as Effect.Effect<void, unknown, never>
    )
  } finally {
    await copy.remove()
  }
})
