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
import type { BootstrapFile } from "../config/BootstrapFile.ts"
import { hashKey } from "../domain/KeyHash.ts"
import { Forbidden, InvalidRequest, type StorageUnavailable } from "../errors/GatewayError.ts"
import { Accounts, type UserView } from "./Accounts.ts"
import { authorizationUrl, identify, makeDiscovery, reason } from "./OAuthProviders.ts"
import {
  linkPlan,
  linkTakenMessage,
  type OAuthClient,
  publicClient,
  stateRefusal,
  takenState,
  unlinkRefusal
} from "./OAuthRules.ts"
import { makeOAuthStates } from "./OAuthStates.ts"
import { Sessions, type SessionUser } from "./Sessions.ts"

/** A provider's settings and what it vouches for (defined with the provider calls, `OAuthProviders.ts`). */
export type { Identity, ProviderSpec } from "./OAuthProviders.ts"

/** How long a state may be used, in milliseconds (10 minutes). @category constants */
export const STATE_TTL_MILLIS = 10 * 60_000

/** A provider's public parameters (defined with the login's rules, `OAuthRules.ts`). */
export type { OAuthClient } from "./OAuthRules.ts"

/** Registration settings used when a login creates an account. @category models */
export interface OAuthOptions {
  readonly registration: boolean
  readonly newUserQuota: number
  readonly newUserGroup: string
}

const failure = (message: string) => new InvalidRequest({ message, param: "" })

/** The logged-in user asking for a state, and the digest of its session. */
type Linker = { readonly userId: bigint; readonly sessionHash: string }

const unknownProvider = (provider: string) =>
  new InvalidRequest({ message: `No OAuth provider is named "${provider}".`, param: "provider" })

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
  ) => Effect.Effect<string, StorageUnavailable>
  /** The provider's authorization URL for an issued state; the state is then tied to `provider`. */
  readonly authorizeUrl: (
    provider: string,
    state: string,
    browserId: string,
    redirectBase: string
  ) => Effect.Effect<string, InvalidRequest | StorageUnavailable>
  /** Completes a login from the provider's redirect: the user and a new session id. */
  readonly callback: (
    provider: string,
    query: URLSearchParams,
    browserId: string,
    redirectBase: string
  ) => Effect.Effect<
    { readonly user: UserView; readonly sessionId: string },
    InvalidRequest | Forbidden | StorageUnavailable
  >
  /**
   * Removes the caller's link to `provider` (audited); `InvalidRequest` when
   * there is none, or when it is the only way the user can sign in (no password).
   */
  readonly unlink: (
    caller: SessionUser,
    provider: string
  ) => Effect.Effect<UserView, InvalidRequest | StorageUnavailable>
  /** `oauth.public_url` of the file, if set. */
  readonly publicUrl: string | undefined
  /**
   * Each provider's public parameters, for a front end that builds the
   * authorization URL itself: name, type, `client_id`, `authorization_endpoint`
   * (`null` when an OIDC issuer's discovery cannot be read now), `scope`
   * (space-separated) and `redirect_uri` under `redirectBase`. No secret.
   */
  readonly clients: (redirectBase: string) => Effect.Effect<ReadonlyArray<OAuthClient>, StorageUnavailable>
}>()("sluice/accounts/OAuth") {
  /** SQL-backed; providers from `file.oauth`. */
  static readonly layer = (file: BootstrapFile | undefined, options: OAuthOptions) =>
    Layer.effect(
      OAuth,
      Effect.gen(function* () {
        const states = makeOAuthStates(yield* SqlClient.SqlClient)
        const accounts = yield* Accounts
        const sessions = yield* Sessions
        const specs = new Map(Object.entries(file?.oauth?.providers ?? {}))
        const serverOf = makeDiscovery()

        const specOf = (provider: string) => {
          const spec = specs.get(provider)
          return spec === undefined ? Effect.fail(unknownProvider(provider)) : Effect.succeed(spec)
        }

        const clients = (redirectBase: string) =>
          Effect.forEach([...specs], ([name, spec]) =>
            Effect.promise(() =>
              serverOf(name, spec).then((server) =>
                server.authorization_endpoint ?? null, () => null)
            ).pipe(Effect.map((endpoint) => publicClient(name, spec, endpoint, redirectBase))))

        const issueState = Effect.fn("OAuth.issueState")(function* (browserId: string, linker: Linker | undefined) {
          return yield* states.issue(browserId, linker, (yield* Clock.currentTimeMillis) + STATE_TTL_MILLIS)
        })

        const authorizeUrl = Effect.fn("OAuth.authorizeUrl")(function* (
          provider: string,
          state: string,
          browserId: string,
          redirectBase: string
        ) {
          const spec = yield* specOf(provider)
          const row = yield* states.bind(provider, state, browserId)
          if (row === undefined) {
            return yield* failure("The sign-in state is unknown, used or expired.")
          }
          const server = yield* Effect.tryPromise({
            try: () =>
              serverOf(provider, spec),
            catch: (error) => failure(`The provider ${provider} could not be reached: ${reason(error)}`)
          })
          const challenge = yield* Effect.promise(() => oauth.calculatePKCECodeChallenge(row.verifier))
          return authorizationUrl(server, spec, { provider, redirectBase, state, challenge, nonce: row.nonce })
        })

        /** The user the identity signs in as: the linking user (linked now), the one it is linked to, or a new one. */
        const userOf = (provider: string, identity: { readonly subject: string }, linking: bigint | null) =>
          Effect.gen(function* () {
            const plan = linkPlan(provider, yield* states.linkedUser(provider, identity.subject), linking)
            if (plan._tag === "refused") return yield* failure(plan.message)
            if (plan._tag === "link" && !(yield* states.link(provider, identity.subject, plan.userId))) {
              return yield* failure(linkTakenMessage(provider))
            }
            return plan.userId
          })

        const callback = Effect.fn("OAuth.callback")(function* (
          provider: string,
          query: URLSearchParams,
          browserId: string,
          redirectBase: string
        ) {
          const spec = yield* specOf(provider)
          const state = query.get("state") ?? ""
          const missing = stateRefusal(state)
          if (missing !== undefined) return yield* failure(missing)
          // Taken (deleted) whatever happens next: a state works once.
          // A state bound by `/start` to this provider, or one bound to none (the front end built the URL).
          const row = takenState(yield* states.take(provider, state), hashKey(browserId))
          if (typeof row === "string") return yield* failure(row)
          // A link completes only while the session that asked for it lives (not logged out, its user's password
          // and role unchanged, the user enabled): a stolen cookie that has since died cannot finish one.
          if (
            row.userId !== null &&
            !(yield* states.sessionLive(row.userId, row.sessionHash ?? "", yield* Clock.currentTimeMillis))
          ) {
            return yield* failure("The session that asked for this link has ended; sign in and link again.")
          }
          const identity = yield* Effect.tryPromise({
            try: () =>
              identify(serverOf, spec, {
                provider,
                query,
                state,
                nonce: row.nonce,
                verifier: row.verifier,
                redirectBase,
                started: row.bound !== null
              }),
            catch: (error) => failure(`The sign-in with ${provider} failed: ${reason(error)}`)
          })
          let userId = yield* userOf(provider, identity, row.userId)
          if (userId === undefined) {
            if (!options.registration) return yield* new Forbidden({ message: "Registration is closed." })
            userId = yield* states.open(provider, identity, options.newUserGroup, options.newUserQuota)
          }
          // The row was written or checked just before: its absence would be a bug, so a defect.
          const user = yield* accounts.view(userId).pipe(Effect.catchTag("NotFound", Effect.die))
          if (user.status === "disabled") return yield* failure("This account is disabled.")
          const sessionId = yield* sessions.create(userId)
          // The row was written or checked just before: its absence would be a bug, so a defect.
          return { user: yield* accounts.view(userId).pipe(Effect.catchTag("NotFound", Effect.die)), sessionId }
        })

        const unlink = Effect.fn("OAuth.unlink")(function* (caller: SessionUser, provider: string) {
          const user = yield* states.signIns(caller.id)
          const refusal = unlinkRefusal(user, user !== undefined && (yield* states.isLinked(caller.id, provider)))
          if (refusal !== undefined) return yield* new InvalidRequest({ message: refusal, param: "provider" })
          yield* states.unlink(caller, provider)
          // The row was written or checked just before: its absence would be a bug, so a defect.
          return yield* accounts.view(caller.id).pipe(Effect.catchTag("NotFound", Effect.die))
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
