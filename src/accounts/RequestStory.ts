/**
 * A request's story (`GET /api/log/self/{request_id}`, admins `GET
 * /api/log/{request_id}`): every usage-log row of one request in attempt
 * order — a failed attempt is its own row with cost 0, the upstream's status
 * and the failure in words (`Settlement.logFailedAttempt`), the answering
 * attempt carries the tokens by kind and the cost — so the failover path is
 * the channels in that order; the model's list prices as the pricing table
 * holds them now (USD per 1M tokens; the charge was computed with the prices
 * and group ratio of its time) and the total charged. Pure view building over
 * rows read by `UsageQueries.logs`.
 *
 * @since 0.1.0
 */
import type { LogView } from "./LogView.ts"

/** The model's list prices now, USD per 1M tokens (`null`: not priced). @category models */
export interface ModelPrices {
  readonly input: number | null
  readonly output: number | null
  readonly cached_input: number | null
  readonly cache_write: number | null
  readonly free: boolean
}

/** One request's rows and totals. `quota` is quota units (1 = 0.000001 USD). @category models */
export interface RequestStory {
  readonly request_id: string
  readonly model: string
  /** The rows in attempt order (a task's later adjustment, attempt 0, last). */
  readonly attempts: ReadonlyArray<LogView>
  /** The channels tried, in order, by name (`null`: none answered or it was deleted). */
  readonly failover_path: ReadonlyArray<string | null>
  /** The sum charged over every row (refunds included). */
  readonly quota: number
  readonly prices: ModelPrices | null
}

/** The story of `rows` (one request's, any order), or `undefined` when there are none. @category views */
export const storyOf = (
  requestId: string,
  rows: ReadonlyArray<LogView>,
  prices: ModelPrices | null
): RequestStory | undefined => {
  if (rows.length === 0) return undefined
  const rank = (row: LogView) => row.attempt === 0 ? Number.MAX_SAFE_INTEGER : row.attempt
  const attempts = [...rows].sort((a, b) => rank(a) - rank(b) || a.id - b.id)
  return {
    request_id: requestId,
    model: attempts[0].model,
    attempts,
    failover_path: attempts.filter((row) => row.attempt !== 0).map((row) => row.channel_name),
    quota: attempts.reduce((sum, row) => sum + row.quota, 0),
    prices
  }
}
