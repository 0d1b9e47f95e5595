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
 * @since 0.1.0
 */
import { Cause, Clock, Context, Duration, Effect, Layer, Schedule, Semaphore, Stream } from "effect"
import { SqlError } from "effect/sql"
import { type Price, videoCost } from "../domain/Pricing.ts"
import { UpstreamFailed } from "../errors/GatewayError.ts"
import { Catalog } from "../storage/Catalog.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"
import { type Advance, type Task, type TaskBilling, TaskStore } from "./TaskStore.ts"
import { UpstreamClient } from "../upstreams/transport/UpstreamClient.ts"
import { videoAdapters } from "../upstreams/VideoAdapter.ts"
import { callVideoJson, videoWireOf } from "./VideoCalls.ts"
import { pollMidjourney, runsMidjourney } from "./MidjourneyCalls.ts"

/** How the poller batches and bounds its work. @category models */
export interface PollerOptions {
  /** Tasks claimed per statement, per channel (default 100). */
  readonly batchPerChannel: number
  /** Tasks polled per channel per cycle at most, batch after batch while due tasks remain (default 5,000). */
  readonly cyclePerChannel: number
  /** Upstream polls in flight per channel (default 4). */
  readonly concurrencyPerChannel: number
  /** Upstream polls in flight in all (default 32). */
  readonly globalConcurrency: number
  /** How long a claim holds before another instance may take the task (default 2 min). */
  readonly leaseMillis: number
  /** The longest backoff after failed polls (default 5 min). */
  readonly maxBackoffMillis: number
}

/**
 * A read polls a task on demand once its state is this old (1 s), or the
 * poll interval when shorter; never while a failed poll's backoff runs.
 *
 * @category constants
 */
export const ON_DEMAND_AGE_MILLIS = 1000

/**
 * The limits of one poll call, in milliseconds: well inside the claim's lease
 * (default 2 min), so a slow upstream cannot let another instance claim a
 * task whose poll is still in flight.
 *
 * @category constants
 */
export const POLL_TIMEOUTS = { firstByteMs: 30_000, idleMs: 30_000, totalMs: 60_000 } as const

/**
 * What a log line may say of a failure: its tag (and a SQL failure's reason
 * and SQLSTATE), never its text, which can quote a row (a database error's
 * detail) or a vendor's words.
 *
 * @category logging
 */
export const failureKindOf = (cause: Cause.Cause<unknown>): string => {
  const error = Cause.squash(cause)
  if (typeof error !== "object" || error === null || !("_tag" in error)) return "defect"
  if (SqlError.isSqlError(error)) {
    const code = (error.reason.cause as { readonly code?: unknown } | undefined)?.code
    return `SqlError/${error.reason._tag}${typeof code === "string" ? `/${code}` : ""}`
  }
  return String(error._tag).slice(0, 64)
}

/** How long the poller gathers running tasks' polls before recording them in one statement (50 ms). */
const RECORD_WITHIN = Duration.millis(50)

const defaults: PollerOptions = {
  batchPerChannel: 100,
  cyclePerChannel: 5_000,
  concurrencyPerChannel: 4,
  globalConcurrency: 32,
  leaseMillis: 120_000,
  maxBackoffMillis: 300_000
}

/**
 * The cost in quota units of a finished video of `seconds` (the upstream's
 * actual duration) at the prices the task was charged at; `undefined` when it
 * cannot be re-priced (no duration reported, or no per-second price).
 *
 * @category billing
 */
export const repriced = (billing: TaskBilling, seconds: number | undefined): bigint | undefined => {
  if (seconds === undefined || billing.perSecond === undefined) return undefined
  const price: Price = { perSecond: BigInt(billing.perSecond), free: billing.free }
  return videoCost(BigInt(billing.ratio), price, seconds)
}

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
}>()("sluice/services/TaskPoller") {
  /** Needs TaskStore, Catalog, UpstreamClient and GatewaySettings; polls every `taskPollMillis`. */
  static readonly layer = (options: Partial<PollerOptions> = {}) =>
    Layer.effect(
      TaskPoller,
      Effect.gen(function* () {
        const store = yield* TaskStore
        const catalog = yield* Catalog
        const client = yield* UpstreamClient
        const settings = yield* GatewaySettings
        const {
          batchPerChannel,
          cyclePerChannel,
          concurrencyPerChannel,
          globalConcurrency,
          leaseMillis,
          maxBackoffMillis
        } = {
          ...defaults,
          ...options
        }
        const global = yield* Semaphore.make(globalConcurrency)

        const backoffMillis = (task: Task) =>
          Math.min(maxBackoffMillis, settings.taskPollMillis * 2 ** Math.min(16, task.pollFailures + 1))

        const expire = (task: Task) =>
          store.finish(task, {
            status: "failed",
            error: { code: "timeout", message: "The task did not finish before its deadline." },
            cost: 0n
          })

        /**
         * One poll of one claimed Midjourney task (see `pollTask`): still running, the state to record; a
         * success ends it at the charge of its submit (an action's price does not depend on what it made), with
         * the image's location (private) and what a caller sees of it; a failure ends it refunded.
         */
        const pollMjTask = (task: Task, upstreamId: string) =>
          Effect.gen(function* () {
            const channel = catalog.snapshot().channels.get(task.channelId)
            const key = channel?.keys.find((candidate) => candidate.position === task.keyPosition)
            if (channel === undefined || key === undefined || !runsMidjourney(channel)) {
              yield* store.backoff(task, backoffMillis(task))
              return undefined
            }
            const poll = yield* pollMidjourney(client, settings, { channel, key: key.key }, upstreamId, POLL_TIMEOUTS)
              .pipe(Effect.catch((error: UpstreamFailed) => Effect.succeed(error)))
            if (poll instanceof UpstreamFailed) {
              yield* Effect.logWarning("Task poll failed; backing off", {
                task: task.publicId,
                channel: channel.name,
                kind: poll.kind,
                status: poll.status
              })
              yield* store.backoff(task, backoffMillis(task))
              return undefined
            }
            switch (poll.status) {
              case "queued":
              case "in_progress":
                return { task, state: { status: poll.status, progress: poll.progress } }
              case "completed":
                yield* store.finish(task, {
                  status: "completed",
                  result: { url: poll.imageUrl, withKey: false },
                  publicResult: poll.detail,
                  cost: task.quotaCharged
                })
                return undefined
              case "failed":
                yield* store.finish(task, {
                  status: "failed",
                  error: { code: "generation_failed", message: poll.failReason ?? "The upstream failed the task." },
                  publicResult: poll.detail,
                  cost: 0n
                })
                return undefined
            }
          })

        /**
         * One poll of one claimed task. An end or a failed poll is recorded here; a task still running is
         * returned, for its caller to record (with its batch, in one statement). Never fails.
         */
        const pollTask = (
          task: Task
        ): Effect.Effect<{ readonly task: Task; readonly state: Advance } | undefined> =>
          Effect.gen(function* () {
            if ((yield* Clock.currentTimeMillis) >= task.deadlineAt) {
              yield* expire(task)
              return undefined
            }
            if (task.kind === "midjourney" && task.upstreamId !== null) return yield* pollMjTask(task, task.upstreamId)
            // An image task runs in the background where it was submitted: only its deadline concerns the poller.
            if (task.kind !== "video" || task.upstreamId === null) {
              yield* store.backoff(task, Math.max(0, task.deadlineAt - (yield* Clock.currentTimeMillis)))
              return undefined
            }
            const channel = catalog.snapshot().channels.get(task.channelId)
            const wire = channel === undefined ? undefined : videoWireOf(channel)
            const key = channel?.keys.find((candidate) => candidate.position === task.keyPosition)
            if (channel === undefined || wire === undefined || key === undefined) {
              // The channel went away: wait for it (or for the deadline).
              yield* store.backoff(task, backoffMillis(task))
              return undefined
            }
            const call = wire.poll(task.upstreamId, task.upstreamModel)
            // The URL the poll goes to: a wire trusts a keyed content location only on its origin.
            const pollUrl = videoAdapters[channel.type]!.target(channel, key.key, call, false).url
            const state = yield* callVideoJson(client, settings, { channel, key: key.key }, wire, call, POLL_TIMEOUTS)
              .pipe(
                Effect.map((json) => wire.decodePoll(json, pollUrl)),
                Effect.catch((error: UpstreamFailed) => Effect.succeed(error))
              )
            if (state instanceof UpstreamFailed) {
              yield* Effect.logWarning("Task poll failed; backing off", {
                task: task.publicId,
                channel: channel.name,
                kind: state.kind,
                status: state.status
              })
              yield* store.backoff(task, backoffMillis(task))
              return undefined
            }
            switch (state.status) {
              case "queued":
              case "in_progress":
                return { task, state: { status: state.status, progress: state.progress ?? task.progress } }
              case "completed": {
                const cost = repriced(task.billing, state.seconds) ?? task.quotaCharged
                yield* store.finish(task, {
                  status: "completed",
                  result: {
                    url: state.content?.url,
                    withKey: state.content?.withKey ?? true,
                    expiresAt: state.content?.expiresAt,
                    seconds: state.seconds,
                    width: state.width,
                    height: state.height,
                    fps: state.fps,
                    usage: state.usage
                  },
                  cost
                })
                return undefined
              }
              case "failed":
                yield* store.finish(task, {
                  status: "failed",
                  error: state.error ?? { code: "failed", message: "The upstream could not make the video." },
                  cost: 0n
                })
                return undefined
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
              }).pipe(
                Effect.andThen(Effect.ignore(Effect.exit(store.backoff(task, backoffMillis(task))))),
                Effect.as(undefined)
              )
            ),
            global.withPermits(1)
          )

        const cycle: Effect.Effect<void> = Effect.gen(function* () {
          const expired = yield* store.claimExpired(batchPerChannel, leaseMillis)
          yield* Effect.forEach(expired, (task) =>
            Effect.ignore(Effect.exit(expire(task))), {
            concurrency: concurrencyPerChannel,
            discard: true
          })
          const channels = [...catalog.snapshot().channels.values()].filter((channel) =>
            videoWireOf(channel) !== undefined || runsMidjourney(channel)
          )
          yield* Effect.forEach(channels, (channel) =>
            Effect.gen(function* () {
              // Batch after batch while due tasks remain, up to `cyclePerChannel`: one claim per batch.
              let polled = 0
              while (polled < cyclePerChannel) {
                const limit = Math.min(batchPerChannel, cyclePerChannel - polled)
                const due = yield* store.claimDue(channel.id, limit, leaseMillis)
                // Running tasks are recorded as their polls answer, together when many answer within
                // `RECORD_WITHIN`: a task is released soon after its poll, not when its whole batch is done.
                yield* Stream.fromIterable(due).pipe(
                  Stream.mapEffect(pollTask, { concurrency: concurrencyPerChannel }),
                  Stream.groupedWithin(batchPerChannel, RECORD_WITHIN),
                  Stream.runForEach((polls) =>
                    store.advanceMany(polls.filter((item) => item !== undefined), settings.taskPollMillis).pipe(
                      // Not recorded: these tasks are polled again once their claims' lease lapses.
                      Effect.catchCause((cause) =>
                        Effect.logWarning("Task polls could not be recorded; will retry", {
                          channel: channel.name,
                          failure: failureKindOf(cause)
                        })
                      )
                    )
                  )
                )
                polled += due.length
                if (due.length < limit) break
              }
            }), { concurrency: "unbounded", discard: true })
        }).pipe(
          Effect.catchCause((cause) => Effect.logWarning("Task poll cycle failed", { failure: failureKindOf(cause) }))
        )

        const refresh = (task: Task): Effect.Effect<Task> =>
          Effect.gen(function* () {
            if (task.status === "completed" || task.status === "failed") return task
            const claimed = yield* store.claimOne(
              task.id,
              leaseMillis,
              Math.min(ON_DEMAND_AGE_MILLIS, settings.taskPollMillis)
            )
            if (claimed === undefined) return task
            const running = yield* pollTask(claimed)
            if (running !== undefined) yield* store.advance(running.task, running.state, settings.taskPollMillis)
            return yield* Effect.orElseSucceed(store.find(task.publicId, task.userId), () => task)
          }).pipe(Effect.catchCause(() => Effect.succeed(task)))

        yield* cycle.pipe(
          Effect.repeat(Schedule.spaced(Duration.millis(settings.taskPollMillis))),
          Effect.forkScoped
        )
        return TaskPoller.of({ cycle, refresh })
      })
    )
}
