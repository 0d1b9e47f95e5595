/**
 * The audit table: every admin change, who made it, what it touched, the
 * record before and after (secrets left out), and when. Written in the
 * transaction of the change it describes, so a change and its audit row are
 * stored together or not at all; read by root at `GET /api/audit`.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { epochSeconds, offsetOf, type Page, type PageRequest } from "../domain/Page.ts"
import type { StorageUnavailable } from "../errors/GatewayError.ts"
import { storageFailure } from "../storage/StorageFailure.ts"
import type { SessionUser } from "./Sessions.ts"

/** One audit row as `GET /api/audit` shows it (`created_at` in epoch seconds). @category models */
export interface AuditView {
  readonly id: number
  readonly actor_id: number | null
  readonly actor: string
  readonly action: string
  readonly target: string
  readonly before: unknown
  readonly after: unknown
  readonly created_at: number
}

/** What an audit row records. `before`/`after` are JSON values without secrets. @category models */
export interface AuditEntry {
  readonly actor: SessionUser | undefined
  readonly action: string
  readonly target: string
  readonly before: unknown
  readonly after: unknown
}

/**
 * Writes `entry` with `sql` (the caller's transaction). Fails with the
 * `SqlError` of the insert, which rolls the caller's transaction back; the
 * caller's boundary maps it (`storageFailure`).
 *
 * @category audit
 */
export const writeAudit = (sql: SqlClient.SqlClient, entry: AuditEntry): Effect.Effect<void, SqlError.SqlError> =>
  sql`INSERT INTO audit_log (actor_id, actor_name, action, target, before, after)
    VALUES (${entry.actor?.id ?? null}, ${entry.actor?.username ?? "system"}, ${entry.action}, ${entry.target},
            ${entry.before === undefined ? null : JSON.stringify(entry.before)},
            ${entry.after === undefined ? null : JSON.stringify(entry.after)})`.pipe(Effect.asVoid)

/**
 * Which audit rows to list (absent fields do not filter): `action` is an action or its prefix (`channel.` for every
 * channel change), `actor` the actor's username, `target` text the target contains; times in epoch seconds (start
 * inclusive, end exclusive); `order` by id, newest first by default.
 *
 * @category models
 */
export interface AuditQuery {
  readonly action?: string | undefined
  readonly actor?: string | undefined
  readonly target?: string | undefined
  readonly start?: number | undefined
  readonly end?: number | undefined
  readonly order?: "asc" | "desc" | undefined
}

/** @category services */
export class AuditLog extends Context.Service<AuditLog, {
  /** The rows `query` matches, newest first unless `order` is `asc`; `StorageUnavailable` when they cannot be read. */
  readonly list: (page: PageRequest, query?: AuditQuery) => Effect.Effect<Page<AuditView>, StorageUnavailable>
}>()("sluice/accounts/AuditLog") {
  /** SQL-backed. */
  static readonly layer = Layer.effect(
    AuditLog,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const list = Effect.fn("AuditLog.list")(function* (page: PageRequest, query: AuditQuery = {}) {
        const conditions = [
          query.action === undefined ? undefined : sql`(action = ${query.action}
            OR (right(${query.action}, 1) = '.' AND left(action, length(${query.action})) = ${query.action}))`,
          query.actor === undefined ? undefined : sql`actor_name = ${query.actor}`,
          query.target === undefined ? undefined : sql`strpos(target, ${query.target}) > 0`,
          query.start === undefined ? undefined : sql`created_at >= ${new Date(query.start * 1000)}`,
          query.end === undefined ? undefined : sql`created_at < ${new Date(query.end * 1000)}`
        ].filter((condition) => condition !== undefined)
        const where = conditions.length === 0 ? sql`TRUE` : sql.and(conditions)
        const direction = query.order === "asc" ? sql`ASC` : sql`DESC`
        const [{ total }] = yield* sql<{ total: bigint }>`SELECT count(*) AS total FROM audit_log WHERE ${where}`
          .pipe(storageFailure("audit.list"))
        const rows = yield* sql<{
          id: bigint
          actorId: bigint | null
          actor: string
          action: string
          target: string
          before: unknown
          after: unknown
          createdAt: Date
        }>`SELECT id, actor_id AS "actorId", actor_name AS actor, action, target, before, after,
                  created_at AS "createdAt"
           FROM audit_log WHERE ${where} ORDER BY id ${direction} LIMIT ${page.size} OFFSET ${offsetOf(page)}`
          .pipe(storageFailure("audit.list"))
        return {
          items: rows.map((row) => ({
            id: Number(row.id),
            actor_id: row.actorId === null ? null : Number(row.actorId),
            actor: row.actor,
            action: row.action,
            target: row.target,
            before: row.before,
            after: row.after,
            created_at: epochSeconds(row.createdAt) ?? 0
          })),
          total: Number(total),
          page: page.page,
          page_size: page.size
        }
      })
      return AuditLog.of({ list })
    })
  )
}
