/**
 * Users: password login (throttled per name and per address before bcrypt
 * runs, the same answer for an unknown name, a wrong password and a disabled
 * account), registration (throttled per address), the root user of a first start, the
 * caller's own profile, and the admin's management of users — roles (a
 * caller manages only users ranked below it and grants only roles below its
 * own), groups, status and quota top-ups (each a `quota_topups` row). Every
 * admin change is audited in its own transaction; a change that affects keys
 * or sessions clears the key cache and ends the user's sessions.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { Forbidden, InvalidRequest, NotFound, type RateLimited } from "../errors/GatewayError.ts"
import { epochSeconds, offsetOf, type Page, type PageRequest } from "../domain/Page.ts"
import { generatePassword, passwordProblem } from "../domain/Password.ts"
import { type BudgetList, budgetsJson, fromSpec } from "../domain/BudgetPeriod.ts"
import { writeAudit } from "./AuditLog.ts"
import { type BudgetView, budgetViews } from "./BudgetViews.ts"
import { Auth } from "../services/Auth.ts"
import { LoginThrottle } from "./LoginThrottle.ts"
import { PasswordHasher } from "./PasswordHasher.ts"
import { type Role, roleRank, Sessions, type SessionUser } from "./Sessions.ts"

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

/** What the caller may change of itself. @category models */
export interface SelfPatch {
  readonly display_name?: string | undefined
  readonly password?: string | undefined
  readonly old_password?: string | undefined
}

/** Registration settings. @category models */
export interface AccountOptions {
  readonly registration: boolean
  readonly newUserQuota: number
  readonly newUserGroup: string
}

interface UserRow {
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

const roleOf = (role: string): Role => role === "root" || role === "admin" ? role : "user"

const viewOf = (row: UserRow): UserView => ({
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

const SAME_ANSWER = "Invalid username or password."

const badPassword = (password: string, param: string) => {
  const problem = passwordProblem(password)
  return problem === undefined ? Effect.void : Effect.fail(new InvalidRequest({ message: problem, param }))
}

/** @category services */
export class Accounts extends Context.Service<Accounts, {
  /**
   * Checks a password login from the client `address`; a new session id on
   * success. The attempt is counted (per name and per address) before the
   * password is hashed; `RateLimited` past either cap or when the hasher is busy.
   */
  readonly login: (
    username: string,
    password: string,
    address: string | undefined
  ) => Effect.Effect<{ readonly user: UserView; readonly sessionId: string }, InvalidRequest | RateLimited>
  /** Opens an account (when registration is open) with the new-user quota and group; counted per `address`. */
  readonly register: (
    input: NewUser,
    address: string | undefined
  ) => Effect.Effect<UserView, InvalidRequest | Forbidden | RateLimited>
  /** Creates `root` (role root) when no root user exists; returns the password it generated, if it did. */
  readonly ensureRoot: (password: string | undefined) => Effect.Effect<Option.Option<string>>
  /** One user by id. */
  readonly view: (id: bigint) => Effect.Effect<UserView, NotFound>
  /** The caller changes its display name or password; a password change ends every session and opens a new one. */
  readonly updateSelf: (
    caller: SessionUser,
    patch: SelfPatch
  ) => Effect.Effect<{ readonly user: UserView; readonly sessionId: string | undefined }, InvalidRequest | RateLimited>
  /**
   * Admin: the users the caller may manage (ranked below it) and itself,
   * newest first, optionally those whose name contains `keyword`.
   */
  readonly list: (
    caller: SessionUser,
    page: PageRequest,
    keyword: string | undefined
  ) => Effect.Effect<Page<UserView>>
  /** Admin: a user the caller outranks, or itself. */
  readonly get: (caller: SessionUser, id: bigint) => Effect.Effect<UserView, NotFound | Forbidden>
  readonly create: (
    caller: SessionUser,
    input: NewUser
  ) => Effect.Effect<UserView, InvalidRequest | Forbidden | RateLimited>
  readonly update: (
    caller: SessionUser,
    patch: UserPatch
  ) => Effect.Effect<UserView, InvalidRequest | Forbidden | NotFound | RateLimited>
  readonly remove: (caller: SessionUser, id: bigint) => Effect.Effect<void, Forbidden | NotFound>
  /** Admin: adds `amount` quota units to a user's balance, recorded as a top-up row. */
  readonly topUp: (
    caller: SessionUser,
    id: bigint,
    amount: bigint,
    note: string
  ) => Effect.Effect<UserView, Forbidden | NotFound>
}>()("sluice/services/Accounts") {
  /** SQL-backed. */
  static readonly layer = (options: AccountOptions) =>
    Layer.effect(
      Accounts,
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const sessions = yield* Sessions
        const auth = yield* Auth
        const throttle = yield* LoginThrottle
        const hasher = yield* PasswordHasher

        const select = (where: Statement.Fragment) =>
          sql<UserRow>`
            SELECT u.id, u.username, u.display_name AS "displayName", u.email, u.role, u.group_name AS "group",
                   u.quota, u.used_quota AS "usedQuota", u.request_count AS "requestCount", u.enabled,
                   (SELECT array_agg(o.provider ORDER BY o.provider) FROM oauth_identities o WHERE o.user_id = u.id)
                     AS oauth,
                   u.created_at AS "createdAt", u.budgets
            FROM users u WHERE ${where}`.pipe(
            Effect.orDie,
            Effect.flatMap((rows) =>
              Effect.map(
                budgetViews(sql, "user", rows),
                (views) => rows.map((row) => ({ ...row, budgetViews: views.get(BigInt(row.id)) ?? null }))
              )
            )
          )

        const find = (id: bigint) =>
          Effect.map(select(sql`u.id = ${id}`), (rows) => Option.map(Option.fromNullishOr(rows[0]), viewOf))

        const view = (id: bigint) =>
          Effect.flatMap(find(id), (found) =>
            Option.isSome(found)
              ? Effect.succeed(found.value)
              : Effect.fail(new NotFound({ what: "user", id: String(id), param: "id" })))

        const usernameTaken = (username: string) =>
          sql<{ n: bigint }>`SELECT count(*) AS n FROM users WHERE lower(username) = lower(${username})`.pipe(
            Effect.map(([row]) =>
              Number(row.n) > 0
            ),
            Effect.orDie
          )

        const insertUser = (input: NewUser, quota: number, group: string, actor: SessionUser | undefined) =>
          Effect.gen(function* () {
            yield* badPassword(input.password, "password")
            if (yield* usernameTaken(input.username)) {
              return yield* new InvalidRequest({ message: "The username is taken.", param: "username" })
            }
            const hash = yield* hasher.hash(input.password)
            const role = input.role ?? "user"
            const id = yield* sql.withTransaction(Effect.gen(function* () {
              const [row] = yield* sql<{ id: bigint }>`
                INSERT INTO users (username, password_hash, role, group_name, quota, display_name, email)
                VALUES (${input.username}, ${hash}, ${role}, ${group}, ${quota}, ${input.display_name ?? ""},
                        ${input.email ?? null})
                RETURNING id`
              yield* writeAudit(sql, {
                actor,
                action: actor === undefined ? "user.register" : "user.create",
                target: `user:${row.id}`,
                before: undefined,
                after: { username: input.username, role, group, quota }
              })
              return row.id
            })).pipe(
              // Two sign-ups of names that differ only in case at once: the unique index on lower(username) lets
              // one through; the other is told the name is taken.
              Effect.catchTag("SqlError", (error) =>
                Effect.flatMap(
                  usernameTaken(input.username),
                  (taken) =>
                    taken
                      ? Effect.fail(new InvalidRequest({ message: "The username is taken.", param: "username" }))
                      : Effect.die(error)
                ))
            )
            return yield* view(id).pipe(Effect.orDie)
          })

        const login = Effect.fn("Accounts.login")(function* (
          username: string,
          password: string,
          address: string | undefined
        ) {
          // Counted before bcrypt runs, so parallel guesses cannot all pass a check made before any failed.
          const attempt = yield* throttle.attempt(username, address)
          const rows = yield* sql<{ id: bigint; hash: string | null; enabled: boolean }>`
            SELECT id, password_hash AS hash, enabled FROM users WHERE username = ${username}`.pipe(Effect.orDie)
          const row = rows[0]
          // The same bcrypt work for an unknown name (a decoy hash) as for a wrong password.
          const matched = yield* hasher.verify(password, row?.hash)
          // A disabled account answers as a wrong password does, whether or not the password was right.
          if (row === undefined || !matched || !row.enabled) return yield* new InvalidRequest({ message: SAME_ANSWER })
          yield* attempt.succeeded
          const sessionId = yield* sessions.create(row.id)
          return { user: yield* view(row.id).pipe(Effect.orDie), sessionId }
        })

        const register = Effect.fn("Accounts.register")(function* (input: NewUser, address: string | undefined) {
          if (!options.registration) return yield* new Forbidden({ message: "Registration is closed." })
          yield* throttle.register(address)
          return yield* insertUser({ ...input, role: "user" }, options.newUserQuota, options.newUserGroup, undefined)
        })

        const ensureRoot = Effect.fn("Accounts.ensureRoot")(function* (password: string | undefined) {
          const [{ n }] = yield* sql<{ n: bigint }>`SELECT count(*) AS n FROM users WHERE role = 'root'`.pipe(
            Effect.orDie
          )
          if (Number(n) > 0) return Option.none<string>()
          const chosen = password ?? generatePassword()
          const hash = yield* hasher.hash(chosen).pipe(Effect.orDie)
          const inserted = yield* sql<{ id: bigint }>`
            INSERT INTO users (username, password_hash, role, group_name, quota, display_name)
            VALUES ('root', ${hash}, 'root', 'default', 0, 'Root') ON CONFLICT (username) DO NOTHING RETURNING id`
            .pipe(Effect.orDie)
          if (inserted.length === 0) {
            yield* Effect.logWarning("No root user exists and the name root is taken by another user; none created")
            return Option.none<string>()
          }
          return password === undefined ? Option.some(chosen) : Option.none<string>()
        })

        const updateSelf = Effect.fn("Accounts.updateSelf")(function* (caller: SessionUser, patch: SelfPatch) {
          let sessionId: string | undefined
          if (patch.password !== undefined) {
            yield* badPassword(patch.password, "password")
            const [row] = yield* sql<{ hash: string | null }>`
              SELECT password_hash AS hash FROM users WHERE id = ${caller.id}`.pipe(Effect.orDie)
            const hadPassword = row?.hash !== null && row?.hash !== undefined
            if (hadPassword) {
              const matched = yield* hasher.verify(patch.old_password ?? "", row.hash)
              if (!matched) {
                return yield* new InvalidRequest({ message: "The old password is not right.", param: "old_password" })
              }
            }
            const hash = yield* hasher.hash(patch.password)
            yield* sql`UPDATE users SET password_hash = ${hash} WHERE id = ${caller.id}`.pipe(Effect.orDie)
            yield* sessions.revokeUser(caller.id)
            sessionId = yield* sessions.create(caller.id)
          }
          if (patch.display_name !== undefined) {
            yield* sql`UPDATE users SET display_name = ${patch.display_name} WHERE id = ${caller.id}`.pipe(
              Effect.orDie
            )
          }
          return { user: yield* view(caller.id).pipe(Effect.orDie), sessionId }
        })

        const list = Effect.fn("Accounts.list")(function* (
          caller: SessionUser,
          page: PageRequest,
          keyword: string | undefined
        ) {
          // Only whom `get` would show: users ranked below the caller, and the caller.
          const visible = sql`((CASE u.role WHEN 'root' THEN 2 WHEN 'admin' THEN 1 ELSE 0 END) < ${
            roleRank(caller.role)
          } OR u.id = ${caller.id})`
          const where = keyword === undefined || keyword === ""
            ? visible
            : sql`${visible} AND strpos(lower(u.username), lower(${keyword})) > 0`
          const [{ total }] = yield* sql<{ total: bigint }>`SELECT count(*) AS total FROM users u WHERE ${where}`.pipe(
            Effect.orDie
          )
          const rows = yield* select(sql`${where} ORDER BY u.id DESC LIMIT ${page.size} OFFSET ${offsetOf(page)}`)
          return { items: rows.map(viewOf), total: Number(total), page: page.page, page_size: page.size }
        })

        /** The target user, when the caller outranks it (or it is the caller itself and `self` is allowed). */
        const managed = (caller: SessionUser, id: bigint, allowSelf: boolean) =>
          Effect.gen(function* () {
            const target = yield* view(id)
            if (allowSelf && BigInt(target.id) === caller.id) return target
            if (roleRank(target.role) >= roleRank(caller.role)) {
              return yield* new Forbidden({ message: `A ${caller.role} cannot manage a ${target.role} user.` })
            }
            return target
          })

        const grantable = (caller: SessionUser, role: Role | undefined) =>
          role !== undefined && roleRank(role) >= roleRank(caller.role)
            ? Effect.fail(new Forbidden({ message: `A ${caller.role} cannot grant the role ${role}.` }))
            : Effect.void

        const get = (caller: SessionUser, id: bigint) => managed(caller, id, true)

        const create = Effect.fn("Accounts.create")(function* (caller: SessionUser, input: NewUser) {
          yield* grantable(caller, input.role)
          return yield* insertUser(input, 0, input.group ?? options.newUserGroup, caller)
        })

        const update = Effect.fn("Accounts.update")(function* (caller: SessionUser, patch: UserPatch) {
          const id = BigInt(patch.id)
          const before = yield* managed(caller, id, false)
          yield* grantable(caller, patch.role)
          if (patch.password !== undefined) yield* badPassword(patch.password, "password")
          const hash = patch.password === undefined ? undefined : yield* hasher.hash(patch.password)
          yield* sql.withTransaction(Effect.gen(function* () {
            if (patch.display_name !== undefined) {
              yield* sql`UPDATE users SET display_name = ${patch.display_name} WHERE id = ${id}`
            }
            if (patch.email !== undefined) yield* sql`UPDATE users SET email = ${patch.email} WHERE id = ${id}`
            if (patch.role !== undefined) yield* sql`UPDATE users SET role = ${patch.role} WHERE id = ${id}`
            if (patch.group !== undefined) yield* sql`UPDATE users SET group_name = ${patch.group} WHERE id = ${id}`
            if (patch.status !== undefined) {
              yield* sql`UPDATE users SET enabled = ${patch.status === "enabled"} WHERE id = ${id}`
            }
            if (hash !== undefined) yield* sql`UPDATE users SET password_hash = ${hash} WHERE id = ${id}`
            if (patch.budgets !== undefined) {
              yield* sql`UPDATE users SET budgets = ${
                budgetsJson(fromSpec(patch.budgets ?? []))
              }::jsonb WHERE id = ${id}`
            }
            const { password: _password, ...shown } = patch
            yield* writeAudit(sql, {
              actor: caller,
              action: "user.update",
              target: `user:${id}`,
              before,
              after: { ...shown, ...(patch.password === undefined ? {} : { password: "(changed)" }) }
            })
          })).pipe(Effect.orDie)
          if (patch.password !== undefined || patch.status === "disabled" || patch.role !== undefined) {
            yield* sessions.revokeUser(id)
          }
          yield* auth.invalidate
          return yield* view(id).pipe(Effect.orDie)
        })

        const remove = Effect.fn("Accounts.remove")(function* (caller: SessionUser, id: bigint) {
          const before = yield* managed(caller, id, false)
          yield* sql.withTransaction(Effect.gen(function* () {
            yield* sql`DELETE FROM users WHERE id = ${id}`
            yield* writeAudit(sql, { actor: caller, action: "user.delete", target: `user:${id}`, before, after: null })
          })).pipe(Effect.orDie)
          yield* auth.invalidate
        })

        const topUp = Effect.fn("Accounts.topUp")(function* (
          caller: SessionUser,
          id: bigint,
          amount: bigint,
          note: string
        ) {
          const before = yield* managed(caller, id, caller.role === "root")
          yield* sql.withTransaction(Effect.gen(function* () {
            yield* sql`UPDATE users SET quota = quota + ${amount} WHERE id = ${id}`
            yield* sql`INSERT INTO quota_topups (user_id, amount, actor_id, note)
              VALUES (${id}, ${amount}, ${caller.id}, ${note})`
            yield* writeAudit(sql, {
              actor: caller,
              action: "user.topup",
              target: `user:${id}`,
              before: { quota: before.quota },
              after: { quota: before.quota + Number(amount), amount: Number(amount), note }
            })
          })).pipe(Effect.orDie)
          return yield* view(id).pipe(Effect.orDie)
        })

        return Accounts.of({ login, register, ensureRoot, view, updateSelf, list, get, create, update, remove, topUp })
      })
    )
}
