/**
 * The one statement of a health report's series (`src/accounts/HealthQueries.ts`): per series (channel or model) and
 * per bucket of the window, and per series over the whole window (`GROUPING SETS`, one pass), the attempts, failed
 * attempts by kind, p50/p95 latency of the successes and time to first token of the streamed ones, tokens and cost;
 * only the busiest `limit` series.
 *
 * - The hour window reads `usage_logs` alone, percentiles exact (`percentile_cont`).
 * - The day and week windows read the rollup (`health_rollup`, migration `0024`) for the buckets before its
 *   `folded_until` and aggregate the usage rows after it (the newest 15 to 30 minutes) into the same shape
 *   (`usageAggregate`); the week reads its whole 2-hour buckets from the coarse tier (`health_rollup_coarse`,
 *   migration `0027`) and only the last two hours' 15-minute rows, so a report reads at most a few thousand rollup
 *   rows and the open tail whatever the table holds. Counts, tokens and cost are exact; p50/p95 come from the summed
 *   latency histograms (`domain/LatencyHistogram.ts`: interpolated inside the bucket holding the rank, within less
 *   than that bucket's width, at most a third of the value; exact below 10 ms).
 *
 * @since 0.5.0
 */
import { Effect } from "effect"
import type { SqlClient, Statement } from "effect/sql"
import { percentileOf } from "../../domain/LatencyHistogram.ts"
import { FAILURE_KINDS, type HealthStats } from "./HealthStats.ts"
import { ROLLUP_COARSE_SECONDS } from "./FoldPlan.ts"
import { failureKind, summedHistogram, usageAggregate } from "./RollupSql.ts"

/** What to aggregate (the parts of a `HealthQuery` the statement needs). @category models */
export interface SeriesQuery {
  readonly by: "channel" | "model"
  readonly channelId?: bigint | undefined
  readonly model?: string | undefined
  readonly bucketSeconds: number
  readonly limit: number
}

/**
 * One answer row: a series' key, its bucket start (epoch seconds; `null` for the series' totals) and its stats.
 *
 * @category models
 */
export interface SeriesRow {
  readonly key: string
  readonly t: number | null
  readonly stats: HealthStats
}

/**
 * The rows, and until when (epoch seconds) they came from the rollup (`null`: from `usage_logs` alone).
 *
 * @category models
 */
export interface SeriesAggregate {
  readonly rows: ReadonlyArray<SeriesRow>
  readonly rollupUntil: number | null
}

type Row = Readonly<Record<string, unknown>> & {
  readonly key: string | bigint
  readonly t: string | bigint | null
  readonly total: number
}

/** The rollup's columns a report reads, from either tier and the open tail. */
const PART_COLUMNS = "bucket_start, channel_id, model, kind, requests, prompt_tokens, completion_tokens, cost, " +
  "latency_min, latency_max, latency_counts, first_token_min, first_token_max, first_token_counts"

/** A number from a count, sum or percentile as the driver returns it (bigint, numeric string, number, null). */
const num = (value: unknown): number => value === null || value === undefined ? 0 : Number(value)
const tenth = (value: number | null): number | null => value === null ? null : Math.round(value * 10) / 10
const maybe = (value: unknown): number | null => value === null || value === undefined ? null : tenth(Number(value))

const statsOf = (
  row: Row,
  p50: number | null,
  p95: number | null,
  ttft50: number | null,
  ttft95: number | null
): HealthStats => {
  const kinds: Record<string, number> = {}
  FAILURE_KINDS.forEach((kind, index) => {
    const count = num(row[`k${index}`])
    if (count > 0) kinds[kind] = count
  })
  return {
    requests: num(row.requests),
    errors: num(row.errors),
    errors_by_kind: kinds,
    p50_ms: p50,
    p95_ms: p95,
    ttft_p50_ms: ttft50,
    ttft_p95_ms: ttft95,
    prompt_tokens: num(row.prompt_tokens),
    completion_tokens: num(row.completion_tokens),
    quota: num(row.quota)
  }
}

const rowOf = (row: Row, stats: HealthStats): SeriesRow => ({
  key: String(row.key),
  t: Number(row.total) === 1 ? null : num(row.t),
  stats
})

/** The percentiles of a rolled-up row: its summed histograms, minima and maxima (latency, first token). */
const histogramStats = (row: Row): HealthStats => {
  const counts = (row.counts as ReadonlyArray<number | string | null> | null ?? []).map(num)
  const min = num(row.latency_min)
  const max = num(row.latency_max)
  const firstCounts = (row.first_counts as ReadonlyArray<number | string | null> | null ?? []).map(num)
  const firstMin = num(row.first_token_min)
  const firstMax = num(row.first_token_max)
  return statsOf(
    row,
    tenth(percentileOf(counts, min, max, 0.5)),
    tenth(percentileOf(counts, min, max, 0.95)),
    tenth(percentileOf(firstCounts, firstMin, firstMax, 0.5)),
    tenth(percentileOf(firstCounts, firstMin, firstMax, 0.95))
  )
}

/**
 * The series of `query` over the window `[start, end)` (epoch seconds), from `usage_logs` alone when `foldedUntil`
 * is `undefined` (the hour window), else from the rollup before `foldedUntil` (epoch seconds; `null`: nothing
 * folded yet) and `usage_logs` after. Series with their totals row first, then their buckets in time order.
 *
 * @category queries
 */
export const aggregate = (
  sql: SqlClient.SqlClient,
  query: SeriesQuery,
  start: number,
  end: number,
  foldedUntil: number | null | undefined
): Effect.Effect<SeriesAggregate> => {
  const byChannel = query.by === "channel"
  const key = byChannel ? sql`channel_id` : sql`model`
  const narrow: Array<Statement.Fragment> = []
  if (byChannel) narrow.push(sql`channel_id IS NOT NULL`)
  if (query.channelId !== undefined) narrow.push(sql`channel_id = ${query.channelId}`)
  if (query.model !== undefined) narrow.push(sql`model = ${query.model}`)
  const known = FAILURE_KINDS.filter((kind) => kind !== "other")
  const bucket = `${query.bucketSeconds} seconds`
  const kindColumns = FAILURE_KINDS.map((_, index) => `g.k${index}`).join(", ")
  const finish = (columns: string) =>
    sql`, top AS (
      SELECT key FROM g WHERE total = 1 ORDER BY requests DESC, key LIMIT ${query.limit}
    )
    SELECT g.key, extract(epoch FROM g.t)::bigint AS t, g.total, g.requests, g.errors, ${sql.literal(kindColumns)},
           g.prompt_tokens, g.completion_tokens, g.quota, ${sql.literal(columns)}
    FROM g JOIN top USING (key) ORDER BY g.key, g.total DESC, g.t`
  const kindCounts = (count: Statement.Fragment) =>
    sql.csv(FAILURE_KINDS.map((kind, index) => sql`${count} FILTER (WHERE kind = ${kind}) AS ${sql(`k${index}`)}`))

  if (foldedUntil === undefined) {
    const inWindow = [sql`created_at >= ${new Date(start * 1000)}`, sql`created_at < ${new Date(end * 1000)}`]
    // The sorts of the percentiles stay in memory (PostgreSQL's default `work_mem` is 4 MB); for this statement only.
    return sql`SET LOCAL work_mem = '64MB'`.pipe(
      Effect.andThen(sql<Row>`
        WITH w AS (
          SELECT ${key} AS key, date_bin(${bucket}::interval, created_at, 'epoch') AS t,
                 status, latency_ms, first_token_ms, prompt_tokens, completion_tokens, cost, attempt,
                 ${failureKind(sql, known)} AS kind
          FROM usage_logs WHERE ${sql.and([...inWindow, ...narrow])}
        ), g AS (
          SELECT key, t, grouping(t) AS total,
                 count(*) FILTER (WHERE attempt >= 1) AS requests,
                 count(*) FILTER (WHERE kind <> '') AS errors,
                 ${kindCounts(sql`count(*)`)},
                 percentile_cont(ARRAY[0.5, 0.95]::float8[]) WITHIN GROUP (ORDER BY latency_ms)
                   FILTER (WHERE attempt >= 1 AND status < 400) AS p,
                 percentile_cont(ARRAY[0.5, 0.95]::float8[]) WITHIN GROUP (ORDER BY first_token_ms)
                   FILTER (WHERE attempt >= 1 AND status < 400 AND first_token_ms IS NOT NULL) AS f,
                 sum(prompt_tokens) AS prompt_tokens, sum(completion_tokens) AS completion_tokens,
                 sum(cost) AS quota
          FROM w GROUP BY GROUPING SETS ((key, t), (key))
        )${finish("g.p, g.f")}`),
      sql.withTransaction,
      Effect.map((rows) => ({
        rows: rows.map((row) => {
          const p = row.p as ReadonlyArray<number | string | null> | null
          const f = row.f as ReadonlyArray<number | string | null> | null
          return rowOf(row, statsOf(row, maybe(p?.[0]), maybe(p?.[1]), maybe(f?.[0]), maybe(f?.[1])))
        }),
        rollupUntil: null
      })),
      Effect.orDie
    )
  }

  // The rollup's buckets are whole 15 minutes and the window's bounds are too, so the parts meet exactly. A window of
  // 2-hour buckets (the week) reads the coarse tier's whole 2-hour buckets first, then the 15-minute rows after them.
  const split = Math.min(Math.max(foldedUntil ?? start, start), end)
  const coarseSplit = query.bucketSeconds % ROLLUP_COARSE_SECONDS === 0
    ? Math.max(start, Math.floor(split / ROLLUP_COARSE_SECONDS) * ROLLUP_COARSE_SECONDS)
    : start
  const rolled = (table: string, from: number, to: number) =>
    sql`SELECT ${sql.literal(PART_COLUMNS)} FROM ${sql(table)}
      WHERE ${
      sql.and([
        sql`bucket_start >= ${new Date(from * 1000)}`,
        sql`bucket_start < ${new Date(to * 1000)}`,
        ...narrow
      ])
    }`
  // As above, the grouping's sort stays in memory, for this statement only.
  return sql`SET LOCAL work_mem = '64MB'`.pipe(
    Effect.andThen(sql<Row>`
    WITH parts AS (
      ${rolled("health_rollup_coarse", start, coarseSplit)}
      UNION ALL
      ${rolled("health_rollup", coarseSplit, split)}
      UNION ALL
      SELECT ${sql.literal(PART_COLUMNS)}
      FROM (${usageAggregate(sql, known, new Date(split * 1000), new Date(end * 1000), narrow)}) AS tail
    ), w AS (
      SELECT ${key} AS key, date_bin(${bucket}::interval, bucket_start, 'epoch') AS t, kind, requests,
             prompt_tokens, completion_tokens, cost, latency_min, latency_max, latency_counts, first_token_min,
             first_token_max, first_token_counts
      FROM parts
    ), g AS (
      SELECT key, t, grouping(t) AS total,
             sum(requests) AS requests,
             coalesce(sum(requests) FILTER (WHERE kind <> ''), 0) AS errors,
             ${kindCounts(sql`sum(requests)`)},
             min(latency_min) AS latency_min, max(latency_max) AS latency_max,
             ${sql.literal(summedHistogram("latency_counts", "float8"))} AS counts,
             min(first_token_min) AS first_token_min, max(first_token_max) AS first_token_max,
             ${sql.literal(summedHistogram("first_token_counts", "float8"))} AS first_counts,
             sum(prompt_tokens) AS prompt_tokens, sum(completion_tokens) AS completion_tokens, sum(cost) AS quota
      FROM w GROUP BY GROUPING SETS ((key, t), (key))
    )${finish("g.latency_min, g.latency_max, g.counts, g.first_token_min, g.first_token_max, g.first_counts")}`),
    sql.withTransaction,
    Effect.map((rows) => ({
      rows: rows.map((row) => rowOf(row, histogramStats(row))),
      rollupUntil: foldedUntil === null ? null : split
    })),
    Effect.orDie
  )
}
