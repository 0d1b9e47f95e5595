/**
 * The usage log: one row per upstream attempt (request id, user, token,
 * channel, model, upstream model, tokens, cost in quota units, latency in
 * milliseconds, stream flag, HTTP status). Rows are buffered in memory and
 * written in batches off the hot path, each batch in one transaction with the
 * quota charges settled meanwhile (`QuotaLedger.commit`), so the logged costs
 * and `used_quota` always agree. The layer's finalizer flushes what is left,
 * so a graceful shutdown loses no row.
 *
 * @since 0.1.0
 */
import { Context, Duration, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { QuotaLedger } from "./QuotaLedger.ts"

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

const BATCH = 5_000

/** A row as a JSON array in column order (bigints as strings): a third of the bytes of an object. */
const tupleOf = (row: UsageRow) => [
  row.requestId,
  row.attempt,
  String(row.userId),
  String(row.tokenId),
  row.channelId,
  row.model,
  row.upstreamModel,
  row.promptTokens,
  row.completionTokens,
  row.cachedTokens,
  row.reasoningTokens,
  String(row.cost),
  row.latencyMs,
  row.stream,
  row.status,
  row.error
]

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
        const ledger = yield* QuotaLedger
        let pending: Array<UsageRow> = []
        // The batch travels as one JSON parameter (bigints as strings): any number of rows is one short statement.
        const writeBatch = (rows: ReadonlyArray<UsageRow>) =>
          sql`INSERT INTO usage_logs (request_id, attempt, user_id, token_id, channel_id, model, upstream_model,
              prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, cost, latency_ms, stream, status, error)
            SELECT r->>0, (r->>1)::int, (r->>2)::bigint, (r->>3)::bigint, (r->>4)::bigint, r->>5, r->>6,
              (r->>7)::int, (r->>8)::int, (r->>9)::int, (r->>10)::int, (r->>11)::bigint, (r->>12)::int,
              (r->>13)::boolean, (r->>14)::int, r->>15
            FROM json_array_elements(${JSON.stringify(rows.map(tupleOf))}::json) AS r`
        /**
         * Writes the rows queued when it starts (in batches of `BATCH`), each batch with the settled charges,
         * and tells whether every batch was written. Rows queued meanwhile wait for the next tick, so under
         * load a tick is one transaction of the interval's rows rather than back-to-back transactions chasing
         * new arrivals. On a failure the batch goes back to the queue and the round stops.
         */
        const writeQueued: Effect.Effect<boolean> = Effect.suspend(() => {
          let left = pending.length
          return Effect.gen(function* () {
            do {
              const rows = pending.slice(0, Math.min(BATCH, left))
              pending = pending.slice(rows.length)
              left -= rows.length
              yield* ledger.commit(rows.length === 0 ? undefined : writeBatch(rows)).pipe(
                Effect.tapError((error) =>
                  Effect.sync(() => {
                    // keep the rows for the next attempt
                    pending = rows.concat(pending)
                  }).pipe(Effect.andThen(Effect.logError("Usage log write failed; will retry", error.message)))
                )
              )
            } while (left > 0)
            return true
          })
        }).pipe(Effect.catch(() => Effect.succeed(false)), Effect.uninterruptible)
        /** Writes until the queue is empty or a write fails: what shutdown needs. */
        const flush = Effect.gen(function* () {
          while (yield* writeQueued) {
            if (pending.length === 0) return
          }
        })
        yield* Effect.addFinalizer(() => flush)
        yield* writeQueued.pipe(
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
