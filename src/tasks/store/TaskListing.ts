/**
 * The search, filters and sort of a user's task list (`GET /api/task/self`):
 * `keyword` (the start of the public task id, or text the model contains),
 * `status`, `kind`, `model` (exactly), a creation time range (epoch seconds,
 * `start` inclusive, `end` exclusive); `sort` from an allow-list, `order`.
 * The SQL is built from fixed fragments only: a caller's text is always a
 * bound parameter. Pure.
 *
 * @since 0.4.0
 */
import type { SqlClient, Statement } from "effect/sql"
import type { TaskStatus } from "../../canonical/Video.ts"
import type { TaskKind } from "./Task.ts"

/** The statuses a task list filters by (`status=`). @category constants */
export const TASK_STATUSES = ["queued", "in_progress", "completed", "failed"] as const satisfies ReadonlyArray<
  TaskStatus
>

/** The kinds a task list filters by (`kind=`). @category constants */
export const TASK_KINDS = ["video", "image", "midjourney"] as const satisfies ReadonlyArray<TaskKind>

/** The columns the task list sorts by (`sort=`). @category constants */
export const TASK_SORTS = ["created_at", "completed_at", "status", "kind", "model", "progress", "quota"] as const

/** A column the task list sorts by. @category models */
export type TaskSort = typeof TASK_SORTS[number]

/** Which tasks to list (absent fields do not filter); `sort` defaults to `created_at`, `order` to `desc`. @category models */
export interface TaskQuery {
  /** The start of the public task id, or case-insensitive text the model contains. */
  readonly keyword?: string | undefined
  readonly status?: typeof TASK_STATUSES[number] | undefined
  readonly kind?: TaskKind | undefined
  readonly model?: string | undefined
  /** Epoch seconds: created at or after. */
  readonly start?: number | undefined
  /** Epoch seconds: created before. */
  readonly end?: number | undefined
  readonly sort?: TaskSort | undefined
  readonly order?: "asc" | "desc" | undefined
}

/** The `WHERE` conditions of `query` on `tasks` beyond the owner, joined with AND (none: `TRUE`). @category listing */
export const taskConditions = (sql: SqlClient.SqlClient, query: TaskQuery): Statement.Fragment => {
  const conditions = [
    query.keyword === undefined ? undefined : sql`(starts_with(public_id, ${query.keyword})
      OR strpos(lower(model), lower(${query.keyword})) > 0)`,
    query.status === undefined ? undefined : sql`status = ${query.status}`,
    query.kind === undefined ? undefined : sql`kind = ${query.kind}`,
    query.model === undefined ? undefined : sql`model = ${query.model}`,
    query.start === undefined ? undefined : sql`created_at >= ${new Date(query.start * 1000)}`,
    query.end === undefined ? undefined : sql`created_at < ${new Date(query.end * 1000)}`
  ].filter((condition) => condition !== undefined)
  return conditions.length === 0 ? sql`TRUE` : sql.and(conditions)
}

/** The `ORDER BY` of `query` (ties broken by id, the same way; a running task sorts last by completion). @category listing */
export const taskOrder = (sql: SqlClient.SqlClient, query: TaskQuery): Statement.Fragment => {
  const direction = (query.order ?? "desc") === "desc" ? sql`DESC` : sql`ASC`
  const column = {
    created_at: sql`created_at`,
    completed_at: sql`coalesce(completed_at, 'infinity'::timestamptz)`,
    status: sql`status`,
    kind: sql`kind`,
    model: sql`model`,
    progress: sql`progress`,
    quota: sql`quota_charged`
  }[query.sort ?? "created_at"]
  return sql`${column} ${direction}, id ${direction}`
}
