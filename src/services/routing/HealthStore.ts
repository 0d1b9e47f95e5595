/**
 * The router's shared health in SQL: a channel's move to unhealthy and back
 * in the `channel_health` row, a key disabled or re-enabled in
 * `channel_keys`, each with its operator event written to the outbox in the
 * same transaction (`WebhookOutbox.enqueueOperatorEvent`). The transitions
 * are conditional updates, so when several instances see the same failure
 * (or recovery) only the one whose update moved the row raises the event
 * (`event_key` holds the row's transition count). See `ChannelRouter`'s
 * module doc for when each is called.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { SqlClient, SqlError } from "effect/sql"
import type { Catalog, Channel } from "../../storage/Catalog.ts"
import { enqueueOperatorEvent } from "../WebhookOutbox.ts"
import type { Candidate } from "./CandidateOrder.ts"
import type { ChannelHealth } from "./ChannelHealth.ts"

/** Why a channel recovered: a request succeeded on it, or the prober's test did. @category models */
export type RecoveredBy = "request" | "probe"

/**
 * The SQL side of the router's health.
 *
 * @category models
 */
export interface HealthStore {
  /**
   * The channel's move to unhealthy (`channel.unhealthy`) in the shared row and, when this call moved it, the
   * event in the same transaction; then `health.down` is set. Never fails: a failed write is logged and retried
   * at the next cooldown.
   */
  readonly markUnhealthy: (channel: Channel, health: ChannelHealth, reason: string) => Effect.Effect<void>
  /**
   * The channel's move back to healthy (`channel.recovered`), as `markUnhealthy`, when `health.down`; then
   * `health.down` is cleared. Never fails: a failed write is logged and retried at the next success.
   */
  readonly markRecovered: (channelId: number, health: ChannelHealth, by: RecoveredBy) => Effect.Effect<void>
  /** The ids of the channels the shared rows say are unhealthy. Fails with the `SqlError` of the read. */
  readonly downChannels: Effect.Effect<ReadonlySet<number>, SqlError.SqlError>
  /**
   * Disables the candidate's key with `reason` (the `channel.key_disabled` event in the same transaction, once
   * per disabling) and reloads the catalog. A storage failure is a defect.
   */
  readonly disableKey: (candidate: Candidate, reason: string) => Effect.Effect<void>
  /** Re-enables a key and reloads the catalog. A storage failure is a defect. */
  readonly enableKey: (channelId: number, position: number) => Effect.Effect<void>
}

/** Logs a failed health write and carries on: never the request's failure. */
const logged = (name: string | null) => (write: Effect.Effect<void, SqlError.SqlError>): Effect.Effect<void> =>
  write.pipe(
    Effect.catch((error) =>
      Effect.logWarning("Could not record a channel's health", error.message).pipe(
        Effect.annotateLogs({ channel: name })
      )
    ),
    // A connection lost mid-transaction fails its ROLLBACK too, a defect in effect/sql: never the request's.
    Effect.catchDefect(() =>
      Effect.logWarning("Could not record a channel's health").pipe(Effect.annotateLogs({ channel: name }))
    )
  )

/** The health store over `sql`, reloading `catalog` after a key changes. @category constructors */
export const makeHealthStore = (sql: SqlClient.SqlClient, catalog: Catalog["Service"]): HealthStore => {
  const markUnhealthy = (channel: Channel, health: ChannelHealth, reason: string) =>
    sql.withTransaction(
      sql<{ readonly generation: bigint; readonly changedAt: Date }>`
        INSERT INTO channel_health (channel_id, unhealthy, generation, reason, changed_at)
        VALUES (${channel.id}, TRUE, 1, ${reason}, now())
        ON CONFLICT (channel_id) DO UPDATE SET unhealthy = TRUE,
          generation = channel_health.generation + 1, reason = EXCLUDED.reason, changed_at = now()
        WHERE NOT channel_health.unhealthy
        RETURNING generation, changed_at AS "changedAt"`.pipe(
        Effect.flatMap((rows) =>
          rows.length === 0 ? Effect.void : enqueueOperatorEvent(
            sql,
            "channel.unhealthy",
            `${channel.id}:${rows[0].generation}`,
            {
              channel_id: channel.id,
              channel: channel.name,
              reason,
              changed_at: new Date(rows[0].changedAt).toISOString()
            }
          )
        )
      )
    ).pipe(Effect.tap(() => Effect.sync(() => (health.down = true))), logged(channel.name))

  const markRecovered = (channelId: number, health: ChannelHealth, by: RecoveredBy) => {
    if (!health.down) return Effect.void
    const name = catalog.snapshot().channels.get(channelId)?.name ?? null
    return sql.withTransaction(
      sql<{ readonly generation: bigint; readonly changedAt: Date }>`
        UPDATE channel_health SET unhealthy = FALSE, generation = generation + 1, reason = ${by},
          changed_at = now()
        WHERE channel_id = ${channelId} AND unhealthy
        RETURNING generation, changed_at AS "changedAt"`.pipe(
        Effect.flatMap((rows) =>
          rows.length === 0 ? Effect.void : enqueueOperatorEvent(
            sql,
            "channel.recovered",
            `${channelId}:${rows[0].generation}`,
            {
              channel_id: channelId,
              channel: name,
              reason: by,
              changed_at: new Date(rows[0].changedAt).toISOString()
            }
          ).pipe(
            Effect.andThen(Effect.logInfo("Channel recovered").pipe(Effect.annotateLogs({ channel: name, by })))
          )
        )
      )
    ).pipe(Effect.tap(() => Effect.sync(() => (health.down = false))), logged(name))
  }

  const downChannels = sql<{ readonly channelId: bigint }>`
    SELECT channel_id AS "channelId" FROM channel_health WHERE unhealthy`.pipe(
    Effect.map((rows): ReadonlySet<number> => new Set(rows.map((row) => Number(row.channelId))))
  )

  const disableKey = (candidate: Candidate, reason: string) =>
    sql.withTransaction(
      sql<{ readonly position: number }>`UPDATE channel_keys SET enabled = FALSE,
        disabled_reason = ${reason}
        WHERE channel_id = ${candidate.channel.id} AND position = ${candidate.key.position} AND enabled
        RETURNING position`.pipe(
        Effect.flatMap((rows) =>
          rows.length === 0 ? Effect.void : enqueueOperatorEvent(
            sql,
            "channel.key_disabled",
            `${candidate.channel.id}:${candidate.key.position}:${crypto.randomUUID()}`,
            {
              channel_id: candidate.channel.id,
              channel: candidate.channel.name,
              key_position: candidate.key.position,
              reason
            }
          )
        )
      )
    ).pipe(
      Effect.andThen(catalog.reload),
      Effect.andThen(
        Effect.logWarning("Channel key disabled").pipe(
          Effect.annotateLogs({ channel: candidate.channel.name, key: candidate.key.position, reason })
        )
      ),
      // Reported from inside the failover loop, whose answer is the attempt's own: not a request's failure to type.
      Effect.orDie
    )

  const enableKey = (channelId: number, position: number) =>
    sql`UPDATE channel_keys SET enabled = TRUE, disabled_reason = NULL
      WHERE channel_id = ${channelId} AND position = ${position}`.pipe(
      Effect.andThen(catalog.reload),
      Effect.andThen(
        Effect.logInfo("Channel key re-enabled").pipe(Effect.annotateLogs({ channelId, key: position }))
      ),
      // The prober's, in the background: no caller to answer.
      Effect.orDie
    )

  return { markUnhealthy, markRecovered, downChannels, disableKey, enableKey }
}
