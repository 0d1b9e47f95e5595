/**
 * The usage log: one row per upstream attempt (request id, user, token,
 * channel, model, upstream model, tokens, cost in quota units, latency in
 * milliseconds, stream flag, HTTP status). Rows are buffered in memory and
 * written in batches off the hot path; the layer's finalizer flushes what is
 * left, so a graceful shutdown loses no row.
 *
 * @since 0.1.0
 */
import { Context, Duration, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"

/** One usage row. Counts are tokens; `cost` quota units; `latencyMs` milliseconds. @category models */
export interface UsageRow {
  readonly requestId: string
  readonly attempt: number
  readonly userId: bigint
  readonly tokenId: bigint
  readonly channelId: number | null
  readonly model: string
  readonly upstreamModel: string | null
  readonly promptTokens: number
  readonly completionTokens: number
  readonly cachedTokens: number
  readonly reasoningTokens: number
  readonly cost: bigint
  readonly latencyMs: number
  readonly stream: boolean
  readonly status: number
  readonly error: string | null
}

const BATCH = 500

/** @category services */
export class UsageLog extends Context.Service<UsageLog, {
  /** Queues a row (synchronous, no I/O). */
  readonly record: (row: UsageRow) => void
  /** Writes every queued row now. */
  readonly flush: Effect.Effect<void>
}>()("sluice/services/UsageLog") {
  /** SQL-backed; flushes every `intervalMillis` (default 250 ms) and when the layer closes. */
  static readonly layer = (intervalMillis = 250) =>
    Layer.effect(
      UsageLog,
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        let pending: Array<UsageRow> = []
        const writeBatch = (rows: ReadonlyArray<UsageRow>) =>
          sql`INSERT INTO usage_logs ${
            sql.insert(
              rows.map((row): Record<string, unknown> => ({
                request_id: row.requestId,
                attempt: row.attempt,
                user_id: row.userId,
                token_id: row.tokenId,
                channel_id: row.channelId,
                model: row.model,
                upstream_model: row.upstreamModel,
                prompt_tokens: row.promptTokens,
                completion_tokens: row.completionTokens,
                cached_tokens: row.cachedTokens,
                reasoning_tokens: row.reasoningTokens,
                cost: row.cost,
                latency_ms: row.latencyMs,
                stream: row.stream,
                status: row.status,
                error: row.error
              })) as unknown as readonly [Record<string, unknown>, ...Array<Record<string, unknown>>]
            )
          }`
        const flush = Effect.gen(function* () {
          while (pending.length > 0) {
            const rows = pending.slice(0, BATCH)
            pending = pending.slice(rows.length)
            yield* writeBatch(rows).pipe(
              Effect.tapError((error) =>
                Effect.sync(() => {
                  // keep the rows for the next attempt
                  pending = rows.concat(pending)
                }).pipe(Effect.andThen(Effect.logError("Usage log write failed; will retry", error.message)))
              )
            )
          }
        }).pipe(Effect.ignore, Effect.uninterruptible)
        yield* Effect.addFinalizer(() => flush)
        yield* flush.pipe(
          Effect.repeat(Schedule.spaced(Duration.millis(intervalMillis))),
          Effect.forkScoped
        )
        return UsageLog.of({
          record: (row) => {
            pending.push(row)
          },
          flush
        })
      })
    )
}
