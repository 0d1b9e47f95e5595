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
import { SqlClient } from "effect/sql"
import {
  Forbidden,
  InvalidRequest,
  type NotFound,
  type RateLimited,
  type StorageUnavailable
} from "../errors/GatewayError.ts"
import { offsetOf, type Page, type PageRequest } from "../domain/Page.ts"
import { generatePassword, passwordProblem } from "../domain/Password.ts"
import { Auth } from "../services/Auth.ts"
import { LoginThrottle } from "./LoginThrottle.ts"
import { PasswordHasher } from "./PasswordHasher.ts"
import { type Role, roleRank, Sessions, type SessionUser } from "./Sessions.ts"
import { grantRefusal, manageRefusal, type NewUser, type UserPatch, type UserView } from "./UserRoles.ts"
import { userConditions, userOrder, type UserQuery } from "./UserListing.ts"
import { makeUserStore } from "./UserStore.ts"

/** A user as `/api/*` shows it (defined with the row it is read from, `UserRoles.ts`). @category models */
export type { UserView } from "./UserRoles.ts"

export type { NewUser, UserPatch } from "./UserRoles.ts"

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

const SAME_ANSWER = "Invalid username or password."

const badPassword = (password: string, param: string) => {
  const problem = passwordProblem(password)
  return problem === undefined ? Effect.void : Effect.fail(new InvalidRequest({ message: problem, param }))
}

/** @category services */
export class Accounts extends Context.Service<Accounts, {
  /**
   * Checks a password login from the client `address`; a new session id on
   * success. The attempt is counted (per name and per address; per name only
   * when `address` is `undefined`: none to count, see `limitAddressOf`) before
   * the password is hashed; `RateLimited` past either cap or when the hasher
   * is busy.
   */
  readonly login: (
    username: string,
    password: string,
    address: string | undefined
  ) => Effect.Effect<
    { readonly user: UserView; readonly sessionId: string },
    InvalidRequest | RateLimited | StorageUnavailable
  >
  /** Opens an account (when registration is open) with the new-user quota and group; counted per `address`. */
  readonly register: (
    input: NewUser,
    address: string | undefined
  ) => Effect.Effect<UserView, InvalidRequest | Forbidden | RateLimited | StorageUnavailable>
  /** Creates `root` (role root) when no root user exists; returns the password it generated, if it did. */
  readonly ensureRoot: (password: string | undefined) => Effect.Effect<Option.Option<string>, StorageUnavailable>
  /** One user by id. */
  readonly view: (id: bigint) => Effect.Effect<UserView, NotFound | StorageUnavailable>
  /** The caller changes its display name or password; a password change ends every session and opens a new one. */
  readonly updateSelf: (
    caller: SessionUser,
    patch: SelfPatch
  ) => Effect.Effect<
    { readonly user: UserView; readonly sessionId: string | undefined },
    InvalidRequest | RateLimited | StorageUnavailable
  >
  /**
   * Admin: the users the caller may manage (ranked below it) and itself,
   * newest first, optionally those whose name contains `keyword`.
   */
  readonly list: (
    caller: SessionUser,
    page: PageRequest,
    query: UserQuery
  ) => Effect.Effect<Page<UserView>, StorageUnavailable>
  /** Admin: a user the caller outranks, or itself. */
  readonly get: (caller: SessionUser, id: bigint) => Effect.Effect<UserView, NotFound | Forbidden | StorageUnavailable>
  readonly create: (
    caller: SessionUser,
    input: NewUser
  ) => Effect.Effect<UserView, InvalidRequest | Forbidden | RateLimited | StorageUnavailable>
  readonly update: (
    caller: SessionUser,
    patch: UserPatch
  ) => Effect.Effect<UserView, InvalidRequest | Forbidden | NotFound | RateLimited | StorageUnavailable>
  readonly remove: (caller: SessionUser, id: bigint) => Effect.Effect<void, Forbidden | NotFound | StorageUnavailable>
  /** Admin: adds `amount` quota units to a user's balance, recorded as a top-up row. */
  readonly topUp: (
    caller: SessionUser,
    id: bigint,
    amount: bigint,
    note: string
  ) => Effect.Effect<UserView, Forbidden | NotFound | StorageUnavailable>
}>()("sluice/accounts/Accounts") {
  /** SQL-backed. */
  static readonly layer = (options: AccountOptions) =>
    Layer.effect(
      Accounts,
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const store = makeUserStore(sql)
        const sessions = yield* Sessions
        const auth = yield* Auth
        const throttle = yield* LoginThrottle
        const hasher = yield* PasswordHasher
        const view = store.view

        const insertUser = (input: NewUser, quota: number, group: string, actor: SessionUser | undefined) =>
          Effect.gen(function* () {
            yield* badPassword(input.password, "password")
            if (yield* store.usernameTaken(input.username)) {
              return yield* new InvalidRequest({ message: "The username is taken.", param: "username" })
            }
            const hash = yield* hasher.hash(input.password)
            return yield* store.insert(input, hash, quota, group, actor)
          })

        const login = Effect.fn("Accounts.login")(function* (
          username: string,
          password: string,
          address: string | undefined
        ) {
          // Counted before bcrypt runs, so parallel guesses cannot all pass a check made before any failed.
          const attempt = yield* throttle.attempt(username, address)
          const row = yield* store.loginRow(username)
          // The same bcrypt work for an unknown name (a decoy hash) as for a wrong password.
          const matched = yield* hasher.verify(password, row?.hash)
          // A disabled account answers as a wrong password does, whether or not the password was right.
          if (row === undefined || !matched || !row.enabled) return yield* new InvalidRequest({ message: SAME_ANSWER })
          yield* attempt.succeeded
          const sessionId = yield* sessions.create(row.id)
          // The row was written or checked just before: its absence would be a bug, so a defect.
          return { user: yield* view(row.id).pipe(Effect.catchTag("NotFound", Effect.die)), sessionId }
        })

        const register = Effect.fn("Accounts.register")(function* (input: NewUser, address: string | undefined) {
          if (!options.registration) return yield* new Forbidden({ message: "Registration is closed." })
          yield* throttle.register(address)
          return yield* insertUser({ ...input, role: "user" }, options.newUserQuota, options.newUserGroup, undefined)
        })

        const ensureRoot = Effect.fn("Accounts.ensureRoot")(function* (password: string | undefined) {
          if (yield* store.rootExists) return Option.none<string>()
          const chosen = password ?? generatePassword()
          // At start, before serving: a hasher that cannot hash is a broken process, a defect.
          const hash = yield* hasher.hash(chosen).pipe(Effect.orDie)
          if (!(yield* store.insertRoot(hash))) {
            yield* Effect.logWarning("No root user exists and the name root is taken by another user; none created")
            return Option.none<string>()
          }
          return password === undefined ? Option.some(chosen) : Option.none<string>()
        })

        const updateSelf = Effect.fn("Accounts.updateSelf")(function* (caller: SessionUser, patch: SelfPatch) {
          let sessionId: string | undefined
          if (patch.password !== undefined) {
            yield* badPassword(patch.password, "password")
            const stored = yield* store.passwordHash(caller.id)
            if (stored !== null && stored !== undefined) {
              const matched = yield* hasher.verify(patch.old_password ?? "", stored)
              if (!matched) {
                return yield* new InvalidRequest({ message: "The old password is not right.", param: "old_password" })
              }
            }
            yield* store.setPasswordHash(caller.id, yield* hasher.hash(patch.password))
            yield* sessions.revokeUser(caller.id)
            sessionId = yield* sessions.create(caller.id)
          }
          if (patch.display_name !== undefined) yield* store.setDisplayName(caller.id, patch.display_name)
          // The row was written or checked just before: its absence would be a bug, so a defect.
          return { user: yield* view(caller.id).pipe(Effect.catchTag("NotFound", Effect.die)), sessionId }
        })

        const list = Effect.fn("Accounts.list")(function* (
          caller: SessionUser,
          page: PageRequest,
          query: UserQuery
        ) {
          // Only whom `get` would show: users ranked below the caller, and the caller.
          const visible = sql`((CASE u.role WHEN 'root' THEN 2 WHEN 'admin' THEN 1 ELSE 0 END) < ${
            roleRank(caller.role)
          } OR u.id = ${caller.id})`
          const where = sql`${visible} AND ${userConditions(sql, query)}`
          const total = yield* store.count(where)
          const items = yield* store.select(
            sql`${where} ORDER BY ${userOrder(sql, query)} LIMIT ${page.size} OFFSET ${offsetOf(page)}`
          )
          return { items, total, page: page.page, page_size: page.size }
        })

        /** The target user, when the caller outranks it (or it is the caller itself and `self` is allowed). */
        const managed = (caller: SessionUser, id: bigint, allowSelf: boolean) =>
          Effect.flatMap(view(id), (target) => {
            const refusal = manageRefusal(caller.id, caller.role, target, allowSelf)
            return refusal === undefined ? Effect.succeed(target) : Effect.fail(new Forbidden({ message: refusal }))
          })

        const grantable = (caller: SessionUser, role: Role | undefined) => {
          const refusal = grantRefusal(caller.role, role)
          return refusal === undefined ? Effect.void : Effect.fail(new Forbidden({ message: refusal }))
        }

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
          yield* store.writePatch(caller, patch, hash, before)
          if (patch.password !== undefined || patch.status === "disabled" || patch.role !== undefined) {
            yield* sessions.revokeUser(id)
          }
          yield* auth.invalidate
          // The row was written or checked just before: its absence would be a bug, so a defect.
          return yield* view(id).pipe(Effect.catchTag("NotFound", Effect.die))
        })

        const remove = Effect.fn("Accounts.remove")(function* (caller: SessionUser, id: bigint) {
          const before = yield* managed(caller, id, false)
          yield* store.remove(caller, id, before)
          yield* auth.invalidate
        })

        const topUp = Effect.fn("Accounts.topUp")(function* (
          caller: SessionUser,
          id: bigint,
          amount: bigint,
          note: string
        ) {
          const before = yield* managed(caller, id, caller.role === "root")
          yield* store.topUp(caller, id, amount, note, before)
          // The row was written or checked just before: its absence would be a bug, so a defect.
          return yield* view(id).pipe(Effect.catchTag("NotFound", Effect.die))
        })

        return Accounts.of({ login, register, ensureRoot, view, updateSelf, list, get, create, update, remove, topUp })
      })
    )
}
