/**
 * A channel's share of a poll cycle with fake claims, polls and records:
 * claims come a batch at a time while full batches come back, up to the
 * cycle's cap; polls run with the channel's concurrency; only running tasks
 * are recorded, and every one of them once.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { Effect } from "effect"
import { pollInBatches, type Running } from "../../../src/tasks/poller/ChannelBatches.ts"
import type { Task } from "../../../src/tasks/store/Task.ts"
import { taskWith } from "../TaskFixture.ts"

/** Runs `pollInBatches` over `due` tasks waiting on the channel; what it claimed, polled and recorded. */
const run = (
  due: number,
  options: { batchPerChannel: number; cyclePerChannel: number; concurrencyPerChannel: number }
) =>
  Effect.runPromise(Effect.gen(function* () {
    const waiting = Array.from({ length: due }, (_, index) => taskWith({ id: BigInt(index + 1) }))
    const claims: Array<number> = []
    const recorded: Array<bigint> = []
    let inFlight = 0
    let mostInFlight = 0
    yield* pollInBatches(
      options,
      (limit) =>
        Effect.sync(() => {
          claims.push(limit)
          return waiting.splice(0, limit)
        }),
      // Odd ids end (recorded by the poll itself), even ids run on.
      (task: Task) =>
        Effect.gen(function* () {
          inFlight += 1
          mostInFlight = Math.max(mostInFlight, inFlight)
          yield* Effect.yieldNow
          inFlight -= 1
          return task.id % 2n === 0n
            ? { task, state: { status: "in_progress", progress: 50 } } satisfies Running
            : undefined
        }),
      (running) => Effect.sync(() => recorded.push(...running.map((item) => item.task.id)))
    )
    return { claims, recorded: recorded.toSorted((a, b) => Number(a - b)), mostInFlight, left: waiting.length }
  }))

Deno.test("pollInBatches: batch after batch until a short one; each running task recorded once", async () => {
  const { claims, recorded, mostInFlight, left } = await run(250, {
    batchPerChannel: 100,
    cyclePerChannel: 5_000,
    concurrencyPerChannel: 4
  })
  deepStrictEqual(claims, [100, 100, 100])
  strictEqual(left, 0)
  deepStrictEqual(recorded, Array.from({ length: 125 }, (_, index) => BigInt(2 * (index + 1))))
  ok(mostInFlight <= 4 && mostInFlight > 1, `at most 4 polls in flight (saw ${mostInFlight})`)
})

Deno.test("pollInBatches: a cycle stops at its cap, the last claim asking only for what is left", async () => {
  const { claims, recorded, left } = await run(1_000, {
    batchPerChannel: 100,
    cyclePerChannel: 250,
    concurrencyPerChannel: 8
  })
  deepStrictEqual(claims, [100, 100, 50])
  strictEqual(left, 750)
  strictEqual(recorded.length, 125)
})

Deno.test("pollInBatches: a full last batch asks once more and stops on the empty answer; nothing due, one claim", async () => {
  deepStrictEqual((await run(200, { batchPerChannel: 100, cyclePerChannel: 5_000, concurrencyPerChannel: 2 })).claims, [
    100,
    100,
    100
  ])
  const idle = await run(0, { batchPerChannel: 100, cyclePerChannel: 5_000, concurrencyPerChannel: 2 })
  deepStrictEqual(idle.claims, [100])
  deepStrictEqual(idle.recorded, [])
})
