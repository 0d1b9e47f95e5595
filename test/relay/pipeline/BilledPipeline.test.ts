/**
 * The billed pipeline (`src/relay/pipeline/BilledPipeline.ts`) with Layer doubles and no gateway: a fake
 * `ChannelRouter` (health reports), `RateLimiter` (permits), `Ledger` (holds, bookings, rows) and
 * `GatewaySettings`, an upstream that is a plain attempt function, time from `TestClock`. What each case checks:
 * no new attempt after `request_deadline_ms`; a caller that leaves mid-attempt gets every hold back and is
 * charged nothing; a refused hold makes no attempt; an attempt that fails after the hold is logged, the next
 * candidate is tried and the hold is booked once, or given back when none answers.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { Deferred, Effect, Fiber, Layer } from "effect"
import { HttpServerResponse } from "effect/http"
import { TestClock } from "effect/testing"
import { emptyUsage } from "../../../src/canonical/Usage.ts"
import { Ledger } from "../../../src/billing/Ledger.ts"
import type { Hold } from "../../../src/billing/QuotaLedger.ts"
import type { UsageRow } from "../../../src/billing/UsageLog.ts"
import { InsufficientQuota, UpstreamFailed } from "../../../src/errors/GatewayError.ts"
import { pipelineServices } from "../../../src/relay/pipeline/BilledPipeline.ts"
import { runOneShot } from "../../../src/relay/pipeline/OneShot.ts"
import type { Principal } from "../../../src/services/Auth.ts"
import { type AttemptOutcome, type Candidate, ChannelRouter } from "../../../src/services/ChannelRouter.ts"
import { GatewaySettings, type Settings } from "../../../src/services/GatewaySettings.ts"
import { RateLimiter } from "../../../src/services/RateLimiter.ts"

const principal: Principal = {
  tokenId: 1n,
  tokenName: "main",
  userId: 2n,
  group: "default",
  models: undefined,
  unlimitedQuota: false,
  expiresAt: undefined,
  tokenLimits: undefined,
  userLimits: undefined
}

const candidate = (id: number) =>
  ({
    channel: { id, name: `channel-${id}`, type: "openai" },
    key: { position: 0 },
    upstreamModel: "m"
  }) as unknown as Candidate

const serverError = new UpstreamFailed({ kind: "server", status: 500, message: "upstream broke" })

/** What the doubles saw: holds taken and given back, bookings, rows, health reports, permits released. */
interface Seen {
  readonly held: Array<bigint>
  readonly released: Array<bigint>
  readonly booked: Array<[bigint, bigint]>
  readonly rows: Array<UsageRow>
  readonly reports: Array<[number, AttemptOutcome["_tag"]]>
  readonly permits: Array<number>
  readonly attempts: Array<number>
}

/** The pipeline's services as Layer doubles; `refuseHold` makes the ledger refuse every hold. */
const doubles = (seen: Seen, options: { readonly refuseHold?: boolean; readonly deadlineMs?: number } = {}) =>
  Layer.mergeAll(
    Layer.succeed(ChannelRouter)(
      {
        report: (chosen: Candidate, outcome: AttemptOutcome) =>
          Effect.sync(() => void seen.reports.push([chosen.channel.id, outcome._tag]))
      } as unknown as typeof ChannelRouter.Service
    ),
    Layer.succeed(RateLimiter)({
      acquire: () => Effect.succeed({ release: (tokens: number) => Effect.sync(() => void seen.permits.push(tokens)) })
    }),
    Layer.succeed(Ledger)(
      {
        hold: (_principal: Principal, amount: bigint) =>
          options.refuseHold === true
            ? Effect.fail(new InsufficientQuota({ required: amount, remaining: 0n, scope: "user" }))
            : Effect.sync((): Hold => {
              seen.held.push(amount)
              return { tokenId: principal.tokenId, userId: principal.userId, amount, settled: false }
            }),
        book: (hold: Hold | undefined, cost: bigint, row: (charged: bigint) => UsageRow) =>
          Effect.sync(() => {
            seen.booked.push([hold?.amount ?? 0n, cost])
            seen.rows.push(row(cost))
            return cost
          }),
        release: (hold: Hold) => Effect.sync(() => void seen.released.push(hold.amount)),
        record: (row: UsageRow) => void seen.rows.push(row),
        durable: Effect.succeed(true),
        withdraw: () => false
      } as unknown as typeof Ledger.Service
    ),
    Layer.succeed(GatewaySettings)({ retryTimes: 2, requestDeadlineMs: options.deadlineMs ?? 60_000 } as Settings)
  )

const newSeen = (): Seen => ({ held: [], released: [], booked: [], rows: [], reports: [], permits: [], attempts: [] })

/** One billed one-answer request over `candidates`, each attempt `attempt`; cost 40 units, hold 100. */
const request = (
  seen: Seen,
  candidates: ReadonlyArray<Candidate>,
  attempt: (chosen: Candidate, index: number) => Effect.Effect<string, UpstreamFailed>
) =>
  Effect.gen(function* () {
    const services = yield* pipelineServices
    return yield* runOneShot(services, {
      principal,
      groupLimits: undefined,
      model: "test-model",
      price: { free: false } as never,
      ratio: 1_000_000_000n,
      promptTokens: 0,
      started: 0,
      hold: 100n,
      candidates,
      attempt: (chosen) => {
        seen.attempts.push(chosen.channel.id)
        return attempt(chosen, seen.attempts.length)
      },
      usageOf: () => emptyUsage,
      costOf: () => 40n,
      respond: (answer) => HttpServerResponse.text(answer)
    })
  })

Deno.test("billed pipeline: no new attempt after request_deadline_ms; the hold goes back, nothing charged", () => {
  const seen = newSeen()
  return Effect.runPromise(
    Effect.gen(function* () {
      const result = yield* Effect.result(
        // The first attempt fails 1 ms past the deadline: the second candidate is never tried.
        request(
          seen,
          [candidate(1), candidate(2), candidate(3)],
          () => Effect.andThen(TestClock.adjust(1_001), Effect.fail(serverError))
        )
      )
      strictEqual(result._tag, "Failure")
      if (result._tag === "Failure") strictEqual(result.failure._tag, "UpstreamFailed")
      deepStrictEqual(seen.attempts, [1])
      deepStrictEqual([seen.held, seen.released, seen.booked], [[100n], [100n], []])
      deepStrictEqual(seen.rows.map((row) => [row.channelId, row.cost, row.status]), [[1, 0n, 500]])
      deepStrictEqual(seen.permits, [0])
    }).pipe(Effect.provide(Layer.merge(doubles(seen, { deadlineMs: 1_000 }), TestClock.layer())))
  )
})

Deno.test("billed pipeline: within the deadline a failed attempt moves on (TestClock at the deadline exactly)", () => {
  const seen = newSeen()
  return Effect.runPromise(
    Effect.gen(function* () {
      const result = yield* Effect.result(
        request(
          seen,
          [candidate(1), candidate(2)],
          (_chosen, index) =>
            index === 1 ? Effect.andThen(TestClock.adjust(1_000), Effect.fail(serverError)) : Effect.succeed("ok")
        )
      )
      strictEqual(result._tag, "Success")
      deepStrictEqual(seen.attempts, [1, 2])
    }).pipe(Effect.provide(Layer.merge(doubles(seen, { deadlineMs: 1_000 }), TestClock.layer())))
  )
})

Deno.test("billed pipeline: a caller that leaves mid-attempt gets its hold back and is charged nothing", () => {
  const seen = newSeen()
  return Effect.runPromise(
    Effect.gen(function* () {
      const inAttempt = yield* Deferred.make<void>()
      const fiber = yield* Effect.forkChild(
        request(
          seen,
          [candidate(1), candidate(2)],
          () => Effect.andThen(Deferred.succeed(inAttempt, undefined), Effect.never)
        )
      )
      yield* Deferred.await(inAttempt)
      yield* Fiber.interrupt(fiber)
      deepStrictEqual(seen.attempts, [1])
      deepStrictEqual([seen.held, seen.released, seen.booked, seen.rows], [[100n], [100n], [], []])
      deepStrictEqual(seen.reports, [])
      deepStrictEqual(seen.permits, [0])
    }).pipe(Effect.provide(Layer.merge(doubles(seen), TestClock.layer())))
  )
})

Deno.test("billed pipeline: a refused hold makes no attempt, charges nothing and releases the permit", () => {
  const seen = newSeen()
  return Effect.runPromise(
    Effect.gen(function* () {
      const result = yield* Effect.result(request(seen, [candidate(1)], () => Effect.succeed("never")))
      strictEqual(result._tag, "Failure")
      if (result._tag === "Failure") strictEqual(result.failure._tag, "InsufficientQuota")
      deepStrictEqual([seen.attempts, seen.held, seen.released, seen.booked, seen.rows], [[], [], [], [], []])
      deepStrictEqual(seen.permits, [0])
    }).pipe(Effect.provide(Layer.merge(doubles(seen, { refuseHold: true }), TestClock.layer())))
  )
})

Deno.test("billed pipeline: an attempt that fails after the hold is logged, the next candidate answers, one booking", () => {
  const seen = newSeen()
  return Effect.runPromise(
    Effect.gen(function* () {
      const response = yield* request(
        seen,
        [candidate(1), candidate(2)],
        (chosen) => chosen.channel.id === 1 ? Effect.fail(serverError) : Effect.succeed("answer")
      )
      strictEqual(response.headers["x-sluice-cost"], "0.000040")
      deepStrictEqual(seen.attempts, [1, 2])
      deepStrictEqual(seen.reports, [[1, "Retryable"], [2, "Success"]])
      // The failed attempt's row (no charge) and the accepted one's, charged the cost against the one hold.
      deepStrictEqual(seen.rows.map((row) => [row.channelId, row.attempt, row.cost, row.status]), [
        [1, 1, 0n, 500],
        [2, 2, 40n, 200]
      ])
      deepStrictEqual([seen.held, seen.booked, seen.released], [[100n], [[100n, 40n]], []])
    }).pipe(Effect.provide(Layer.merge(doubles(seen), TestClock.layer())))
  )
})

Deno.test("billed pipeline: when every attempt fails after the hold, each is logged and the hold goes back", () => {
  const seen = newSeen()
  return Effect.runPromise(
    Effect.gen(function* () {
      const result = yield* Effect.result(request(seen, [candidate(1), candidate(2)], () => Effect.fail(serverError)))
      strictEqual(result._tag, "Failure")
      deepStrictEqual(seen.attempts, [1, 2])
      deepStrictEqual(seen.rows.map((row) => [row.channelId, row.cost]), [[1, 0n], [2, 0n]])
      deepStrictEqual([seen.held, seen.released, seen.booked], [[100n], [100n], []])
      deepStrictEqual(seen.permits, [0])
    }).pipe(Effect.provide(Layer.merge(doubles(seen), TestClock.layer())))
  )
})
