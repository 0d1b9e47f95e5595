/**
 * The OAuth browser flow (spec "Authentication" rule 3):
 * `GET /api/oauth/state` → `{success: true, message: "", data: <state>}`
 * (single use, ten minutes, bound to this browser by the `sluice_oauth`
 * cookie and to the logged-in user, if any, whose account the login will
 * link); `GET /api/oauth/{provider}/start?state=<state>` sends the browser to
 * the provider (302); the provider sends it back to
 * `GET /api/oauth/{provider}?code=…&state=…`, which logs in (sets the session
 * cookie) and answers with the user in the api envelope — or, when the
 * browser itself navigated there (`Sec-Fetch-Mode: navigate`, which a
 * browser sets on a top-level navigation and a script cannot), sends it on
 * to the console: `/#/dashboard` signed in, or `/#/sign-in?error=<words>`
 * with the reason it failed. A link asked for by a logged-in user completes
 * only while the session that asked lives. `DELETE
 * /api/user/self/oauth/{provider}` removes the caller's link (refused when it
 * is the only way the user can sign in).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { toProblem } from "../../errors/Envelope.ts"
import { generateSecret } from "../../domain/KeyHash.ts"
import { hostOf, schemeOf } from "../../http/ClientAddress.ts"
import { headerOf } from "../../http/Credentials.ts"
import { OAuth, STATE_TTL_MILLIS } from "../../accounts/OAuth.ts"
import { Sessions } from "../../accounts/Sessions.ts"
import { makeGuards, ok, queryOf, respondApi, sessionCookieOf, withSession } from "./Api.ts"
import { reportFailure } from "../../http/Respond.ts"

/** The cookie that ties a state to the browser it was issued to. @category constants */
export const BROWSER_COOKIE = "sluice_oauth"

const browserOf = (request: HttpServerRequest.HttpServerRequest): string | undefined => {
  const value = request.cookies[BROWSER_COOKIE]
  return value !== undefined && /^[A-Za-z0-9_-]{43}$/.test(value) ? value : undefined
}

const isHttps = (request: HttpServerRequest.HttpServerRequest) => schemeOf(request) === "https"

/**
 * The gateway's address for the `redirect_uri`: `oauth.public_url`, else the
 * scheme and host a trusted proxy forwarded, else the request's own (its
 * `Host`); an untrusted `X-Forwarded-*` never.
 */
const baseOf = (request: HttpServerRequest.HttpServerRequest, publicUrl: string | undefined): string =>
  publicUrl ?? `${schemeOf(request)}://${hostOf(request) ?? "localhost"}`

/** A redirect of the browser to the console at `location` (same origin). */
const consoleAt = (location: string) =>
  HttpServerResponse.redirect(location, { status: 302, headers: { "cache-control": "no-store" } })

/** @category routes */
export const OAuthRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const flow = yield* OAuth
  const sessions = yield* Sessions
  const guards = makeGuards(sessions)

  yield* router.add("GET", "/api/oauth/state", (request) =>
    Effect.gen(function* () {
      const browser = browserOf(request) ?? generateSecret()
      const cookie = sessionCookieOf(request)
      const caller = cookie === "" ? undefined : yield* sessions.resolve(cookie)
      const linker = caller !== undefined && caller._tag === "Some"
        ? { userId: caller.value.id, sessionHash: caller.value.sessionHash }
        : undefined
      const state = yield* flow.issueState(browser, linker)
      return HttpServerResponse.setCookieUnsafe(ok(state), BROWSER_COOKIE, browser, {
        httpOnly: true,
        sameSite: "lax",
        secure: isHttps(request),
        path: "/api/oauth",
        maxAge: `${STATE_TTL_MILLIS / 1000} seconds`
      })
    }).pipe(respondApi))

  yield* router.add("DELETE", "/api/user/self/oauth/:provider", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.user(request)
      const params = yield* HttpRouter.params
      return ok(yield* flow.unlink(caller, params.provider ?? ""))
    }).pipe(respondApi))

  yield* router.add("GET", "/api/oauth/:provider/start", (request) =>
    Effect.gen(function* () {
      const params = yield* HttpRouter.params
      const url = yield* flow.authorizeUrl(
        params.provider ?? "",
        queryOf(request).get("state") ?? "",
        browserOf(request) ?? "",
        baseOf(request, flow.publicUrl)
      )
      return HttpServerResponse.redirect(url, { status: 302 })
    }).pipe(respondApi))

  yield* router.add("GET", "/api/oauth/:provider", (request) =>
    Effect.gen(function* () {
      const params = yield* HttpRouter.params
      const signedIn = flow.callback(
        params.provider ?? "",
        queryOf(request),
        browserOf(request) ?? "",
        baseOf(request, flow.publicUrl)
      )
      if (headerOf(request, "sec-fetch-mode") === "navigate") {
        return yield* signedIn.pipe(
          Effect.map(({ sessionId }) =>
            withSession(consoleAt("/#/dashboard"), request, sessionId, sessions.options.maxMillis)
          ),
          Effect.catch((error) =>
            Effect.as(
              reportFailure(error),
              consoleAt(`/#/sign-in?error=${encodeURIComponent(toProblem(error).message)}`)
            )
          )
        )
      }
      const { user, sessionId } = yield* signedIn
      return withSession(ok(user), request, sessionId, sessions.options.maxMillis)
    }).pipe(respondApi))
}))
