/**
 * What an upstream's answer to a poll means for the task, pure: still
 * running (the state to record), or ended (how, and at what final cost: the
 * refund decision). A completed video is re-priced on the duration the
 * upstream reports, at the prices it was charged at; a completed Midjourney
 * task costs what its submit was charged (an action's price does not depend
 * on what it made); a failed task costs nothing (refunded whole). Amounts are
 * quota units (micro-USD) as bigints.
 *
 * @since 0.1.0
 */
import type { UpstreamTaskState } from "../../canonical/Video.ts"
import { type Price, videoCost } from "../../domain/Pricing.ts"
import type { MjPoll } from "../../formats/midjourney/Wire.ts"
import type { Advance, Task, TaskBilling, TaskEnd } from "../store/Task.ts"

/**
 * A task after a poll that answered: still running with `state`, or ended
 * with `end`.
 *
 * @category models
 */
export type PollOutcome =
  | { readonly _tag: "Running"; readonly state: Advance }
  | { readonly _tag: "Ended"; readonly end: TaskEnd }

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

/**
 * What a video upstream's `state` of `task` means: running (the progress it
 * reports, else the stored one); completed, with the content's location
 * (private; fetched with the key unless the wire says otherwise) and what the
 * upstream reported, at the re-priced cost (else the charge); or failed with
 * the vendor's error (else `failed`), refunded.
 *
 * @category outcomes
 */
export const videoOutcome = (task: Task, state: UpstreamTaskState): PollOutcome => {
  switch (state.status) {
    case "queued":
    case "in_progress":
      return { _tag: "Running", state: { status: state.status, progress: state.progress ?? task.progress } }
    case "completed":
      return {
        _tag: "Ended",
        end: {
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
          cost: repriced(task.billing, state.seconds) ?? task.quotaCharged
        }
      }
    case "failed":
      return {
        _tag: "Ended",
        end: {
          status: "failed",
          error: state.error ?? { code: "failed", message: "The upstream could not make the video." },
          cost: 0n
        }
      }
  }
}

/**
 * What a Midjourney proxy's `poll` of `task` means: running (its progress);
 * completed at the submit's charge, with the image's location (private,
 * fetched without the key) and what a caller sees of the task; or failed with
 * the proxy's reason (code `generation_failed`), refunded.
 *
 * @category outcomes
 */
export const midjourneyOutcome = (task: Task, poll: MjPoll): PollOutcome => {
  switch (poll.status) {
    case "queued":
    case "in_progress":
      return { _tag: "Running", state: { status: poll.status, progress: poll.progress } }
    case "completed":
      return {
        _tag: "Ended",
        end: {
          status: "completed",
          result: { url: poll.imageUrl, withKey: false },
          publicResult: poll.detail,
          cost: task.quotaCharged
        }
      }
    case "failed":
      return {
        _tag: "Ended",
        end: {
          status: "failed",
          error: { code: "generation_failed", message: poll.failReason ?? "The upstream failed the task." },
          publicResult: poll.detail,
          cost: 0n
        }
      }
  }
}
