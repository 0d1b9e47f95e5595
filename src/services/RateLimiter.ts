/**
 * Per-subject rate limits: requests per minute (rpm), tokens per minute (tpm)
 * and requests in flight (concurrency), over an exact sliding window. Counts
 * live in memory (one instance) or in Redis (shared by every instance); when
 * Redis does not answer, the limiter keeps admitting under local counts, logs
 * one warning per outage, and returns to Redis as soon as it answers again.
 *
 * @since 0.1.0
 */
import { Clock, Config, Context, Effect, Layer, Option, Redacted } from "effect"
import type { RateLimited } from "../errors/GatewayError.ts"
import { makeMemoryCounts } from "./rate-limit/MemoryCounts.ts"
import { makeRedisCounts, type RedisUnavailable } from "./rate-limit/RedisCounts.ts"
import { boundedTokens, boundedWindowMs, defaultWindowMs, rateLimited, type Rule, toRules } from "./rate-limit/Rules.ts"

/**
 * A subject's limits. Each is a count per sliding window (60 s unless the
 * layer says otherwise); `undefined`, 0 or a negative value means "no limit".
 * Values are floored to integers and capped at 10^12.
 *
 * @category models
 */
export interface Limits {
  /** Requests admitted per window. */
  readonly rpm?: number | undefined
  /** Tokens (prompt + completion) recorded per window; checked at admission, recorded at release. */
  readonly tpm?: number | undefined
  /** Requests in flight at once. */
  readonly concurrency?: number | undefined
}

/**
 * Who a limit applies to: `key` names the counter (e.g. `"token:12"`,
 * `"user:3"`); subjects with the same key share counts.
 *
 * @category models
 */
export interface Subject {
  readonly key: string
  readonly limits: Limits
}

/**
 * An admitted request.
 *
 * @category models
 */
export interface Permit {
  /**
   * Records the tokens the request really used (feeds tpm; a non-negative
   * integer, other values are clamped) and frees its concurrency slot.
   * Idempotent: only the first call counts. Never fails.
   */
  readonly release: (tokensUsed: number) => Effect.Effect<void>
}

/** Default Redis key prefix of `layerRedis`. */
const defaultPrefix = "sluice:ratelimit:"

/** Most shared-count writes kept for replay during one Redis outage; beyond it, slots wait for their lease to end. */
const maxPendingWrites = 10_000

const noLimitPermit: Permit = { release: () => Effect.void }

/** Wraps a release so only its first call runs. */
const once = (release: (tokens: number) => Effect.Effect<void>): Permit => {
  let released = false
  return {
    release: (tokensUsed) =>
      Effect.suspend(() => {
        if (released) return Effect.void
        released = true
        return release(boundedTokens(tokensUsed))
      })
  }
}

interface Admission {
  readonly acquire: (rules: ReadonlyArray<Rule>) => Effect.Effect<Permit, RateLimited>
}

const memoryAdmission = (windowMs: number): Admission => {
  const counts = makeMemoryCounts(windowMs)
  return {
    acquire: (rules) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const refusals = counts.admit(rules, now)
        if (refusals.length > 0) return Effect.fail(rateLimited(refusals, windowMs))
        const release = (tokens: number) =>
          Effect.map(Clock.currentTimeMillis, (releasedAt) => counts.release(rules, tokens, releasedAt))
        return Effect.succeed(once(release))
      })
  }
}

/** The service from an admission strategy: rules are normalized once, subjects without limits cost nothing. */
const noLimit: Effect.Effect<Permit> = Effect.succeed(noLimitPermit)

const fromAdmission = (admission: Admission) => ({
  acquire: (subjects: ReadonlyArray<Subject>): Effect.Effect<Permit, RateLimited> =>
    Effect.suspend(() => {
      const rules = toRules(subjects)
      if (rules.length === 0) return noLimit
      return Effect.andThen(
        Effect.annotateCurrentSpan({ subjects: rules.map((rule) => rule.key).join(",") }),
        admission.acquire(rules)
      )
    })
})

/**
 * Admits requests against per-subject limits.
 *
 * @category services
 */
export class RateLimiter extends Context.Service<RateLimiter, {
  /**
   * Admits one request for every subject at once (all or none), or fails with
   * `RateLimited` naming each limit hit and a `retryAfterSeconds` in whole
   * seconds (≥ 1): the time until the oldest entries leave the window far
   * enough for every refusing limit to admit again (1 s for concurrency).
   * The caller must call `release` on the permit, in a finalizer.
   */
  readonly acquire: (subjects: ReadonlyArray<Subject>) => Effect.Effect<Permit, RateLimited>
}>()("sluice/services/RateLimiter") {
  /**
   * Counts in this process only, with a 60 s window; time from the Effect
   * `Clock` (so `TestClock` drives it).
   */
  static readonly layerMemory: Layer.Layer<RateLimiter> = Layer.sync(
    RateLimiter,
    () => RateLimiter.of(fromAdmission(memoryAdmission(defaultWindowMs)))
  )

  /**
   * Counts shared through Redis at `url`, under keys starting with `prefix`
   * (default `sluice:ratelimit:`), over a window of `windowMs` milliseconds
   * (default 60000). Scoped: the connection closes with the layer. When Redis
   * does not answer (refused, closed, or slower than 200 ms), requests are
   * admitted under this instance's local counts with one `logWarning` per
   * outage; the first answer afterwards logs the recovery and shared counts
   * resume. Permits release to the store that admitted them.
   */
  static readonly layerRedis = (
    options: { readonly url: string; readonly prefix?: string; readonly windowMs?: number }
  ): Layer.Layer<RateLimiter> =>
    Layer.effect(
      RateLimiter,
      Effect.gen(function* () {
        const windowMs = boundedWindowMs(options.windowMs)
        const shared = yield* makeRedisCounts({ url: options.url, prefix: options.prefix ?? defaultPrefix, windowMs })
        const local = memoryAdmission(windowMs)
        let outage = false
        // Shared-count writes that failed during an outage (releases, and slot frees for admissions
        // that timed out and may still have run), replayed when Redis answers again so concurrency
        // slots do not stay held until their lease ends.
        const pending: Array<Effect.Effect<void, RedisUnavailable>> = []

        const degrade = (error: RedisUnavailable) =>
          Effect.suspend(() => {
            if (outage) return Effect.void
            outage = true
            return Effect.logWarning("Rate limiter cannot reach Redis; enforcing local limits until it answers").pipe(
              Effect.annotateLogs({ detail: error.detail })
            )
          })

        const postpone = (write: Effect.Effect<void, RedisUnavailable>) =>
          Effect.sync(() => {
            if (pending.length < maxPendingWrites) pending.push(write)
          })

        const settle = (write: Effect.Effect<void, RedisUnavailable>): Effect.Effect<void> =>
          write.pipe(
            Effect.catchTag("RedisUnavailable", (error) => postpone(write).pipe(Effect.andThen(degrade(error))))
          )

        // Replays run in the background, in the layer's scope, so the request that finds Redis
        // back does not wait for them.
        const layerScope = yield* Effect.scope
        const recover = Effect.suspend(() => {
          if (!outage) return Effect.void
          outage = false
          const replay = pending.splice(0, pending.length)
          return Effect.logInfo("Rate limiter reached Redis again; enforcing shared limits").pipe(
            Effect.andThen(Effect.forkIn(Effect.forEach(replay, settle, { discard: true }), layerScope)),
            Effect.asVoid
          )
        })

        /** Admits under local counts; an admission that timed out may still run in Redis, so free its slots later. */
        const fallBack = (rules: ReadonlyArray<Rule>, permitId: string, error: RedisUnavailable) => {
          const mayHoldSlots = rules.some((rule) => rule.concurrency > 0)
          return (mayHoldSlots ? postpone(shared.release(rules, permitId, 0)) : Effect.void).pipe(
            Effect.andThen(degrade(error)),
            Effect.andThen(local.acquire(rules))
          )
        }

        const acquire = (rules: ReadonlyArray<Rule>): Effect.Effect<Permit, RateLimited> => {
          const permitId = crypto.randomUUID()
          return shared.admit(rules, permitId).pipe(
            Effect.tap(() => recover),
            Effect.flatMap((refusals) =>
              refusals.length > 0
                ? Effect.fail(rateLimited(refusals, windowMs))
                : Effect.succeed(once((tokens) => settle(shared.release(rules, permitId, tokens))))
            ),
            Effect.catchTag("RedisUnavailable", (error) => fallBack(rules, permitId, error)),
            // Once the script has run, the permit must reach the caller, or its slot leaks until the lease ends.
            Effect.uninterruptible
          )
        }

        return RateLimiter.of(fromAdmission({ acquire }))
      })
    )

  /**
   * `layerRedis({ url: REDIS_URL })` when the `REDIS_URL` config is set and
   * not blank, otherwise `layerMemory`.
   */
  static readonly layerConfig: Layer.Layer<RateLimiter> = Layer.unwrap(
    Effect.gen(function* () {
      const url = yield* Config.option(Config.Redacted("REDIS_URL"))
      const value = Option.map(url, Redacted.value).pipe(Option.filter((text) => text.trim() !== ""))
      return Option.isSome(value) ? RateLimiter.layerRedis({ url: value.value }) : RateLimiter.layerMemory
      // Configuration read at start (not storage): a malformed REDIS_URL is a gateway that cannot start.
    }).pipe(Effect.orDie)
  )
}
