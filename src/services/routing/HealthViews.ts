/**
 * What the router's health state looks like from outside, as plain functions
 * over the catalog's channels and the `HealthBook`: the view `GET /api/status`
 * reports, and the channels and keys the prober should test. Times are epoch
 * milliseconds in, epoch seconds out.
 *
 * @since 0.1.0
 */
import type { Channel } from "../../storage/Catalog.ts"
import type { Candidate } from "./CandidateOrder.ts"
import type { HealthBook } from "./ChannelHealth.ts"

/** A channel's or key's health, as reported by `GET /api/status`. @category models */
export interface HealthView {
  readonly channelId: number
  readonly name: string
  readonly state: "healthy" | "cooling" | "disabled"
  readonly consecutiveFailures: number
  /** End of the cooldown, epoch seconds (floored); `undefined` unless cooling. */
  readonly cooldownUntil: number | undefined
  readonly keys: ReadonlyArray<{ readonly position: number; readonly enabled: boolean; readonly reason: string | null }>
}

/**
 * Each channel's view at `now` (epoch ms): `disabled` when the channel or all
 * of its keys are, else `cooling` while its cooldown runs, else `healthy`.
 *
 * @category health
 */
export const healthViews = (channels: Iterable<Channel>, book: HealthBook, now: number): Array<HealthView> =>
  Array.from(channels, (channel): HealthView => {
    const state = book.get(channel.id)
    const cooling = (state?.cooldownUntil ?? 0) > now
    const anyKey = channel.keys.some((key) => key.enabled)
    return {
      channelId: channel.id,
      name: channel.name,
      state: !channel.enabled || !anyKey ? "disabled" : cooling ? "cooling" : "healthy",
      consecutiveFailures: state?.failures ?? 0,
      cooldownUntil: cooling ? Math.floor((state?.cooldownUntil ?? 0) / 1000) : undefined,
      keys: channel.keys.map((key) => ({
        position: key.position,
        enabled: key.enabled,
        reason: key.disabledReason
      }))
    }
  })

/**
 * What the prober should test at `now` (epoch ms): of each enabled channel,
 * every key when the channel is cooling or believed down (until a success
 * announces its recovery), else its disabled keys. The model tried is the
 * channel's `test_model` setting, else its first model (mapped). A channel
 * with neither is left out.
 *
 * @category health
 */
export const probeTargets = (channels: Iterable<Channel>, book: HealthBook, now: number): Array<Candidate> => {
  const out: Array<Candidate> = []
  for (const channel of channels) {
    if (!channel.enabled) continue
    const upstreamModel = channel.settings.test_model ?? channel.modelMapping[channel.models[0]] ??
      channel.models[0]
    if (upstreamModel === undefined) continue
    const state = book.get(channel.id)
    const cooling = (state?.cooldownUntil ?? 0) > now || state?.down === true
    for (const key of channel.keys) {
      if (!key.enabled || cooling) out.push({ channel, key, upstreamModel })
    }
  }
  return out
}
