/**
 * Server-side browser sessions. A session id is 32 random bytes (base64url)
 * handed to the browser once, in a cookie; the store keeps only its SHA-256
 * digest, so a read of the table gives no usable session. A session ends at
 * its absolute expiry, after `idleMillis` without a request, on logout, when
 * its user changes password, and when its user is disabled or deleted; the
 * OAuth link states a session asked for end with it (logout ends that
 * session's, the others end all of the user's). Every time a session is
 * stamped with or compared against is read from Effect's `Clock` (not the
 * database's `now()`), so `TestClock` drives idle and absolute expiry.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { generateSecret, hashKey } from "../domain/KeyHash.ts"
import type { StorageUnavailable } from "../errors/GatewayError.ts"
import { storageFailure } from "../storage/StorageFailure.ts"

/** The roles, lowest first. @category models */
export type Role = "user" | "admin" | "root"

/** The rank of a role: a caller may manage only users ranked below it. @category models */
export const roleRank = (role: string): number => role === "root" ? 2 : role === "admin" ? 1 : 0

/** The user behind a session. @category models */
export interface SessionUser {
  readonly id: bigint
  readonly username: string
  readonly role: Role
  readonly group: string
  /** The digest of the session id (to revoke this session). */
  readonly sessionHash: string
}

/** Session lifetimes, in milliseconds. @category models */
export interface SessionOptions {
  /** A session unused this long ends (default 12 hours). */
  readonly idleMillis: number
  /** A session ends this long after login whatever its use (default 7 days). */
  readonly maxMillis: number
}

/** Last-seen times are written at most this often per session, not on every request. */
const TOUCH_MILLIS = 60_000

/** The longest session id looked up; longer cookies are not ours. */
const MAX_SESSION_ID = 128

interface Row {
  readonly id: bigint
  readonly username: string
  readonly role: string
  readonly group: string
  readonly lastSeen: Date
}

/**
 * Browser sessions. Every operation fails with `StorageUnavailable` when its
 * statement cannot run.
 *
 * @category services
 */
export class Sessions extends Context.Service<Sessions, {
  /** A new session for `userId`: the id to put in the cookie (never stored). */
  readonly create: (userId: bigint) => Effect.Effect<string, StorageUnavailable>
  /** The live session of a cookie value, its user enabled; `none` when absent, expired or revoked. */
  readonly resolve: (sessionId: string) => Effect.Effect<Option.Option<SessionUser>, StorageUnavailable>
  /** Ends the session of a cookie value (logout) and the OAuth link states it asked for. */
  readonly revoke: (sessionId: string) => Effect.Effect<void, StorageUnavailable>
  /** Ends every session and pending OAuth link state of a user (password change, disabled, role changed). */
  readonly revokeUser: (userId: bigint) => Effect.Effect<void, StorageUnavailable>
  readonly options: SessionOptions
}>()("sluice/accounts/Sessions") {
  /** SQL-backed. */
  static readonly layer = (options: SessionOptions) =>
    Layer.effect(
      Sessions,
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient

        const create = Effect.fn("Sessions.create")(function* (userId: bigint) {
          const id = generateSecret()
          const now = new Date(yield* Clock.currentTimeMillis)
          const expires = new Date(now.getTime() + options.maxMillis)
          yield* sql`INSERT INTO sessions (id_hash, user_id, created_at, last_seen_at, expires_at)
            VALUES (${hashKey(id)}, ${userId}, ${now}, ${now}, ${expires})`.pipe(storageFailure("sessions.create"))
          // Expired rows of everyone are pruned now and then, on a login rather than on a timer.
          yield* sql`DELETE FROM sessions WHERE expires_at < ${now}`.pipe(storageFailure("sessions.create"))
          return id
        })

        const resolve = Effect.fn("Sessions.resolve")(function* (sessionId: string) {
          if (sessionId === "" || sessionId.length > MAX_SESSION_ID) return Option.none<SessionUser>()
          const digest = hashKey(sessionId)
          const now = new Date(yield* Clock.currentTimeMillis)
          const idleSince = new Date(now.getTime() - options.idleMillis)
          const rows = yield* sql<Row>`
            SELECT u.id, u.username, u.role, u.group_name AS "group", s.last_seen_at AS "lastSeen"
            FROM sessions s JOIN users u ON u.id = s.user_id
            WHERE s.id_hash = ${digest} AND s.expires_at > ${now} AND s.last_seen_at > ${idleSince} AND u.enabled`
            .pipe(storageFailure("sessions.resolve"))
          const row = rows[0]
          if (row === undefined) return Option.none<SessionUser>()
          if (now.getTime() - new Date(row.lastSeen).getTime() > TOUCH_MILLIS) {
            yield* sql`UPDATE sessions SET last_seen_at = ${now} WHERE id_hash = ${digest}`.pipe(
              storageFailure("sessions.resolve")
            )
          }
          const role: Role = row.role === "root" || row.role === "admin" ? row.role : "user"
          return Option.some<SessionUser>({
            id: BigInt(row.id),
            username: row.username,
            role,
            group: row.group,
            sessionHash: digest
          })
        })

        // A session's end takes the OAuth link states it asked for with it.
        const revoke = (sessionId: string) =>
          sessionId === "" || sessionId.length > MAX_SESSION_ID
            ? Effect.void
            : sql.withTransaction(Effect.gen(function* () {
              yield* sql`DELETE FROM oauth_states WHERE session_hash = ${hashKey(sessionId)}`
              yield* sql`DELETE FROM sessions WHERE id_hash = ${hashKey(sessionId)}`
            })).pipe(Effect.asVoid, storageFailure("sessions.revoke"))

        const revokeUser = (userId: bigint) =>
          sql.withTransaction(Effect.gen(function* () {
            yield* sql`DELETE FROM oauth_states WHERE user_id = ${userId}`
            yield* sql`DELETE FROM sessions WHERE user_id = ${userId}`
          })).pipe(Effect.asVoid, storageFailure("sessions.revoke"))

        return Sessions.of({ create, resolve, revoke, revokeUser, options })
      })
    )
}
