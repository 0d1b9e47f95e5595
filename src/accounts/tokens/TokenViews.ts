/**
 * A user's API keys as `/api/token` shows them and takes them: the view
 * (the stored display prefix only, never a key), a new key's settings, a
 * change, and the `tokens` row the view is read from. Amounts in quota units,
 * times in epoch seconds. Pure.
 *
 * @since 0.1.0
 */
import type { LimitsSpec } from "../../config/BootstrapFile.ts"
import type { BudgetList } from "../../domain/BudgetPeriod.ts"
import { epochSeconds } from "../../domain/Page.ts"
import type { BudgetView } from "../BudgetViews.ts"

/** A token's rate limits: requests and tokens per minute, requests at once (absent = no limit). @category models */
export type TokenLimits = typeof LimitsSpec.Type

/** A key as listed: `key` is the masked prefix; `remain_quota` `null` = unlimited; times in epoch seconds. @category models */
export interface TokenView {
  readonly id: number
  readonly name: string
  readonly key: string
  readonly status: "enabled" | "disabled"
  readonly remain_quota: number | null
  readonly used_quota: number
  readonly models: ReadonlyArray<string> | null
  /** Addresses and CIDR ranges the key may be used from; `null` = anywhere. */
  readonly allow_ips: ReadonlyArray<string> | null
  readonly group: string | null
  readonly expires_at: number | null
  readonly created_at: number
  /** Rate limits of this key; `null` = the user's and group's only. */
  readonly limits: TokenLimits | null
  /** `api` for a key a caller presents; `playground` for the console's internal token, used by the session only. */
  readonly kind: "api" | "playground"
  /** The key's spend budgets with this period's spend and reset; `null` = none. */
  readonly budgets: ReadonlyArray<BudgetView> | null
}

/** A new key's settings. `expires_at` in epoch seconds. @category models */
export interface NewToken {
  readonly name: string
  readonly remain_quota?: number | null | undefined
  readonly expires_at?: number | null | undefined
  readonly models?: ReadonlyArray<string> | null | undefined
  readonly allow_ips?: ReadonlyArray<string> | null | undefined
  readonly limits?: TokenLimits | null | undefined
  /** The key's budgets, each within the user's budget of the same period (`null` or `[]` = none). */
  readonly budgets?: typeof BudgetList.Type | null | undefined
}

/** A change to a key: `id` and any of the rest (`null` clears a limit). @category models */
export interface TokenPatch extends Partial<NewToken> {
  readonly id: number
  readonly status?: "enabled" | "disabled" | undefined
}

/** A `tokens` row as the store reads it (`budgets` the stored JSON, `keyHash` the digest). @category models */
export interface TokenRow {
  readonly id: bigint
  readonly name: string
  readonly prefix: string
  readonly enabled: boolean
  readonly remain: bigint | null
  readonly used: bigint
  readonly models: Array<string> | null
  readonly allowIps: Array<string> | null
  readonly group: string | null
  readonly expiresAt: Date | null
  readonly createdAt: Date
  readonly limits: TokenLimits | null
  readonly keyHash: string
  readonly budgets: unknown
}

/**
 * The row as listed, with its `budgets` and this period's spend (`null`:
 * none). An empty IP list or limits object reads as none; a digest that is a
 * playground token's marks the key `playground`.
 *
 * @category views
 */
export const tokenViewOf = (row: TokenRow, budgets: ReadonlyArray<BudgetView> | null): TokenView => ({
  id: Number(row.id),
  name: row.name,
  key: row.prefix,
  status: row.enabled ? "enabled" : "disabled",
  remain_quota: row.remain === null ? null : Number(row.remain),
  used_quota: Number(row.used),
  models: row.models,
  allow_ips: row.allowIps === null || row.allowIps.length === 0 ? null : row.allowIps,
  group: row.group,
  expires_at: epochSeconds(row.expiresAt),
  created_at: epochSeconds(row.createdAt) ?? 0,
  limits: row.limits === null || Object.keys(row.limits).length === 0 ? null : row.limits,
  kind: row.keyHash.startsWith("playground:") ? "playground" : "api",
  budgets
})
