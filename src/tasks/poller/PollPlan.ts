/**
 * What one poll of a claimed task does, by its deadline and its kind, pure
 * but for the time it reads from Effect's `Clock` (`currentPlan`): past its
 * deadline it ends (`TIMEOUT_END`); a video or a Midjourney task with an
 * upstream id asks its upstream; any other task (an image task runs in the
 * background where it was submitted) waits for its deadline. Times are epoch
 * milliseconds.
 *
 * @since 0.1.0
 */
import { Clock, Effect } from "effect"
import type { Task, TaskEnd } from "../store/Task.ts"

/**
 * The poll of a claimed task: end it past its deadline, wait `delayMillis`
 * (until the deadline), or ask the upstream for task `upstreamId`.
 *
 * @category models
 */
export type PollPlan =
  | { readonly _tag: "Expire" }
  | { readonly _tag: "AwaitDeadline"; readonly delayMillis: number }
  | { readonly _tag: "PollVideo"; readonly upstreamId: string }
  | { readonly _tag: "PollMidjourney"; readonly upstreamId: string }

/**
 * How a task past its deadline ends: failed with code `timeout`, its whole
 * charge refunded (cost 0).
 *
 * @category models
 */
export const TIMEOUT_END: TaskEnd = {
  status: "failed",
  error: { code: "timeout", message: "The task did not finish before its deadline." },
  cost: 0n
}

/**
 * The poll of `task` at `now`: `Expire` from its deadline on (the deadline
 * itself included), else by its kind.
 *
 * @category planning
 */
export const planPoll = (task: Task, now: number): PollPlan => {
  if (now >= task.deadlineAt) return { _tag: "Expire" }
  if (task.kind === "midjourney" && task.upstreamId !== null) {
    return { _tag: "PollMidjourney", upstreamId: task.upstreamId }
  }
  if (task.kind !== "video" || task.upstreamId === null) {
    return { _tag: "AwaitDeadline", delayMillis: Math.max(0, task.deadlineAt - now) }
  }
  return { _tag: "PollVideo", upstreamId: task.upstreamId }
}

/**
 * `planPoll` at the current time of Effect's `Clock`.
 *
 * @category planning
 */
export const currentPlan = (task: Task): Effect.Effect<PollPlan> =>
  Effect.map(Clock.currentTimeMillis, (now) => planPoll(task, now))
