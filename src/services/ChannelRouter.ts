/**
 * Chooses the upstream channels that may serve a request, in the order they
 * are to be tried: the (group, model) → abilities index, highest priority tier
 * first, a weighted random order inside a tier, each channel's healthy keys
 * one after another, channels in cooldown last. Also keeps the health state:
 * consecutive failures put a channel in cooldown (with backoff), a key the
 * upstream refuses (401/403, exhausted vendor quota) is disabled with its
 * reason.
 *
 * Operator events: a channel's first cooldown raises `channel.unhealthy`, and
 * the next success on it (a request or the prober's test) raises
 * `channel.recovered`, once per transition, not per failed request. The
 * transition is a conditional update of the shared `channel_health` row, in
 * the transaction that writes the event to the outbox, so when several
 * instances see the same failure (or the same recovery) only the one whose
 * update moved the row raises the event (`event_key` holds the row's
 * transition count). Every instance's prober also tests the channels another
 * instance marked unhealthy (`syncHealth`), so a recovery is announced even
 * when the instance that saw the failure is gone.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Layer, Random } from "effect"
import { SqlClient } from "effect/sql"
import { ModelNotFound } from "../errors/GatewayError.ts"
import { CurrentMetrics } from "../observability/Metrics.ts"
import { type Ability, Catalog, type Channel, type ChannelKey } from "../storage/Catalog.ts"
import type { Principal } from "./Auth.ts"
import { enqueueOperatorEvent } from "./WebhookOutbox.ts"

/** One attempt: a channel, one of its keys, and the model name the upstream gets. @category models */
export interface Candidate {
  readonly channel: Channel
  readonly key: ChannelKey
  readonly upstreamModel: string
}

/** Health settings (from the bootstrap file's `settings`). Seconds. @category models */
export interface HealthSettings {
  /** Consecutive retryable failures that start a cooldown (default 3). */
  readonly cooldownFailures: number
  /** First cooldown length (default 30 s), doubled on each repeat up to `cooldownMaxSeconds` (default 600 s). */
  readonly cooldownSeconds: number
  readonly cooldownMaxSeconds: number
  /** The status `ModelNotFound` answers with (the `unknown_model_status` setting; default 503). */
  readonly unknownModelStatus?: 503 | 404 | undefined
}

/** The outcome of one attempt, as the health state sees it. @category models */
export type AttemptOutcome =
  | { readonly _tag: "Success" }
  | { readonly _tag: "Retryable"; readonly reason: string }
  | { readonly _tag: "KeyRejected"; readonly reason: string }

/** A channel's or key's health, as reported by `GET /api/status`. @category models */
export interface HealthView {
  readonly channelId: number
  readonly name: string
  readonly state: "healthy" | "cooling" | "disabled"
  readonly consecutiveFailures: number
  readonly cooldownUntil: number | undefined
  readonly keys: ReadonlyArray<{ readonly position: number; readonly enabled: boolean; readonly reason: string | null }>
}

interface ChannelHealth {
  failures: number
  strikes: number
  cooldownUntil: number
  /** This instance believes `channel.unhealthy` was announced and `channel.recovered` not yet. */
  down: boolean
}

/** Why a channel recovered: a request succeeded on it, or the prober's test did. @category models */
export type RecoveredBy = "request" | "probe"

/**
 * Orders `items` by weighted random sampling without replacement (the first is
 * picked with probability weight / total, and so on). Zero weights go last.
 * `random` draws a number in [0, 1): the router passes its Effect `Random`'s
 * `nextDoubleUnsafe`, so a seeded `Random` makes the order reproducible.
 *
 * @category routing
 */
export const weightedOrder = <A>(
  items: ReadonlyArray<A>,
  weight: (item: A) => number,
  random: () => number
): Array<A> => {
  const pool = items.filter((item) => weight(item) > 0)
  const zero = items.filter((item) => weight(item) <= 0)
  const out: Array<A> = []
  while (pool.length > 0) {
    const total = pool.reduce((sum, item) => sum + weight(item), 0)
    let point = random() * total
    let index = 0
    for (; index < pool.length - 1; index++) {
      point -= weight(pool[index])
      if (point < 0) break
    }
    out.push(pool[index])
    pool.splice(index, 1)
  }
  return out.concat(zero)
}

/** @category services */
export class ChannelRouter extends Context.Service<ChannelRouter, {
  /**
   * The candidates for `model` in the caller's group (and token allow-list),
   * in try order. Fails with `ModelNotFound` when no enabled channel serves it.
   */
  readonly candidates: (principal: Principal, model: string) => Effect.Effect<ReadonlyArray<Candidate>, ModelNotFound>
  /** The models the caller may use, sorted. */
  readonly models: (principal: Principal) => ReadonlyArray<string>
  /** Records an attempt's outcome for the channel's and key's health. */
  readonly report: (candidate: Candidate, outcome: AttemptOutcome) => Effect.Effect<void>
  /** Re-enables a key (after a successful probe). */
  readonly enableKey: (channelId: number, position: number) => Effect.Effect<void>
  /** Ends a channel's cooldown after a successful probe (announcing `channel.recovered` when it was unhealthy). */
  readonly clearCooldown: (channelId: number) => Effect.Effect<void>
  /**
   * Takes the shared `channel_health` state: a channel it says is unhealthy is
   * marked so here too (this instance's prober tests it, and its first
   * success announces the recovery), one it says is healthy is not (run
   * before each probe round).
   */
  readonly syncHealth: Effect.Effect<void>
  /** Channels or keys that a prober should test. */
  readonly unhealthy: () => ReadonlyArray<Candidate>
  readonly health: () => ReadonlyArray<HealthView>
}>()("sluice/services/ChannelRouter") {
  /**
   * Needs `Catalog` and `SqlClient` (key disabling is persisted). Cooldowns are
   * timed by the `Clock`, and the weighted order drawn from the `Random`, that
   * the layer is built with (so `TestClock` and `Random.withSeed` drive them).
   */
  static readonly layer = (settings: HealthSettings) =>
    Layer.effect(
      ChannelRouter,
      Effect.gen(function* () {
        const catalog = yield* Catalog
        const sql = yield* SqlClient.SqlClient
        const clock = yield* Clock.Clock
        const random = yield* Random.Random
        const draw = () => random.nextDoubleUnsafe()
        const healthById = new Map<number, ChannelHealth>()
        const keyCursor = new Map<number, number>()
        const healthOf = (channelId: number): ChannelHealth => {
          let health = healthById.get(channelId)
          if (health === undefined) {
            health = { failures: 0, strikes: 0, cooldownUntil: 0, down: false }
            healthById.set(channelId, health)
          }
          return health
        }

        const allowed = (principal: Principal, model: string) =>
          principal.models === undefined || principal.models.includes(model)

        const keysInOrder = (channel: Channel): Array<ChannelKey> => {
          const usable = channel.keys.filter((key) => key.enabled)
          if (usable.length <= 1) return usable
          const start = (keyCursor.get(channel.id) ?? 0) % usable.length
          keyCursor.set(channel.id, start + 1)
          return usable.slice(start).concat(usable.slice(0, start))
        }

        const candidates = (principal: Principal, model: string) =>
          Effect.suspend(() => {
            const snapshot = catalog.snapshot()
            const abilities = allowed(principal, model) ? snapshot.abilities.get(principal.group)?.get(model) ?? [] : []
            const now = clock.currentTimeMillisUnsafe()
            const tiers = new Map<number, Array<Ability>>()
            for (const ability of abilities) {
              const channel = snapshot.channels.get(ability.channelId)
              if (channel === undefined || !channel.enabled) continue
              const tier = tiers.get(ability.priority) ?? []
              tier.push(ability)
              tiers.set(ability.priority, tier)
            }
            const ready: Array<Candidate> = []
            const cooling: Array<Candidate> = []
            for (const priority of [...tiers.keys()].sort((a, b) => b - a)) {
              for (const ability of weightedOrder(tiers.get(priority)!, (a) => a.weight, draw)) {
                const channel = snapshot.channels.get(ability.channelId)!
                const upstreamModel = channel.modelMapping[model] ?? model
                const target = (healthById.get(channel.id)?.cooldownUntil ?? 0) > now ? cooling : ready
                for (const key of keysInOrder(channel)) target.push({ channel, key, upstreamModel })
              }
            }
            const all = ready.concat(cooling)
            return all.length === 0
              ? Effect.fail(new ModelNotFound({ model, status: settings.unknownModelStatus }))
              : Effect.succeed(all)
          })

        const models = (principal: Principal) => {
          const byModel = catalog.snapshot().abilities.get(principal.group)
          if (byModel === undefined) return []
          return [...byModel.keys()].filter((model) => allowed(principal, model)).sort()
        }

        /**
         * The channel's move to unhealthy (`channel.unhealthy`) in the shared row and, when this call moved it,
         * the event in the same transaction. Never fails: a failed write is logged and retried at the next cooldown.
         */
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
          ).pipe(
            Effect.tap(() => Effect.sync(() => (health.down = true))),
            Effect.catch((error) =>
              Effect.logWarning("Could not record a channel's health", error.message).pipe(
                Effect.annotateLogs({ channel: channel.name })
              )
            ),
            // A connection lost mid-transaction fails its ROLLBACK too, a defect in effect/sql: never the request's.
            Effect.catchDefect(() =>
              Effect.logWarning("Could not record a channel's health").pipe(
                Effect.annotateLogs({ channel: channel.name })
              )
            )
          )

        /**
         * The channel's move back to healthy (`channel.recovered`), as `markUnhealthy`. Never fails: a failed
         * write is logged and retried at the next success.
         */
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
                  Effect.andThen(
                    Effect.logInfo("Channel recovered").pipe(Effect.annotateLogs({ channel: name, by }))
                  )
                )
              )
            )
          ).pipe(
            Effect.tap(() => Effect.sync(() => (health.down = false))),
            Effect.catch((error) =>
              Effect.logWarning("Could not record a channel's health", error.message).pipe(
                Effect.annotateLogs({ channel: name })
              )
            ),
            Effect.catchDefect(() =>
              Effect.logWarning("Could not record a channel's health").pipe(Effect.annotateLogs({ channel: name }))
            )
          )
        }

        const syncHealth = sql<{ readonly channelId: bigint }>`
          SELECT channel_id AS "channelId" FROM channel_health WHERE unhealthy`.pipe(
          Effect.tap((rows) =>
            Effect.sync(() => {
              // Both ways: a channel another instance brought back is no longer down here either, so this
              // instance's next cooldown of it is a new transition (a new event).
              const down = new Set(rows.map((row) => Number(row.channelId)))
              for (const [channelId, health] of healthById) health.down = down.has(channelId)
              for (const channelId of down) healthOf(channelId).down = true
            })
          ),
          Effect.asVoid,
          Effect.catch((error) => Effect.logWarning("Could not read the channels' health", error.message))
        )

        const metrics = yield* CurrentMetrics
        const report = (candidate: Candidate, outcome: AttemptOutcome) =>
          Effect.suspend(() => {
            const health = healthOf(candidate.channel.id)
            switch (outcome._tag) {
              case "Success":
                health.failures = 0
                health.strikes = 0
                health.cooldownUntil = 0
                return markRecovered(candidate.channel.id, health, "request")
              case "Retryable": {
                health.failures += 1
                if (health.failures < settings.cooldownFailures) return Effect.void
                const seconds = Math.min(settings.cooldownSeconds * 2 ** health.strikes, settings.cooldownMaxSeconds)
                health.strikes += 1
                health.failures = 0
                health.cooldownUntil = clock.currentTimeMillisUnsafe() + seconds * 1000
                metrics?.cooldown(candidate.channel.name)
                return Effect.logWarning("Channel put in cooldown").pipe(
                  Effect.annotateLogs({ channel: candidate.channel.name, seconds, reason: outcome.reason }),
                  Effect.andThen(
                    health.down ? Effect.void : markUnhealthy(candidate.channel, health, outcome.reason)
                  )
                )
              }
              case "KeyRejected": {
                if (candidate.channel.settings.auto_disable === false) {
                  return Effect.logWarning("Upstream refused a key; auto-disable is off for this channel").pipe(
                    Effect.annotateLogs({ channel: candidate.channel.name, key: candidate.key.position })
                  )
                }
                metrics?.keyDisabled(candidate.channel.name)
                // The event (channel.key_disabled) goes to the outbox in the same transaction, once per disabling.
                return sql.withTransaction(
                  sql<{ readonly position: number }>`UPDATE channel_keys SET enabled = FALSE,
                    disabled_reason = ${outcome.reason}
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
                          reason: outcome.reason
                        }
                      )
                    )
                  )
                ).pipe(
                  Effect.andThen(catalog.reload),
                  Effect.andThen(
                    Effect.logWarning("Channel key disabled").pipe(
                      Effect.annotateLogs({
                        channel: candidate.channel.name,
                        key: candidate.key.position,
                        reason: outcome.reason
                      })
                    )
                  ),
                  Effect.orDie
                )
              }
            }
          })

        const enableKey = (channelId: number, position: number) =>
          sql`UPDATE channel_keys SET enabled = TRUE, disabled_reason = NULL
            WHERE channel_id = ${channelId} AND position = ${position}`.pipe(
            Effect.andThen(catalog.reload),
            Effect.andThen(
              Effect.logInfo("Channel key re-enabled").pipe(Effect.annotateLogs({ channelId, key: position }))
            ),
            Effect.orDie
          )

        const clearCooldown = (channelId: number) =>
          Effect.suspend(() => {
            const health = healthOf(channelId)
            health.cooldownUntil = 0
            health.failures = 0
            return markRecovered(channelId, health, "probe")
          })

        const unhealthy = () => {
          const now = clock.currentTimeMillisUnsafe()
          const out: Array<Candidate> = []
          for (const channel of catalog.snapshot().channels.values()) {
            if (!channel.enabled) continue
            const upstreamModel = channel.settings.test_model ?? channel.modelMapping[channel.models[0]] ??
              channel.models[0]
            if (upstreamModel === undefined) continue
            const state = healthById.get(channel.id)
            const cooling = (state?.cooldownUntil ?? 0) > now || state?.down === true
            for (const key of channel.keys) {
              if (!key.enabled || cooling) out.push({ channel, key, upstreamModel })
            }
          }
          return out
        }

        const health = () => {
          const now = clock.currentTimeMillisUnsafe()
          return [...catalog.snapshot().channels.values()].map((channel): HealthView => {
            const state = healthById.get(channel.id)
            const cooling = (state?.cooldownUntil ?? 0) > now
            const anyKey = channel.keys.some((key) => key.enabled)
            return {
              channelId: channel.id,
              name: channel.name,
              state: !channel.enabled || !anyKey ? "disabled" : cooling ? "cooling" : "healthy",
              consecutiveFailures: state?.failures ?? 0,
              cooldownUntil: cooling ? Math.floor((state?.cooldownUntil ?? 0) / 1000) : undefined,
              keys: channel.keys.map((key) => ({
                position: key.position,
                enabled: key.enabled,
                reason: key.disabledReason
              }))
            }
          })
        }

        return ChannelRouter.of({
          candidates,
          models,
          report,
          enableKey,
          clearCooldown,
          syncHealth,
          unhealthy,
          health
        })
      })
    )
}
