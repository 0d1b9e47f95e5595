/**
 * A `channels` row and how `/api/channel` shows it: secrets masked
 * (`ChannelMasking.ts`), keys as this instance's catalog holds them, the
 * router's health state, test times in epoch seconds. Pure.
 *
 * @since 0.1.0
 */
import type { ChannelSettings } from "../../config/BootstrapFile.ts"
import { epochSeconds } from "../../domain/Page.ts"
import type { HealthView } from "../../services/ChannelRouter.ts"
import type { ChannelKey } from "../../storage/Catalog.ts"
import { maskKey, maskSettings, maskUrl } from "./ChannelMasking.ts"

/** A channel as `/api/channel` shows it (keys masked; times in epoch seconds). @category models */
export interface ChannelView {
  readonly id: number
  readonly name: string
  readonly type: string
  readonly base_url: string
  readonly models: ReadonlyArray<string>
  readonly groups: ReadonlyArray<string>
  readonly priority: number
  readonly weight: number
  readonly model_mapping: Readonly<Record<string, string>>
  readonly settings: unknown
  readonly status: "enabled" | "disabled"
  readonly keys: ReadonlyArray<{
    readonly position: number
    readonly key: string
    readonly enabled: boolean
    readonly disabled_reason: string | null
  }>
  /** This instance's view: healthy, cooling or disabled. */
  readonly health: HealthView["state"] | "unknown"
  readonly tested_at: number | null
  readonly test_latency_ms: number | null
  readonly test_error: string | null
}

/**
 * A channel's own fields as stored (`channels`; the keys and abilities live in
 * their own tables).
 *
 * @category models
 */
export interface ChannelFields {
  readonly name: string
  readonly type: string
  readonly baseUrl: string
  readonly models: ReadonlyArray<string>
  readonly groups: ReadonlyArray<string>
  readonly priority: number
  readonly weight: number
  readonly modelMapping: Readonly<Record<string, string>>
  readonly settings: typeof ChannelSettings.Type
  readonly enabled: boolean
}

/** A `channels` row as the store reads it: its fields, id and last test (latency in milliseconds). @category models */
export interface ChannelRow extends ChannelFields {
  readonly id: bigint
  readonly testedAt: Date | null
  readonly testLatencyMs: number | null
  readonly testError: string | null
}

/**
 * The row as `/api/channel` shows it, with the channel's `keys` as the
 * catalog holds them and its `health` state on this instance (`undefined`:
 * the router does not know it).
 *
 * @category views
 */
export const channelViewOf = (
  row: ChannelRow,
  keys: ReadonlyArray<ChannelKey>,
  health: HealthView["state"] | undefined
): ChannelView => ({
  id: Number(row.id),
  name: row.name,
  type: row.type,
  base_url: maskUrl(row.baseUrl),
  models: row.models,
  groups: row.groups,
  priority: row.priority,
  weight: row.weight,
  model_mapping: row.modelMapping ?? {},
  settings: maskSettings(row.settings ?? {}),
  status: row.enabled ? "enabled" : "disabled",
  keys: keys.map((key) => ({
    position: key.position,
    key: maskKey(key.key),
    enabled: key.enabled,
    disabled_reason: key.disabledReason
  })),
  health: health ?? "unknown",
  tested_at: epochSeconds(row.testedAt),
  test_latency_ms: row.testLatencyMs,
  test_error: row.testError
})
