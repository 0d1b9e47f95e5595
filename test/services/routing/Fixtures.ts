/**
 * Catalog snapshots built from plain values for the router's pure parts:
 * channels with their keys, and the (group, model) → abilities index the
 * catalog derives from them.
 */
import { Effect, Random } from "effect"
import type { Principal } from "../../../src/services/Auth.ts"
import type { Ability, Channel, Snapshot } from "../../../src/storage/Catalog.ts"

/** A channel as the catalog holds it; `keys` lists which of its keys are enabled. */
export const channel = (
  id: number,
  options: {
    readonly priority?: number
    readonly weight?: number
    readonly keys?: ReadonlyArray<boolean>
    readonly enabled?: boolean
    readonly models?: ReadonlyArray<string>
    readonly modelMapping?: Readonly<Record<string, string>>
    readonly settings?: Channel["settings"]
  } = {}
): Channel => ({
  id,
  name: `channel-${id}`,
  type: "openai",
  baseUrl: "http://127.0.0.1:9",
  models: options.models ?? ["gpt-test"],
  priority: options.priority ?? 0,
  weight: options.weight ?? 1,
  modelMapping: options.modelMapping ?? {},
  settings: options.settings ?? {},
  enabled: options.enabled ?? true,
  keys: (options.keys ?? [true]).map((enabled, position) => ({
    position,
    key: `sk-${id}-${position}`,
    enabled,
    disabledReason: enabled ? null : "refused"
  }))
})

/** The snapshot of `channels`, each serving its models in `group` with its priority and weight. */
export const snapshotOf = (channels: ReadonlyArray<Channel>, group = "default"): Snapshot => {
  const byModel = new Map<string, Array<Ability>>()
  for (const item of channels) {
    for (const model of item.models) {
      const abilities = byModel.get(model) ?? []
      abilities.push({ channelId: item.id, priority: item.priority, weight: item.weight })
      byModel.set(model, abilities)
    }
  }
  return {
    groups: new Map(),
    prices: new Map(),
    families: new Map(),
    videoFamilies: new Map(),
    channels: new Map(channels.map((item) => [item.id, item])),
    abilities: new Map([[group, byModel]])
  }
}

/** A caller of `group`, with the token allow-list `models` (`undefined`: every model). */
export const principalOf = (group = "default", models?: ReadonlyArray<string>): Principal => ({
  tokenId: 1n,
  tokenName: "main",
  userId: 1n,
  group,
  models,
  unlimitedQuota: false,
  expiresAt: undefined,
  tokenLimits: undefined,
  userLimits: undefined
})

/** A draw in [0, 1) from Effect's `Random` seeded with `seed` (the router passes its `Random` the same way). */
export const seeded = (seed: string): () => number =>
  Effect.runSync(Effect.map(Random.Random, (random) => () => random.nextDoubleUnsafe()).pipe(Random.withSeed(seed)))
