/**
 * The router's try order over a catalog snapshot, as plain functions: which
 * abilities a caller may use, the priority tiers (highest first), the
 * weighted order inside a tier (`WeightedOrder`), each channel's enabled keys
 * in rotation, and channels in cooldown after every ready one. No effect: the
 * time and the draw are parameters (`ChannelRouter` passes its layer's
 * `Clock` time and `Random`).
 *
 * @since 0.1.0
 */
import type { Ability, Channel, ChannelKey, Snapshot } from "../../storage/Catalog.ts"
import type { Principal } from "../Auth.ts"
import { type HealthBook, isCooling } from "./ChannelHealth.ts"
import { weightedOrder } from "./WeightedOrder.ts"

/** One attempt: a channel, one of its keys, and the model name the upstream gets. @category models */
export interface Candidate {
  readonly channel: Channel
  readonly key: ChannelKey
  readonly upstreamModel: string
}

/**
 * Where each channel's key rotation stands, by channel id: the count of
 * orders drawn for it (mutable, one entry per channel with two or more
 * enabled keys).
 *
 * @category models
 */
export type KeyCursor = Map<number, number>

/** Whether the caller's token may use `model` (no allow-list: every model of its group). @category routing */
export const isAllowed = (principal: Principal, model: string): boolean =>
  principal.models === undefined || principal.models.includes(model)

/**
 * The channel's enabled keys, starting one further along at each call (so
 * successive requests spread over the keys); advances `cursor`.
 *
 * @category routing
 */
export const keysInOrder = (cursor: KeyCursor, channel: Channel): Array<ChannelKey> => {
  const usable = channel.keys.filter((key) => key.enabled)
  if (usable.length <= 1) return usable
  const start = (cursor.get(channel.id) ?? 0) % usable.length
  cursor.set(channel.id, start + 1)
  return usable.slice(start).concat(usable.slice(0, start))
}

/**
 * The candidates for `model` in the caller's group (and token allow-list), in
 * try order: priority tiers highest first, a weighted order inside a tier
 * drawn with `draw` (numbers in [0, 1)), each channel's enabled keys from
 * `cursor`, and every candidate of a channel cooling at `now` (epoch ms, per
 * `book`) after the ready ones. Disabled channels are left out; empty when
 * nothing serves the model.
 *
 * @category routing
 */
export const orderCandidates = (
  snapshot: Snapshot,
  principal: Principal,
  model: string,
  now: number,
  book: HealthBook,
  cursor: KeyCursor,
  draw: () => number
): Array<Candidate> => {
  const abilities = isAllowed(principal, model) ? snapshot.abilities.get(principal.group)?.get(model) ?? [] : []
  const tiers = new Map<number, Array<Ability>>()
  for (const ability of abilities) {
    const channel = snapshot.channels.get(ability.channelId)
    if (channel === undefined || !channel.enabled) continue
    const tier = tiers.get(ability.priority) ?? []
    tier.push(ability)
    tiers.set(ability.priority, tier)
  }
  const ready: Array<Candidate> = []
  const cooling: Array<Candidate> = []
  for (const priority of [...tiers.keys()].sort((a, b) => b - a)) {
    for (const ability of weightedOrder(tiers.get(priority)!, (a) => a.weight, draw)) {
      const channel = snapshot.channels.get(ability.channelId)!
      const upstreamModel = channel.modelMapping[model] ?? model
      const target = isCooling(book, channel.id, now) ? cooling : ready
      for (const key of keysInOrder(cursor, channel)) target.push({ channel, key, upstreamModel })
    }
  }
  return ready.concat(cooling)
}

/** The models of the caller's group its token may use, sorted. @category routing */
export const modelsFor = (snapshot: Snapshot, principal: Principal): Array<string> => {
  const byModel = snapshot.abilities.get(principal.group)
  if (byModel === undefined) return []
  return [...byModel.keys()].filter((model) => isAllowed(principal, model)).sort()
}
