import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { ConfigProvider, Effect, Fiber, type Scope } from "effect"
import { TestClock } from "effect/testing"
import type { RateLimited } from "../../src/errors/GatewayError.ts"
import { type Permit, RateLimiter, type Subject } from "../../src/services/RateLimiter.ts"
import { concurrencyLeaseMs } from "../../src/services/rate-limit/RedisCounts.ts"
import {
  limiterFrom,
  type LogLine,
  redisClient,
  redisPrefix,
  redisProxy,
  redisUrl,
  runWithLogs
} from "./rate-limit/Support.ts"

const windowMs = 1_000

const token = (limits: Subject["limits"]): Subject => ({ key: "token:12", limits })
const user = (limits: Subject["limits"]): Subject => ({ key: "user:3", limits })

const refused = (effect: Effect.Effect<Permit, RateLimited>) => Effect.flip(effect)

/** The same scenario against the memory layer (driven by TestClock) and Redis (real time, 1 s window). */
interface Backend {
  readonly name: string
  readonly windowMs: number
  readonly limiter: Effect.Effect<RateLimiter["Service"], never, Scope.Scope>
  /** Lets exactly `milliseconds` pass (memory) or at least that much (Redis). */
  readonly pass: (milliseconds: number) => Effect.Effect<void>
  readonly run: <A, E>(program: Effect.Effect<A, E, Scope.Scope>) => Promise<A>
}

const memory: Backend = {
  name: "memory",
  windowMs: 60_000,
  limiter: limiterFrom(RateLimiter.layerMemory),
  pass: (milliseconds) => TestClock.adjust(milliseconds),
  run: (program) => runWithLogs(program.pipe(Effect.provide(TestClock.layer())))
}

const redis: Backend = {
  name: "redis",
  windowMs,
  limiter: Effect.flatMap(
    redisPrefix,
    (prefix) => limiterFrom(RateLimiter.layerRedis({ url: redisUrl, prefix, windowMs }))
  ),
  pass: (milliseconds) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, milliseconds + 50))),
  run: async (program) => {
    const logs: Array<LogLine> = []
    const result = await runWithLogs(program, logs)
    // A warning would mean the limiter fell back to local counts and the test proved nothing about Redis.
    deepStrictEqual(logs.filter((line) => line.level === "Warn"), [])
    return result
  }
}

for (const backend of [memory, redis]) {
  Deno.test(`${backend.name}: rpm admits N in a window, refuses N+1, admits again when the window passes`, () =>
    backend.run(Effect.gen(function* () {
      const limiter = yield* backend.limiter
      const subjects = [token({ rpm: 3 })]
      for (let index = 0; index < 3; index += 1) yield* limiter.acquire(subjects)
      const error = yield* refused(limiter.acquire(subjects))
      strictEqual(error._tag, "RateLimited")
      ok(error.retryAfterSeconds >= 1 && error.retryAfterSeconds <= Math.ceil(backend.windowMs / 1_000))
      ok(error.message.includes("3 requests per") && error.message.includes("this API key"), error.message)
      ok(!/token:|user:|\b12\b/.test(error.message), `no internal id in the message: ${error.message}`)
      yield* backend.pass(backend.windowMs)
      yield* limiter.acquire(subjects)
    })))

  Deno.test(`${backend.name}: tpm refuses once the recorded tokens reach the limit, admits after the window`, () =>
    backend.run(Effect.gen(function* () {
      const limiter = yield* backend.limiter
      const subjects = [token({ tpm: 100 })]
      yield* (yield* limiter.acquire(subjects)).release(60)
      yield* (yield* limiter.acquire(subjects)).release(39)
      const last = yield* limiter.acquire(subjects) // 99 < 100: admitted
      yield* last.release(1)
      const error = yield* refused(limiter.acquire(subjects))
      ok(error.message.includes("100 tokens per"), error.message)
      ok(error.retryAfterSeconds >= 1)
      yield* backend.pass(backend.windowMs)
      yield* limiter.acquire(subjects)
    })))

  Deno.test(`${backend.name}: concurrency frees a slot on release, and release is idempotent`, () =>
    backend.run(Effect.gen(function* () {
      const limiter = yield* backend.limiter
      const subjects = [token({ concurrency: 2 })]
      const first = yield* limiter.acquire(subjects)
      yield* limiter.acquire(subjects)
      const error = yield* refused(limiter.acquire(subjects))
      strictEqual(error.retryAfterSeconds, 1)
      ok(error.message.includes("2 concurrent requests"), error.message)
      yield* first.release(0)
      yield* first.release(0)
      yield* first.release(0)
      yield* limiter.acquire(subjects) // the freed slot
      yield* refused(limiter.acquire(subjects)) // a repeated release freed nothing more
    })))

  Deno.test(`${backend.name}: all or none across subjects`, () =>
    backend.run(Effect.gen(function* () {
      const limiter = yield* backend.limiter
      const both = [token({ rpm: 1 }), user({ rpm: 3 })]
      yield* limiter.acquire(both)
      const error = yield* refused(limiter.acquire(both))
      ok(error.message.includes("this API key") && !error.message.includes("this account"), error.message)
      // The refused request did not count for the user: two more fit under its limit of 3.
      yield* limiter.acquire([user({ rpm: 3 })])
      yield* limiter.acquire([user({ rpm: 3 })])
      yield* refused(limiter.acquire([user({ rpm: 3 })]))
    })))

  Deno.test(`${backend.name}: missing, zero and negative limits mean no limit`, () =>
    backend.run(Effect.gen(function* () {
      const limiter = yield* backend.limiter
      for (let index = 0; index < 20; index += 1) {
        yield* limiter.acquire([token({}), user({ rpm: 0, tpm: -5, concurrency: Number.NaN })])
      }
      yield* limiter.acquire([])
    })))
}

Deno.test("memory: the rpm window slides and is exact at its edge", () =>
  memory.run(Effect.gen(function* () {
    const limiter = yield* memory.limiter
    const subjects = [token({ rpm: 2 })]
    yield* limiter.acquire(subjects) // t = 0
    yield* TestClock.adjust(30_000)
    yield* limiter.acquire(subjects) // t = 30 s
    const full = yield* refused(limiter.acquire(subjects))
    strictEqual(full.retryAfterSeconds, 30) // the request of t = 0 leaves at t = 60 s
    yield* TestClock.adjust(29_999)
    strictEqual((yield* refused(limiter.acquire(subjects))).retryAfterSeconds, 1) // 1 ms left, rounded up
    yield* TestClock.adjust(1)
    yield* limiter.acquire(subjects) // t = 60 s: exactly one slot came back, no fixed bucket reset
    strictEqual((yield* refused(limiter.acquire(subjects))).retryAfterSeconds, 30)
  })))

Deno.test("memory: tpm Retry-After waits until enough tokens leave the window", () =>
  memory.run(Effect.gen(function* () {
    const limiter = yield* memory.limiter
    const subjects = [token({ tpm: 100 })]
    yield* (yield* limiter.acquire(subjects)).release(10) // t = 0
    yield* TestClock.adjust(20_000)
    yield* (yield* limiter.acquire(subjects)).release(95) // t = 20 s; total 105
    yield* TestClock.adjust(10_000)
    // Dropping the 10 of t = 0 leaves 95 < 100: retry at t = 60 s, 30 s from now.
    strictEqual((yield* refused(limiter.acquire(subjects))).retryAfterSeconds, 30)
  })))

Deno.test("memory: Retry-After is the longest wait among the limits hit, and the message names each", () =>
  memory.run(Effect.gen(function* () {
    const limiter = yield* memory.limiter
    yield* limiter.acquire([token({ rpm: 1 })])
    yield* TestClock.adjust(40_000)
    yield* limiter.acquire([user({ rpm: 1 })])
    const error = yield* refused(limiter.acquire([token({ rpm: 1 }), user({ rpm: 1 })]))
    strictEqual(error.retryAfterSeconds, 60)
    ok(error.message.includes("this API key") && error.message.includes("this account"), error.message)
    ok(!error.message.includes("token:12") && !error.message.includes("user:3"), error.message)
  })))

Deno.test("memory: an interrupted request frees its slot through the caller's finalizer", () =>
  memory.run(Effect.gen(function* () {
    const limiter = yield* memory.limiter
    const subjects = [token({ concurrency: 1 })]
    const request = Effect.acquireRelease(limiter.acquire(subjects), (permit) => permit.release(0)).pipe(
      Effect.andThen(Effect.never),
      Effect.scoped
    )
    const fiber = yield* Effect.forkChild(request)
    yield* Effect.yieldNow
    yield* refused(limiter.acquire(subjects))
    yield* Fiber.interrupt(fiber)
    yield* limiter.acquire(subjects)
  })))

Deno.test("redis: two gateways sharing one Redis share the counts", () =>
  redis.run(Effect.gen(function* () {
    const prefix = yield* redisPrefix
    const first = yield* limiterFrom(RateLimiter.layerRedis({ url: redisUrl, prefix, windowMs }))
    const second = yield* limiterFrom(RateLimiter.layerRedis({ url: redisUrl, prefix, windowMs }))
    const rpm = [token({ rpm: 2 })]
    yield* first.acquire(rpm)
    yield* second.acquire(rpm)
    yield* refused(first.acquire(rpm))
    yield* refused(second.acquire(rpm))

    const slots = [user({ concurrency: 1 })]
    const held = yield* first.acquire(slots)
    yield* refused(second.acquire(slots))
    yield* held.release(0)
    yield* second.acquire(slots)

    const tokens = [{ key: "token:99", limits: { tpm: 50 } }]
    yield* (yield* first.acquire(tokens)).release(50)
    yield* refused(second.acquire(tokens))
  })))

Deno.test("redis: every key carries a TTL, concurrency slots a lease", () =>
  redis.run(Effect.gen(function* () {
    const prefix = yield* redisPrefix
    const client = yield* redisClient
    const limiter = yield* limiterFrom(RateLimiter.layerRedis({ url: redisUrl, prefix, windowMs }))
    const permit = yield* limiter.acquire([token({ rpm: 5, tpm: 500, concurrency: 5 })])
    const lease = yield* Effect.promise(() => client.pttl(`${prefix}token:12:inflight`))
    ok(lease > windowMs && lease <= concurrencyLeaseMs, `lease ${lease}`)
    const [, deadline] = yield* Effect.promise(() => client.zrange(`${prefix}token:12:inflight`, 0, -1, "WITHSCORES"))
    const [seconds, micros] = yield* Effect.promise(() => client.time())
    const serverNow = Number(seconds) * 1_000 + Math.floor(Number(micros) / 1_000)
    ok(Math.abs(Number(deadline) - serverNow - concurrencyLeaseMs) < 1_000, `deadline ${deadline}`)
    yield* permit.release(7)
    const keys = (yield* Effect.promise(() => client.keys(`${prefix}*`))).toSorted()
    deepStrictEqual(keys, [`${prefix}token:12:rpm`, `${prefix}token:12:tpm`, `${prefix}token:12:tpm:total`])
    for (const key of keys) {
      const ttl = yield* Effect.promise(() => client.pttl(key))
      ok(ttl > 0 && ttl <= windowMs, `${key} ttl ${ttl}`)
    }
    strictEqual(yield* Effect.promise(() => client.get(`${prefix}token:12:tpm:total`)), "7")
  })))

Deno.test("redis: a lost script cache is reloaded (NOSCRIPT)", () =>
  redis.run(Effect.gen(function* () {
    const prefix = yield* redisPrefix
    const client = yield* redisClient
    const limiter = yield* limiterFrom(RateLimiter.layerRedis({ url: redisUrl, prefix, windowMs }))
    yield* Effect.promise(() => client.script("FLUSH"))
    yield* limiter.acquire([token({ rpm: 1 })])
    yield* refused(limiter.acquire([token({ rpm: 1 })]))
  })))

Deno.test("redis unreachable: requests are admitted under local limits, one warning per outage", async () => {
  const logs: Array<LogLine> = []
  await runWithLogs(
    Effect.gen(function* () {
      const limiter = yield* limiterFrom(RateLimiter.layerRedis({ url: "redis://127.0.0.1:1", windowMs }))
      const started = Date.now()
      const subjects = [token({ rpm: 3 })]
      for (let index = 0; index < 3; index += 1) yield* limiter.acquire(subjects)
      const error = yield* refused(limiter.acquire(subjects))
      strictEqual(error._tag, "RateLimited")
      ok(Date.now() - started < 2_000, "an outage fails fast")
    }),
    logs
  )
  const warnings = logs.filter((line) => line.level === "Warn")
  strictEqual(warnings.length, 1, JSON.stringify(logs))
  ok(warnings[0]!.message.includes("cannot reach Redis"))
})

Deno.test("redis outage and recovery: local counts meanwhile, shared counts again afterwards", async () => {
  const logs: Array<LogLine> = []
  await runWithLogs(
    Effect.gen(function* () {
      const prefix = yield* redisPrefix
      const proxy = yield* redisProxy
      const limiter = yield* limiterFrom(RateLimiter.layerRedis({ url: proxy.url, prefix, windowMs: 60_000 }))
      const direct = yield* limiterFrom(RateLimiter.layerRedis({ url: redisUrl, prefix, windowMs: 60_000 }))
      const slots = [token({ concurrency: 1 })]

      const held = yield* limiter.acquire(slots) // through Redis
      yield* refused(direct.acquire(slots))

      proxy.cut()
      const local = yield* limiter.acquire(slots) // Redis gone: local counts start empty
      yield* refused(limiter.acquire(slots))
      yield* held.release(0) // fails now, replayed on recovery
      yield* local.release(0)

      proxy.restore()
      const recoveryLogged = () => logs.some((line) => line.message.includes("reached Redis again"))
      for (let attempt = 0; attempt < 50 && !recoveryLogged(); attempt += 1) {
        // The first acquire Redis answers is refused by the stale slot of `held`; the recovery
        // then replays the release that failed during the outage.
        yield* Effect.exit(limiter.acquire(slots))
        if (!recoveryLogged()) yield* Effect.sleep("100 millis")
      }
      ok(recoveryLogged(), JSON.stringify(logs))
      yield* Effect.sleep("100 millis") // replays run in the background
      yield* direct.acquire(slots) // the replayed release freed the shared slot
      yield* refused(limiter.acquire(slots)) // and the counts are shared again
    }),
    logs
  )
  strictEqual(logs.filter((line) => line.level === "Warn").length, 1, JSON.stringify(logs))
})

Deno.test("redis too slow: an acquire gives up after ~200 ms and the slot it may have taken is freed later", async () => {
  const logs: Array<LogLine> = []
  await runWithLogs(
    Effect.gen(function* () {
      const prefix = yield* redisPrefix
      const proxy = yield* redisProxy
      const client = yield* redisClient
      const limiter = yield* limiterFrom(RateLimiter.layerRedis({ url: proxy.url, prefix, windowMs: 60_000 }))
      const slots = [token({ concurrency: 1 })]
      yield* limiter.acquire([user({ rpm: 100 })]) // connected and scripts cached

      proxy.stall()
      const started = Date.now()
      const local = yield* limiter.acquire(slots)
      const elapsed = Date.now() - started
      ok(elapsed >= 150 && elapsed < 1_000, `gave up after ${elapsed} ms`)
      strictEqual(logs.filter((line) => line.level === "Warn").length, 1, JSON.stringify(logs))
      yield* local.release(0)

      proxy.unstall() // the stalled script now runs in Redis and takes a slot nobody will release
      yield* Effect.sleep("100 millis")
      strictEqual(yield* Effect.promise(() => client.zcard(`${prefix}token:12:inflight`)), 1)
      yield* limiter.acquire([user({ rpm: 100 })]) // Redis answers: recovery replays the slot free
      yield* Effect.sleep("100 millis")
      strictEqual(yield* Effect.promise(() => client.zcard(`${prefix}token:12:inflight`)), 0)
      ok(logs.some((line) => line.message.includes("reached Redis again")), JSON.stringify(logs))
    }),
    logs
  )
})

Deno.test("layerConfig: Redis when REDIS_URL is set, memory when it is missing or blank", () =>
  runWithLogs(Effect.gen(function* () {
    const subject = { key: `test:${crypto.randomUUID()}`, limits: { rpm: 1 } }
    const client = yield* redisClient
    yield* Effect.addFinalizer(() =>
      Effect.promise(() => client.del(`sluice:ratelimit:${subject.key}:rpm`)).pipe(Effect.asVoid)
    )
    const fromConfig = (config: Record<string, string>) =>
      limiterFrom(RateLimiter.layerConfig).pipe(
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(config)))
      )
    const shared = yield* limiterFrom(RateLimiter.layerRedis({ url: redisUrl }))

    const memoryOnly = yield* fromConfig({})
    yield* memoryOnly.acquire([subject])
    yield* (yield* fromConfig({ REDIS_URL: "  " })).acquire([subject])
    yield* shared.acquire([subject]) // neither touched Redis

    const viaRedis = yield* fromConfig({ REDIS_URL: redisUrl })
    yield* refused(viaRedis.acquire([subject])) // sees the request `shared` recorded
  })))
