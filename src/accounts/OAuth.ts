/**
 * OAuth/OIDC browser login (spec "Authentication" rule 3) over
 * `oauth4webapi`, a standards library: no hand-written JWT or PKCE code.
 *
 * A state is 32 random bytes, stored as its SHA-256 with a nonce, a PKCE code
 * verifier, the browser it was issued to (the digest of the `sluice_oauth`
 * cookie) and the user logged in at the time, if any; it expires after
 * `STATE_TTL_MILLIS` and is deleted when the callback takes it, so it works
 * once. The start sends the browser to the provider with the state, the nonce
 * and an S256 code challenge; the callback takes the state (missing, unknown,
 * another browser's, another provider's, used or expired: a failure, nothing
 * bound), exchanges the code with the verifier, and reads the identity: for
 * `oidc`, the ID token's claims after its signature (the issuer's JWKS),
 * issuer, audience, nonce and expiry are checked; for `github`, the user API.
 * Then it binds the identity to the user logged in when the state was issued
 * (only while the session that asked is still live: a state dies with that
 * session, on logout, a password or role change, or when the user is
 * disabled), or logs in the user it is bound to, or opens an account when
 * registration is open (the username unique without regard to case); and
 * opens a session. A linked identity can be removed (`unlink`).
 *
 * Two ways to the provider. The console's: `/api/oauth/{provider}/start`
 * binds the state to that provider and sends the browser there with PKCE and
 * (OIDC) a nonce. The spec's (and new-api front ends'): the front end builds
 * the provider's URL itself from the public parameters `clients` gives
 * (published by `GET /api/status`: client id, authorization endpoint,
 * scopes, redirect URI) and a state from `/api/oauth/state`; such a state,
 * bound to no provider, is taken by any configured provider's callback,
 * still once, from the same browser, within ten minutes; the code is then
 * exchanged without PKCE and an ID token must carry no nonce (none was sent).
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as oauth from "oauth4webapi"
import type { BootstrapFile, OAuthProviderSpec } from "../config/BootstrapFile.ts"
import { generateSecret, hashKey } from "../domain/KeyHash.ts"
import { safeVendorText } from "../domain/Redact.ts"
import { Forbidden, InvalidRequest } from "../errors/GatewayError.ts"
import { Accounts, type UserView } from "./Accounts.ts"
import { writeAudit } from "./AuditLog.ts"
import { Sessions, type SessionUser } from "./Sessions.ts"

/** How long a state may be used, in milliseconds (10 minutes). @category constants */
export const STATE_TTL_MILLIS = 10 * 60_000

/** A provider's settings from the bootstrap file. @category models */
export type ProviderSpec = typeof OAuthProviderSpec.Type

/** What a provider told us about the person. @category models */
export interface Identity {
  readonly subject: string
  readonly username: string | undefined
  readonly displayName: string | undefined
  readonly email: string | undefined
}

/** A provider's public parameters (see `OAuth.clients`). @category models */
export interface OAuthClient {
  readonly name: string
  readonly type: "oidc" | "github"
  readonly client_id: string
  readonly authorization_endpoint: string | null
  readonly scope: string
  readonly redirect_uri: string
}

/** Registration settings used when a login creates an account. @category models */
export interface OAuthOptions {
  readonly registration: boolean
  readonly newUserQuota: number
  readonly newUserGroup: string
}

const GITHUB = {
  authorize: "https://github.com/login/oauth/authorize",
  token: "https://github.com/login/oauth/access_token",
  api: "https://api.github.com"
}

const failure = (message: string) => new InvalidRequest({ message, param: "" })

/** A library error in words safe to show (no secret, no control character, bounded). */
const reason = (error: unknown): string => safeVendorText(error instanceof Error ? error.message : String(error), 200)

const httpOptions = (spec: ProviderSpec) =>
  spec.allow_insecure_http === true ? { [oauth.allowInsecureRequests]: true } : {}

/** A username made from what the provider said: the allowed characters only, at most 24 of them. */
const baseUsername = (identity: Identity): string => {
  const raw = identity.username ?? identity.email?.split("@")[0] ?? "user"
  const cleaned = raw.replace(/[^A-Za-z0-9_.-]/g, "").slice(0, 24)
  return cleaned === "" ? "user" : cleaned
}

const text = (value: unknown, max: number): string | undefined =>
  typeof value === "string" && value !== "" ? safeVendorText(value, max) : undefined

/** @category services */
export class OAuth extends Context.Service<OAuth, {
  /** The configured provider names. */
  readonly providers: ReadonlyArray<string>
  /**
   * A new state for the browser `browserId`, bound to the logged-in user and
   * the digest of the session that asked (`linker`), when someone is logged in.
   */
  readonly issueState: (
    browserId: string,
    linker: { readonly userId: bigint; readonly sessionHash: string } | undefined
  ) => Effect.Effect<string>
  /** The provider's authorization URL for an issued state; the state is then tied to `provider`. */
  readonly authorizeUrl: (
    provider: string,
    state: string,
    browserId: string,
    redirectBase: string
  ) => Effect.Effect<string, InvalidRequest>
  /** Completes a login from the provider's redirect: the user and a new session id. */
  readonly callback: (
    provider: string,
    query: URLSearchParams,
    browserId: string,
    redirectBase: string
  ) => Effect.Effect<{ readonly user: UserView; readonly sessionId: string }, InvalidRequest | Forbidden>
  /**
   * Removes the caller's link to `provider` (audited); `InvalidRequest` when
   * there is none, or when it is the only way the user can sign in (no password).
   */
  readonly unlink: (caller: SessionUser, provider: string) => Effect.Effect<UserView, InvalidRequest>
  /** `oauth.public_url` of the file, if set. */
  readonly publicUrl: string | undefined
  /**
   * Each provider's public parameters, for a front end that builds the
   * authorization URL itself: name, type, `client_id`, `authorization_endpoint`
   * (`null` when an OIDC issuer's discovery cannot be read now), `scope`
   * (space-separated) and `redirect_uri` under `redirectBase`. No secret.
   */
  readonly clients: (redirectBase: string) => Effect.Effect<ReadonlyArray<OAuthClient>>
}>()("sluice/services/OAuth") {
  /** SQL-backed; providers from `file.oauth`. */
  static readonly layer = (file: BootstrapFile | undefined, options: OAuthOptions) =>
    Layer.effect(
      OAuth,
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const accounts = yield* Accounts
        const sessions = yield* Sessions
        const specs = new Map(Object.entries(file?.oauth?.providers ?? {}))
        const discovered = new Map<string, Promise<oauth.AuthorizationServer>>()

        const serverOf = (name: string, spec: ProviderSpec): Promise<oauth.AuthorizationServer> => {
          if (spec.type === "github") {
            return Promise.resolve({
              issuer: "https://github.com",
              authorization_endpoint: spec.authorize_url ?? GITHUB.authorize,
              token_endpoint: spec.token_url ?? GITHUB.token
            })
          }
          let found = discovered.get(name)
          if (found === undefined) {
            const issuer = new URL(spec.issuer!)
            found = oauth.discoveryRequest(issuer, { algorithm: "oidc", ...httpOptions(spec) })
              .then((response) => oauth.processDiscoveryResponse(issuer, response))
            // A failed discovery is tried again on the next login.
            found.catch(() => discovered.delete(name))
            discovered.set(name, found)
          }
          return found
        }

        const specOf = (provider: string) => {
          const spec = specs.get(provider)
          return spec === undefined
            ? Effect.fail(
              new InvalidRequest({ message: `No OAuth provider is named "${provider}".`, param: "provider" })
            )
            : Effect.succeed(spec)
        }

        const redirectUri = (redirectBase: string, provider: string) =>
          `${redirectBase.replace(/\/+$/, "")}/api/oauth/${provider}`

        const scopeOf = (spec: ProviderSpec): string =>
          (spec.scopes ?? (spec.type === "oidc" ? ["openid", "email", "profile"] : ["read:user", "user:email"]))
            .join(" ")

        const clients = (redirectBase: string) =>
          Effect.forEach([...specs], ([name, spec]) =>
            Effect.promise(() =>
              serverOf(name, spec).then((server) =>
                server.authorization_endpoint ?? null, () => null)
            ).pipe(
              Effect.map((endpoint): OAuthClient => ({
                name,
                type: spec.type,
                client_id: spec.client_id,
                authorization_endpoint: endpoint,
                scope: scopeOf(spec),
                redirect_uri: redirectUri(redirectBase, name)
              }))
            ))

        const issueState = Effect.fn("OAuth.issueState")(function* (
          browserId: string,
          linker: { readonly userId: bigint; readonly sessionHash: string } | undefined
        ) {
          const state = generateSecret()
          const now = yield* Clock.currentTimeMillis
          yield* sql`DELETE FROM oauth_states WHERE expires_at < now()`.pipe(Effect.orDie)
          yield* sql`INSERT INTO oauth_states (state_hash, browser_hash, user_id, session_hash, nonce, code_verifier,
                                               expires_at)
            VALUES (${hashKey(state)}, ${hashKey(browserId)}, ${linker?.userId ?? null}, ${linker?.sessionHash ?? null},
                    ${oauth.generateRandomNonce()}, ${oauth.generateRandomCodeVerifier()},
                    ${new Date(now + STATE_TTL_MILLIS)})`.pipe(
            Effect.orDie
          )
          return state
        })

        const authorizeUrl = Effect.fn("OAuth.authorizeUrl")(function* (
          provider: string,
          state: string,
          browserId: string,
          redirectBase: string
        ) {
          const spec = yield* specOf(provider)
          const rows = yield* sql<{ nonce: string; verifier: string }>`
            UPDATE oauth_states SET provider = ${provider}
            WHERE state_hash = ${hashKey(state)} AND browser_hash = ${hashKey(browserId)} AND expires_at > now()
              AND provider IS NULL
            RETURNING nonce, code_verifier AS verifier`.pipe(Effect.orDie)
          const row = rows[0]
          if (row === undefined) {
            return yield* failure("The sign-in state is unknown, used or expired.")
          }
          const server = yield* Effect.tryPromise({
            try: () =>
              serverOf(provider, spec),
            catch: (error) => failure(`The provider ${provider} could not be reached: ${reason(error)}`)
          })
          const challenge = yield* Effect.promise(() => oauth.calculatePKCECodeChallenge(row.verifier))
          const url = new URL(server.authorization_endpoint!)
          url.searchParams.set("client_id", spec.client_id)
          url.searchParams.set("redirect_uri", redirectUri(redirectBase, provider))
          url.searchParams.set("response_type", "code")
          url.searchParams.set("scope", scopeOf(spec))
          url.searchParams.set("state", state)
          url.searchParams.set("code_challenge", challenge)
          url.searchParams.set("code_challenge_method", "S256")
          if (spec.type === "oidc") url.searchParams.set("nonce", row.nonce)
          return url.href
        })

        /** The identity the provider vouches for, after every check `oauth4webapi` makes. */
        const identify = (
          provider: string,
          spec: ProviderSpec,
          query: URLSearchParams,
          state: string,
          nonce: string,
          verifier: string,
          redirectBase: string,
          /** The state came from `/start`: PKCE and (OIDC) a nonce were sent. */
          started: boolean
        ): Promise<Identity> =>
          (async () => {
            const server = await serverOf(provider, spec)
            const client: oauth.Client = { client_id: spec.client_id }
            const options = httpOptions(spec)
            const params = oauth.validateAuthResponse(server, client, query, state)
            const basic = spec.type === "oidc" &&
              (server.token_endpoint_auth_methods_supported ?? ["client_secret_basic"]).includes(
                "client_secret_basic"
              )
            const authentication = basic
              ? oauth.ClientSecretBasic(spec.client_secret)
              : oauth.ClientSecretPost(spec.client_secret)
            const response = await oauth.authorizationCodeGrantRequest(
              server,
              client,
              authentication,
              params,
              redirectUri(redirectBase, provider),
              started ? verifier : oauth.nopkce,
              options
            )
            if (spec.type === "oidc") {
              const result = await oauth.processAuthorizationCodeResponse(server, client, response, {
                expectedNonce: started ? nonce : oauth.expectNoNonce,
                requireIdToken: true
              })
              await oauth.validateApplicationLevelSignature(server, response, options)
              const claims = oauth.getValidatedIdTokenClaims(result)!
              return {
                subject: claims.sub,
                username: text(claims.preferred_username, 64),
                displayName: text(claims.name, 64),
                email: text(claims.email, 254)
              }
            }
            const result = await oauth.processAuthorizationCodeResponse(server, client, response)
            const user = await oauth.protectedResourceRequest(
              result.access_token,
              "GET",
              new URL(`${(spec.api_url ?? GITHUB.api).replace(/\/+$/, "")}/user`),
              new Headers({ accept: "application/vnd.github+json" }),
              null,
              options
            )
            if (!user.ok) throw new Error(`the user API answered ${user.status}`)
            const body = await user.json() as { id?: unknown; login?: unknown; name?: unknown; email?: unknown }
            if (typeof body.id !== "number" && typeof body.id !== "string") throw new Error("the user has no id")
            return {
              subject: String(body.id),
              username: text(body.login, 64),
              displayName: text(body.name, 64),
              email: text(body.email, 254)
            }
          })()

        const createUser = (identity: Identity) =>
          Effect.gen(function* () {
            const base = baseUsername(identity)
            for (let attempt = 0; attempt < 8; attempt++) {
              const candidate = attempt === 0 ? base : `${base}-${crypto.getRandomValues(new Uint16Array(1))[0]}`
              const rows = yield* sql<{ id: bigint }>`
                INSERT INTO users (username, password_hash, role, group_name, quota, display_name, email)
                VALUES (${candidate}, NULL, 'user', ${options.newUserGroup}, ${options.newUserQuota},
                        ${identity.displayName ?? ""}, ${identity.email ?? null})
                ON CONFLICT DO NOTHING RETURNING id`.pipe(Effect.orDie)
              if (rows.length > 0) return rows[0].id
            }
            return yield* failure("No free username could be found for this account.")
          })

        const callback = Effect.fn("OAuth.callback")(function* (
          provider: string,
          query: URLSearchParams,
          browserId: string,
          redirectBase: string
        ) {
          const spec = yield* specOf(provider)
          const state = query.get("state") ?? ""
          if (state === "" || state.length > 128) return yield* failure("The sign-in state is missing.")
          // Taken (deleted) whatever happens next: a state works once.
          // A state bound by `/start` to this provider, or one bound to none (the front end built the URL).
          const rows = yield* sql<
            {
              userId: bigint | null
              sessionHash: string | null
              nonce: string
              verifier: string
              browser: string
              bound: string | null
            }
          >`
            DELETE FROM oauth_states
            WHERE state_hash = ${hashKey(state)} AND expires_at > now() AND (provider = ${provider} OR provider IS NULL)
            RETURNING user_id AS "userId", session_hash AS "sessionHash", nonce, code_verifier AS verifier,
                      browser_hash AS browser, provider AS bound`.pipe(
            Effect.orDie
          )
          const row = rows[0]
          if (row === undefined) return yield* failure("The sign-in state is unknown, used or expired.")
          if (row.browser !== hashKey(browserId)) {
            return yield* failure("The sign-in was started in another browser.")
          }
          if (row.userId !== null) {
            // A link completes only while the session that asked for it lives (not logged out, its user's password
            // and role unchanged, the user enabled): a stolen cookie that has since died cannot finish one.
            const now = new Date(yield* Clock.currentTimeMillis)
            const live = yield* sql<{ n: bigint }>`
              SELECT count(*) AS n FROM sessions s JOIN users u ON u.id = s.user_id
              WHERE s.id_hash = ${row.sessionHash ?? ""} AND s.user_id = ${row.userId} AND s.expires_at > ${now}
                AND u.enabled`.pipe(Effect.orDie)
            if (Number(live[0]?.n ?? 0) === 0) {
              return yield* failure("The session that asked for this link has ended; sign in and link again.")
            }
          }
          const identity = yield* Effect.tryPromise({
            try: () =>
              identify(provider, spec, query, state, row.nonce, row.verifier, redirectBase, row.bound !== null),
            catch: (error) => failure(`The sign-in with ${provider} failed: ${reason(error)}`)
          })
          const [bound] = yield* sql<{ userId: bigint }>`
            SELECT user_id AS "userId" FROM oauth_identities WHERE provider = ${provider} AND subject = ${identity.subject}`
            .pipe(Effect.orDie)
          let userId: bigint
          if (row.userId !== null) {
            // Someone logged in asked to link this identity to their account.
            if (bound !== undefined && BigInt(bound.userId) !== BigInt(row.userId)) {
              return yield* failure(`This ${provider} account is already linked to another user.`)
            }
            userId = BigInt(row.userId)
            if (bound === undefined) {
              const linked = yield* sql`INSERT INTO oauth_identities (provider, subject, user_id)
                VALUES (${provider}, ${identity.subject}, ${userId}) ON CONFLICT DO NOTHING RETURNING user_id`.pipe(
                Effect.orDie
              )
              if (linked.length === 0) {
                return yield* failure(`Your account is already linked to another ${provider} account.`)
              }
            }
          } else if (bound !== undefined) {
            userId = BigInt(bound.userId)
          } else {
            if (!options.registration) return yield* new Forbidden({ message: "Registration is closed." })
            userId = yield* sql.withTransaction(Effect.gen(function* () {
              const id = yield* createUser(identity)
              yield* sql`INSERT INTO oauth_identities (provider, subject, user_id)
                VALUES (${provider}, ${identity.subject}, ${id})`.pipe(Effect.orDie)
              return id
            })).pipe(Effect.catchTag("SqlError", Effect.die))
          }
          const user = yield* accounts.view(userId).pipe(Effect.orDie)
          if (user.status === "disabled") return yield* failure("This account is disabled.")
          const sessionId = yield* sessions.create(userId)
          return { user: yield* accounts.view(userId).pipe(Effect.orDie), sessionId }
        })

        const unlink = Effect.fn("OAuth.unlink")(function* (caller: SessionUser, provider: string) {
          const userId = caller.id
          const [user] = yield* sql<{ hash: string | null; links: bigint }>`
            SELECT password_hash AS hash, (SELECT count(*) FROM oauth_identities o WHERE o.user_id = u.id) AS links
            FROM users u WHERE u.id = ${userId}`.pipe(Effect.orDie)
          const [linked] = yield* sql<{ n: bigint }>`
            SELECT count(*) AS n FROM oauth_identities WHERE user_id = ${userId} AND provider = ${provider}`.pipe(
            Effect.orDie
          )
          if (user === undefined || Number(linked.n) === 0) {
            return yield* new InvalidRequest({
              message: "Your account is not linked to this provider.",
              param: "provider"
            })
          }
          if (user.hash === null && Number(user.links) <= 1) {
            return yield* new InvalidRequest({
              message: "This is your only way to sign in; set a password before unlinking it.",
              param: "provider"
            })
          }
          yield* sql.withTransaction(Effect.gen(function* () {
            yield* sql`DELETE FROM oauth_identities WHERE user_id = ${userId} AND provider = ${provider}`
            yield* writeAudit(sql, {
              actor: caller,
              action: "user.oauth_unlink",
              target: `user:${userId}`,
              before: { provider },
              after: null
            })
          })).pipe(Effect.orDie)
          return yield* accounts.view(userId).pipe(Effect.orDie)
        })

        return OAuth.of({
          providers: [...specs.keys()],
          issueState,
          authorizeUrl,
          callback,
          unlink,
          publicUrl: file?.oauth?.public_url,
          clients
        })
      })
    )
}
