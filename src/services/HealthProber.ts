/**
 * Brings channels back: on a schedule, each disabled key and each channel in
 * cooldown is tested with a cheap request to its test model, one that model
 * serves: a rerank of one tiny document when the channel's type reranks
 * (`cohere`, `jina`: `upstreams/RerankAdapter.ts`) and the model is a rerank
 * model by its price (`probesRerank`); an empty task list on a Midjourney
 * proxy; the video adapter's free probe call on a video-only type (`kling`:
 * its task list, `upstreams/VideoAdapter.ts`); else one short user message
 * with at most a few output tokens (so a chat-only cohere channel is probed
 * with chat); a 2xx answer re-enables the key or ends the cooldown (and
 * announces `channel.recovered` when the channel was marked unhealthy, by
 * this instance or another: `ChannelRouter.syncHealth` runs before each
 * round). Every change is logged with its reason; each probe's outcome (when, which key, passed or not, the
 * upstream's status) is kept on the channel's `channel_health` row for the operator's health view.
 *
 * @since 0.1.0
 */
import { Clock, Context, Duration, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { toProblem } from "../errors/Envelope.ts"
import type { Price } from "../domain/Pricing.ts"
import { Catalog, type Channel } from "../storage/Catalog.ts"
import { encodeRerankRequest } from "../formats/rerank/Codec.ts"
import { adapters, wireOf } from "../upstreams/Adapter.ts"
import { type MidjourneyAdapter, midjourneyAdapters } from "../upstreams/MidjourneyAdapter.ts"
import { rerankAdapters } from "../upstreams/RerankAdapter.ts"
import { videoAdapters } from "../upstreams/VideoAdapter.ts"
import { type Candidate, ChannelRouter } from "./ChannelRouter.ts"
import { UpstreamClient } from "../upstreams/transport/UpstreamClient.ts"

/** The outcome of a channel test: the upstream's status (0 when none), the time to its whole answer. @category models */
export interface ChannelTest {
  readonly ok: boolean
  readonly status: number
  readonly latencyMs: number
  /** Why it failed, in the gateway's words (never the upstream's key); empty on success. */
  readonly message: string
}

/**
 * Whether a channel probe of `model` (its public name) is a rerank: the
 * channel's type reranks (`rerank`), and the model's price says it is a
 * rerank model: priced per search unit, or not priced (a rerank type's
 * default), or priced by tokens on a type whose reranks the vendor bills by
 * tokens (Jina). A model priced by tokens alone on a type that bills reranks
 * per search unit (Cohere) is a chat model, probed with chat.
 *
 * @category probes
 */
export const probesRerank = (
  rerank: { readonly billedBy: "search-units" | "tokens" } | undefined,
  price: Price | undefined
): boolean => {
  if (rerank === undefined) return false
  if (price === undefined || price.perSearch !== undefined) return true
  const byTokens = price.input !== undefined || price.output !== undefined
  return !byTokens || rerank.billedBy === "tokens"
}

/** The public name of `upstreamModel` on `channel` (the model mapped to it, else itself). */
const publicModelOf = (channel: Channel, upstreamModel: string): string =>
  channel.models.find((model) => (channel.modelMapping[model] ?? model) === upstreamModel) ?? upstreamModel

/** @category services */
export class HealthProber extends Context.Service<HealthProber, {
  /** Probes every unhealthy channel and key once, now. */
  readonly probeOnce: Effect.Effect<void>
  /**
   * Sends one test request to `channel` (its first enabled key, its test model; a rerank when the model reranks
   * (`probesRerank`), an empty task list on a Midjourney proxy, the video probe on a video-only type, else a chat
   * call) and times it; changes no state.
   */
  readonly test: (channel: Channel) => Effect.Effect<ChannelTest>
}>()("sluice/services/HealthProber") {
  /** Probes every `intervalSeconds` in the background while the layer lives; needs `Catalog` for the models' prices. */
  static readonly layer = (intervalSeconds: number) =>
    Layer.effect(
      HealthProber,
      Effect.gen(function* () {
        const router = yield* ChannelRouter
        const client = yield* UpstreamClient
        const catalog = yield* Catalog
        const sql = yield* SqlClient.SqlClient

        const timeouts = { firstByteMs: 30_000, idleMs: 30_000, totalMs: 60_000 }

        /** A rerank of one tiny document (one search unit at Cohere, a few tokens at Jina). */
        const sendRerank = (candidate: Candidate) => {
          const rerank = rerankAdapters[candidate.channel.type]!
          const target = rerank.target(candidate.channel, candidate.key.key)
          const body = encodeRerankRequest(rerank.wire, {
            model: candidate.upstreamModel,
            query: "ping",
            documents: ["pong"],
            topN: 1,
            returnDocuments: false,
            maxTokensPerDoc: undefined
          }, candidate.upstreamModel)
          return client.post(target.url, target.headers, JSON.stringify(body), timeouts)
        }

        /** A Midjourney proxy's cheapest authenticated call: a task list of no ids. */
        const sendMidjourney = (candidate: Candidate, adapter: MidjourneyAdapter) => {
          const target = adapter.target(candidate.channel, candidate.key.key, "/mj/task/list-by-condition", true)
          return client.post(target.url, target.headers, JSON.stringify({ ids: [] }), timeouts)
        }

        /** A video-only type's probe call (signed where the type signs its calls). */
        const sendVideoProbe = (candidate: Candidate) =>
          Effect.gen(function* () {
            const video = videoAdapters[candidate.channel.type]!
            const call = video.probe!
            const target = video.target(candidate.channel, candidate.key.key, call, true)
            const signed = video.authorize === undefined ? {} : yield* video.authorize(candidate.key.key)
            return yield* client.send(call.method, target.url, { ...target.headers, ...signed }, undefined, timeouts)
          })

        const send = (candidate: Candidate) => {
          const price = catalog.snapshot().prices.get(publicModelOf(candidate.channel, candidate.upstreamModel))
          if (probesRerank(rerankAdapters[candidate.channel.type], price)) return sendRerank(candidate)
          const midjourney = midjourneyAdapters[candidate.channel.type]
          if (midjourney !== undefined) return sendMidjourney(candidate, midjourney)
          if (videoAdapters[candidate.channel.type]?.probe !== undefined) return sendVideoProbe(candidate)
          const adapter = adapters[candidate.channel.type]
          // The native format's wire for the model (Bedrock: Converse or InvokeModel; a vertex channel asks a Claude
          // model in the Messages wire).
          const wire = wireOf(
            candidate.channel.type,
            adapter.wireFormat(adapter.nativeFormat, candidate.channel, candidate.upstreamModel)
          )
          const target = adapter.target(candidate.channel, candidate.key.key, wire.name, candidate.upstreamModel, false)
          const body = wire.encodeRequest({
            model: candidate.upstreamModel,
            messages: [{ role: "user", content: [{ type: "text", text: "ping" }] }],
            maxOutputTokens: 8,
            stream: false
          }).body
          return client.post(target.url, target.headers, JSON.stringify(body), timeouts, target.signing)
        }

        /** Keeps the probe's outcome on the channel's `channel_health` row (the health view's "last probe"). */
        const recordProbe = (candidate: Candidate, status: number) =>
          sql`INSERT INTO channel_health (channel_id, unhealthy, generation, probed_at, probe_key, probe_ok, probe_status)
            VALUES (${candidate.channel.id}, FALSE, 0, now(), ${candidate.key.position},
              ${status >= 200 && status < 300}, ${status})
            ON CONFLICT (channel_id) DO UPDATE SET probed_at = now(), probe_key = EXCLUDED.probe_key,
              probe_ok = EXCLUDED.probe_ok, probe_status = EXCLUDED.probe_status`.pipe(
            Effect.catch((error) => Effect.logWarning("Could not record a channel probe", error.message)),
            Effect.catchDefect(() => Effect.logWarning("Could not record a channel probe"))
          )

        const probe = (candidate: Candidate) =>
          send(candidate).pipe(
            Effect.flatMap((response) => response.text.pipe(Effect.as(response.status))),
            Effect.catch((error) => Effect.succeed(error.status)),
            Effect.tap((status) => recordProbe(candidate, status)),
            Effect.map((status) => status >= 200 && status < 300),
            Effect.flatMap((healthy) => {
              if (!healthy) return Effect.void
              if (!candidate.key.enabled) return router.enableKey(candidate.channel.id, candidate.key.position)
              return router.clearCooldown(candidate.channel.id).pipe(
                Effect.andThen(
                  Effect.logInfo("Channel cooldown ended after a successful probe").pipe(
                    Effect.annotateLogs({ channel: candidate.channel.name })
                  )
                )
              )
            })
          )

        const test = (channel: Channel) =>
          Effect.gen(function* () {
            const key = channel.keys.find((candidate) => candidate.enabled) ?? channel.keys[0]
            const upstreamModel = channel.settings.test_model ?? channel.modelMapping[channel.models[0]] ??
              channel.models[0]
            if (key === undefined || upstreamModel === undefined) {
              return { ok: false, status: 0, latencyMs: 0, message: "The channel has no key or no model to test." }
            }
            const started = yield* Clock.currentTimeMillis
            const outcome = yield* send({ channel, key, upstreamModel }).pipe(
              Effect.flatMap((response) =>
                Effect.map(response.text, () => ({
                  ok: response.status >= 200 && response.status < 300,
                  status: response.status,
                  message: response.status >= 200 && response.status < 300
                    ? ""
                    : `The upstream answered ${response.status}.`
                }))
              ),
              Effect.catch((error) =>
                Effect.succeed({ ok: false, status: error.status, message: toProblem(error).message })
              )
            )
            const latencyMs = (yield* Clock.currentTimeMillis) - started
            return { ok: outcome.ok, status: outcome.status, latencyMs, message: outcome.message } satisfies ChannelTest
          })

        const probeOnce = router.syncHealth.pipe(
          Effect.andThen(
            Effect.suspend(() => Effect.forEach(router.unhealthy(), probe, { concurrency: 4, discard: true }))
          )
        )
        if (intervalSeconds > 0) {
          yield* probeOnce.pipe(
            Effect.repeat(Schedule.spaced(Duration.seconds(intervalSeconds))),
            Effect.delay(Duration.seconds(intervalSeconds)),
            Effect.forkScoped
          )
        }
        return HealthProber.of({ probeOnce, test })
      })
    )
}
