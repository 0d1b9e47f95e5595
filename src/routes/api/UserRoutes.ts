/**
 * The caller's own account: `POST /api/user/register`, `POST /api/user/login`
 * (sets the session cookie), `GET /api/user/logout` (ends the session; a
 * cross-site navigation, as `Sec-Fetch-Site` reports it, is refused),
 * `GET`/`PUT /api/user/self` and `GET /api/user/self/usage?days=N` (daily
 * usage by model, N from 1 to 366, default 7).
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"
import { HttpRouter } from "effect/http"
import { Forbidden, InvalidRequest } from "../../errors/GatewayError.ts"
import { clientAddressOf, limitAddressOf } from "../../http/ClientAddress.ts"
import { Accounts } from "../../accounts/Accounts.ts"
import { Sessions } from "../../accounts/Sessions.ts"
import { UsageQueries } from "../../accounts/UsageQueries.ts"
import {
  csrfProblem,
  decodeBody,
  makeGuards,
  ok,
  queryOf,
  respondApi,
  sessionCookieOf,
  withoutSession,
  withSession
} from "./Api.ts"
import { DisplayName, Email, Password, Text, Username } from "./Fields.ts"

const LoginBody = Schema.Struct({ username: Text(256), password: Password })

const RegisterBody = Schema.Struct({
  username: Username,
  password: Password,
  display_name: Schema.optional(DisplayName),
  email: Schema.optional(Email)
})

const SelfBody = Schema.Struct({
  display_name: Schema.optional(DisplayName),
  password: Schema.optional(Password),
  old_password: Schema.optional(Password)
})

/** @category routes */
export const UserRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const accounts = yield* Accounts
  const sessions = yield* Sessions
  const usage = yield* UsageQueries
  const guards = makeGuards(sessions)
  const login = decodeBody(LoginBody)
  const register = decodeBody(RegisterBody)
  const self = decodeBody(SelfBody)
  const maxAge = sessions.options.maxMillis

  // Login and registration take no session, but a page of another site may not post them either (login CSRF).
  const sameSite = (request: Parameters<typeof csrfProblem>[0]) => {
    const problem = csrfProblem(request)
    return problem === undefined || request.headers["origin"] === undefined
      ? Effect.void
      : Effect.fail(new Forbidden({ message: problem }))
  }

  yield* router.add("POST", "/api/user/login", (request) =>
    Effect.gen(function* () {
      yield* sameSite(request)
      const body = yield* login(request)
      const { user, sessionId } = yield* accounts.login(
        body.username,
        body.password,
        // Not counted per address when it came through a proxy nobody listed: that address is everyone's.
        limitAddressOf(request)
      )
      return withSession(ok(user), request, sessionId, maxAge)
    }).pipe(respondApi))

  yield* router.add("POST", "/api/user/register", (request) =>
    Effect.gen(function* () {
      yield* sameSite(request)
      const body = yield* register(request)
      return ok(yield* accounts.register(body, clientAddressOf(request)))
    }).pipe(respondApi))

  yield* router.add("GET", "/api/user/logout", (request) =>
    Effect.gen(function* () {
      // A GET carries the Lax cookie on a cross-site navigation; the browser says so in Sec-Fetch-Site.
      if (request.headers["sec-fetch-site"] === "cross-site") {
        return yield* new Forbidden({ message: "Cross-site request refused: log out from this site." })
      }
      yield* sessions.revoke(sessionCookieOf(request))
      return withoutSession(ok(null), request)
    }).pipe(respondApi))

  yield* router.add("GET", "/api/user/self", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.user(request)
      return ok(yield* accounts.view(caller.id))
    }).pipe(respondApi))

  yield* router.add("PUT", "/api/user/self", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.user(request)
      const body = yield* self(request)
      const { user, sessionId } = yield* accounts.updateSelf(caller, body)
      const response = ok(user)
      return sessionId === undefined ? response : withSession(response, request, sessionId, maxAge)
    }).pipe(respondApi))

  yield* router.add("GET", "/api/user/self/usage", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.user(request)
      const raw = queryOf(request).get("days") ?? "7"
      if (!/^\d{1,3}$/.test(raw) || Number(raw) < 1 || Number(raw) > 366) {
        return yield* new InvalidRequest({ message: "days must be between 1 and 366.", param: "days" })
      }
      return ok(yield* usage.daily(caller.id, Number(raw)))
    }).pipe(respondApi))
}))
