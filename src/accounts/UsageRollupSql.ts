/**
 * The usage rollup (`usage_rollup`, migration `0027`): per 15-minute bucket, user, key and model, the usage rows, their
 * prompt and completion tokens and cost (quota units). Folded by the rollup pass with the health rollup, over the same
 * range and in the same transaction (`src/accounts/HealthRollup.ts`); read by a user's daily usage
 * (`src/accounts/UsageQueries.ts`) for the buckets before `folded_until`, so the dashboard's 30 days read a few rows
 * per quarter hour and model instead of every usage row.
 *
 * @since 0.5.0
 */
import { Effect } from "effect"
import type { SqlClient, Statement } from "effect/sql"
import { ROLLUP_BUCKET_SECONDS } from "./health/FoldPlan.ts"

/**
 * Recomputes the usage rollup's buckets in `[from, to)` from `usage_logs` (delete, then insert the aggregate:
 * idempotent). Fails as the statements do.
 *
 * @category sql
 */
export const foldUsage = (sql: SqlClient.SqlClient, from: Date, to: Date) =>
  Effect.andThen(
    sql`DELETE FROM usage_rollup WHERE bucket_start >= ${from} AND bucket_start < ${to}`,
    sql`INSERT INTO usage_rollup (bucket_start, user_id, token_id, model, requests, prompt_tokens, completion_tokens,
                                  cost)
      SELECT date_bin(${`${ROLLUP_BUCKET_SECONDS} seconds`}::interval, created_at, 'epoch'), user_id, token_id, model,
             count(*)::int, sum(prompt_tokens)::bigint, sum(completion_tokens)::bigint, sum(cost)::bigint
      FROM usage_logs WHERE created_at >= ${from} AND created_at < ${to}
      GROUP BY 1, user_id, token_id, model`
  )

/**
 * The rows `(t, model, requests, prompt_tokens, completion_tokens, cost)` of user `userId` from `since`: the usage
 * rows before `rolledFrom` and from `rolledUntil`, and the usage rollup's buckets between (epoch seconds, whole
 * buckets; `rolledFrom >= rolledUntil` reads the usage rows alone). A caller groups them (by day and model).
 *
 * @category sql
 */
export const userUsageParts = (
  sql: SqlClient.SqlClient,
  userId: bigint,
  since: Date,
  rolledFrom: number,
  rolledUntil: number
): Statement.Fragment => {
  const raw = (from: Date, to: Date | undefined) =>
    sql`SELECT created_at AS t, model, 1 AS requests, prompt_tokens::bigint AS prompt_tokens,
               completion_tokens::bigint AS completion_tokens, cost
        FROM usage_logs WHERE ${
      sql.and([
        sql`user_id = ${userId}`,
        sql`created_at >= ${from}`,
        ...(to === undefined ? [] : [sql`created_at < ${to}`])
      ])
    }`
  if (rolledFrom >= rolledUntil) return raw(since, undefined)
  const lower = new Date(Math.max(since.getTime(), rolledFrom * 1000))
  const upper = new Date(Math.max(lower.getTime(), rolledUntil * 1000))
  return sql`${raw(since, lower)}
    UNION ALL
    SELECT bucket_start AS t, model, requests, prompt_tokens, completion_tokens, cost FROM usage_rollup
    WHERE user_id = ${userId} AND bucket_start >= ${lower} AND bucket_start < ${upper}
    UNION ALL
    ${raw(upper, undefined)}`
}
