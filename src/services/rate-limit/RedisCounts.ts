/**
 * Rate-limit counts shared by every gateway instance through Redis. One Lua
 * script per acquire checks and records every subject atomically (all or
 * none), one per release records tokens and frees concurrency slots; both read
 * the Redis server clock (`TIME`) so instances with skewed clocks agree.
 * Scripts run by `EVALSHA` and are sent with `EVAL` only when the server does
 * not have them cached (`NOSCRIPT`).
 *
 * Keys, for a subject `token:12` under prefix `sluice:ratelimit:`:
 * - `…token:12:rpm`: sorted set, one member per admitted request (permit id), score = admission time (ms);
 * - `…token:12:tpm`: sorted set, one member `<permit id>:<tokens>` per release, score = release time (ms);
 * - `…token:12:tpm:total`: integer, the sum of the tokens in `…:tpm`;
 * - `…token:12:inflight`: sorted set, one member per request in flight, score = lease deadline (ms).
 *
 * A concurrency slot is a lease of `concurrencyLeaseMs`: an instance that dies
 * without releasing leaks the slot only until its lease ends. Every script
 * touches several keys, so a Redis Cluster needs all of them in one hash slot
 * (a prefix with a hash tag, e.g. `{sluice}:ratelimit:`).
 *
 * Redis commands: https://redis.io/docs/latest/commands/ (EVALSHA, TIME, ZADD,
 * ZREMRANGEBYSCORE, PEXPIRE).
 *
 * @since 0.1.0
 */
import { createHash } from "node:crypto"
import { Data, Effect, Schema, type Scope } from "effect"
import { concurrencyRetryMs, type LimitName, type Refusal, type Rule } from "./Rules.ts"

/**
 * How long a concurrency slot stays held without a release: 15 minutes, longer
 * than any request the gateway lets run.
 *
 * @category constants
 */
export const concurrencyLeaseMs = 15 * 60_000

/**
 * Per-command time limit in milliseconds; an outage must fail fast.
 *
 * @category constants
 */
export const commandTimeoutMs = 200

/**
 * Redis did not answer (connection refused or closed, timeout) or answered
 * something this module cannot read. Internal to the limiter, which falls
 * back to local counts.
 *
 * @category errors
 */
export class RedisUnavailable extends Data.TaggedError("RedisUnavailable")<{ readonly detail: string }> {}

const acquireScript = `
local clock = redis.call("TIME")
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local window = tonumber(ARGV[1])
local lease = tonumber(ARGV[2])
local permit = ARGV[3]
local edge = now - window
local refusals = {}

local function tokens_of(member)
  return tonumber(string.match(member, ":(%d+)$")) or 0
end

local function refuse(subject, limit, wait)
  table.insert(refusals, subject)
  table.insert(refusals, limit)
  table.insert(refusals, wait)
end

local subjects = #KEYS / 4
for subject = 0, subjects - 1 do
  local requests, tokens, total, inflight = KEYS[subject * 4 + 1], KEYS[subject * 4 + 2], KEYS[subject * 4 + 3], KEYS[subject * 4 + 4]
  local rpm, tpm, concurrency = tonumber(ARGV[subject * 3 + 4]), tonumber(ARGV[subject * 3 + 5]), tonumber(ARGV[subject * 3 + 6])
  if rpm > 0 then
    redis.call("ZREMRANGEBYSCORE", requests, "-inf", edge)
    local count = redis.call("ZCARD", requests)
    if count >= rpm then
      local entry = redis.call("ZRANGE", requests, count - rpm, count - rpm, "WITHSCORES")
      refuse(subject, 1, tonumber(entry[2]) + window - now)
    end
  end
  if tpm > 0 then
    local gone = redis.call("ZRANGEBYSCORE", tokens, "-inf", edge)
    if #gone > 0 then
      local removed = 0
      for _, member in ipairs(gone) do
        removed = removed + tokens_of(member)
      end
      redis.call("ZREMRANGEBYSCORE", tokens, "-inf", edge)
      if redis.call("ZCARD", tokens) == 0 then
        redis.call("DEL", total)
      else
        redis.call("DECRBY", total, removed)
      end
    end
    local sum = tonumber(redis.call("GET", total) or "0")
    if sum >= tpm then
      local wait = window
      local entries = redis.call("ZRANGE", tokens, 0, -1, "WITHSCORES")
      for index = 1, #entries, 2 do
        sum = sum - tokens_of(entries[index])
        if sum < tpm then
          wait = tonumber(entries[index + 1]) + window - now
          break
        end
      end
      refuse(subject, 2, wait)
    end
  end
  if concurrency > 0 then
    redis.call("ZREMRANGEBYSCORE", inflight, "-inf", now)
    if redis.call("ZCARD", inflight) >= concurrency then
      refuse(subject, 3, ${concurrencyRetryMs})
    end
  end
end
if #refusals > 0 then
  return refusals
end
for subject = 0, subjects - 1 do
  if tonumber(ARGV[subject * 3 + 4]) > 0 then
    redis.call("ZADD", KEYS[subject * 4 + 1], now, permit)
    redis.call("PEXPIRE", KEYS[subject * 4 + 1], window)
  end
  if tonumber(ARGV[subject * 3 + 6]) > 0 then
    redis.call("ZADD", KEYS[subject * 4 + 4], now + lease, permit)
    redis.call("PEXPIRE", KEYS[subject * 4 + 4], lease)
  end
end
return refusals
`

const releaseScript = `
local clock = redis.call("TIME")
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local window = tonumber(ARGV[1])
local permit = ARGV[2]
local amount = tonumber(ARGV[3])
for subject = 0, #KEYS / 3 - 1 do
  local tokens, total, inflight = KEYS[subject * 3 + 1], KEYS[subject * 3 + 2], KEYS[subject * 3 + 3]
  if ARGV[subject * 2 + 4] == "1" and amount > 0 then
    if redis.call("ZADD", tokens, "NX", now, permit .. ":" .. ARGV[3]) == 1 then
      redis.call("INCRBY", total, ARGV[3])
    end
    redis.call("PEXPIRE", tokens, window)
    redis.call("PEXPIRE", total, window)
  end
  if ARGV[subject * 2 + 5] == "1" then
    redis.call("ZREM", inflight, permit)
  end
end
return 0
`

interface Script {
  readonly source: string
  readonly sha: string
}

const script = (source: string): Script => ({ source, sha: createHash("sha1").update(source).digest("hex") })

const acquire = script(acquireScript)
const release = script(releaseScript)

const limitNames: ReadonlyArray<LimitName> = ["rpm", "tpm", "concurrency"]

const AcquireReply = Schema.Array(Schema.Int)
const decodeAcquireReply = Schema.decodeUnknownEffect(AcquireReply)

const describeCause = (cause: unknown): string => cause instanceof Error ? cause.message : String(cause)

/**
 * Shared counts: the same contract as the in-memory counts, over Redis.
 *
 * @category models
 */
export interface RedisCounts {
  /**
   * Checks every rule and, when none refuses, records the request under
   * `permitId` (a unique string); returns the refusals (`[]` = admitted).
   * Fails with `RedisUnavailable` when Redis does not answer in time.
   */
  readonly admit: (rules: ReadonlyArray<Rule>, permitId: string) => Effect.Effect<
    ReadonlyArray<Refusal>,
    RedisUnavailable
  >
  /**
   * Records `tokens` (a bounded integer) for rules with a tpm limit and frees
   * the concurrency slot of `permitId`. Recording the same permit and amount
   * twice counts once.
   */
  readonly release: (rules: ReadonlyArray<Rule>, permitId: string, tokens: number) => Effect.Effect<
    void,
    RedisUnavailable
  >
}

/**
 * Options of `makeRedisCounts`: the Redis URL (`redis://[user:password@]host:port/db`),
 * the key prefix, and the window length in milliseconds.
 *
 * @category models
 */
export interface RedisCountsOptions {
  readonly url: string
  readonly prefix: string
  readonly windowMs: number
}

/**
 * Opens a Redis client for the limiter (closed when the scope closes) and
 * returns the shared counts. Never fails: if Redis is down at start, commands
 * fail with `RedisUnavailable` until the client's background reconnection
 * succeeds. The client is tuned to fail fast: no offline queue, no command
 * retries, `commandTimeoutMs` per command, a short connect timeout.
 *
 * @category constructors
 */
export const makeRedisCounts = Effect.fnUntraced(function* (options: RedisCountsOptions) {
  // Loaded here, not at the top: a gateway without Redis never holds `ioredis` (about 3 MiB).
  const { Redis } = yield* Effect.promise(() => import("ioredis"))
  const client = yield* Effect.acquireRelease(
    Effect.sync(() => {
      const created = new Redis(options.url, {
        lazyConnect: true,
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        connectTimeout: commandTimeoutMs,
        commandTimeout: commandTimeoutMs,
        retryStrategy: (attempt: number) => Math.min(attempt * 100, 2_000)
      })
      // Failures reach the limiter through the commands; an unheard "error"
      // event would make ioredis print to the console.
      created.on("error", () => {})
      return created
    }),
    (opened) =>
      Effect.tryPromise(() => opened.quit()).pipe(
        Effect.timeoutOption(commandTimeoutMs),
        Effect.ignore,
        Effect.andThen(Effect.sync(() => opened.disconnect()))
      )
  )
  yield* Effect.tryPromise(() => client.connect()).pipe(Effect.timeoutOption(1_000), Effect.ignore)

  const evaluate = (target: Script, keys: ReadonlyArray<string>, args: ReadonlyArray<string | number>) =>
    Effect.tryPromise({
      try: async () => {
        try {
          return await client.evalsha(target.sha, keys.length, ...keys, ...args)
        } catch (error) {
          if (error instanceof Error && error.message.startsWith("NOSCRIPT")) {
            return await client.eval(target.source, keys.length, ...keys, ...args)
          }
          throw error
        }
      },
      catch: (cause) => new RedisUnavailable({ detail: describeCause(cause) })
    }).pipe(
      Effect.timeoutOption(commandTimeoutMs * 2),
      Effect.flatMap((reply) =>
        reply._tag === "Some"
          ? Effect.succeed(reply.value)
          : Effect.fail(new RedisUnavailable({ detail: "Redis did not answer in time" }))
      )
    )

  const keyOf = (rule: Rule, suffix: string): string => `${options.prefix}${rule.key}:${suffix}`

  const admit = (rules: ReadonlyArray<Rule>, permitId: string) =>
    evaluate(
      acquire,
      rules.flatMap((
        rule
      ) => [keyOf(rule, "rpm"), keyOf(rule, "tpm"), keyOf(rule, "tpm:total"), keyOf(rule, "inflight")]),
      [
        options.windowMs,
        concurrencyLeaseMs,
        permitId,
        ...rules.flatMap((rule) => [rule.rpm, rule.tpm, rule.concurrency])
      ]
    ).pipe(
      Effect.flatMap((reply) =>
        decodeAcquireReply(reply).pipe(
          Effect.mapError((error) => new RedisUnavailable({ detail: `Unreadable limiter reply: ${error.message}` }))
        )
      ),
      Effect.map((flat) => {
        const refusals: Array<Refusal> = []
        for (let index = 0; index + 2 < flat.length; index += 3) {
          const rule = rules[flat[index]!]
          const limit = limitNames[flat[index + 1]! - 1]
          if (rule === undefined || limit === undefined) continue
          refusals.push({ key: rule.key, limit, allowed: rule[limit], retryAfterMs: flat[index + 2]! })
        }
        return refusals
      })
    )

  const releaseCounts = (rules: ReadonlyArray<Rule>, permitId: string, tokens: number) =>
    evaluate(
      release,
      rules.flatMap((rule) => [keyOf(rule, "tpm"), keyOf(rule, "tpm:total"), keyOf(rule, "inflight")]),
      [
        options.windowMs,
        permitId,
        tokens,
        ...rules.flatMap((rule) => [rule.tpm > 0 ? 1 : 0, rule.concurrency > 0 ? 1 : 0])
      ]
    ).pipe(Effect.asVoid)

  return { admit, release: releaseCounts } satisfies RedisCounts
}) satisfies (options: RedisCountsOptions) => Effect.Effect<RedisCounts, never, Scope.Scope>
