/**
 * One poll cycle's work on one channel: claim due tasks a batch at a time
 * (`claimLimit`) while full batches come back, up to `cyclePerChannel`; poll
 * each claimed task with at most `concurrencyPerChannel` in flight; and
 * record the tasks still running as their polls answer, those that answer
 * within `RECORD_WITHIN` of each other (up to a batch) together, so a task
 * is released soon after its poll, not when its whole batch is done.
 *
 * @since 0.1.0
 */
import { Effect, Stream } from "effect"
import type { Advance, Task } from "../store/Task.ts"
import { type PollerOptions, RECORD_WITHIN } from "./PollerOptions.ts"
import { claimLimit } from "./PollSchedule.ts"

/** A polled task still running, and what its poll found. @category models */
export interface Running {
  readonly task: Task
  readonly state: Advance
}

/**
 * Runs one channel's share of a poll cycle: `claim(limit)` claims due tasks,
 * `poll` polls one (recording an end itself; a running task returned), and
 * `record` records a group of running tasks. What fails in `claim` or
 * `record` fails the run; `poll` cannot fail.
 *
 * @category cycle
 */
export const pollInBatches = <E, R>(
  options: Pick<PollerOptions, "batchPerChannel" | "cyclePerChannel" | "concurrencyPerChannel">,
  claim: (limit: number) => Effect.Effect<ReadonlyArray<Task>, E, R>,
  poll: (task: Task) => Effect.Effect<Running | undefined, never, R>,
  record: (running: ReadonlyArray<Running>) => Effect.Effect<void, E, R>
): Effect.Effect<void, E, R> =>
  Effect.gen(function* () {
    let polled = 0
    for (let limit = claimLimit(options, polled); limit > 0;) {
      const due = yield* claim(limit)
      yield* Stream.fromIterable(due).pipe(
        Stream.mapEffect(poll, { concurrency: options.concurrencyPerChannel }),
        Stream.groupedWithin(options.batchPerChannel, RECORD_WITHIN),
        Stream.runForEach((polls) => record(polls.filter((item) => item !== undefined)))
      )
      polled += due.length
      // A short batch: no due task is left.
      limit = due.length < limit ? 0 : claimLimit(options, polled)
    }
  })
