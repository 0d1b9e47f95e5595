/**
 * The health rollup (`src/accounts/HealthRollup.ts`) on a fresh embedded store (PGlite, the same SQL as PostgreSQL),
 * at a fixed time (a `Clock` whose now is set; sleeping stays live, as `TestClock.setTime` to a 2026 date hung with the
 * store's layer): a catch-up folds every retained bucket closed 15 minutes ago, and the rollup's sums equal the usage
 * rows' (attempts, failures by kind — `cancelled` for 499, `other` for an unknown prefix —, tokens by kind, cost with a
 * task's negative adjustment, the histogram's counts the successes); passes run at once or again change nothing; a
 * late row counts after the next pass; the coarse tier's 2-hour buckets sum the 15-minute ones; the usage rollup
 * holds every usage row once per user, key and model; buckets past
 * retention are dropped; and the day and week statement
 * (`health/SeriesAggregate.ts`) over the rollup and the open tail counts what the exact one counts.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { Clock, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { HealthRollup } from "../../src/accounts/HealthRollup.ts"
import { ROLLUP_RETAIN_SECONDS } from "../../src/accounts/health/FoldPlan.ts"
import { windowOf } from "../../src/accounts/HealthQueries.ts"
import { aggregate } from "../../src/accounts/health/SeriesAggregate.ts"
import { layerPglite } from "../../src/storage/Database.ts"
import { freshPglite } from "../support/PgliteTemplate.ts"

const NOW = Date.UTC(2026, 0, 10, 12, 7, 30)
const seconds = Math.floor(NOW / 1000)
const target = Math.floor((seconds - 900) / 900) * 900

/** Rows `[seconds ago, channel, model, status, error, latency, cost, attempt]`. */
const insert = (
  rows: ReadonlyArray<readonly [number, number | null, string, number, string | null, number, number, number]>
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    for (const [index, [ago, channel, model, status, error, latency, cost, attempt]] of rows.entries()) {
      yield* sql`INSERT INTO usage_logs (request_id, attempt, user_id, token_id, channel_id, model, prompt_tokens,
          completion_tokens, cached_tokens, reasoning_tokens, cost, latency_ms, status, error, created_at)
        VALUES (${`r-${ago}-${index}-${crypto.randomUUID()}`}, ${attempt}, 1, 1, ${channel}, ${model}, ${
        10 + index % 7
      },
          ${3 + index % 5}, ${index % 3}, ${index % 2}, ${cost}, ${latency}, ${status}, ${error},
          ${new Date((seconds - ago) * 1000)})`
    }
  })

const rollupTotals = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<Record<string, string | null>>`
    SELECT sum(requests)::text AS requests, sum(successes)::text AS successes, sum(prompt_tokens)::text AS prompt,
           sum(completion_tokens)::text AS completion, sum(cached_tokens)::text AS cached,
           sum(reasoning_tokens)::text AS reasoning, sum(cost)::text AS cost,
           (SELECT sum(c) FROM health_rollup, unnest(latency_counts) AS c)::text AS histogram,
           (SELECT string_agg(kind || '=' || n, ',' ORDER BY kind) FROM
             (SELECT kind, sum(requests) AS n FROM health_rollup GROUP BY kind) AS k) AS kinds,
           min(bucket_start)::text AS oldest
    FROM health_rollup`
  return row
})

const usageTotals = (from: number, to: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const range = sql`created_at >= ${new Date(from * 1000)} AND created_at < ${new Date(to * 1000)}`
    const [row] = yield* sql<Record<string, string | null>>`
      SELECT count(*) FILTER (WHERE attempt >= 1)::text AS requests,
             count(*) FILTER (WHERE attempt >= 1 AND status < 400)::text AS successes,
             sum(prompt_tokens)::text AS prompt, sum(completion_tokens)::text AS completion,
             sum(cached_tokens)::text AS cached, sum(reasoning_tokens)::text AS reasoning, sum(cost)::text AS cost,
             count(*) FILTER (WHERE attempt >= 1 AND status < 400)::text AS histogram
      FROM usage_logs WHERE ${range}`
    return row
  })

const snapshot = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  return yield* sql`SELECT * FROM health_rollup ORDER BY bucket_start, channel_id, model, kind`
})

/** `effect` with the `Clock`'s now at `millis` (epoch ms); sleeping stays the live clock's. */
const at = (millis: number) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Clock.clockWith(Effect.succeed), (live) =>
    Effect.provideService(effect, Clock.Clock, {
      ...live,
      currentTimeMillisUnsafe: () => millis,
      currentTimeMillis: Effect.succeed(millis),
      currentTimeNanosUnsafe: () => BigInt(millis) * 1_000_000n,
      currentTimeNanos: Effect.succeed(BigInt(millis) * 1_000_000n)
    }))

const seed = [
  // Successes over three days on two channels and two models, latencies 1 ms to 40 s.
  ...Array.from({ length: 240 }, (_, index) =>
    [
      1_000 + index * 1_080,
      1 + index % 2,
      index % 3 === 0 ? "model-a" : "model-b",
      200,
      null,
      1 + (index * 7_919) % 40_000,
      5 + index % 11,
      1
    ] as const),
  [7_200, 1, "model-a", 500, "server: upstream error", 900, 0, 1],
  [7_300, 1, "model-a", 504, "timeout: no answer", 30_000, 0, 1],
  [7_400, 2, "model-b", 499, null, 12, 0, 1],
  [7_500, 2, "model-b", 502, "weird words", 40, 0, 1],
  // A task's adjustment (attempt 0, a refund): cost only.
  [8_000, 1, "model-a", 200, null, 0, -4, 0],
  // A row that reached no channel.
  [8_100, null, "model-a", 503, "server: no channel", 1, 0, 1],
  // Past retention, and too new to fold.
  [40 * 86_400, 1, "model-a", 200, null, 50, 9, 1],
  [300, 1, "model-a", 200, null, 50, 9, 1]
] as const

Deno.test("health rollup on PGlite: folded once, equal to the usage rows, late rows refolded, retention kept", async () => {
  const copy = await freshPglite()
  try {
    const layer = HealthRollup.layer(0).pipe(Layer.provideMerge(layerPglite(copy.dataDir)))
    await Effect.runPromise(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const rollup = yield* HealthRollup
        yield* insert(seed)
        yield* at(NOW)(rollup.catchUp)
        strictEqual(yield* rollup.foldedUntil, target)
        const retainFrom = Math.floor((seconds - ROLLUP_RETAIN_SECONDS) / 900) * 900
        const folded = yield* rollupTotals
        const truth = yield* usageTotals(retainFrom, target)
        for (const field of ["requests", "successes", "prompt", "completion", "cached", "reasoning", "cost"]) {
          strictEqual(folded[field], truth[field], field)
        }
        strictEqual(folded.histogram, truth.histogram, "every success counted once in a histogram")
        // The newest success (16 min ago) is in the bucket still open to the rollup.
        strictEqual(folded.kinds, "=239,cancelled=1,other=1,server=2,timeout=1")

        // The usage rollup holds every usage row of the folded buckets once, per user, key and model.
        const byOwner = (table: "usage_logs" | "usage_rollup") =>
          sql<{ key: string }>`SELECT user_id || '/' || token_id || '/' || model || '=' ||
              ${table === "usage_logs" ? sql`count(*)` : sql`sum(requests)`} || '/' || sum(prompt_tokens) || '/' ||
              sum(completion_tokens) || '/' || sum(cost) AS key
            FROM ${sql(table)}
            WHERE ${table === "usage_logs" ? sql`created_at` : sql`bucket_start`} >= ${new Date(retainFrom * 1000)}
              AND ${table === "usage_logs" ? sql`created_at` : sql`bucket_start`} < ${new Date(target * 1000)}
            GROUP BY user_id, token_id, model ORDER BY 1`
        deepStrictEqual(yield* byOwner("usage_rollup"), yield* byOwner("usage_logs"))

        // The coarse tier holds every whole 2-hour bucket, summed from the 15-minute rows.
        const coarseUntil = new Date(Math.floor(target / 7_200) * 7_200 * 1000)
        const [tiers] = yield* sql<{ fine: string; coarse: string; buckets: string }>`
          SELECT (SELECT sum(requests) || '/' || sum(cost) || '/' || sum(successes) FROM health_rollup
                   WHERE bucket_start < ${coarseUntil}) AS fine,
                 (SELECT sum(requests) || '/' || sum(cost) || '/' || sum(successes) FROM health_rollup_coarse) AS coarse,
                 (SELECT count(DISTINCT bucket_start)::text FROM health_rollup_coarse
                   WHERE extract(epoch FROM bucket_start)::bigint % 7200 = 0) AS buckets`
        strictEqual(tiers.coarse, tiers.fine)
        ok(Number(tiers.buckets) > 30, `${tiers.buckets} coarse buckets, each on a 2-hour boundary`)

        // Passes at once, or again, change nothing.
        const before = yield* snapshot
        yield* at(NOW)(Effect.all([rollup.foldOnce, rollup.foldOnce, rollup.foldOnce], { concurrency: "unbounded" }))
        deepStrictEqual(yield* snapshot, before)

        // A row written late into a folded bucket counts after the next pass.
        yield* insert([[seconds - target + 1_200, 2, "model-b", 200, null, 77, 3, 1]])
        yield* at(NOW)(rollup.foldOnce)
        strictEqual((yield* rollupTotals).requests, String(Number(folded.requests) + 1))

        // The day and week statement, rollup and tail, counts what the exact one counts.
        for (const window of ["day", "week"] as const) {
          const { start, end } = windowOf(window, NOW)
          const query = { by: "model" as const, bucketSeconds: window === "day" ? 900 : 7_200, limit: 20 }
          const exact = yield* aggregate(sql, query, start, end, undefined)
          const rolled = yield* aggregate(sql, query, start, end, yield* rollup.foldedUntil)
          strictEqual(rolled.rollupUntil, target)
          deepStrictEqual(
            rolled.rows.map((row) => [row.key, row.t, row.stats.requests, row.stats.errors_by_kind, row.stats.quota]),
            exact.rows.map((row) => [row.key, row.t, row.stats.requests, row.stats.errors_by_kind, row.stats.quota]),
            window
          )
          for (const [index, row] of rolled.rows.entries()) {
            const p50 = exact.rows[index].stats.p50_ms
            ok(
              p50 === null ? row.stats.p50_ms === null : Math.abs(row.stats.p50_ms! - p50) <= p50 / 3 + 1,
              `${row.stats.p50_ms} for ${p50}`
            )
          }
        }

        // Retention less two days on, the buckets past retention are gone (the seed's first day among them).
        const on = ROLLUP_RETAIN_SECONDS - 2 * 86_400
        yield* at(NOW + on * 1000)(rollup.catchUp)
        const later = yield* rollupTotals
        ok(new Date(later.oldest!).getTime() / 1000 >= Math.floor((seconds - 2 * 86_400) / 900) * 900, later.oldest!)
        ok(Number(later.requests) < Number(folded.requests), "the oldest buckets dropped")
        const [usageOldest] = yield* sql<{ oldest: Date }>`SELECT min(bucket_start) AS oldest FROM usage_rollup`
        ok(usageOldest.oldest.getTime() / 1000 >= Math.floor((seconds - 2 * 86_400) / 900) * 900, "usage too")
        strictEqual(yield* rollup.foldedUntil, Math.floor((seconds + on - 900) / 900) * 900)
      }).pipe(Effect.provide(layer), Effect.scoped) as Effect.Effect<
        void,
        unknown,
        never
      >
    )
  } finally {
    await copy.remove()
  }
})
