/**
 * Who may manage whom, over plain values: a caller manages only users
 * ranked below it (and, where allowed, itself), and grants only roles below
 * its own; and how a user row reads as `/api/*` shows it.
 *
 * @since 0.1.0
 */
import { epochSeconds } from "../domain/Page.ts"
import type { BudgetList } from "../domain/BudgetPeriod.ts"
import type { BudgetView } from "./BudgetViews.ts"
import { type Role, roleRank } from "./Sessions.ts"

/** A user as `/api/*` shows it: amounts in quota units, `created_at` in epoch seconds. @category models */
export interface UserView {
  readonly id: number
  readonly username: string
  readonly display_name: string
  readonly email: string | null
  readonly role: Role
  readonly group: string
  readonly quota: number
  readonly used_quota: number
  readonly request_count: number
  readonly status: "enabled" | "disabled"
  /** Providers of the linked OAuth identities. */
  readonly oauth: ReadonlyArray<string>
  readonly created_at: number
  /** The user's spend budgets (set by an admin) with this period's spend and reset; `null` = none. */
  readonly budgets: ReadonlyArray<BudgetView> | null
}

/**
 * A `users` row as the store reads it (amounts in quota units, `budgets` the
 * stored JSON, `budgetViews` the budgets with this period's spend).
 *
 * @category models
 */
export interface UserRow {
  readonly id: bigint
  readonly username: string
  readonly displayName: string
  readonly email: string | null
  readonly role: string
  readonly group: string
  readonly quota: bigint
  readonly usedQuota: bigint
  readonly requestCount: bigint
  readonly enabled: boolean
  readonly oauth: Array<string> | null
  readonly createdAt: Date
  readonly budgets: unknown
  readonly budgetViews?: ReadonlyArray<BudgetView> | null
}

/** A stored role as one the gateway knows (anything but root and admin reads as user). */
export const roleOf = (role: string): Role => role === "root" || role === "admin" ? role : "user"

/** The row as `/api/*` shows it. */
export const viewOf = (row: UserRow): UserView => ({
  id: Number(row.id),
  username: row.username,
  display_name: row.displayName,
  email: row.email,
  role: roleOf(row.role),
  group: row.group,
  quota: Number(row.quota),
  used_quota: Number(row.usedQuota),
  request_count: Number(row.requestCount),
  status: row.enabled ? "enabled" : "disabled",
  oauth: row.oauth ?? [],
  created_at: epochSeconds(row.createdAt) ?? 0,
  budgets: row.budgetViews ?? null
})

/**
 * Why a caller (`callerId`, `callerRole`) may not manage the user `target`
 * (a view), or `undefined` when it may: it outranks the target, or the
 * target is itself and `allowSelf`.
 */
export const manageRefusal = (
  callerId: bigint,
  callerRole: Role,
  target: Pick<UserView, "id" | "role">,
  allowSelf: boolean
): string | undefined => {
  if (allowSelf && BigInt(target.id) === callerId) return undefined
  return roleRank(target.role) >= roleRank(callerRole)
    ? `A ${callerRole} cannot manage a ${target.role} user.`
    : undefined
}

/** Why a caller of `callerRole` may not grant `role`, or `undefined` when it may (or no role is granted). */
export const grantRefusal = (callerRole: Role, role: Role | undefined): string | undefined =>
  role !== undefined && roleRank(role) >= roleRank(callerRole)
    ? `A ${callerRole} cannot grant the role ${role}.`
    : undefined

/** What registration and an admin's create take. @category models */
export interface NewUser {
  readonly username: string
  readonly password: string
  readonly display_name?: string | undefined
  readonly email?: string | undefined
  readonly role?: Role | undefined
  readonly group?: string | undefined
}

/** What an admin's update takes (`id` and any of the rest). @category models */
export interface UserPatch {
  readonly id: number
  readonly display_name?: string | undefined
  readonly email?: string | null | undefined
  readonly role?: Role | undefined
  readonly group?: string | undefined
  readonly status?: "enabled" | "disabled" | undefined
  readonly password?: string | undefined
  /** The user's budgets (replacing the list; `null` or `[]` removes them). Spend already charged is kept. */
  readonly budgets?: typeof BudgetList.Type | null | undefined
}
