/**
 * How the task poller batches and bounds its work, and its fixed limits: the
 * age at which a read polls a task on demand, the timeouts of one poll call,
 * and how long running tasks' polls gather before they are recorded together.
 * Durations are milliseconds.
 *
 * @since 0.1.0
 */
import { Duration } from "effect"

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

/** The options a `TaskPoller.layer()` without any runs with. @category constants */
export const DEFAULT_POLLER_OPTIONS: PollerOptions = {
  batchPerChannel: 100,
  cyclePerChannel: 5_000,
  concurrencyPerChannel: 4,
  globalConcurrency: 32,
  leaseMillis: 120_000,
  maxBackoffMillis: 300_000
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
 * How long the poller gathers running tasks' polls before recording them in
 * one statement (50 ms).
 *
 * @category constants
 */
export const RECORD_WITHIN = Duration.millis(50)
