/**
 * The router's health arithmetic over plain records: how failures count
 * towards a channel's cooldown, how long a cooldown lasts (doubled on each
 * repeat, capped), what a success and a probe clear, and which channels the
 * shared `channel_health` row says are down. No effect and no clock: every
 * time is a parameter, epoch milliseconds. `ChannelRouter` keeps one
 * `HealthBook` per instance and calls these at the points its module doc
 * describes; the SQL of the shared row is `HealthStore`'s.
 *
 * @since 0.1.0
 */

/** Health settings (from the bootstrap file's `settings`). Seconds. @category models */
export interface HealthSettings {
  /** Consecutive retryable failures that start a cooldown (default 3). */
  readonly cooldownFailures: number
  /** First cooldown length (default 30 s), doubled on each repeat up to `cooldownMaxSeconds` (default 600 s). */
  readonly cooldownSeconds: number
  readonly cooldownMaxSeconds: number
  /** The status `ModelNotFound` answers with (the `unknown_model_status` setting; default 503). */
  readonly unknownModelStatus?: 503 | 404 | undefined
}

/** The outcome of one attempt, as the health state sees it. @category models */
export type AttemptOutcome =
  | { readonly _tag: "Success" }
  | { readonly _tag: "Retryable"; readonly reason: string }
  | { readonly _tag: "KeyRejected"; readonly reason: string }

/**
 * One channel's health on this instance (mutable: updated in place on the
 * request path, with no allocation).
 *
 * @category models
 */
export interface ChannelHealth {
  /** Consecutive retryable failures since the last success or cooldown start. */
  failures: number
  /** Cooldowns since the last success: the exponent of the next cooldown's doubling. */
  strikes: number
  /** End of the current cooldown, epoch milliseconds (0 or past: none). */
  cooldownUntil: number
  /** This instance believes `channel.unhealthy` was announced and `channel.recovered` not yet. */
  down: boolean
}

/** Every channel's health on this instance, by channel id (absent: healthy, never failed). @category models */
export type HealthBook = Map<number, ChannelHealth>

/** The channel's record, made healthy on first use. @category health */
export const healthOf = (book: HealthBook, channelId: number): ChannelHealth => {
  let health = book.get(channelId)
  if (health === undefined) {
    health = { failures: 0, strikes: 0, cooldownUntil: 0, down: false }
    book.set(channelId, health)
  }
  return health
}

/** Whether the channel is in cooldown at `now` (epoch ms). A channel with no record is not. @category health */
export const isCooling = (book: HealthBook, channelId: number, now: number): boolean =>
  (book.get(channelId)?.cooldownUntil ?? 0) > now

/**
 * The length of the cooldown that follows `strikes` earlier ones, in seconds:
 * `cooldownSeconds × 2^strikes`, at most `cooldownMaxSeconds`.
 *
 * @category health
 */
export const cooldownLength = (settings: HealthSettings, strikes: number): number =>
  Math.min(settings.cooldownSeconds * 2 ** strikes, settings.cooldownMaxSeconds)

/** A success: the failure count, the strikes and any cooldown are cleared. @category health */
export const recordSuccess = (health: ChannelHealth): void => {
  health.failures = 0
  health.strikes = 0
  health.cooldownUntil = 0
}

/**
 * A retryable failure at `now` (epoch ms). The `cooldownFailures`-th in a row
 * starts a cooldown of `cooldownLength` seconds (one more strike, the count
 * back to 0) and returns its length in seconds; otherwise `undefined`.
 *
 * @category health
 */
export const recordFailure = (health: ChannelHealth, settings: HealthSettings, now: number): number | undefined => {
  health.failures += 1
  if (health.failures < settings.cooldownFailures) return undefined
  const seconds = cooldownLength(settings, health.strikes)
  health.strikes += 1
  health.failures = 0
  health.cooldownUntil = now + seconds * 1000
  return seconds
}

/** A successful probe: the cooldown and the failure count are cleared (the strikes stay until a request succeeds). @category health */
export const endCooldown = (health: ChannelHealth): void => {
  health.cooldownUntil = 0
  health.failures = 0
}

/**
 * Takes the shared state: exactly the channels in `down` are down here (a
 * channel another instance brought back is no longer down here either, so this
 * instance's next cooldown of it is a new transition, a new event).
 *
 * @category health
 */
export const syncDown = (book: HealthBook, down: ReadonlySet<number>): void => {
  for (const [channelId, health] of book) health.down = down.has(channelId)
  for (const channelId of down) healthOf(book, channelId).down = true
}
