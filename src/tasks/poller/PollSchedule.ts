/**
 * When the task poller polls again, pure: the backoff after failed polls,
 * the age at which a read polls a task on demand, and how many tasks the next
 * claim of a channel's cycle asks for. Durations are milliseconds.
 *
 * @since 0.1.0
 */
import { ON_DEMAND_AGE_MILLIS, type PollerOptions } from "./PollerOptions.ts"

/**
 * The delay before the next poll of a task whose polls failed
 * `pollFailures` times before this one: the poll interval `pollMillis` ×
 * 2^(failures + 1) (the exponent at most 16), at most `maxBackoffMillis`.
 *
 * @category schedule
 */
export const backoffMillis = (pollMillis: number, maxBackoffMillis: number, pollFailures: number): number =>
  Math.min(maxBackoffMillis, pollMillis * 2 ** Math.min(16, pollFailures + 1))

/**
 * How old a task's state must be for a read to poll it on demand:
 * `ON_DEMAND_AGE_MILLIS`, or the poll interval `pollMillis` when shorter.
 *
 * @category schedule
 */
export const onDemandAgeMillis = (pollMillis: number): number => Math.min(ON_DEMAND_AGE_MILLIS, pollMillis)

/**
 * How many tasks the next claim of a channel's cycle asks for once `polled`
 * were polled in it: a batch, or what is left of `cyclePerChannel`; 0 when
 * the cycle is done with the channel.
 *
 * @category schedule
 */
export const claimLimit = (
  options: Pick<PollerOptions, "batchPerChannel" | "cyclePerChannel">,
  polled: number
): number => Math.max(0, Math.min(options.batchPerChannel, options.cyclePerChannel - polled))
