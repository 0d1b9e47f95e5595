/**
 * The `users` table as the account service uses it: reading users as
 * `/api/*` shows them (with linked OAuth providers and budget spend),
 * inserting one (audited, the username unique without regard to case), and
 * the admin's audited writes (a patch, a delete, a quota top-up with its
 * `quota_topups` row), each in its own transaction.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { SqlClient, Statement } from "effect/sql"
import { budgetsJson, fromSpec } from "../domain/BudgetPeriod.ts"
import { InvalidRequest, NotFound, StorageUnavailable } from "../errors/GatewayError.ts"
import { storageFailure } from "../storage/StorageFailure.ts"
import { writeAudit } from "./AuditLog.ts"
import { budgetViews } from "./BudgetViews.ts"
import type { Role, SessionUser } from "./Sessions.ts"
import { type NewUser, type UserPatch, type UserRow, type UserView, viewOf } from "./UserRoles.ts"

/**
 * The account service's SQL. A statement that cannot run fails with
 * `StorageUnavailable` (`storage/StorageFailure.ts`).
 *
 * @category models
 */
export interface UserStore {
  /** The users matching `where` (a fragment over `users u`, which may end in ORDER BY / LIMIT), as views. */
  readonly select: (where: Statement.Fragment) => Effect.Effect<ReadonlyArray<UserView>, StorageUnavailable>
  /** One user by id; `NotFound` (param `id`) when there is none. */
  readonly view: (id: bigint) => Effect.Effect<UserView, NotFound | StorageUnavailable>
  /** Whether a user of that name exists, without regard to case. */
  readonly usernameTaken: (username: string) => Effect.Effect<boolean, StorageUnavailable>
  /** How many users match `where` (a fragment over `users u`). */
  readonly count: (where: Statement.Fragment) => Effect.Effect<number, StorageUnavailable>
  /**
   * Inserts a user with the password hash `hash`, `quota` units and `group`, audited as registered (no
   * `actor`) or created by `actor`; `InvalidRequest` (param `username`) when the name is taken, without regard
   * to case (also when a concurrent sign-up took it first).
   */
  readonly insert: (
    input: NewUser,
    hash: string,
    quota: number,
    group: string,
    actor: SessionUser | undefined
  ) => Effect.Effect<UserView, InvalidRequest | StorageUnavailable>
  /** The login row of `username` (exact name): id, password hash (null: none set) and whether enabled. */
  readonly loginRow: (
    username: string
  ) => Effect.Effect<
    { readonly id: bigint; readonly hash: string | null; readonly enabled: boolean } | undefined,
    StorageUnavailable
  >
  /** The password hash of a user (`undefined`: no such user; null: none set). */
  readonly passwordHash: (id: bigint) => Effect.Effect<string | null | undefined, StorageUnavailable>
  /** Sets a user's password hash. */
  readonly setPasswordHash: (id: bigint, hash: string) => Effect.Effect<void, StorageUnavailable>
  /** Sets a user's display name. */
  readonly setDisplayName: (id: bigint, name: string) => Effect.Effect<void, StorageUnavailable>
  /** Whether a root user exists. */
  readonly rootExists: Effect.Effect<boolean, StorageUnavailable>
  /** Inserts the user `root` (role root, quota 0) with `hash`; false when the name is taken. */
  readonly insertRoot: (hash: string) => Effect.Effect<boolean, StorageUnavailable>
  /** Applies an admin's patch (`hash`: the new password's) and audits it against `before`, in one transaction. */
  readonly writePatch: (
    caller: SessionUser,
    patch: UserPatch,
    hash: string | undefined,
    before: UserView
  ) => Effect.Effect<void, StorageUnavailable>
  /** Deletes a user, audited against `before`, in one transaction. */
  readonly remove: (caller: SessionUser, id: bigint, before: UserView) => Effect.Effect<void, StorageUnavailable>
  /** Adds `amount` to a user's quota with a `quota_topups` row, audited, in one transaction. */
  readonly topUp: (
    caller: SessionUser,
    id: bigint,
    amount: bigint,
    note: string,
    before: UserView
  ) => Effect.Effect<void, StorageUnavailable>
}

/** The user store over `sql`. */
export const makeUserStore = (sql: SqlClient.SqlClient): UserStore => {
  const select = (where: Statement.Fragment) =>
    sql<UserRow>`
      SELECT u.id, u.username, u.display_name AS "displayName", u.email, u.role, u.group_name AS "group",
             u.quota, u.used_quota AS "usedQuota", u.request_count AS "requestCount", u.enabled,
             (SELECT array_agg(o.provider ORDER BY o.provider) FROM oauth_identities o WHERE o.user_id = u.id)
               AS oauth,
             u.created_at AS "createdAt", u.budgets
      FROM users u WHERE ${where}`.pipe(
      storageFailure("users.select"),
      Effect.flatMap((rows) =>
        Effect.map(
          budgetViews(sql, "user", rows),
          (views) => rows.map((row) => viewOf({ ...row, budgetViews: views.get(BigInt(row.id)) ?? null }))
        )
      )
    )

  const view = (id: bigint) =>
    Effect.flatMap(
      select(sql`u.id = ${id}`),
      (rows) =>
        rows[0] !== undefined
          ? Effect.succeed(rows[0])
          : Effect.fail(new NotFound({ what: "user", id: String(id), param: "id" }))
    )

  const count = (where: Statement.Fragment) =>
    sql<{ total: bigint }>`SELECT count(*) AS total FROM users u WHERE ${where}`.pipe(
      Effect.map(([{ total }]) => Number(total)),
      storageFailure("users.count")
    )

  const usernameTaken = (username: string) =>
    sql<{ n: bigint }>`SELECT count(*) AS n FROM users WHERE lower(username) = lower(${username})`.pipe(
      Effect.map(([row]) => Number(row.n) > 0),
      storageFailure("users.name_check")
    )

  const taken = () => new InvalidRequest({ message: "The username is taken.", param: "username" })

  const insert = (input: NewUser, hash: string, quota: number, group: string, actor: SessionUser | undefined) =>
    Effect.gen(function* () {
      const role: Role = input.role ?? "user"
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
        Effect.catchTag(
          "SqlError",
          () =>
            Effect.flatMap(
              usernameTaken(input.username),
              (isTaken): Effect.Effect<never, InvalidRequest | StorageUnavailable> =>
                Effect.fail(isTaken ? taken() : new StorageUnavailable({ operation: "users.insert" }))
            )
        )
      )
      // The row was just written: its absence would be a bug, a defect.
      return yield* view(id).pipe(Effect.catchTag("NotFound", Effect.die))
    })

  const loginRow = (username: string) =>
    sql<{ id: bigint; hash: string | null; enabled: boolean }>`
      SELECT id, password_hash AS hash, enabled FROM users WHERE username = ${username}`.pipe(
      Effect.map((rows) => rows[0]),
      storageFailure("users.login")
    )

  const passwordHash = (id: bigint) =>
    sql<{ hash: string | null }>`SELECT password_hash AS hash FROM users WHERE id = ${id}`.pipe(
      Effect.map(([row]) => row?.hash),
      storageFailure("users.password")
    )

  const setPasswordHash = (id: bigint, hash: string) =>
    sql`UPDATE users SET password_hash = ${hash} WHERE id = ${id}`.pipe(Effect.asVoid, storageFailure("users.password"))

  const setDisplayName = (id: bigint, name: string) =>
    sql`UPDATE users SET display_name = ${name} WHERE id = ${id}`.pipe(Effect.asVoid, storageFailure("users.update"))

  const rootExists = sql<{ n: bigint }>`SELECT count(*) AS n FROM users WHERE role = 'root'`.pipe(
    Effect.map(([{ n }]) => Number(n) > 0),
    storageFailure("users.root_check")
  )

  const insertRoot = (hash: string) =>
    sql<{ id: bigint }>`
      INSERT INTO users (username, password_hash, role, group_name, quota, display_name)
      VALUES ('root', ${hash}, 'root', 'default', 0, 'Root') ON CONFLICT (username) DO NOTHING RETURNING id`.pipe(
      Effect.map((inserted) => inserted.length > 0),
      storageFailure("users.insert")
    )

  const writePatch = (caller: SessionUser, patch: UserPatch, hash: string | undefined, before: UserView) =>
    sql.withTransaction(Effect.gen(function* () {
      const id = BigInt(patch.id)
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
        yield* sql`UPDATE users SET budgets = ${budgetsJson(fromSpec(patch.budgets ?? []))}::jsonb WHERE id = ${id}`
      }
      const { password: _password, ...shown } = patch
      yield* writeAudit(sql, {
        actor: caller,
        action: "user.update",
        target: `user:${id}`,
        before,
        after: { ...shown, ...(patch.password === undefined ? {} : { password: "(changed)" }) }
      })
    })).pipe(storageFailure("users.update"))

  const remove = (caller: SessionUser, id: bigint, before: UserView) =>
    sql.withTransaction(Effect.gen(function* () {
      yield* sql`DELETE FROM users WHERE id = ${id}`
      yield* writeAudit(sql, { actor: caller, action: "user.delete", target: `user:${id}`, before, after: null })
    })).pipe(storageFailure("users.delete"))

  const topUp = (caller: SessionUser, id: bigint, amount: bigint, note: string, before: UserView) =>
    sql.withTransaction(Effect.gen(function* () {
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
    })).pipe(storageFailure("users.topup"))

  return {
    select,
    view,
    count,
    usernameTaken,
    insert,
    loginRow,
    passwordHash,
    setPasswordHash,
    setDisplayName,
    rootExists,
    insertRoot,
    writePatch,
    remove,
    topUp
  }
}
