/**
 * Throttles password guessing and sign-up floods with attempt counters that
 * are taken *before* the password is hashed, so a burst of parallel requests
 * cannot all slip past the check:
 *
 * - per username (lower-cased, at most 256 characters): `maxFailures`
 *   attempts within `windowMillis`; the attempt is reserved before bcrypt
 *   runs, a success forgets the name's count, a failure keeps its slot;
 * - per client address (an IPv6 address counts by its /64): `addressMaxFailures`
 *   login attempts within the same window, so spraying one password over
 *   many names is throttled too; a success hands back its own slot only. An
 *   attempt with no address to count (`limitAddressOf`: it came through a
 *   proxy while no trusted proxies are configured, so its address is the
 *   proxy's, shared by every caller behind it) takes no address slot: one
 *   caller's failures would otherwise lock every caller out of password login;
 * - per client address: `registrationsPerAddress` sign-ups within
 *   `registrationWindowMillis`, never handed back.
 *
 * Counters are fixed windows opened by their first attempt. They live in
 * memory (one instance) or in Redis (every instance shares them, one Lua
 * script per reservation so all keys move at once); when Redis does not
 * answer, this instance's own counters decide and one warning is logged.
 * A name that does not exist is throttled the same way as one that does, so
 * the answer tells nothing about which names exist.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Layer } from "effect"
import type { Redis } from "ioredis"
import { RateLimited } from "../errors/GatewayError.ts"
import { addressKey } from "../http/ClientAddress.ts"

/** Throttle settings. Windows in milliseconds. @category models */
export interface ThrottleOptions {
  /** Login attempts per username within `windowMillis` (default 5). */
  readonly maxFailures: number
  readonly windowMillis: number
  /** Login attempts per client address within `windowMillis` (default 30). */
  readonly addressMaxFailures: number
  /** Registrations per client address within `registrationWindowMillis` (default 10 per hour). */
  readonly registrationsPerAddress: number
  readonly registrationWindowMillis: number
}

/** One counter to take a slot of: its key, its cap and its window in milliseconds. @category models */
export interface Slot {
  readonly key: string
  readonly max: number
  readonly windowMillis: number
}

/** What a store answers to a reservation: `undefined` (taken) or the milliseconds until the refusing window ends. */
type Reserved = number | undefined

/** A counter store: memory or Redis. @category models */
export interface CounterStore {
  /** Takes one slot of every counter (all or none); the wait in milliseconds when one is full. */
  readonly reserve: (slots: ReadonlyArray<Slot>) => Promise<Reserved>
  /** Hands one slot of `key` back. */
  readonly release: (key: string) => Promise<void>
  /** Forgets `key`'s count. */
  readonly reset: (key: string) => Promise<void>
  readonly close: () => Promise<void>
  /** The reason of an outage not yet reported (each outage once), if any. */
  readonly outage?: () => string | undefined
}

/** The most counters kept in memory; when full, expired ones are dropped, then the oldest. */
const MAX_TRACKED = 50_000

/**
 * Counters in this process; `now` reads the time in epoch milliseconds (the
 * layers pass their Effect `Clock`'s, so `TestClock` drives the windows;
 * tests may pass their own).
 *
 * @category constructors
 */
export const memoryCounters = (now: () => number): CounterStore => {
  const entries = new Map<string, { ends: number; count: number }>()
  const live = (key: string) => {
    const entry = entries.get(key)
    if (entry !== undefined && now() >= entry.ends) {
      entries.delete(key)
      return undefined
    }
    return entry
  }
  const make = (key: string, windowMillis: number) => {
    if (entries.size >= MAX_TRACKED) {
      for (const name of [...entries.keys()]) live(name)
      if (entries.size >= MAX_TRACKED) entries.delete(entries.keys().next().value!)
    }
    const entry = { ends: now() + windowMillis, count: 0 }
    entries.set(key, entry)
    return entry
  }
  return {
    reserve: (slots) => {
      let wait: number | undefined
      for (const slot of slots) {
        const entry = live(slot.key)
        if (entry !== undefined && entry.count >= slot.max) wait = Math.max(wait ?? 0, entry.ends - now())
      }
      if (wait !== undefined) return Promise.resolve(Math.max(1, wait))
      for (const slot of slots) (live(slot.key) ?? make(slot.key, slot.windowMillis)).count += 1
      return Promise.resolve(undefined)
    },
    release: (key) => {
      const entry = live(key)
      if (entry !== undefined && entry.count > 0) entry.count -= 1
      return Promise.resolve()
    },
    reset: (key) => {
      entries.delete(key)
      return Promise.resolve()
    },
    close: () => Promise.resolve()
  }
}

// KEYS: the counters; ARGV: per key its cap then its window (ms). Refuses (changing nothing) when any is full.
const reserveScript = `
local wait = -1
for i, key in ipairs(KEYS) do
  local count = tonumber(redis.call("GET", key) or "0")
  if count >= tonumber(ARGV[i * 2 - 1]) then
    local ttl = redis.call("PTTL", key)
    if ttl < 1 then ttl = 1 end
    if ttl > wait then wait = ttl end
  end
end
if wait >= 0 then return wait end
for i, key in ipairs(KEYS) do
  if redis.call("INCR", key) == 1 then redis.call("PEXPIRE", key, tonumber(ARGV[i * 2])) end
end
return -1
`

const releaseScript = `
local count = tonumber(redis.call("GET", KEYS[1]) or "0")
if count > 0 then redis.call("DECR", KEYS[1]) end
return 0
`

/** Per-command time limit of the Redis store, in milliseconds. */
const REDIS_TIMEOUT_MS = 300

/**
 * Counters shared through Redis at `url` under `prefix`; a command that fails
 * or is slower than 300 ms falls back to `fallback` (this instance's counters);
 * `outage` tells of each outage once.
 *
 * @category constructors
 */
export const redisCounters = (url: string, prefix: string, fallback: CounterStore): CounterStore => {
  let down = false
  let unreported: string | undefined
  // `ioredis` is loaded here, not at the top: a gateway without Redis never holds it (about 3 MiB).
  const opening: Promise<Redis> = import("ioredis").then(({ Redis }) => {
    const created = new Redis(url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      connectTimeout: REDIS_TIMEOUT_MS,
      commandTimeout: REDIS_TIMEOUT_MS,
      retryStrategy: (attempt: number) => Math.min(attempt * 100, 2_000)
    })
    created.on("error", () => {})
    return created
  })
  const connected = opening.then((client) => client.connect()).catch(() => undefined)
  const guarded = async <A>(shared: (client: Redis) => Promise<A>, local: () => Promise<A>): Promise<A> => {
    try {
      await connected
      const answer = await shared(await opening)
      down = false
      return answer
    } catch (error) {
      if (!down) unreported = error instanceof Error ? error.message.slice(0, 200) : "Redis did not answer"
      down = true
      return await local()
    }
  }
  return {
    reserve: (slots) =>
      guarded(async (client) => {
        const keys = slots.map((slot) => `${prefix}${slot.key}`)
        const args = slots.flatMap((slot) => [slot.max, slot.windowMillis])
        const wait = Number(await client.eval(reserveScript, keys.length, ...keys, ...args))
        return wait < 0 ? undefined : wait
      }, () => fallback.reserve(slots)),
    release: (key) =>
      guarded(async (client) => {
        await client.eval(releaseScript, 1, `${prefix}${key}`)
      }, () => fallback.release(key)),
    reset: (key) =>
      guarded(async (client) => {
        await client.del(`${prefix}${key}`)
      }, () => fallback.reset(key)),
    close: async () => {
      const client = await opening.catch(() => undefined)
      if (client === undefined) return
      await client.quit().catch(() => undefined)
      client.disconnect()
    },
    outage: () => {
      const detail = unreported
      unreported = undefined
      return detail
    }
  }
}

const usernameKey = (username: string) => `login-user:${username.slice(0, 256).toLowerCase()}`

/** A login attempt that holds its slots: it reports how it ended. @category models */
export interface LoginAttempt {
  /** The password was right: the name's count is forgotten, the address's slot handed back. */
  readonly succeeded: Effect.Effect<void>
}

const waitError = (millis: number, what: string) => {
  const seconds = Math.max(1, Math.ceil(millis / 1000))
  return new RateLimited({ message: `Too many ${what}; try again in ${seconds} seconds.`, retryAfterSeconds: seconds })
}

/** @category services */
export class LoginThrottle extends Context.Service<LoginThrottle, {
  /**
   * Reserves a login attempt for `username` from `address` before its
   * password is checked; `RateLimited` (with the seconds to wait) when the
   * name or the address has used its attempts. `address` `undefined` (none to
   * count: `limitAddressOf`) takes the name's slot only.
   */
  readonly attempt: (username: string, address: string | undefined) => Effect.Effect<LoginAttempt, RateLimited>
  /** Counts a registration from `address`; `RateLimited` past the cap. */
  readonly register: (address: string | undefined) => Effect.Effect<void, RateLimited>
}>()("sluice/accounts/LoginThrottle") {
  /** Counters over `store`. */
  static readonly make = (options: ThrottleOptions, store: CounterStore) => {
    const reportOutage = Effect.suspend(() => {
      const detail = store.outage?.()
      return detail === undefined
        ? Effect.void
        : Effect.logWarning("Login throttle cannot reach Redis; counting on this instance").pipe(
          Effect.annotateLogs({ detail })
        )
    })
    return LoginThrottle.of({
      attempt: (username, address) =>
        Effect.gen(function* () {
          const user = usernameKey(username)
          const peer = address === undefined ? undefined : `login-ip:${addressKey(address)}`
          const slots: Array<Slot> = [{ key: user, max: options.maxFailures, windowMillis: options.windowMillis }]
          if (peer !== undefined) {
            slots.push({ key: peer, max: options.addressMaxFailures, windowMillis: options.windowMillis })
          }
          const wait = yield* Effect.promise(() => store.reserve(slots))
          yield* reportOutage
          if (wait !== undefined) return yield* waitError(wait, "login attempts")
          return {
            succeeded: Effect.promise(() =>
              Promise.all([store.reset(user), peer === undefined ? undefined : store.release(peer)])
            ).pipe(Effect.asVoid)
          }
        }),
      register: (address) =>
        Effect.gen(function* () {
          const wait = yield* Effect.promise(() =>
            store.reserve([{
              key: `register-ip:${addressKey(address)}`,
              max: options.registrationsPerAddress,
              windowMillis: options.registrationWindowMillis
            }])
          )
          yield* reportOutage
          if (wait !== undefined) return yield* waitError(wait, "registrations from this address")
        })
    })
  }

  /** Counters in this process, timed by the `Clock` the layer is built with. */
  static readonly layerMemory = (options: ThrottleOptions) =>
    Layer.effect(
      LoginThrottle,
      Effect.map(Clock.Clock, (clock) =>
        LoginThrottle.make(options, memoryCounters(() => clock.currentTimeMillisUnsafe())))
    )

  /**
   * Counters shared through Redis at `url` (keys under `prefix`, default
   * `sluice:login:`), this instance's own while Redis does not answer (timed by
   * the `Clock` the layer is built with; Redis keeps its own time).
   */
  static readonly layerRedis = (options: ThrottleOptions, url: string, prefix = "sluice:login:") =>
    Layer.effect(
      LoginThrottle,
      Effect.gen(function* () {
        const clock = yield* Clock.Clock
        const store = yield* Effect.acquireRelease(
          Effect.sync(() => redisCounters(url, prefix, memoryCounters(() => clock.currentTimeMillisUnsafe()))),
          (opened) => Effect.promise(() => opened.close())
        )
        return LoginThrottle.make(options, store)
      })
    )
}
