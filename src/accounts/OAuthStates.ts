/**
 * The SQL of OAuth logins: sign-in states (`oauth_states`: stored as the
 * SHA-256 of the state with the browser's digest, the linking user and
 * session, a nonce and a PKCE verifier; they expire and are taken once), the
 * identities linked to users (`oauth_identities`), and the users an OAuth
 * login opens. A statement that cannot run fails with `StorageUnavailable`.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import * as oauth from "oauth4webapi"
import { generateSecret, hashKey } from "../domain/KeyHash.ts"
import { InvalidRequest, type StorageUnavailable } from "../errors/GatewayError.ts"
import { writeAudit } from "./AuditLog.ts"
import { baseUsername, type Identity } from "./OAuthProviders.ts"
import type { SessionUser } from "./Sessions.ts"
import { storageFailure } from "../storage/StorageFailure.ts"

/** What a callback takes with its state: who asked to link (if anyone), what was sent, and the provider bound. */
export interface TakenState {
  readonly userId: bigint | null
  readonly sessionHash: string | null
  readonly nonce: string
  readonly verifier: string
  /** The digest of the browser the state was issued to. */
  readonly browser: string
  /** The provider `/start` bound the state to; null for a state the front end used itself. */
  readonly bound: string | null
}

/**
 * The OAuth tables of one gateway.
 *
 * @category models
 */
export interface OAuthStates {
  /**
   * Drops expired states and stores a new one for `browserId` expiring at `expiresAt` (epoch ms), bound to the
   * linking user and session digest if given; returns the state (32 random bytes, its digest stored).
   */
  readonly issue: (
    browserId: string,
    linker: { readonly userId: bigint; readonly sessionHash: string } | undefined,
    expiresAt: number
  ) => Effect.Effect<string, StorageUnavailable>
  /**
   * Binds a live state of `browserId`, bound to no provider yet, to `provider`; its nonce and PKCE verifier,
   * or `undefined` when there is no such state.
   */
  readonly bind: (
    provider: string,
    state: string,
    browserId: string
  ) => Effect.Effect<{ readonly nonce: string; readonly verifier: string } | undefined, StorageUnavailable>
  /** Takes (deletes) a live state bound to `provider` or to none; `undefined` when there is none. */
  readonly take: (provider: string, state: string) => Effect.Effect<TakenState | undefined, StorageUnavailable>
  /** Whether the session with digest `sessionHash` of `userId` is live and its user enabled. */
  /** The session still lives at `now` (epoch milliseconds, the gateway's `Clock`, as `Sessions` writes expiries). */
  readonly sessionLive: (userId: bigint, sessionHash: string, now: number) => Effect.Effect<boolean, StorageUnavailable>
  /** The user an identity of `provider` is linked to, if any. */
  readonly linkedUser: (provider: string, subject: string) => Effect.Effect<bigint | undefined, StorageUnavailable>
  /** Links an identity to `userId`; false when the user already has another identity of `provider`. */
  readonly link: (provider: string, subject: string, userId: bigint) => Effect.Effect<boolean, StorageUnavailable>
  /**
   * Opens an account for `identity` (no password; the group and quota given) linked to it, in one transaction:
   * the username made from the identity, else with a random suffix (8 tries); `InvalidRequest` when none is
   * free. A concurrent login that linked the identity first makes it die.
   */
  readonly open: (
    provider: string,
    identity: Identity,
    group: string,
    quota: number
  ) => Effect.Effect<bigint, InvalidRequest | StorageUnavailable>
  /** Whether the user has a password and how many identities are linked to it (`undefined`: no such user). */
  readonly signIns: (
    userId: bigint
  ) => Effect.Effect<{ readonly hasPassword: boolean; readonly links: number } | undefined, StorageUnavailable>
  /** Whether the user has an identity of `provider`. */
  readonly isLinked: (userId: bigint, provider: string) => Effect.Effect<boolean, StorageUnavailable>
  /** Removes the user's identity of `provider`, audited (`user.oauth_unlink`), in one transaction. */
  readonly unlink: (caller: SessionUser, provider: string) => Effect.Effect<void, StorageUnavailable>
}

/** The OAuth tables over `sql`. */
export const makeOAuthStates = (sql: SqlClient.SqlClient): OAuthStates => {
  const issue = (
    browserId: string,
    linker: { readonly userId: bigint; readonly sessionHash: string } | undefined,
    expiresAt: number
  ) =>
    Effect.gen(function* () {
      const state = generateSecret()
      yield* sql`DELETE FROM oauth_states WHERE expires_at < now()`
      yield* sql`INSERT INTO oauth_states (state_hash, browser_hash, user_id, session_hash, nonce, code_verifier,
                                           expires_at)
        VALUES (${hashKey(state)}, ${hashKey(browserId)}, ${linker?.userId ?? null}, ${linker?.sessionHash ?? null},
                ${oauth.generateRandomNonce()}, ${oauth.generateRandomCodeVerifier()}, ${new Date(expiresAt)})`
      return state
    }).pipe(storageFailure("oauth.state"))

  const bind = (provider: string, state: string, browserId: string) =>
    sql<{ nonce: string; verifier: string }>`
      UPDATE oauth_states SET provider = ${provider}
      WHERE state_hash = ${hashKey(state)} AND browser_hash = ${hashKey(browserId)} AND expires_at > now()
        AND provider IS NULL
      RETURNING nonce, code_verifier AS verifier`.pipe(Effect.map((rows) => rows[0]), storageFailure("oauth.bind"))

  const take = (provider: string, state: string) =>
    sql<TakenState>`
      DELETE FROM oauth_states
      WHERE state_hash = ${hashKey(state)} AND expires_at > now() AND (provider = ${provider} OR provider IS NULL)
      RETURNING user_id AS "userId", session_hash AS "sessionHash", nonce, code_verifier AS verifier,
                browser_hash AS browser, provider AS bound`.pipe(
      Effect.map((rows) => rows[0]),
      storageFailure("oauth.take")
    )

  const sessionLive = (userId: bigint, sessionHash: string, now: number) =>
    sql<{ n: bigint }>`
      SELECT count(*) AS n FROM sessions s JOIN users u ON u.id = s.user_id
      WHERE s.id_hash = ${sessionHash} AND s.user_id = ${userId} AND s.expires_at > ${new Date(now)}
        AND u.enabled`.pipe(Effect.map((rows) => Number(rows[0]?.n ?? 0) > 0), storageFailure("oauth.session_live"))

  const linkedUser = (provider: string, subject: string) =>
    sql<{ userId: bigint }>`
      SELECT user_id AS "userId" FROM oauth_identities WHERE provider = ${provider} AND subject = ${subject}`.pipe(
      Effect.map(([row]) => row === undefined ? undefined : BigInt(row.userId)),
      storageFailure("oauth.linked_user")
    )

  const link = (provider: string, subject: string, userId: bigint) =>
    sql`INSERT INTO oauth_identities (provider, subject, user_id)
      VALUES (${provider}, ${subject}, ${userId}) ON CONFLICT DO NOTHING RETURNING user_id`.pipe(
      Effect.map((linked) => linked.length > 0),
      storageFailure("oauth.link")
    )

  const open = (provider: string, identity: Identity, group: string, quota: number) =>
    sql.withTransaction(Effect.gen(function* () {
      const base = baseUsername(identity)
      for (let attempt = 0; attempt < 8; attempt++) {
        const candidate = attempt === 0 ? base : `${base}-${crypto.getRandomValues(new Uint16Array(1))[0]}`
        const rows = yield* sql<{ id: bigint }>`
          INSERT INTO users (username, password_hash, role, group_name, quota, display_name, email)
          VALUES (${candidate}, NULL, 'user', ${group}, ${quota},
                  ${identity.displayName ?? ""}, ${identity.email ?? null})
          ON CONFLICT DO NOTHING RETURNING id`
        if (rows.length > 0) {
          yield* sql`INSERT INTO oauth_identities (provider, subject, user_id)
            VALUES (${provider}, ${identity.subject}, ${rows[0].id})`
          return rows[0].id
        }
      }
      return yield* new InvalidRequest({ message: "No free username could be found for this account.", param: "" })
    })).pipe(storageFailure("oauth.open"))

  const signIns = (userId: bigint) =>
    sql<{ hash: string | null; links: bigint }>`
      SELECT password_hash AS hash, (SELECT count(*) FROM oauth_identities o WHERE o.user_id = u.id) AS links
      FROM users u WHERE u.id = ${userId}`.pipe(
      Effect.map(([user]) =>
        user === undefined ? undefined : { hasPassword: user.hash !== null, links: Number(user.links) }
      ),
      storageFailure("oauth.sign_ins")
    )

  const isLinked = (userId: bigint, provider: string) =>
    sql<{ n: bigint }>`
      SELECT count(*) AS n FROM oauth_identities WHERE user_id = ${userId} AND provider = ${provider}`.pipe(
      Effect.map(([linked]) => Number(linked.n) > 0),
      storageFailure("oauth.is_linked")
    )

  const unlink = (caller: SessionUser, provider: string) =>
    sql.withTransaction(Effect.gen(function* () {
      yield* sql`DELETE FROM oauth_identities WHERE user_id = ${caller.id} AND provider = ${provider}`
      yield* writeAudit(sql, {
        actor: caller,
        action: "user.oauth_unlink",
        target: `user:${caller.id}`,
        before: { provider },
        after: null
      })
    })).pipe(storageFailure("oauth.unlink"))

  return { issue, bind, take, sessionLive, linkedUser, link, open, signIns, isLinked, unlink }
}
