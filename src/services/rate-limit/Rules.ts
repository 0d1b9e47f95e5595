/**
 * The limiter's arithmetic that does not depend on where counts live: turning
 * caller-supplied limits into bounded integer rules, and turning refusals into
 * the `RateLimited` error (message and `Retry-After`).
 *
 * @since 0.1.0
 */
import { RateLimited } from "../../errors/GatewayError.ts"

/**
 * Largest amount (limit or token count) the limiter stores: 10^12. Keeps every
 * sum far below 2^53, so JavaScript numbers, Lua numbers and Redis integers
 * agree exactly.
 *
 * @category constants
 */
export const maxAmount = 1_000_000_000_000

/**
 * Default sliding window length in milliseconds (one minute: the "per minute"
 * of rpm and tpm).
 *
 * @category constants
 */
export const defaultWindowMs = 60_000

/**
 * One subject's limits as bounded positive integers; `0` means "no limit".
 *
 * @category models
 */
export interface Rule {
  readonly key: string
  /** Requests admitted per window. */
  readonly rpm: number
  /** Tokens (prompt + completion) recorded per window. */
  readonly tpm: number
  /** Requests in flight at once. */
  readonly concurrency: number
}

/**
 * Which limit refused a request.
 *
 * @category models
 */
export type LimitName = "rpm" | "tpm" | "concurrency"

/**
 * One limit that refused a request: the subject, the limit and its value, and
 * the milliseconds until it would admit again (a guess of one second for
 * concurrency, which frees on release, not with time).
 *
 * @category models
 */
export interface Refusal {
  readonly key: string
  readonly limit: LimitName
  readonly allowed: number
  readonly retryAfterMs: number
}

/**
 * Milliseconds a concurrency refusal suggests waiting: a slot frees when some
 * request finishes, which no clock can predict.
 *
 * @category constants
 */
export const concurrencyRetryMs = 1_000

/**
 * A limit as a bounded integer: `undefined`, non-finite, or below 1 after
 * flooring mean "no limit" (0); anything above `maxAmount` becomes `maxAmount`.
 *
 * @category normalizing
 */
export const boundedLimit = (value: number | undefined): number => {
  if (value === undefined || !Number.isFinite(value)) return 0
  const floored = Math.floor(value)
  return floored < 1 ? 0 : Math.min(floored, maxAmount)
}

/**
 * A token count as a bounded integer in `[0, maxAmount]` (non-finite and
 * negative counts become 0).
 *
 * @category normalizing
 */
export const boundedTokens = (value: number): number =>
  Number.isFinite(value) ? Math.min(Math.max(Math.floor(value), 0), maxAmount) : 0

/**
 * A window length in whole milliseconds, at least 1; `undefined` or invalid
 * values give `defaultWindowMs`.
 *
 * @category normalizing
 */
export const boundedWindowMs = (value: number | undefined): number => {
  if (value === undefined || !Number.isFinite(value) || value < 1) return defaultWindowMs
  return Math.min(Math.floor(value), maxAmount)
}

const stricter = (left: number, right: number): number =>
  left === 0 ? right : right === 0 ? left : Math.min(left, right)

/**
 * The rules to enforce for `subjects`: one per distinct key (a key listed twice
 * gets the stricter of each limit), and none for subjects without any limit.
 *
 * @category normalizing
 */
export const toRules = (
  subjects: ReadonlyArray<
    {
      readonly key: string
      readonly limits: {
        readonly rpm?: number | undefined
        readonly tpm?: number | undefined
        readonly concurrency?: number | undefined
      }
    }
  >
): ReadonlyArray<Rule> => {
  const byKey = new Map<string, Rule>()
  for (const subject of subjects) {
    const rule: Rule = {
      key: subject.key,
      rpm: boundedLimit(subject.limits.rpm),
      tpm: boundedLimit(subject.limits.tpm),
      concurrency: boundedLimit(subject.limits.concurrency)
    }
    const seen = byKey.get(rule.key)
    byKey.set(
      rule.key,
      seen === undefined ? rule : {
        key: rule.key,
        rpm: stricter(seen.rpm, rule.rpm),
        tpm: stricter(seen.tpm, rule.tpm),
        concurrency: stricter(seen.concurrency, rule.concurrency)
      }
    )
  }
  return [...byKey.values()].filter((rule) => rule.rpm > 0 || rule.tpm > 0 || rule.concurrency > 0)
}

/**
 * Whole seconds for a `Retry-After` header: milliseconds rounded up, at least 1.
 *
 * @category errors
 */
export const retryAfterSeconds = (milliseconds: number): number => Math.max(1, Math.ceil(milliseconds / 1_000))

const describeWindow = (windowMs: number): string => windowMs === defaultWindowMs ? "minute" : `${windowMs / 1_000} s`

/**
 * Whose limit a counter key is, as a caller may read it: the kind of subject
 * (`token:12` → "this API key", `user:3` → "this account"), never the
 * internal id in the key.
 *
 * @category errors
 */
export const subjectLabel = (key: string): string => {
  const kind = key.slice(0, key.indexOf(":"))
  return kind === "token" ? "this API key" : kind === "user" ? "this account" : "this caller"
}

const describe = (refusal: Refusal, windowMs: number): string => {
  const whose = subjectLabel(refusal.key)
  switch (refusal.limit) {
    case "rpm":
      return `${refusal.allowed} requests per ${describeWindow(windowMs)} for ${whose}`
    case "tpm":
      return `${refusal.allowed} tokens per ${describeWindow(windowMs)} for ${whose}`
    case "concurrency":
      return `${refusal.allowed} concurrent requests for ${whose}`
  }
}

/**
 * The error for a refused request: the message names every limit hit (whose
 * it is by kind, never by internal id), and
 * `retryAfterSeconds` is the longest wait among them (the request needs all
 * of them to admit it). `refusals` must not be empty.
 *
 * @category errors
 */
export const rateLimited = (refusals: ReadonlyArray<Refusal>, windowMs: number): RateLimited =>
  new RateLimited({
    message: `Rate limit reached: ${refusals.map((refusal) => describe(refusal, windowMs)).join("; ")}`,
    retryAfterSeconds: retryAfterSeconds(Math.max(0, ...refusals.map((refusal) => refusal.retryAfterMs)))
  })
