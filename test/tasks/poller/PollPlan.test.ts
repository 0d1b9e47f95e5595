/**
 * What a poll of a claimed task does, by its deadline (read from Effect's
 * `Clock`, driven here by `TestClock`) and its kind: a millisecond before its
 * deadline it goes on, at its deadline it expires; an image task (or a task
 * with no upstream id) waits for its deadline.
 */
import { deepStrictEqual } from "node:assert/strict"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { currentPlan, planPoll, TIMEOUT_END } from "../../../src/tasks/poller/PollPlan.ts"
import { DEADLINE, taskWith } from "../TaskFixture.ts"

Deno.test("currentPlan (TestClock): 1 ms before the deadline the video is polled; at and after it, it expires", () =>
  Effect.runPromise(
    Effect.gen(function* () {
      const task = taskWith()
      yield* TestClock.setTime(DEADLINE - 1)
      deepStrictEqual(yield* currentPlan(task), { _tag: "PollVideo", upstreamId: "up-1" })
      yield* TestClock.adjust(1)
      deepStrictEqual(yield* currentPlan(task), { _tag: "Expire" })
      yield* TestClock.adjust(60_000)
      deepStrictEqual(yield* currentPlan(task), { _tag: "Expire" })
    }).pipe(Effect.provide(TestClock.layer()))
  ))

Deno.test("currentPlan (TestClock): an image task waits exactly until its deadline", () =>
  Effect.runPromise(
    Effect.gen(function* () {
      const task = taskWith({ kind: "image", upstreamId: null })
      yield* TestClock.setTime(DEADLINE - 90_000)
      deepStrictEqual(yield* currentPlan(task), { _tag: "AwaitDeadline", delayMillis: 90_000 })
      yield* TestClock.adjust(89_999)
      deepStrictEqual(yield* currentPlan(task), { _tag: "AwaitDeadline", delayMillis: 1 })
      yield* TestClock.adjust(1)
      deepStrictEqual(yield* currentPlan(task), { _tag: "Expire" })
    }).pipe(Effect.provide(TestClock.layer()))
  ))

Deno.test("planPoll: by kind — Midjourney asks its proxy; a task with no upstream id waits for its deadline", () => {
  const now = DEADLINE - 10
  deepStrictEqual(planPoll(taskWith({ kind: "midjourney", upstreamId: "mj-1" }), now), {
    _tag: "PollMidjourney",
    upstreamId: "mj-1"
  })
  deepStrictEqual(planPoll(taskWith({ kind: "midjourney", upstreamId: null }), now), {
    _tag: "AwaitDeadline",
    delayMillis: 10
  })
  deepStrictEqual(planPoll(taskWith({ upstreamId: null }), now), { _tag: "AwaitDeadline", delayMillis: 10 })
  deepStrictEqual(planPoll(taskWith({ kind: "image", upstreamId: "img-1" }), now), {
    _tag: "AwaitDeadline",
    delayMillis: 10
  })
})

Deno.test("TIMEOUT_END: failed with code timeout, at no cost (refunded whole)", () => {
  deepStrictEqual(TIMEOUT_END, {
    status: "failed",
    error: { code: "timeout", message: "The task did not finish before its deadline." },
    cost: 0n
  })
})
