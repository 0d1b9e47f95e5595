/**
 * The task submit (`src/relay/pipeline/TaskSubmit.ts`) as one entry of the billed pipeline, with the Layer doubles
 * of `PipelineDoubles.ts` and `TestClock`: the accepted attempt's row gets the submit's common fields and the charge
 * is the hold, whole; a failed attempt before it is logged and the next candidate tried; a submit that no candidate
 * accepts leaves no row and charges nothing.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { Effect, Layer } from "effect"
import { HttpServerResponse } from "effect/http"
import { TestClock } from "effect/testing"
import { submitTask, taskSubmitServices } from "../../../src/relay/pipeline/TaskSubmit.ts"
import type { Candidate } from "../../../src/services/ChannelRouter.ts"
import { candidate, doubles, newSeen, principal, type Seen, serverError } from "./PipelineDoubles.ts"

/** A video submit of model `video-test` over `candidates`, held 700 units; the channels in `failing` fail. */
const submit = (seen: Seen, candidates: ReadonlyArray<Candidate>, failing: ReadonlySet<number>) =>
  Effect.gen(function* () {
    const services = yield* taskSubmitServices
    return yield* submitTask(services, {
      principal,
      model: "video-test",
      priced: { price: { free: false } as never, ratio: 1_000_000_000n, limits: undefined },
      hold: 700n,
      candidates,
      attempt: (chosen, insert) => {
        seen.attempts.push(chosen.channel.id)
        return failing.has(chosen.channel.id) ? Effect.fail(serverError) : insert(chosen, {
          publicId: "video_test_1",
          kind: "video",
          upstreamId: `upstream-${chosen.channel.id}`,
          request: { prompt: "a test" },
          status: "queued",
          billing: { ratio: "1000000000", free: false, seconds: 4 }
        })
      },
      respond: (task) => HttpServerResponse.jsonUnsafe({ id: task.publicId })
    })
  })

Deno.test("task submit: the accepted attempt inserts one row with the submit's fields and is charged the hold", () => {
  const seen = newSeen()
  return Effect.runPromise(
    Effect.gen(function* () {
      yield* TestClock.setTime(10_000)
      const response = yield* submit(seen, [candidate(1), candidate(2)], new Set([1]))
      strictEqual(response.status, 200)
      strictEqual(response.headers["x-sluice-cost"], "0.000700")
      deepStrictEqual(seen.attempts, [1, 2])
      strictEqual(seen.tasks.length, 1)
      const [task] = seen.tasks
      deepStrictEqual(
        [task.userId, task.tokenId, task.channelId, task.model, task.upstreamModel, task.upstreamId, task.quotaCharged],
        [2n, 1n, 2, "video-test", "m", "upstream-2", 700n]
      )
      deepStrictEqual([task.nextPollAt, task.deadlineAt], [15_000, 3_610_000])
      // The task keeps the usage log's request id: the accepted row's, a fresh one of 32 hex digits.
      strictEqual(/^[0-9a-f]{32}$/.test(task.requestId), true)
      deepStrictEqual(seen.rows.map((row) => [row.requestId, row.channelId, row.cost]), [
        [task.requestId, 1, 0n],
        [task.requestId, 2, 700n]
      ])
      deepStrictEqual([seen.held, seen.booked, seen.released], [[700n], [[700n, 700n]], []])
    }).pipe(Effect.provide(Layer.merge(doubles(seen), TestClock.layer())))
  )
})

Deno.test("task submit: no candidate accepts: no row, the hold back, nothing charged", () => {
  const seen = newSeen()
  return Effect.runPromise(
    Effect.gen(function* () {
      const result = yield* Effect.result(submit(seen, [candidate(1), candidate(2)], new Set([1, 2])))
      strictEqual(result._tag, "Failure")
      deepStrictEqual(seen.attempts, [1, 2])
      deepStrictEqual([seen.tasks, seen.booked, seen.held, seen.released], [[], [], [700n], [700n]])
      deepStrictEqual(seen.permits, [0])
    }).pipe(Effect.provide(Layer.merge(doubles(seen), TestClock.layer())))
  )
})

Deno.test("task submit: a refused hold makes no upstream submit and leaves no row", () => {
  const seen = newSeen()
  return Effect.runPromise(
    Effect.gen(function* () {
      const result = yield* Effect.result(submit(seen, [candidate(1)], new Set()))
      strictEqual(result._tag, "Failure")
      if (result._tag === "Failure") strictEqual(result.failure._tag, "InsufficientQuota")
      deepStrictEqual([seen.attempts, seen.tasks, seen.booked], [[], [], []])
    }).pipe(Effect.provide(Layer.merge(doubles(seen, { refuseHold: true }), TestClock.layer())))
  )
})
