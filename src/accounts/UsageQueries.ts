/**
 * Reads of the usage log for `/api/*`: a user's daily usage by model, and
 * the log rows themselves, filtered and paginated — a user's own, or
 * everyone's for an admin (who also sees and filters by channel).
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { epochSeconds, offsetOf, type Page, type PageRequest } from "../domain/Page.ts"
import type { StorageUnavailable } from "../errors/GatewayError.ts"
import { storageFailure } from "../storage/StorageFailure.ts"
import type { LogView } from "./LogView.ts"
import { ROLLUP_BUCKET_SECONDS, ROLLUP_RETAIN_SECONDS } from "./health/FoldPlan.ts"
import { readFoldedUntil } from "./health/RollupSql.ts"
import { type ModelPrices, type RequestStory, storyOf } from "./RequestStory.ts"
import { userUsageParts } from "./UsageRollupSql.ts"

/** One day's usage of one model (UTC days, `date` as `YYYY-MM-DD`; `quota` in quota units). @category models */
export interface DailyUsage {
  readonly date: string
  readonly model: string
  readonly requests: number
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly quota: number
}

/** Which log rows to read; every field narrows. Times in epoch seconds (start inclusive, end exclusive). @category models */
export interface LogFilter {
  readonly userId?: bigint | undefined
  readonly start?: number | undefined
  readonly end?: number | undefined
  readonly model?: string | undefined
  readonly tokenName?: string | undefined
  readonly tokenId?: bigint | undefined
  readonly channelId?: bigint | undefined
  readonly username?: string | undefined
  readonly requestId?: string | undefined
  /** A batch's id: its lines' rows (request ids `<batch id>.<line index>`). */
  readonly batchId?: string | undefined
  /** `success`: rows with status 200–299; `failed`: the others. */
  readonly outcome?: "success" | "failed" | undefined
  /** The order (`LOG_SORTS`; default `id`, the newest first). */
  readonly sort?: LogSort | undefined
  readonly order?: "asc" | "desc" | undefined
}

/** The columns the usage log sorts by (`sort=`): `id` (time), `quota` (cost), `latency`, `tokens` (in + out). @category constants */
export const LOG_SORTS = ["id", "quota", "latency", "tokens"] as const

/** A column the usage log sorts by. @category models */
export type LogSort = typeof LOG_SORTS[number]

export type { LogView } from "./LogView.ts"

/** The batch id of a batch line's request id (`<batch id>.<line index>`), else `null`. */
const batchOfRequest = (requestId: string): string | null =>
  /^((?:msgbatch|batch)_[0-9a-f]{24})\.\d+$/.exec(requestId)?.[1] ?? null

interface LogRow {
  readonly id: bigint
  readonly requestId: string
  readonly attempt: number
  readonly createdAt: Date
  readonly username: string | null
  readonly userId: bigint
  readonly tokenId: bigint
  readonly tokenName: string | null
  readonly model: string
  readonly channelId: bigint | null
  readonly channelName: string | null
  readonly promptTokens: number
  readonly completionTokens: number
  readonly cachedTokens: number
  readonly reasoningTokens: number
  readonly audioInputTokens: number
  readonly audioOutputTokens: number
  readonly cost: bigint
  readonly latencyMs: number
  readonly firstTokenMs: number | null
  readonly stream: boolean
  readonly status: number
  readonly error: string | null
}

/**
 * What one owner spent on one UTC day on one model (`date` `YYYY-MM-DD`,
 * `quota` in quota units).
 *
 * @category models
 */
export interface DailyCost {
  readonly date: string
  readonly model: string
  readonly quota: bigint
}

/** @category services */
export class UsageQueries extends Context.Service<UsageQueries, {
  /**
   * The user's usage for the last `days` UTC days (today included), by day and model: every usage row counted once,
   * from the usage rollup for the folded buckets (`UsageRollupSql.ts`) and the rows themselves for the rest.
   */
  readonly daily: (userId: bigint, days: number) => Effect.Effect<ReadonlyArray<DailyUsage>, StorageUnavailable>
  /**
   * What `owner` spent from `from` (inclusive) to `to` (exclusive), by UTC day
   * and model, oldest first: the token's own rows when `tokenId` is given,
   * else all of the user's.
   */
  readonly costs: (
    owner: { readonly userId: bigint; readonly tokenId?: bigint | undefined },
    from: Date,
    to: Date
  ) => Effect.Effect<ReadonlyArray<DailyCost>, StorageUnavailable>
  /** Log rows, newest first; `admin` adds the channel and the username to each. */
  readonly logs: (
    filter: LogFilter,
    page: PageRequest,
    admin: boolean
  ) => Effect.Effect<Page<LogView>, StorageUnavailable>
  /**
   * The rows of request `requestId` (the user's own when `userId` is given) in attempt order, with the model's
   * prices; `undefined` when no row matches.
   */
  readonly story: (
    requestId: string,
    userId: bigint | undefined,
    admin: boolean
  ) => Effect.Effect<RequestStory | undefined, StorageUnavailable>
}>()("sluice/accounts/UsageQueries") {
  /** SQL-backed. */
  static readonly layer = Layer.effect(
    UsageQueries,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      const daily = Effect.fn("UsageQueries.daily")(function* (userId: bigint, days: number) {
        const today = new Date(yield* Clock.currentTimeMillis)
        const since = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() - days + 1))
        // Before `folded_until` (and within what the rollup retains) the usage rollup's buckets, else the rows.
        const folded = yield* readFoldedUntil(sql).pipe(storageFailure("usage.daily"))
        // Every pass so far kept the buckets from here on (each dropped those before its own now less retention).
        const rolledFrom = Math.ceil((today.getTime() / 1000 - ROLLUP_RETAIN_SECONDS) / ROLLUP_BUCKET_SECONDS) *
          ROLLUP_BUCKET_SECONDS
        const rows = yield* sql<{
          day: string
          model: string
          requests: bigint
          prompt: bigint | null
          completion: bigint | null
          quota: bigint | null
        }>`SELECT to_char(day, 'YYYY-MM-DD') AS day, model, requests, prompt, completion, quota FROM (
             SELECT (t AT TIME ZONE 'UTC')::date AS day, model, sum(requests) AS requests,
                    sum(prompt_tokens) AS prompt, sum(completion_tokens) AS completion, sum(cost) AS quota
             FROM (${userUsageParts(sql, userId, since, rolledFrom, folded ?? rolledFrom)}) AS parts
             GROUP BY 1, 2) AS days
           ORDER BY 1, 2`.pipe(storageFailure("usage.daily"))
        return rows.map((row): DailyUsage => ({
          date: row.day,
          model: row.model,
          requests: Number(row.requests),
          prompt_tokens: Number(row.prompt ?? 0),
          completion_tokens: Number(row.completion ?? 0),
          quota: Number(row.quota ?? 0)
        }))
      })

      const costs = Effect.fn("UsageQueries.costs")(function* (
        owner: { readonly userId: bigint; readonly tokenId?: bigint | undefined },
        from: Date,
        to: Date
      ) {
        const whose = owner.tokenId === undefined ? sql`user_id = ${owner.userId}` : sql`token_id = ${owner.tokenId}`
        const rows = yield* sql<{ day: string; model: string; quota: bigint | string | null }>`
          SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, model, sum(cost) AS quota
          FROM usage_logs WHERE ${whose} AND created_at >= ${from} AND created_at < ${to}
          GROUP BY 1, 2 ORDER BY 1, 2`.pipe(storageFailure("usage.costs"))
        return rows.map((row): DailyCost => ({ date: row.day, model: row.model, quota: BigInt(row.quota ?? 0) }))
      })

      const where = (filter: LogFilter): Statement.Fragment => {
        const parts: Array<Statement.Fragment> = []
        if (filter.userId !== undefined) parts.push(sql`l.user_id = ${filter.userId}`)
        if (filter.start !== undefined) parts.push(sql`l.created_at >= ${new Date(filter.start * 1000)}`)
        if (filter.end !== undefined) parts.push(sql`l.created_at < ${new Date(filter.end * 1000)}`)
        if (filter.model !== undefined) parts.push(sql`l.model = ${filter.model}`)
        if (filter.tokenId !== undefined) parts.push(sql`l.token_id = ${filter.tokenId}`)
        if (filter.tokenName !== undefined) parts.push(sql`t.name = ${filter.tokenName}`)
        if (filter.channelId !== undefined) parts.push(sql`l.channel_id = ${filter.channelId}`)
        if (filter.username !== undefined) parts.push(sql`u.username = ${filter.username}`)
        if (filter.requestId !== undefined) parts.push(sql`l.request_id = ${filter.requestId}`)
        // A batch's line ids are `<batch id>.<index>`; `_` is escaped, as LIKE would read it as any character.
        if (filter.batchId !== undefined) {
          parts.push(sql`l.request_id LIKE ${filter.batchId.replace(/[\\%_]/g, "\\$&") + ".%"}`)
        }
        if (filter.outcome === "success") parts.push(sql`l.status BETWEEN 200 AND 299`)
        if (filter.outcome === "failed") parts.push(sql`l.status NOT BETWEEN 200 AND 299`)
        return parts.length === 0 ? sql`TRUE` : sql.and(parts)
      }

      const orderOf = (filter: LogFilter): Statement.Fragment => {
        const column = {
          id: sql`l.id`,
          quota: sql`l.cost`,
          latency: sql`l.latency_ms`,
          tokens: sql`(l.prompt_tokens + l.completion_tokens)`
        }[filter.sort ?? "id"]
        const direction = (filter.order ?? "desc") === "desc" ? sql`DESC` : sql`ASC`
        return sql`${column} ${direction}, l.id ${direction}`
      }

      const logs = Effect.fn("UsageQueries.logs")(function* (filter: LogFilter, page: PageRequest, admin: boolean) {
        const from = sql`usage_logs l LEFT JOIN tokens t ON t.id = l.token_id LEFT JOIN users u ON u.id = l.user_id
          LEFT JOIN channels c ON c.id = l.channel_id`
        const condition = where(filter)
        const [{ total }] = yield* sql<{ total: bigint }>`SELECT count(*) AS total FROM ${from} WHERE ${condition}`
          .pipe(storageFailure("usage.logs"))
        const rows = yield* sql<LogRow>`
          SELECT l.id, l.request_id AS "requestId", l.attempt, l.created_at AS "createdAt", u.username,
                 l.user_id AS "userId", l.token_id AS "tokenId", t.name AS "tokenName", l.model,
                 l.channel_id AS "channelId", c.name AS "channelName", l.prompt_tokens AS "promptTokens",
                 l.completion_tokens AS "completionTokens", l.cached_tokens AS "cachedTokens",
                 l.reasoning_tokens AS "reasoningTokens", l.audio_input_tokens AS "audioInputTokens",
                 l.audio_output_tokens AS "audioOutputTokens", l.cost, l.latency_ms AS "latencyMs",
                 l.first_token_ms AS "firstTokenMs", l.stream, l.status, l.error
          FROM ${from} WHERE ${condition}
          ORDER BY ${orderOf(filter)} LIMIT ${page.size} OFFSET ${offsetOf(page)}`.pipe(storageFailure("usage.logs"))
        const items = rows.map((row): LogView => ({
          id: Number(row.id),
          request_id: row.requestId,
          batch_id: batchOfRequest(row.requestId),
          attempt: row.attempt,
          created_at: epochSeconds(row.createdAt) ?? 0,
          ...(admin
            ? { username: row.username, channel_id: row.channelId === null ? null : Number(row.channelId) }
            : {}),
          user_id: Number(row.userId),
          token_id: Number(row.tokenId),
          channel_name: row.channelName,
          token_name: row.tokenName,
          model: row.model,
          prompt_tokens: row.promptTokens,
          completion_tokens: row.completionTokens,
          cached_tokens: row.cachedTokens,
          reasoning_tokens: row.reasoningTokens,
          audio_input_tokens: row.audioInputTokens,
          audio_output_tokens: row.audioOutputTokens,
          quota: Number(row.cost),
          latency_ms: row.latencyMs,
          first_token_ms: row.firstTokenMs === null ? null : Number(row.firstTokenMs),
          stream: row.stream,
          status: row.status,
          error: row.error
        }))
        return { items, total: Number(total), page: page.page, page_size: page.size }
      })

      const story = Effect.fn("UsageQueries.story")(function* (
        requestId: string,
        userId: bigint | undefined,
        admin: boolean
      ) {
        const rows = yield* logs({ requestId, userId }, { page: 1, size: 100 }, admin)
        const model = rows.items[0]?.model
        if (model === undefined) return undefined
        const [priced] = yield* sql<
          {
            input: string | null
            output: string | null
            cachedInput: string | null
            cacheWrite: string | null
            free: boolean
          }
        >`SELECT input_price::text AS input, output_price::text AS output, cached_input_price::text AS "cachedInput",
                 cache_write_price::text AS "cacheWrite", free
          FROM models WHERE name = ${model}`.pipe(storageFailure("usage.story"))
        const number = (value: string | null) => value === null ? null : Number(value)
        const prices: ModelPrices | null = priced === undefined ? null : {
          input: number(priced.input),
          output: number(priced.output),
          cached_input: number(priced.cachedInput),
          cache_write: number(priced.cacheWrite),
          free: priced.free
        }
        return storyOf(requestId, rows.items, prices)
      })

      return UsageQueries.of({ daily, costs, logs, story })
    })
  )
}
