/**
 * The attempt loop: retryable failures move on, a request error stops, the
 * caller's own error ends the loop at once, what each attempt tells the
 * health state, and no retry past the deadline (Effect's `Clock`, driven by
 * `TestClock`).
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { Effect, Logger, References } from "effect"
import { TestClock } from "effect/testing"
import { InvalidRequest, UpstreamFailed } from "../../src/errors/GatewayError.ts"
import { failover, outcomeOf } from "../../src/relay/Failover.ts"
import type { AttemptOutcome, Candidate } from "../../src/services/ChannelRouter.ts"

const candidate = (id: number) => ({ channel: { id }, upstreamModel: "m" }) as unknown as Candidate
const failed = (kind: UpstreamFailed["kind"], status: number) => new UpstreamFailed({ kind, status, message: "x" })

const runLoop = (results: ReadonlyArray<UpstreamFailed | InvalidRequest | string>) => {
  const reports: Array<[number, AttemptOutcome["_tag"]]> = []
  const logged: Array<number> = []
  const candidates = results.map((_, index) => candidate(index + 1))
  const effect = failover({
    candidates,
    maxAttempts: candidates.length,
    deadline: Date.now() + 60_000,
    attempt: (_candidate, attempt) => {
      const result = results[attempt - 1]
      return typeof result === "string" ? Effect.succeed(result) : Effect.fail(result)
    },
    report: (c, outcome) => Effect.sync(() => void reports.push([c.channel.id, outcome._tag])),
    logFailed: (c) => Effect.sync(() => void logged.push(c.channel.id))
  })
  return Effect.runPromise(Effect.result(effect)).then((result) => ({ result, reports, logged }))
}

Deno.test("failover: retryable failures move on to the next candidate; the accepted one is reported", async () => {
  const { result, reports, logged } = await runLoop([failed("server", 500), failed("throttled", 429), "answer"])
  strictEqual(result._tag, "Success")
  if (result._tag === "Success") deepStrictEqual([result.success.attempt, result.success.value], [3, "answer"])
  deepStrictEqual(reports, [[1, "Retryable"], [2, "Retryable"], [3, "Success"]])
  deepStrictEqual(logged, [1, 2])
})

Deno.test("failover: a request error goes straight back, tells the health state nothing and tries no other candidate", async () => {
  const { result, reports, logged } = await runLoop([failed("rejected", 400), "never"])
  strictEqual(result._tag, "Failure")
  deepStrictEqual(reports, [])
  deepStrictEqual(logged, [1])
})

Deno.test("failover: the caller's own error (a download) ends the loop without a report or a log row", async () => {
  const { result, reports, logged } = await runLoop([new InvalidRequest({ message: "bad image", param: "x" }), "never"])
  strictEqual(result._tag, "Failure")
  if (result._tag === "Failure") strictEqual(result.failure._tag, "InvalidRequest")
  deepStrictEqual([reports, logged], [[], []])
})

Deno.test("outcomeOf: refused keys disable, other retryable failures cool, request errors tell nothing", () => {
  strictEqual(outcomeOf(failed("unauthorized", 401))?._tag, "KeyRejected")
  strictEqual(outcomeOf(failed("quota", 429))?._tag, "KeyRejected")
  strictEqual(outcomeOf(failed("server", 503))?._tag, "Retryable")
  strictEqual(outcomeOf(failed("rejected", 400)), undefined)
})

Deno.test("failover: no new attempt once the deadline has passed, by Effect's Clock to the millisecond (TestClock)", () =>
  Effect.runPromise(
    Effect.gen(function* () {
      const started: Array<number> = []
      const effect = failover({
        candidates: [candidate(1), candidate(2), candidate(3)],
        maxAttempts: 3,
        deadline: 1_000,
        // The first attempt fails at the deadline (a retry may still start), the second 1 ms past it.
        attempt: (_candidate, attempt) =>
          Effect.andThen(
            Effect.sync(() => void started.push(attempt)),
            Effect.andThen(TestClock.adjust(attempt === 1 ? 1_000 : 1), Effect.fail(failed("server", 500)))
          ),
        report: () => Effect.void,
        logFailed: () => Effect.void
      })
      const result = yield* Effect.result(effect)
      strictEqual(result._tag, "Failure")
      deepStrictEqual(started, [1, 2])
    }).pipe(Effect.provide(TestClock.layer()))
  ))

Deno.test("failover: a failed attempt is logged in the request's fiber, with its annotations, before the next attempt", async () => {
  const lines: Array<{ readonly message: string; readonly requestId: unknown }> = []
  const order: Array<string> = []
  const collector = Logger.make((options) => {
    const parts = Array.isArray(options.message) ? options.message : [options.message]
    const annotations = options.fiber.getRef(References.CurrentLogAnnotations)
    lines.push({ message: parts.map(String).join(" "), requestId: annotations.request_id })
  })
  const effect = failover({
    candidates: [candidate(1), candidate(2)],
    maxAttempts: 2,
    deadline: Date.now() + 60_000,
    attempt: (_candidate, attempt) =>
      Effect.andThen(
        Effect.sync(() => void order.push(`attempt ${attempt}`)),
        attempt === 1 ? Effect.fail(failed("server", 500)) : Effect.succeed("answer")
      ),
    report: (c, outcome) => Effect.sync(() => void order.push(`report ${c.channel.id} ${outcome._tag}`)),
    logFailed: (c, attempt) =>
      Effect.andThen(
        Effect.sync(() => void order.push(`log ${attempt}`)),
        Effect.logWarning(`attempt ${attempt} on channel ${c.channel.id} failed`)
      )
  })
  const accepted = await effect.pipe(
    Effect.annotateLogs({ request_id: "req-test-1" }),
    Effect.provide(Logger.layer([collector])),
    Effect.runPromise
  )
  strictEqual(accepted.value, "answer")
  deepStrictEqual(lines, [{ message: "attempt 1 on channel 1 failed", requestId: "req-test-1" }])
  deepStrictEqual(order, ["attempt 1", "log 1", "report 1 Retryable", "attempt 2", "report 2 Success"])
})
