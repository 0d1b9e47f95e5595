/**
 * The search, filters and sort of a user's webhook endpoints when listed in
 * pages (`GET /api/webhook/` with list parameters): `keyword` in the URL,
 * `status`, `event` (one the endpoint subscribes to); `sort` from an
 * allow-list, `order`. The SQL is built from fixed fragments only: a
 * caller's text is always a bound parameter. Pure.
 *
 * @since 0.4.0
 */
import type { SqlClient, Statement } from "effect/sql"

/** The columns the endpoint list sorts by (`sort=`). @category constants */
export const WEBHOOK_SORTS = ["id", "url", "status", "created_at"] as const

/** A column the endpoint list sorts by. @category models */
export type WebhookSort = typeof WEBHOOK_SORTS[number]

/** Which endpoints to list (absent fields do not filter); `sort` defaults to `id`, `order` to `asc` (oldest first, as the array). @category models */
export interface WebhookQuery {
  /** Case-insensitive text the URL contains. */
  readonly keyword?: string | undefined
  readonly status?: "enabled" | "disabled" | undefined
  /** An event the endpoint subscribes to, exactly (`budget.threshold`). */
  readonly event?: string | undefined
  readonly sort?: WebhookSort | undefined
  readonly order?: "asc" | "desc" | undefined
}

/** The `WHERE` conditions of `query` on `webhook_endpoints e` beyond the owner (none: `TRUE`). @category listing */
export const webhookConditions = (sql: SqlClient.SqlClient, query: WebhookQuery): Statement.Fragment => {
  const conditions = [
    query.keyword === undefined ? undefined : sql`strpos(lower(e.url), lower(${query.keyword})) > 0`,
    query.status === undefined ? undefined : sql`e.enabled = ${query.status === "enabled"}`,
    query.event === undefined ? undefined : sql`${query.event} = ANY(e.events)`
  ].filter((condition) => condition !== undefined)
  return conditions.length === 0 ? sql`TRUE` : sql.and(conditions)
}

/** The `ORDER BY` of `query` (ties broken by id, the same way). @category listing */
export const webhookOrder = (sql: SqlClient.SqlClient, query: WebhookQuery): Statement.Fragment => {
  const direction = (query.order ?? "asc") === "desc" ? sql`DESC` : sql`ASC`
  const column = {
    id: sql`e.id`,
    url: sql`lower(e.url)`,
    status: sql`e.enabled`,
    created_at: sql`e.created_at`
  }[query.sort ?? "id"]
  return sql`${column} ${direction}, e.id ${direction}`
}
