/**
 * The search, filters and sort of a user's key list (`GET /api/token/`):
 * `keyword` in the key's name or the start of its listed prefix (`sk-…`),
 * `status`, `group`, `model` (in the key's allow-list); `sort` from an
 * allow-list, `order`. The SQL is built from fixed fragments only: a caller's
 * text is always a bound parameter. Pure.
 *
 * @since 0.4.0
 */
import type { SqlClient, Statement } from "effect/sql"

/** The columns the key list sorts by (`sort=`). @category constants */
export const TOKEN_SORTS = ["id", "name", "status", "remain_quota", "used_quota", "expires_at", "created_at"] as const

/** A column the key list sorts by. @category models */
export type TokenSort = typeof TOKEN_SORTS[number]

/** Which keys to list (absent fields do not filter); `sort` defaults to `id`, `order` to `desc` (newest first). @category models */
export interface TokenQuery {
  /** Case-insensitive text the name contains, or the listed prefix starts with. */
  readonly keyword?: string | undefined
  readonly status?: "enabled" | "disabled" | undefined
  /** The key's group (`tokens.group_name`), exactly. */
  readonly group?: string | undefined
  /** A model on the key's allow-list, exactly (a key without a list allows every model and does not match). */
  readonly model?: string | undefined
  readonly sort?: TokenSort | undefined
  readonly order?: "asc" | "desc" | undefined
}

/** The `WHERE` conditions of `query` on `tokens t` beyond the owner, joined with AND (none: `TRUE`). @category listing */
export const tokenConditions = (sql: SqlClient.SqlClient, query: TokenQuery): Statement.Fragment => {
  const conditions = [
    query.keyword === undefined ? undefined : sql`(strpos(lower(t.name), lower(${query.keyword})) > 0
      OR starts_with(lower(t.key_prefix), lower(${query.keyword})))`,
    query.status === undefined ? undefined : sql`t.enabled = ${query.status === "enabled"}`,
    query.group === undefined ? undefined : sql`t.group_name = ${query.group}`,
    query.model === undefined ? undefined : sql`${query.model} = ANY(t.models)`
  ].filter((condition) => condition !== undefined)
  return conditions.length === 0 ? sql`TRUE` : sql.and(conditions)
}

/** The `ORDER BY` of `query` (ties broken by id, the same way; no expiry sorts as the latest). @category listing */
export const tokenOrder = (sql: SqlClient.SqlClient, query: TokenQuery): Statement.Fragment => {
  const direction = (query.order ?? "desc") === "desc" ? sql`DESC` : sql`ASC`
  const column = {
    id: sql`t.id`,
    name: sql`lower(t.name)`,
    status: sql`t.enabled`,
    remain_quota: sql`coalesce(t.remain_quota, 9223372036854775807)`,
    used_quota: sql`t.used_quota`,
    expires_at: sql`coalesce(t.expires_at, 'infinity'::timestamptz)`,
    created_at: sql`t.created_at`
  }[query.sort ?? "id"]
  return sql`${column} ${direction}, t.id ${direction}`
}
