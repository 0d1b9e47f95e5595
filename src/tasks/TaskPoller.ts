/**
 * The task poller: advances unfinished video and Midjourney tasks by polling their upstream,
 * on an Effect `Schedule` (every `task_poll_interval_ms`, default 5 s; spec
 * "Limits": poll every 5 to 10 seconds). Each cycle claims due tasks per
 * channel in batches (`TaskStore.claimDue`, one statement a batch,
 * `FOR UPDATE SKIP LOCKED` plus a lease, so instances sharing a database
 * never poll one task at once), batch after batch while due tasks remain (at
 * most `cyclePerChannel` a channel), polls them with bounded concurrency per
 * channel and a global cap, and records what the upstream said:
 *
 * - still running: status and progress, next poll one interval away, for
 *   the polls that answered within 50 ms of each other in one statement
 *   (`TaskStore.advanceMany`);
 * - completed: the result location (private), and the bill re-priced on the
 *   actual duration where the upstream reports one (the difference refunded
 *   or charged);
 * - failed: the vendor's error code and a caller-safe message, and the whole
 *   charge refunded;
 * - a poll that failed (network, 5xx, unreadable answer): the next poll
 *   backs off exponentially (the interval × 2^failures, at most 5 minutes).
 *
 * A task past its deadline (`task_deadline_seconds`, default 24 h) fails with
 * code `timeout` and is refunded. Final bills are made by `TaskStore.finish`,
 * exactly once. A read of a stale task (its poll due, or its state a second
 * old) polls it at once (`refresh`). The schedule starts with the layer and stops when it closes.
 *
 * This module is the service and a thin layer over `poller/`:
 * `PollerOptions.ts` (options and limits), `PollSchedule.ts` (backoff,
 * on-demand age, claim sizes; pure), `PollPlan.ts` (the deadline and what a
 * poll does; pure but for the `Clock`), `PollOutcome.ts` (what an answer
 * means, the re-pricing; pure), `UpstreamPoll.ts` (the poll call),
 * `ChannelBatches.ts` (a channel's batches in a cycle) and `FailureKind.ts`
 * (what a log line says of a failure).
 *
 * @since 0.1.0
 */
import { Context, Duration, Effect, Layer, Schedule, Semaphore } from "effect"
import { Catalog } from "../storage/Catalog.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"
import { UpstreamClient } from "../upstreams/transport/UpstreamClient.ts"
import { pollInBatches, type Running } from "./poller/ChannelBatches.ts"
import { failureKindOf } from "./poller/FailureKind.ts"
import { DEFAULT_POLLER_OPTIONS, type PollerOptions } from "./poller/PollerOptions.ts"
import { currentPlan, TIMEOUT_END } from "./poller/PollPlan.ts"
import { backoffMillis, onDemandAgeMillis } from "./poller/PollSchedule.ts"
import { askMidjourney, askVideo, pollsTasks, type UpstreamAnswer } from "./poller/UpstreamPoll.ts"
import { type Task, TaskStore } from "./TaskStore.ts"

// The poller's options, limits and pure helpers, where the routes, the relays and the tests import them.
export { failureKindOf } from "./poller/FailureKind.ts"
export { ON_DEMAND_AGE_MILLIS, POLL_TIMEOUTS, type PollerOptions } from "./poller/PollerOptions.ts"
export { repriced } from "./poller/PollOutcome.ts"

/** @category services */
export class TaskPoller extends Context.Service<TaskPoller, {
  /** Runs one poll cycle now (what the schedule runs). */
  readonly cycle: Effect.Effect<void>
  /**
   * Polls `task` now when it is unfinished, unclaimed and stale (its poll
   * due, or its state `ON_DEMAND_AGE_MILLIS` old), and returns it as stored
   * afterwards (unchanged otherwise). Never fails.
   */
  readonly refresh: (task: Task) => Effect.Effect<Task>
}>()("sluice/tasks/TaskPoller") {
  /** Needs TaskStore, Catalog, UpstreamClient and GatewaySettings; polls every `taskPollMillis`. */
  static readonly layer = (options: Partial<PollerOptions> = {}) =>
    Layer.effect(
      TaskPoller,
      Effect.gen(function* () {
        const store = yield* TaskStore
        const catalog = yield* Catalog
        const client = yield* UpstreamClient
        const settings = yield* GatewaySettings
        const limits = { ...DEFAULT_POLLER_OPTIONS, ...options }
        const global = yield* Semaphore.make(limits.globalConcurrency)
        const backoff = (task: Task) =>
          store.backoff(task, backoffMillis(settings.taskPollMillis, limits.maxBackoffMillis, task.pollFailures))

        /** Records what the upstream answered: an end or a failed poll here; a running task returned to its batch. */
        const record = (task: Task, answer: UpstreamAnswer) => {
          switch (answer._tag) {
            case "NoChannel":
              // The channel went away: wait for it (or for the deadline).
              return Effect.as(backoff(task), undefined)
            case "PollFailed":
              return Effect.logWarning("Task poll failed; backing off", {
                task: task.publicId,
                channel: answer.channel,
                kind: answer.error.kind,
                status: answer.error.status
              }).pipe(Effect.andThen(backoff(task)), Effect.as(undefined))
            case "Answered":
              return answer.outcome._tag === "Running"
                ? Effect.succeed<Running | undefined>({ task, state: answer.outcome.state })
                : Effect.as(store.finish(task, answer.outcome.end), undefined)
          }
        }

        /** One poll of one claimed task (`PollPlan.ts`): an end or a failed poll is recorded here. Never fails. */
        const pollTask = (task: Task): Effect.Effect<Running | undefined> =>
          Effect.gen(function* () {
            const plan = yield* currentPlan(task)
            switch (plan._tag) {
              case "Expire":
                return yield* Effect.as(store.finish(task, TIMEOUT_END), undefined)
              case "AwaitDeadline":
                return yield* Effect.as(store.backoff(task, plan.delayMillis), undefined)
              case "PollMidjourney":
                return yield* record(
                  task,
                  yield* askMidjourney(client, settings, catalog.snapshot().channels, task, plan.upstreamId)
                )
              case "PollVideo":
                return yield* record(
                  task,
                  yield* askVideo(client, settings, catalog.snapshot().channels, task, plan.upstreamId)
                )
            }
          }).pipe(
            // The submit's charge not committed yet (a second at most, unless the database is away): poll again.
            Effect.catchTag("TaskChargePending", () =>
              Effect.as(store.backoff(task, settings.taskPollMillis), undefined)),
            // A storage failure is retried later.
            Effect.catchCause((cause) =>
              Effect.logWarning("Task poll could not be recorded; will retry", {
                task: task.publicId,
                failure: failureKindOf(cause)
              }).pipe(Effect.andThen(Effect.ignore(Effect.exit(backoff(task)))), Effect.as(undefined))
            ),
            global.withPermits(1)
          )

        const cycle: Effect.Effect<void> = Effect.gen(function* () {
          const expired = yield* store.claimExpired(limits.batchPerChannel, limits.leaseMillis)
          yield* Effect.forEach(expired, (task) =>
            Effect.ignore(Effect.exit(store.finish(task, TIMEOUT_END))), {
            concurrency: limits.concurrencyPerChannel,
            discard: true
          })
          const channels = [...catalog.snapshot().channels.values()].filter(pollsTasks)
          yield* Effect.forEach(channels, (channel) =>
            pollInBatches(
              limits,
              (limit) => store.claimDue(channel.id, limit, limits.leaseMillis),
              pollTask,
              (running) =>
                store.advanceMany(running, settings.taskPollMillis).pipe(
                  // Not recorded: these tasks are polled again once their claims' lease lapses.
                  Effect.catchCause((cause) =>
                    Effect.logWarning("Task polls could not be recorded; will retry", {
                      channel: channel.name,
                      failure: failureKindOf(cause)
                    })
                  )
                )
            ), { concurrency: "unbounded", discard: true })
        }).pipe(
          Effect.catchCause((cause) => Effect.logWarning("Task poll cycle failed", { failure: failureKindOf(cause) }))
        )

        const refresh = (task: Task): Effect.Effect<Task> =>
          Effect.gen(function* () {
            if (task.status === "completed" || task.status === "failed") return task
            const claimed = yield* store.claimOne(
              task.id,
              limits.leaseMillis,
              onDemandAgeMillis(settings.taskPollMillis)
            )
            if (claimed === undefined) return task
            const running = yield* pollTask(claimed)
            if (running !== undefined) yield* store.advance(running.task, running.state, settings.taskPollMillis)
            return yield* Effect.orElseSucceed(store.find(task.publicId, task.userId), () => task)
          }).pipe(Effect.catchCause(() => Effect.succeed(task)))

        yield* cycle.pipe(Effect.repeat(Schedule.spaced(Duration.millis(settings.taskPollMillis))), Effect.forkScoped)
        return TaskPoller.of({ cycle, refresh })
      })
    )
}
