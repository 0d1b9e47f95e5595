/**
 * Throttles password guessing: after `maxFailures` failed logins for one
 * username within `windowMillis`, further attempts for it are refused until
 * the window since the first of them has passed, whether the password is
 * right or not. Keyed by the name as sent (lower-cased), so a name that does
 * not exist is throttled the same way and the answer tells nothing about
 * which names exist. Per instance, in memory, capped at `MAX_TRACKED` names.
 *
 * @since 0.1.0
 */

/** Throttle settings. @category models */
export interface ThrottleOptions {
  readonly maxFailures: number
  readonly windowMillis: number
}

/** The most usernames tracked at once; when full, expired entries are dropped, then the oldest. */
const MAX_TRACKED = 50_000

/** A login throttle. @category models */
export interface LoginThrottle {
  /** Seconds to wait before `username` may try again, or `undefined` when it may try now. */
  readonly blockedFor: (username: string) => number | undefined
  /** Counts a failed attempt. */
  readonly failed: (username: string) => void
  /** Forgets the failures of `username` (a successful login). */
  readonly succeeded: (username: string) => void
}

/**
 * A new throttle; `now` is the clock in milliseconds (tests pass their own).
 *
 * @category constructors
 */
export const makeLoginThrottle = (options: ThrottleOptions, now: () => number = Date.now): LoginThrottle => {
  const entries = new Map<string, { first: number; count: number }>()
  const keyOf = (username: string) => username.slice(0, 256).toLowerCase()
  const live = (key: string) => {
    const entry = entries.get(key)
    if (entry !== undefined && now() - entry.first >= options.windowMillis) {
      entries.delete(key)
      return undefined
    }
    return entry
  }
  return {
    blockedFor: (username) => {
      const entry = live(keyOf(username))
      if (entry === undefined || entry.count < options.maxFailures) return undefined
      return Math.max(1, Math.ceil((entry.first + options.windowMillis - now()) / 1000))
    },
    failed: (username) => {
      const key = keyOf(username)
      const entry = live(key)
      if (entry !== undefined) {
        entry.count += 1
        return
      }
      if (entries.size >= MAX_TRACKED) {
        for (const name of [...entries.keys()]) live(name)
        if (entries.size >= MAX_TRACKED) entries.delete(entries.keys().next().value!)
      }
      entries.set(key, { first: now(), count: 1 })
    },
    succeeded: (username) => {
      entries.delete(keyOf(username))
    }
  }
}
