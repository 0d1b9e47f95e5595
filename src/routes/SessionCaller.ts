/**
 * The console playground's way onto the public routes: `POST
 * /v1/chat/completions`, `GET /v1/models`, `POST /v1/images/generations`,
 * the async image submit and read, and the video routes (`POST /v1/videos`,
 * `GET /v1/videos/{id}`, remix and the unified shapes) also accept the
 * browser session (the `sluice_session` cookie) when no key is sent, so the page never holds
 * a key. Such a request is billed to the user's playground token
 * (`Tokens.playground`, made on first use; it has no key and lists as
 * `kind: "playground"`), with every check of that token (enabled, expiry,
 * model allow-list, quota, rate limits) and of the user.
 *
 * The video content route and the Midjourney image route take the session's
 * own user instead (`bearerOrSessionUser`): a read, billed to no token.
 *
 * Cross-site use is refused as on `/api/*` (`csrfProblem`): a change needs an
 * `Origin` of this host, or, with no `Origin`, the `X-Sluice-CSRF` header,
 * which a page of another origin cannot send without a CORS preflight that
 * Sluice never grants. The cookie is `SameSite=Lax`, so a cross-site `fetch`
 * does not carry it at all.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { HttpServerRequest } from "effect/http"
import { Forbidden, InvalidApiKey, type StorageUnavailable, Unauthenticated } from "../errors/GatewayError.ts"
import { clientAddressOf } from "../http/ClientAddress.ts"
import { credentialOf } from "../http/Credentials.ts"
import type { Auth, Principal } from "../services/Auth.ts"
import type { Sessions } from "../accounts/Sessions.ts"
import type { Tokens } from "../accounts/Tokens.ts"
import { csrfProblem, sessionCookieOf } from "./api/Api.ts"

/**
 * Resolves a request that carries a session cookie and no key to the user's
 * playground principal; `undefined` when the request has no session cookie
 * (the caller's key, or its absence, decides). Fails with `Unauthenticated`
 * for a cookie of no live session, `Forbidden` for a cross-site change, and
 * `InvalidApiKey` when the playground token is disabled or expired.
 *
 * @category auth
 */
export type SessionCaller = (
  request: HttpServerRequest.HttpServerRequest
) => Effect.Effect<Principal, InvalidApiKey | Unauthenticated | Forbidden | StorageUnavailable> | undefined

/**
 * The session caller over the gateway's sessions, tokens and key check.
 *
 * @category auth
 */
export const makeSessionCaller = (
  sessions: Sessions["Service"],
  tokens: Tokens["Service"],
  auth: Auth["Service"]
): SessionCaller =>
(request) => {
  const cookie = sessionCookieOf(request)
  if (cookie === "") return undefined
  return Effect.gen(function* () {
    const found = yield* sessions.resolve(cookie)
    if (found._tag === "None") return yield* new Unauthenticated({ reason: "expired" })
    const problem = csrfProblem(request)
    if (problem !== undefined) return yield* new Forbidden({ message: problem })
    const digest = yield* tokens.playground(found.value.id)
    return yield* auth.authenticateDigest(digest, clientAddressOf(request))
  })
}

/**
 * The caller of a public route that the playground may use: the Bearer key's
 * principal, or, when no key is sent, the browser session's (see
 * `makeSessionCaller`: same-origin proof on a change, billed to the
 * playground token). With neither, `InvalidApiKey` (`missing`), as for any
 * keyless call.
 *
 * @category auth
 */
export const bearerOrSession = (auth: Auth["Service"], sessionCaller: SessionCaller) =>
(
  request: HttpServerRequest.HttpServerRequest
): Effect.Effect<Principal, InvalidApiKey | Unauthenticated | Forbidden | StorageUnavailable> => {
  const key = credentialOf("bearer", request)
  const viaSession = key === undefined ? sessionCaller(request) : undefined
  return viaSession ?? auth.authenticate(key, clientAddressOf(request))
}

/**
 * The user of a read that the browser may make without a key (the video
 * content route, which a `<video>` tag opens; the Midjourney image route,
 * an `<img>`): the key's user (sent as `style` says: a Bearer key, or for
 * `midjourney` also `mj-api-secret`), else the browser session's own user
 * (no playground token: nothing is billed, and a read needs no same-origin
 * proof). With neither, `InvalidApiKey` (`missing`); a cookie of no live
 * session, `InvalidApiKey` (`expired`).
 *
 * @category auth
 */
export const bearerOrSessionUser = (
  auth: Auth["Service"],
  sessions: Sessions["Service"],
  style: "bearer" | "midjourney" = "bearer"
) =>
(
  request: HttpServerRequest.HttpServerRequest
): Effect.Effect<bigint, InvalidApiKey | StorageUnavailable> =>
  Effect.gen(function* () {
    const key = credentialOf(style, request)
    if (key !== undefined) return (yield* auth.authenticate(key, clientAddressOf(request))).userId
    const cookie = sessionCookieOf(request)
    if (cookie === "") return yield* new InvalidApiKey({ reason: "missing" })
    const session = yield* sessions.resolve(cookie)
    if (session._tag === "None") return yield* new InvalidApiKey({ reason: "expired" })
    return session.value.id
  })
