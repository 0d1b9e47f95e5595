/**
 * Seeded usage rows for the health view's tests on PostgreSQL (`test/routes/api/HealthRoutes.test.ts` and the
 * million-row `test/scale/ConsolePagesAtScale.test.ts`): `rows` usage rows spread over the last week, 50 channels (every
 * 50th row on the gateway's real channel `channelId`, the rest on ids 1001–1049), 20 models, 5 % failures of two
 * kinds (`server`, `throttled`), latencies from 50 ms to about 4 s; written with the indexes set aside and built again
 * after (as a restore would), then the rollup told to fold the whole week again (its state reset, as after a
 * restore) and waited for.
 */
import { ok } from "node:assert/strict"
import type { TestGateway } from "./Gateway.ts"

/** How long seeding took: writing the rows (indexes and `ANALYZE` included), then folding the week, milliseconds. */
export interface SeedTimes {
  readonly writeMs: number
  readonly foldMs: number
}

/** Seeds `rows` usage rows (see the module's doc); resolves once the rollup holds them. */
export const seedUsage = async (gateway: TestGateway, rows: number, channelId: string): Promise<SeedTimes> => {
  const started = performance.now()
  const indexes = await gateway.query<{ name: string; definition: string }>(
    `SELECT indexname AS name, indexdef AS definition FROM pg_indexes
     WHERE tablename = 'usage_logs' AND indexname <> 'usage_logs_pkey'`,
    false
  )
  ok(indexes.some((index) => index.name === "usage_logs_channel_created_idx"), "migration 0020's index")
  for (const index of indexes) await gateway.query(`DROP INDEX ${index.name}`, false)
  // Spread over 590,000 s (6.8 days) whatever the count, newest first.
  const step = 590_000 / rows
  await gateway.query(
    `INSERT INTO usage_logs (request_id, attempt, user_id, token_id, channel_id, model, prompt_tokens,
       completion_tokens, cost, latency_ms, status, error, created_at)
     SELECT 'bulk-' || n, 1, 1, 1, CASE WHEN n % 50 = 0 THEN ${channelId} ELSE 1000 + n % 50 END,
            'model-' || (n % 20), 100 + n % 900, 20 + n % 300, 1000 + n % 5000, 50 + (n::bigint * 7919) % 4000,
            CASE WHEN n % 20 = 0 THEN 500 WHEN n % 20 = 1 THEN 429 ELSE 200 END,
            CASE WHEN n % 20 = 0 THEN 'server: upstream error' WHEN n % 20 = 1 THEN 'throttled: slow down'
                 ELSE NULL END,
            now() - (n * ${step}) * interval '1 second'
     FROM generate_series(1, ${rows}) AS n`,
    false
  )
  for (const index of indexes) await gateway.query(index.definition, false)
  await gateway.query("ANALYZE usage_logs", false)
  const written = performance.now()
  await refoldRollup(gateway)
  return { writeMs: Math.round(written - started), foldMs: Math.round(performance.now() - written) }
}

/** Resets the rollup's state (the next pass folds the retained week again) and waits until it caught up. */
export const refoldRollup = async (gateway: TestGateway): Promise<void> => {
  await gateway.query("UPDATE health_rollup_state SET folded_until = NULL", false)
  await rollupCaughtUp(gateway)
}

/** Waits (up to 5 minutes) until the rollup holds every bucket closed more than 15 minutes ago. */
export const rollupCaughtUp = async (gateway: TestGateway): Promise<void> => {
  for (let tries = 0; tries < 3000; tries++) {
    const [state] = await gateway.query<{ done: boolean }>(
      `SELECT coalesce(folded_until >= to_timestamp(floor((extract(epoch FROM now()) - 900) / 900) * 900), false)
         AS done FROM health_rollup_state`,
      false
    )
    if (state.done) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error("the health rollup did not catch up within 5 minutes")
}

/** Waits until a rollup pass that began after now ended. */
export const nextRollupPass = async (gateway: TestGateway): Promise<void> => {
  const [{ at }] = await gateway.query<{ at: string }>("SELECT clock_timestamp()::text AS at", false)
  for (let tries = 0; tries < 600; tries++) {
    const [state] = await gateway.query<{ done: boolean }>(
      `SELECT coalesce(folded_at > '${at}'::timestamptz, false) AS done FROM health_rollup_state`,
      false
    )
    if (state.done) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error("no health rollup pass within 60 s")
}
