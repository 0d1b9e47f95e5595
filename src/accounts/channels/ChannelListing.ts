/**
 * One page of the channel list, filtered, searched and sorted in SQL: the
 * `GET /api/channel/` query (`keyword` in the name or base URL, `status`,
 * `type`, `group`, `model`; `sort` from an allow-list, `order`). Storage
 * failures are `StorageUnavailable` (`storage/StorageFailure.ts`).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { offsetOf, type PageRequest } from "../../domain/Page.ts"
import type { ChannelRow } from "./ChannelViews.ts"
import type { StorageUnavailable } from "../../errors/GatewayError.ts"
import { storageFailure } from "../../storage/StorageFailure.ts"

/** The columns the channel list sorts by (`sort=`); anything else is refused, never put into SQL. @category constants */
export const CHANNEL_SORTS = ["id", "name", "type", "priority", "weight", "status", "tested_at", "latency"] as const

/** A column the channel list sorts by. @category models */
export type ChannelSort = typeof CHANNEL_SORTS[number]

/** Which channels to list: every field optional (absent: no filter); `sort` defaults to `id`, `order` to `asc`. @category models */
export interface ChannelQuery {
  /** Case-insensitive text the name or base URL contains. */
  readonly keyword?: string | undefined
  readonly status?: "enabled" | "disabled" | undefined
  readonly type?: string | undefined
  /** A group the channel serves. */
  readonly group?: string | undefined
  /** A model the channel lists. */
  readonly model?: string | undefined
  readonly sort?: ChannelSort | undefined
  readonly order?: "asc" | "desc" | undefined
}

/** A page of `channels` rows and how many rows match in all. @category models */
export interface ChannelRowPage {
  readonly rows: ReadonlyArray<ChannelRow>
  readonly total: number
}

/** The matching rows of page `page` of `query`, and the total count, in two statements. @category listing */
export const channelPage = (
  sql: SqlClient.SqlClient,
  query: ChannelQuery,
  page: PageRequest
): Effect.Effect<ChannelRowPage, StorageUnavailable> => {
  const conditions = [
    query.keyword === undefined ? undefined : sql`(strpos(lower(name), lower(${query.keyword})) > 0
      OR strpos(lower(base_url), lower(${query.keyword})) > 0)`,
    query.status === undefined ? undefined : sql`enabled = ${query.status === "enabled"}`,
    query.type === undefined ? undefined : sql`type = ${query.type}`,
    query.group === undefined ? undefined : sql`${query.group} = ANY(groups)`,
    query.model === undefined ? undefined : sql`${query.model} = ANY(models)`
  ].filter((condition) => condition !== undefined)
  const where = conditions.length === 0 ? sql`TRUE` : sql.and(conditions)
  const column = {
    id: sql`id`,
    name: sql`lower(name)`,
    type: sql`type`,
    priority: sql`priority`,
    weight: sql`weight`,
    status: sql`enabled`,
    tested_at: sql`tested_at`,
    latency: sql`test_latency_ms`
  }[query.sort ?? "id"]
  const direction = query.order === "desc" ? sql`DESC NULLS LAST` : sql`ASC NULLS LAST`
  return Effect.gen(function* () {
    const [counted] = yield* sql<{ total: bigint }>`SELECT count(*) AS total FROM channels WHERE ${where}`
    const rows = yield* sql<ChannelRow>`SELECT id, name, type, base_url AS "baseUrl", models, groups, priority, weight,
                    model_mapping AS "modelMapping", settings, enabled, tested_at AS "testedAt",
                    test_latency_ms AS "testLatencyMs", test_error AS "testError"
             FROM channels WHERE ${where} ORDER BY ${column} ${direction}, id ${direction}
             LIMIT ${page.size} OFFSET ${offsetOf(page)}`
    return { rows, total: Number(counted.total) }
  }).pipe(storageFailure("channels.search"))
}
