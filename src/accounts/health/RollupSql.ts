/**
 * The SQL the health view and its rollup share (`src/accounts/HealthQueries.ts`, `src/accounts/HealthRollup.ts`):
 * a usage row's failure kind, and the aggregate of a range of usage rows in the rollup's shape (`health_rollup`,
 * migration `0024`), which a pass folds into the table and the day and week views read for the newest minutes that
 * are not folded yet. One definition, so the rollup and the open tail can never count differently.
 *
 * @since 0.5.0
 */
import { Effect } from "effect"
import type { SqlClient, SqlError, Statement } from "effect/sql"
import { LATENCY_BOUNDS_MS, LATENCY_BUCKETS } from "../../domain/LatencyHistogram.ts"
import { epochSeconds } from "../../domain/Page.ts"
import { ROLLUP_BUCKET_SECONDS, ROLLUP_COARSE_SECONDS } from "./FoldPlan.ts"

/**
 * The columns of `health_rollup` (and of `usageAggregate`'s rows), in order.
 *
 * @category sql
 */
export const ROLLUP_COLUMNS = "bucket_start, channel_id, model, kind, requests, successes, prompt_tokens, " +
  "completion_tokens, cached_tokens, reasoning_tokens, audio_input_tokens, audio_output_tokens, cost, latency_min, " +
  "latency_max, latency_counts, first_token_min, first_token_max, first_token_counts"

/**
 * A usage row's failure kind (text): `''` when it did not fail (status below 400) or is a task's `attempt = 0`
 * adjustment; `cancelled` for status 499 (the caller left); the prefix of its `error` (`<kind>: <vendor words>`)
 * when that is one of `known`; else `other`.
 *
 * @category sql
 */
export const failureKind = (sql: SqlClient.SqlClient, known: ReadonlyArray<string>): Statement.Fragment =>
  sql`CASE WHEN status < 400 OR attempt < 1 THEN ''
           WHEN status = 499 THEN 'cancelled'
           WHEN split_part(error, ':', 1) IN ${sql.in(known)} THEN split_part(error, ':', 1)
           ELSE 'other' END`

/** The histogram's lower bounds as a SQL array, for `width_bucket`. */
const bounds = `ARRAY[${LATENCY_BOUNDS_MS.join(", ")}]::int[]`

const histogram = Array.from(
  { length: LATENCY_BUCKETS },
  (_, index) => `count(*) FILTER (WHERE ok AND b = ${index + 1})`
).join(", ")

/** The same over the streamed successes' time to first token (`fb`: its bucket; `NULL` when not streamed). */
const firstTokenHistogram = Array.from(
  { length: LATENCY_BUCKETS },
  (_, index) => `count(*) FILTER (WHERE ok AND fb = ${index + 1})`
).join(", ")

/**
 * The usage rows created in `[from, to)` (and matching every one of `narrow`, conditions on `channel_id` and
 * `model`) aggregated per 15-minute bucket, channel, model and failure kind, as rows of `ROLLUP_COLUMNS`: attempts,
 * successes, tokens by kind, cost (quota units), the successes' latency minimum, maximum and histogram, and the
 * same of the streamed successes' time to first token (`first_token_ms`). Reads
 * the rows once (the `created_at` index, or one channel's or model's index).
 *
 * @category sql
 */
export const usageAggregate = (
  sql: SqlClient.SqlClient,
  known: ReadonlyArray<string>,
  from: Date,
  to: Date,
  narrow: ReadonlyArray<Statement.Fragment>
): Statement.Fragment =>
  sql`SELECT date_bin(${`${ROLLUP_BUCKET_SECONDS} seconds`}::interval, created_at, 'epoch') AS bucket_start,
         channel_id, model, kind,
         (count(*) FILTER (WHERE attempt >= 1))::int AS requests, (count(*) FILTER (WHERE ok))::int AS successes,
         sum(prompt_tokens)::bigint AS prompt_tokens, sum(completion_tokens)::bigint AS completion_tokens,
         sum(cached_tokens)::bigint AS cached_tokens, sum(reasoning_tokens)::bigint AS reasoning_tokens,
         sum(audio_input_tokens)::bigint AS audio_input_tokens,
         sum(audio_output_tokens)::bigint AS audio_output_tokens, sum(cost)::bigint AS cost,
         min(latency_ms) FILTER (WHERE ok) AS latency_min, max(latency_ms) FILTER (WHERE ok) AS latency_max,
         ARRAY[${sql.literal(histogram)}]::int[] AS latency_counts,
         min(first_token_ms) FILTER (WHERE ok) AS first_token_min,
         max(first_token_ms) FILTER (WHERE ok) AS first_token_max,
         ARRAY[${sql.literal(firstTokenHistogram)}]::int[] AS first_token_counts
       FROM (SELECT created_at, channel_id, model, attempt, prompt_tokens, completion_tokens, cached_tokens,
                    reasoning_tokens, audio_input_tokens, audio_output_tokens, cost, latency_ms, first_token_ms,
                    attempt >= 1 AND status < 400 AS ok,
                    width_bucket(latency_ms, ${sql.literal(bounds)}) AS b,
                    width_bucket(first_token_ms, ${sql.literal(bounds)}) AS fb,
                    ${failureKind(sql, known)} AS kind
             FROM usage_logs
             WHERE ${sql.and([sql`created_at >= ${from}`, sql`created_at < ${to}`, ...narrow])}) AS r
       GROUP BY 1, channel_id, model, kind`

/**
 * The element-wise sum of a histogram column over a group, as a SQL array of `type` (`NULL` histograms, folded before
 * `0026`, count none).
 *
 * @category sql
 */
export const summedHistogram = (column: string, type: "int" | "float8"): string =>
  `ARRAY[${
    Array.from({ length: LATENCY_BUCKETS }, (_, index) => `coalesce(sum(${column}[${index + 1}]), 0)`).join(", ")
  }]::${type}[]`

/**
 * The tables the rollup pass keeps: the 15-minute health rollup, its 2-hour coarse tier and the usage rollup
 * (migrations `0024`, `0027`); each holds `bucket_start`.
 *
 * @category sql
 */
export const ROLLUP_TABLES = ["health_rollup", "health_rollup_coarse", "usage_rollup"] as const

/**
 * Until when (epoch seconds) every rollup table holds every bucket: `health_rollup_state.folded_until`, `null` before
 * the first pass or after a reset. Fails as the statement does.
 *
 * @category sql
 */
export const readFoldedUntil = (sql: SqlClient.SqlClient): Effect.Effect<number | null, SqlError.SqlError> =>
  sql<{ readonly foldedUntil: Date | null }>`
    SELECT folded_until AS "foldedUntil" FROM health_rollup_state WHERE id = 1`.pipe(
    Effect.map((rows) => epochSeconds(rows[0]?.foldedUntil ?? null))
  )

/**
 * The 15-minute rows of `health_rollup` in `[from, to)` summed per coarse 2-hour bucket (`ROLLUP_COARSE_SECONDS`),
 * channel, model and failure kind, as rows of `ROLLUP_COLUMNS` (`health_rollup_coarse`, migration `0027`): counts,
 * tokens and cost added, minima and maxima kept, histograms added element by element.
 *
 * @category sql
 */
export const coarseAggregate = (sql: SqlClient.SqlClient, from: Date, to: Date): Statement.Fragment =>
  sql`SELECT date_bin(${`${ROLLUP_COARSE_SECONDS} seconds`}::interval, bucket_start, 'epoch') AS bucket_start,
         channel_id, model, kind, sum(requests)::int AS requests, sum(successes)::int AS successes,
         sum(prompt_tokens)::bigint AS prompt_tokens, sum(completion_tokens)::bigint AS completion_tokens,
         sum(cached_tokens)::bigint AS cached_tokens, sum(reasoning_tokens)::bigint AS reasoning_tokens,
         sum(audio_input_tokens)::bigint AS audio_input_tokens,
         sum(audio_output_tokens)::bigint AS audio_output_tokens, sum(cost)::bigint AS cost,
         min(latency_min) AS latency_min, max(latency_max) AS latency_max,
         ${sql.literal(summedHistogram("latency_counts", "int"))} AS latency_counts,
         min(first_token_min) AS first_token_min, max(first_token_max) AS first_token_max,
         ${sql.literal(summedHistogram("first_token_counts", "int"))} AS first_token_counts
       FROM health_rollup WHERE bucket_start >= ${from} AND bucket_start < ${to}
       GROUP BY 1, channel_id, model, kind`
