/**
 * Brings channels back: on a schedule, each disabled key and each channel in
 * cooldown is tested with a cheap request (one short user message, at most a
 * few output tokens) to its test model; a 2xx answer re-enables the key or
 * ends the cooldown. Every change is logged with its reason.
 *
 * @since 0.1.0
 */
import { Context, Duration, Effect, Layer, Schedule } from "effect"
import { formatOf } from "../formats/registry.ts"
import { adapters } from "../upstreams/Adapter.ts"
import { type Candidate, ChannelRouter } from "./ChannelRouter.ts"
import { UpstreamClient } from "./UpstreamClient.ts"

/** @category services */
export class HealthProber extends Context.Service<HealthProber, {
  /** Probes every unhealthy channel and key once, now. */
  readonly probeOnce: Effect.Effect<void>
}>()("sluice/services/HealthProber") {
  /** Probes every `intervalSeconds` in the background while the layer lives. */
  static readonly layer = (intervalSeconds: number) =>
    Layer.effect(
      HealthProber,
      Effect.gen(function* () {
        const router = yield* ChannelRouter
        const client = yield* UpstreamClient

        const probe = (candidate: Candidate) => {
          const wire = formatOf(adapters[candidate.channel.type].nativeFormat)
          const adapter = adapters[candidate.channel.type]
          const target = adapter.target(candidate.channel, candidate.key.key, wire.name, candidate.upstreamModel, false)
          const body = wire.encodeRequest({
            model: candidate.upstreamModel,
            messages: [{ role: "user", content: [{ type: "text", text: "ping" }] }],
            maxOutputTokens: 8,
            stream: false
          }).body
          return client.post(target.url, target.headers, JSON.stringify(body), {
            firstByteMs: 30_000,
            idleMs: 30_000,
            totalMs: 60_000
          }).pipe(
            Effect.flatMap((response) =>
              response.text.pipe(Effect.as(response.status >= 200 && response.status < 300))
            ),
            Effect.catch(() => Effect.succeed(false)),
            Effect.flatMap((healthy) => {
              if (!healthy) return Effect.void
              if (!candidate.key.enabled) return router.enableKey(candidate.channel.id, candidate.key.position)
              return Effect.sync(() => router.clearCooldown(candidate.channel.id)).pipe(
                Effect.andThen(
                  Effect.logInfo("Channel cooldown ended after a successful probe").pipe(
                    Effect.annotateLogs({ channel: candidate.channel.name })
                  )
                )
              )
            })
          )
        }

        const probeOnce = Effect.suspend(() =>
          Effect.forEach(router.unhealthy(), probe, { concurrency: 4, discard: true })
        )
        if (intervalSeconds > 0) {
          yield* probeOnce.pipe(
            Effect.repeat(Schedule.spaced(Duration.seconds(intervalSeconds))),
            Effect.delay(Duration.seconds(intervalSeconds)),
            Effect.forkScoped
          )
        }
        return HealthProber.of({ probeOnce })
      })
    )
}
