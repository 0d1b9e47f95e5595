/**
 * In-process counts for the rate limiter: an exact sliding log per subject for
 * requests and for tokens, and an in-flight counter for concurrency.
 * Synchronous and single-threaded, so each call is atomic; the caller supplies
 * the time, which keeps this testable without a clock.
 *
 * @since 0.1.0
 */
import type { Refusal, Rule } from "./Rules.ts"
import { concurrencyRetryMs } from "./Rules.ts"

/** Timestamps (ms, non-decreasing) and amounts still in the window start at `head`. */
interface WindowLog {
  readonly stamps: Array<number>
  readonly amounts: Array<number>
  head: number
  total: number
}

interface SubjectCounts {
  readonly requests: WindowLog
  readonly tokens: WindowLog
  inFlight: number
}

const emptyLog = (): WindowLog => ({ stamps: [], amounts: [], head: 0, total: 0 })

/** Drops entries that left the window: an entry stamped `t` counts while `now < t + windowMs`. */
const prune = (log: WindowLog, edge: number): void => {
  while (log.head < log.stamps.length && log.stamps[log.head]! <= edge) {
    log.total -= log.amounts[log.head]!
    log.head += 1
  }
  if (log.head > 64 && log.head * 2 > log.stamps.length) {
    log.stamps.splice(0, log.head)
    log.amounts.splice(0, log.head)
    log.head = 0
  }
}

const append = (log: WindowLog, now: number, amount: number): void => {
  const last = log.stamps.length > log.head ? log.stamps[log.stamps.length - 1]! : now
  log.stamps.push(Math.max(now, last))
  log.amounts.push(amount)
  log.total += amount
}

/** Milliseconds until the entries left in the window sum to less than `limit`. */
const waitMs = (log: WindowLog, limit: number, now: number, windowMs: number): number => {
  let total = log.total
  for (let index = log.head; index < log.stamps.length; index += 1) {
    total -= log.amounts[index]!
    if (total < limit) return log.stamps[index]! + windowMs - now
  }
  return windowMs
}

/**
 * The counts of one limiter instance.
 *
 * @category models
 */
export interface MemoryCounts {
  /**
   * Checks every rule at `now` (epoch ms); when none refuses, records one
   * request for each (rpm log, in-flight count) and returns `[]`, otherwise
   * records nothing and returns the refusals.
   */
  readonly admit: (rules: ReadonlyArray<Rule>, now: number) => ReadonlyArray<Refusal>
  /**
   * Ends one admitted request: records `tokens` (a bounded integer) at `now`
   * for rules with a tpm limit and frees the in-flight slot of rules with a
   * concurrency limit. Call once per admitted request.
   */
  readonly release: (rules: ReadonlyArray<Rule>, tokens: number, now: number) => void
  /** Number of subjects currently holding state (for tests of the sweep). */
  readonly size: () => number
}

/**
 * Fresh, empty counts with a sliding window of `windowMs` milliseconds.
 * Subjects whose logs are empty and who have nothing in flight are forgotten
 * by a sweep that runs at most once per window.
 *
 * @category constructors
 */
export const makeMemoryCounts = (windowMs: number): MemoryCounts => {
  const subjects = new Map<string, SubjectCounts>()
  let lastSweep = Number.NEGATIVE_INFINITY

  const countsOf = (key: string): SubjectCounts => {
    const existing = subjects.get(key)
    if (existing !== undefined) return existing
    const created: SubjectCounts = { requests: emptyLog(), tokens: emptyLog(), inFlight: 0 }
    subjects.set(key, created)
    return created
  }

  const sweep = (now: number): void => {
    if (now - lastSweep < windowMs) return
    lastSweep = now
    for (const [key, counts] of subjects) {
      prune(counts.requests, now - windowMs)
      prune(counts.tokens, now - windowMs)
      if (
        counts.requests.head === counts.requests.stamps.length && counts.tokens.head === counts.tokens.stamps.length
      ) {
        if (counts.inFlight === 0) subjects.delete(key)
      }
    }
  }

  const admit = (rules: ReadonlyArray<Rule>, now: number): ReadonlyArray<Refusal> => {
    sweep(now)
    const edge = now - windowMs
    const refusals: Array<Refusal> = []
    for (const rule of rules) {
      const counts = subjects.get(rule.key)
      if (counts === undefined) continue
      if (rule.rpm > 0) {
        prune(counts.requests, edge)
        if (counts.requests.total >= rule.rpm) {
          refusals.push({
            key: rule.key,
            limit: "rpm",
            allowed: rule.rpm,
            retryAfterMs: waitMs(counts.requests, rule.rpm, now, windowMs)
          })
        }
      }
      if (rule.tpm > 0) {
        prune(counts.tokens, edge)
        if (counts.tokens.total >= rule.tpm) {
          refusals.push({
            key: rule.key,
            limit: "tpm",
            allowed: rule.tpm,
            retryAfterMs: waitMs(counts.tokens, rule.tpm, now, windowMs)
          })
        }
      }
      if (rule.concurrency > 0 && counts.inFlight >= rule.concurrency) {
        refusals.push({
          key: rule.key,
          limit: "concurrency",
          allowed: rule.concurrency,
          retryAfterMs: concurrencyRetryMs
        })
      }
    }
    if (refusals.length > 0) return refusals
    for (const rule of rules) {
      if (rule.rpm > 0) append(countsOf(rule.key).requests, now, 1)
      if (rule.concurrency > 0) countsOf(rule.key).inFlight += 1
    }
    return refusals
  }

  const release = (rules: ReadonlyArray<Rule>, tokens: number, now: number): void => {
    for (const rule of rules) {
      if (rule.tpm > 0 && tokens > 0) {
        const counts = countsOf(rule.key)
        prune(counts.tokens, now - windowMs)
        append(counts.tokens, now, tokens)
      }
      if (rule.concurrency > 0) {
        const counts = subjects.get(rule.key)
        if (counts !== undefined) counts.inFlight = Math.max(0, counts.inFlight - 1)
      }
    }
  }

  return { admit, release, size: () => subjects.size }
}
