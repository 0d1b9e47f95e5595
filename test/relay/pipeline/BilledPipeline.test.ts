/**
 * The billed pipeline (`src/relay/pipeline/BilledPipeline.ts`) with Layer doubles and no gateway: a fake
 * `ChannelRouter` (health reports), `RateLimiter` (permits), `Ledger` (holds, bookings, rows), `GatewaySettings`
 * and `UpstreamClient` (scripted answers), or an attempt that is a plain function; time from `TestClock`. What each
 * case checks: no new attempt after `request_deadline_ms`; a caller that leaves mid-attempt gets every hold back
 * and is charged nothing; a refused hold makes no attempt; an attempt that fails after the hold is logged, the next
 * candidate is tried and the hold is booked once, or given back when none answers.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { Deferred, Effect, Fiber, Layer } from "effect"
import { HttpServerResponse } from "effect/http"
import { TestClock } from "effect/testing"
import { emptyUsage } from "../../../src/canonical/Usage.ts"
import type { UpstreamFailed } from "../../../src/errors/GatewayError.ts"
import { pipelineServices } from "../../../src/relay/pipeline/BilledPipeline.ts"
import { postForJson, runOneShot } from "../../../src/relay/pipeline/OneShot.ts"
import { classifyOpenAiError } from "../../../src/formats/openai/shared/ErrorBody.ts"
import { GatewaySettings } from "../../../src/services/GatewaySettings.ts"
import { UpstreamClient } from "../../../src/upstreams/transport/UpstreamClient.ts"
import type { Candidate } from "../../../src/services/ChannelRouter.ts"
import { candidate, doubles, newSeen, principal, type Seen, serverError, upstreamDouble } from "./PipelineDoubles.ts"

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

Deno.test("billed pipeline: through the upstream client, a vendor's 503 fails over and the next 200 is billed", () => {
  const seen = newSeen()
  const calls: Array<string> = []
  const upstream = upstreamDouble({
    "https://one.test/v1/x": { status: 503, body: JSON.stringify({ error: { message: "overloaded" } }) },
    "https://two.test/v1/x": { status: 200, body: JSON.stringify({ answer: "from two" }) }
  }, calls)
  return Effect.runPromise(
    Effect.gen(function* () {
      const client = yield* UpstreamClient
      const settings = yield* GatewaySettings
      const hosts: Record<number, string> = { 1: "https://one.test", 2: "https://two.test" }
      const response = yield* request(seen, [candidate(1), candidate(2)], (chosen) =>
        Effect.map(
          postForJson(
            client,
            settings,
            chosen.channel,
            { url: `${hosts[chosen.channel.id]}/v1/x`, headers: {} },
            "{}",
            classifyOpenAiError
          ),
          ({ json }) => (json as { answer: string }).answer
        ))
      strictEqual(response.status, 200)
      deepStrictEqual(calls, ["https://one.test/v1/x", "https://two.test/v1/x"])
      deepStrictEqual(seen.reports, [[1, "Retryable"], [2, "Success"]])
      deepStrictEqual(seen.rows.map((row) => [row.channelId, row.cost, row.status]), [[1, 0n, 503], [2, 40n, 200]])
    }).pipe(Effect.provide(Layer.mergeAll(doubles(seen), upstream, TestClock.layer())))
  )
})
