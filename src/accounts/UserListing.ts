/**
 * The filters and sort of the admin user list (`GET /api/user/`): `keyword`
 * in the username, display name or e-mail, `role`, `status`, `group`;
 * `sort` from an allow-list, `order`. The SQL is built from fixed fragments
 * only: a caller's text is always a bound parameter.
 *
 * @since 0.1.0
 */
import type { SqlClient, Statement } from "effect/sql"
import type { Role } from "./Sessions.ts"

/** The columns the user list sorts by (`sort=`). @category constants */
export const USER_SORTS = ["id", "username", "role", "group", "quota", "used_quota", "requests", "created_at"] as const

/** A column the user list sorts by. @category models */
export type UserSort = typeof USER_SORTS[number]

/** Which users to list (absent fields do not filter); `sort` defaults to `id`, `order` to `desc` (newest first). @category models */
export interface UserQuery {
  /** Case-insensitive text the username, display name or e-mail contains. */
  readonly keyword?: string | undefined
  readonly role?: Role | undefined
  readonly status?: "enabled" | "disabled" | undefined
  readonly group?: string | undefined
  readonly sort?: UserSort | undefined
  readonly order?: "asc" | "desc" | undefined
}

/** The `WHERE` conditions of `query` on `users u`, joined with AND (none: `TRUE`). @category listing */
export const userConditions = (sql: SqlClient.SqlClient, query: UserQuery): Statement.Fragment => {
  const conditions = [
    query.keyword === undefined ? undefined : sql`(strpos(lower(u.username), lower(${query.keyword})) > 0
      OR strpos(lower(u.display_name), lower(${query.keyword})) > 0
      OR strpos(lower(coalesce(u.email, '')), lower(${query.keyword})) > 0)`,
    query.role === undefined ? undefined : sql`u.role = ${query.role}`,
    query.status === undefined ? undefined : sql`u.enabled = ${query.status === "enabled"}`,
    query.group === undefined ? undefined : sql`u.group_name = ${query.group}`
  ].filter((condition) => condition !== undefined)
  return conditions.length === 0 ? sql`TRUE` : sql.and(conditions)
}

/** The `ORDER BY` of `query` (ties broken by id, the same way). @category listing */
export const userOrder = (sql: SqlClient.SqlClient, query: UserQuery): Statement.Fragment => {
  const column = {
    id: sql`u.id`,
    username: sql`lower(u.username)`,
    role: sql`u.role`,
    group: sql`u.group_name`,
    quota: sql`u.quota`,
    used_quota: sql`u.used_quota`,
    requests: sql`u.request_count`,
    created_at: sql`u.created_at`
  }[query.sort ?? "id"]
  const direction = (query.order ?? "desc") === "desc" ? sql`DESC` : sql`ASC`
  return sql`${column} ${direction}, u.id ${direction}`
}
