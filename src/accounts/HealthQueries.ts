/**
 * The operator's health view (`GET /api/health/channels`, `GET /api/health/models`): per channel or per model and
 * per time bucket over the last hour, day or week, the attempts (usage rows), failed attempts by failure kind,
 * p50/p95 latency of the successful ones, tokens and cost; for channels also the health state now (this instance's
 * cooldown, the keys and why one was disabled, the shared unhealthy row, the last test) and the channels' events
 * (`channel_events`) on the same time axis.
 *
 * Aggregated in SQL, one statement (`health/SeriesAggregate.ts`): the hour from its usage rows (the `created_at`
 * index; one channel's or model's window through `usage_logs_channel_created_idx` / `usage_logs_model_created_idx`,
 * migration 0020), percentiles exact; the day and the week from the health rollup's closed 15-minute buckets
 * (`HealthRollup.ts`, migration 0024) and the usage rows after them, percentiles estimated from latency histograms
 * (`domain/LatencyHistogram.ts`). `GROUPING SETS` give the buckets and each series' totals in the same pass, and only
 * the busiest `limit` series are returned: the answer is at most `limit` × buckets-per-window rows whatever the table
 * holds. A failed attempt's kind is the prefix of its usage row's `error` (`failureText`: `<kind>: <vendor words>`),
 * `cancelled` for status 499 (the caller left); anything else is `other`. Counts are usage rows with `attempt >= 1`
 * (a request that failed over counts once per channel it tried); cost also sums a task's `attempt = 0` adjustment
 * rows. The cost is bounded: at most `MAX_CONCURRENT_REPORTS` aggregates at once, and the same query within
 * `REPORT_TTL_SECONDS` shares one.
 *
 * @since 0.4.0
 */
import { Cache, Clock, Context, Duration, Effect, Layer, Semaphore } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { epochSeconds } from "../domain/Page.ts"
import { ChannelRouter } from "../services/ChannelRouter.ts"
import { FAILURE_KINDS, type HealthStats } from "./health/HealthStats.ts"
import { readFoldedUntil } from "./health/RollupSql.ts"
import { aggregate } from "./health/SeriesAggregate.ts"

export { FAILURE_KINDS, type HealthStats }

/** The windows offered, each with its bucket: 60 × 1 min, 96 × 15 min, 84 × 2 h. @category models */
export const HEALTH_WINDOWS = {
  hour: { seconds: 3_600, bucketSeconds: 60 },
  day: { seconds: 86_400, bucketSeconds: 900 },
  week: { seconds: 604_800, bucketSeconds: 7_200 }
} as const

/** @category models */
export type HealthWindow = keyof typeof HEALTH_WINDOWS

/** What a series is keyed by. @category models */
export type HealthSubject = "channel" | "model"

/** The most series one answer holds. @category models */
export const MAX_SERIES = 100

/** The most events one answer holds (newest kept). @category models */
export const MAX_EVENTS = 500

/** The most reports computed at once (each is one aggregate over the window's usage rows). @category models */
export const MAX_CONCURRENT_REPORTS = 2

/** How long a computed report is answered again to the same query, seconds. @category models */
export const REPORT_TTL_SECONDS = 2

/** What to aggregate. `channelId` / `model` narrow to one series. @category models */
export interface HealthQuery {
  readonly by: HealthSubject
  readonly window: HealthWindow
  readonly channelId?: bigint | undefined
  readonly model?: string | undefined
  /** The busiest `limit` series (1 to `MAX_SERIES`). */
  readonly limit: number
}

/** One bucket: `t` is its start in epoch seconds; buckets with no row are left out. @category models */
export interface HealthBucket extends HealthStats {
  readonly t: number
}

/** One channel's or model's series. @category models */
export interface HealthSeries {
  /** The channel's id (by channel) or `null`. */
  readonly channel_id: number | null
  /** The model's name (by model) or `null`. */
  readonly model: string | null
  /** The channel's name (`null` once deleted) or the model's name. */
  readonly name: string | null
  readonly totals: HealthStats
  readonly buckets: ReadonlyArray<HealthBucket>
}

/** A channel's health now. Times in epoch seconds. @category models */
export interface ChannelHealthState {
  readonly channel_id: number
  readonly name: string
  /** This instance's view: `disabled` (the channel or all its keys), `cooling` (in cooldown) or `healthy`. */
  readonly state: "healthy" | "cooling" | "disabled"
  readonly enabled: boolean
  readonly consecutive_failures: number
  readonly cooldown_until: number | null
  /** The shared row: whether `channel.unhealthy` was the last transition, why, and when it changed. */
  readonly unhealthy: boolean
  readonly unhealthy_reason: string | null
  readonly health_changed_at: number | null
  readonly keys: ReadonlyArray<{ readonly position: number; readonly enabled: boolean; readonly reason: string | null }>
  /** The prober's last test of the channel (while cooling or a key is disabled): when, which key, its outcome. */
  readonly last_probe: {
    readonly at: number
    readonly key_position: number | null
    readonly ok: boolean
    /** The upstream's HTTP status; 0 when it gave none (a connection failure or a timeout). */
    readonly status: number | null
  } | null
  /** The last test (the console's test button): when, its latency, its error (`null` when it passed). */
  readonly tested_at: number | null
  readonly test_latency_ms: number | null
  readonly test_error: string | null
}

/** One health transition of a channel (`channel_events`). @category models */
export interface ChannelEvent {
  readonly at: number
  readonly channel_id: number
  readonly channel: string | null
  readonly type: string
  readonly key_position: number | null
  readonly reason: string | null
}

/** The answer of `GET /api/health/*`. Times in epoch seconds; the window is `[start, end)`. @category models */
export interface HealthReport {
  readonly by: HealthSubject
  readonly window: HealthWindow
  readonly bucket_seconds: number
  readonly start: number
  readonly end: number
  readonly failure_kinds: ReadonlyArray<string>
  readonly series: ReadonlyArray<HealthSeries>
  /** By channel: the state of each channel in `series` (or the one asked for). By model: empty. */
  readonly channels: ReadonlyArray<ChannelHealthState>
  /** Newest first, at most `MAX_EVENTS`: of the series' channels (by model: the channels that served it). */
  readonly events: ReadonlyArray<ChannelEvent>
  /**
   * Day and week: the buckets before this (epoch seconds) were read from the rollup, the rest from the usage rows;
   * `null` for the hour (exact, from the usage rows) or before the rollup's first pass.
   */
  readonly rollup_until: number | null
  /** How long the aggregate took in the database, milliseconds (what the console shows and the test records). */
  readonly query_ms: number
}

/** A query as a cache key (text, so equal queries are equal keys), and back. */
const keyOf = (query: HealthQuery): string =>
  JSON.stringify([query.by, query.window, query.channelId?.toString() ?? null, query.model ?? null, query.limit])

const queryOfKey = (key: string): HealthQuery => {
  const [by, window, channelId, model, limit] = JSON.parse(key) as [
    HealthSubject,
    HealthWindow,
    string | null,
    string | null,
    number
  ]
  return {
    by,
    window,
    channelId: channelId === null ? undefined : BigInt(channelId),
    model: model ?? undefined,
    limit
  }
}

/** The window `[start, end)` in epoch seconds ending at the first bucket boundary after `nowMillis` (epoch ms). @category models */
export const windowOf = (window: HealthWindow, nowMillis: number): { readonly start: number; readonly end: number } => {
  const { seconds, bucketSeconds } = HEALTH_WINDOWS[window]
  const end = (Math.floor(nowMillis / 1000 / bucketSeconds) + 1) * bucketSeconds
  return { start: end - seconds, end }
}

/** @category services */
export class HealthQueries extends Context.Service<HealthQueries, {
  /**
   * The report of `query` at the `Clock`'s now (or computed for the same query at most `REPORT_TTL_SECONDS` ago).
   * Storage failures are defects.
   */
  readonly report: (query: HealthQuery) => Effect.Effect<HealthReport>
}>()("sluice/accounts/HealthQueries") {
  /** SQL-backed, with the router's in-memory health state. */
  static readonly layer = Layer.effect(
    HealthQueries,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const router = yield* ChannelRouter
      const foldedUntil = readFoldedUntil(sql).pipe(Effect.orDie)

      const compute = Effect.fn("HealthQueries.report")(function* (query: HealthQuery) {
        const { bucketSeconds } = HEALTH_WINDOWS[query.window]
        const { start, end } = windowOf(query.window, yield* Clock.currentTimeMillis)
        const byChannel = query.by === "channel"
        const started = performance.now()
        // The hour is exact from `usage_logs`; a day or a week reads the rollup's closed buckets.
        const folded = query.window === "hour" ? undefined : yield* foldedUntil
        const { rows, rollupUntil } = yield* aggregate(sql, { ...query, bucketSeconds }, start, end, folded)
        const queryMs = Math.round(performance.now() - started)

        const series = new Map<string, { totals: HealthStats; buckets: Array<HealthBucket> }>()
        for (const row of rows) {
          if (row.t === null) series.set(row.key, { totals: row.stats, buckets: [] })
          else series.get(row.key)?.buckets.push({ t: row.t, ...row.stats })
        }

        const channelIds = byChannel
          ? [
            ...new Set(
              [...series.keys()].map(Number).concat(query.channelId === undefined ? [] : [Number(query.channelId)])
            )
          ]
          : []
        const channelRows = channelIds.length === 0 ? [] : yield* sql<{
          readonly id: bigint
          readonly name: string
          readonly enabled: boolean
          readonly testedAt: Date | null
          readonly testLatencyMs: number | null
          readonly testError: string | null
          readonly unhealthy: boolean | null
          readonly reason: string | null
          readonly changedAt: Date | null
          readonly generation: bigint | null
          readonly probedAt: Date | null
          readonly probeKey: number | null
          readonly probeOk: boolean | null
          readonly probeStatus: number | null
        }>`SELECT c.id, c.name, c.enabled, c.tested_at AS "testedAt", c.test_latency_ms AS "testLatencyMs",
                  c.test_error AS "testError", h.unhealthy, h.reason, h.changed_at AS "changedAt", h.generation,
                  h.probed_at AS "probedAt", h.probe_key AS "probeKey", h.probe_ok AS "probeOk",
                  h.probe_status AS "probeStatus"
           FROM channels c LEFT JOIN channel_health h ON h.channel_id = c.id
           WHERE c.id IN ${sql.in(channelIds)} ORDER BY c.id`.pipe(Effect.orDie)
        const names = new Map(channelRows.map((row) => [Number(row.id), row.name]))
        const views = new Map(router.health().map((view) => [view.channelId, view]))
        const channels = channelRows.map((row): ChannelHealthState => {
          const view = views.get(Number(row.id))
          return {
            channel_id: Number(row.id),
            name: row.name,
            state: view?.state ?? (row.enabled ? "healthy" : "disabled"),
            enabled: row.enabled,
            consecutive_failures: view?.consecutiveFailures ?? 0,
            cooldown_until: view?.cooldownUntil ?? null,
            unhealthy: row.unhealthy === true,
            unhealthy_reason: row.unhealthy === true ? row.reason : null,
            // A row made by the prober alone (generation 0) has seen no transition.
            health_changed_at: row.generation === null || Number(row.generation) === 0
              ? null
              : epochSeconds(row.changedAt),
            last_probe: row.probedAt === null ? null : {
              at: epochSeconds(row.probedAt) ?? 0,
              key_position: row.probeKey,
              ok: row.probeOk === true,
              status: row.probeStatus
            },
            keys: view?.keys ?? [],
            tested_at: epochSeconds(row.testedAt),
            test_latency_ms: row.testLatencyMs,
            test_error: row.testError
          }
        })

        const eventScope: Statement.Fragment | undefined = byChannel
          ? (channelIds.length === 0 ? undefined : sql`e.channel_id IN ${sql.in(channelIds)}`)
          : query.model === undefined
          ? sql`TRUE`
          : sql`e.channel_id IN (SELECT DISTINCT channel_id FROM usage_logs WHERE model = ${query.model}
              AND created_at >= ${new Date(start * 1000)} AND created_at < ${new Date(end * 1000)}
              AND channel_id IS NOT NULL)`
        const eventRows = eventScope === undefined ? [] : yield* sql<{
          readonly createdAt: Date
          readonly channelId: bigint
          readonly channel: string | null
          readonly eventType: string
          readonly keyPosition: number | null
          readonly reason: string | null
        }>`SELECT e.created_at AS "createdAt", e.channel_id AS "channelId", c.name AS channel,
                  e.event_type AS "eventType", e.key_position AS "keyPosition", e.reason
           FROM channel_events e LEFT JOIN channels c ON c.id = e.channel_id
           WHERE e.created_at >= ${new Date(start * 1000)} AND e.created_at < ${new Date(end * 1000)}
             AND ${eventScope}
           ORDER BY e.created_at DESC, e.id DESC LIMIT ${MAX_EVENTS}`.pipe(Effect.orDie)

        return {
          by: query.by,
          window: query.window,
          bucket_seconds: bucketSeconds,
          start,
          end,
          failure_kinds: FAILURE_KINDS,
          series: [...series.entries()]
            .map(([id, value]): HealthSeries => ({
              channel_id: byChannel ? Number(id) : null,
              model: byChannel ? null : id,
              name: byChannel ? names.get(Number(id)) ?? null : id,
              ...value
            }))
            .sort((a, b) => b.totals.requests - a.totals.requests),
          channels,
          events: eventRows.map((row): ChannelEvent => ({
            at: epochSeconds(row.createdAt) ?? 0,
            channel_id: Number(row.channelId),
            channel: row.channel,
            type: row.eventType,
            key_position: row.keyPosition,
            reason: row.reason
          })),
          rollup_until: rollupUntil,
          query_ms: queryMs
        } satisfies HealthReport
      })

      // At most `MAX_CONCURRENT_REPORTS` aggregates run at once, and the same report asked again within
      // `REPORT_TTL_SECONDS` (another tab, a refresh) is the one computed, shared while it runs.
      const permits = yield* Semaphore.make(MAX_CONCURRENT_REPORTS)
      const cache = yield* Cache.make({
        capacity: 64,
        timeToLive: Duration.seconds(REPORT_TTL_SECONDS),
        lookup: (key: string) => permits.withPermits(1)(compute(queryOfKey(key)))
      })
      const report = (query: HealthQuery) => Cache.get(cache, keyOf(query))

      return HealthQueries.of({ report })
    })
  )
}
