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
 * The layer is thin: the try order is `routing/CandidateOrder.ts` (with
 * `WeightedOrder.ts`), the cooldown arithmetic `routing/ChannelHealth.ts`, the
 * status and prober views `routing/HealthViews.ts` (all pure), and the SQL of
 * the shared health and the keys `routing/HealthStore.ts`.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Layer, Random } from "effect"
import { SqlClient } from "effect/sql"
import { ModelNotFound } from "../errors/GatewayError.ts"
import { CurrentMetrics } from "../observability/Metrics.ts"
import { Catalog } from "../storage/Catalog.ts"
import type { Principal } from "./Auth.ts"
import { type Candidate, type KeyCursor, modelsFor, orderCandidates } from "./routing/CandidateOrder.ts"
import {
  type AttemptOutcome,
  endCooldown,
  type HealthBook,
  healthOf,
  type HealthSettings,
  recordFailure,
  recordSuccess,
  syncDown
} from "./routing/ChannelHealth.ts"
import { type HealthView, healthViews, probeTargets } from "./routing/HealthViews.ts"
import { makeHealthStore } from "./routing/HealthStore.ts"

/** The router's models, defined with the part that computes them (`routing/`), under the names importers use. */
export type { Candidate } from "./routing/CandidateOrder.ts"
export type { AttemptOutcome, HealthSettings } from "./routing/ChannelHealth.ts"
export type { HealthView } from "./routing/HealthViews.ts"
export type { RecoveredBy } from "./routing/HealthStore.ts"
export { weightedOrder } from "./routing/WeightedOrder.ts"

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
  /** Every channel's health now, as `GET /api/status` reports it. */
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
        const metrics = yield* CurrentMetrics
        const draw = () => random.nextDoubleUnsafe()
        const book: HealthBook = new Map()
        const cursor: KeyCursor = new Map()
        const store = makeHealthStore(sql, catalog)

        const candidates = (principal: Principal, model: string) =>
          Effect.suspend(() => {
            const now = clock.currentTimeMillisUnsafe()
            const all = orderCandidates(catalog.snapshot(), principal, model, now, book, cursor, draw)
            return all.length === 0
              ? Effect.fail(new ModelNotFound({ model, status: settings.unknownModelStatus }))
              : Effect.succeed(all)
          })

        const syncHealth = store.downChannels.pipe(
          Effect.map((down) => syncDown(book, down)),
          Effect.catch((error) => Effect.logWarning("Could not read the channels' health", error.message))
        )

        const report = (candidate: Candidate, outcome: AttemptOutcome) =>
          Effect.suspend(() => {
            const health = healthOf(book, candidate.channel.id)
            switch (outcome._tag) {
              case "Success":
                recordSuccess(health)
                return store.markRecovered(candidate.channel.id, health, "request")
              case "Retryable": {
                const seconds = recordFailure(health, settings, clock.currentTimeMillisUnsafe())
                if (seconds === undefined) return Effect.void
                metrics?.cooldown(candidate.channel.name)
                return Effect.logWarning("Channel put in cooldown").pipe(
                  Effect.annotateLogs({ channel: candidate.channel.name, seconds, reason: outcome.reason }),
                  Effect.andThen(
                    health.down ? Effect.void : store.markUnhealthy(candidate.channel, health, outcome.reason)
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
                return store.disableKey(candidate, outcome.reason)
              }
            }
          })

        const clearCooldown = (channelId: number) =>
          Effect.suspend(() => {
            const health = healthOf(book, channelId)
            endCooldown(health)
            return store.markRecovered(channelId, health, "probe")
          })

        return ChannelRouter.of({
          candidates,
          models: (principal) => modelsFor(catalog.snapshot(), principal),
          report,
          enableKey: store.enableKey,
          clearCooldown,
          syncHealth,
          unhealthy: () => probeTargets(catalog.snapshot().channels.values(), book, clock.currentTimeMillisUnsafe()),
          health: () => healthViews(catalog.snapshot().channels.values(), book, clock.currentTimeMillisUnsafe())
        })
      })
    )
}
