/**
 * Health, status and the caller's usage: `GET /healthz`, `GET /api/status`
 * (overall status and the names of the configured OAuth/OIDC providers, for
 * the sign-in page's buttons, for anyone; per-channel health with the
 * operator's status token or an admin's browser session), `GET /api/usage/token` (outer contract, DESIGN.md) and the OpenAI legacy
 * billing shapes `GET /dashboard/billing/subscription` and
 * `GET /dashboard/billing/usage` (amounts in USD; `total_usage` in cents, as
 * OpenAI's legacy endpoint reported it).
 *
 * @since 0.1.0
 */
import { Buffer } from "node:buffer"
import { createHash, timingSafeEqual } from "node:crypto"
import { Effect, Option } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { envelopeBody } from "../errors/Envelope.ts"
import { credentialOf } from "../http/Credentials.ts"
import { clientAddressOf } from "../http/ClientAddress.ts"
import { respondWith } from "../http/Respond.ts"
import { Auth } from "../services/Auth.ts"
import { ChannelRouter, type HealthView } from "../services/ChannelRouter.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"
import { OAuth } from "../services/OAuth.ts"
import { QuotaLedger } from "../services/QuotaLedger.ts"
import { roleRank, Sessions } from "../services/Sessions.ts"
import { sessionCookieOf } from "./api/Api.ts"

/** The version `GET /api/status` reports. @category constants */
export const VERSION = "0.1.0"

/**
 * The overall word of `GET /api/status`: `ok` when every channel is healthy,
 * `degraded` when some channel is cooling down or has a disabled key but one
 * still serves, `down` when no channel is healthy (or none is configured).
 *
 * @category status
 */
export type OverallStatus = "ok" | "degraded" | "down"

/**
 * The overall status of a set of channel health views (see `OverallStatus`).
 *
 * @category status
 */
export const overallStatus = (channels: ReadonlyArray<HealthView>): OverallStatus => {
  const healthy = channels.filter((channel) => channel.state === "healthy")
  if (healthy.length === 0) return "down"
  const perfect = healthy.length === channels.length &&
    channels.every((channel) => channel.keys.every((key) => key.enabled))
  return perfect ? "ok" : "degraded"
}

const digest = (text: string): Buffer => createHash("sha256").update(text, "utf8").digest()

/**
 * Whether `presented` is the operator's status token. Both are hashed first,
 * so the comparison takes the same time whatever the length or content of a
 * guess (`timingSafeEqual` on equal-length digests).
 *
 * @category status
 */
export const isStatusToken = (expected: string | undefined, presented: string): boolean =>
  expected !== undefined && timingSafeEqual(digest(expected), digest(presented))

const usd = (units: bigint): number => Number(units) / 1_000_000

/** @category routes */
export const AccountRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const auth = yield* Auth
  const ledger = yield* QuotaLedger
  const channels = yield* ChannelRouter
  const settings = yield* GatewaySettings
  const sessions = yield* Sessions
  const oauth = yield* OAuth

  const caller = (request: HttpServerRequest.HttpServerRequest) =>
    auth.authenticate(credentialOf("bearer", request), clientAddressOf(request))

  yield* router.add("GET", "/healthz", HttpServerResponse.jsonUnsafe({ status: "ok" }))

  // Anyone: the version and one overall word. The per-channel detail (names, key states, the vendor's disable
  // reasons) only with the operator's status token; any other credential is refused rather than ignored.
  yield* router.add("GET", "/api/status", (request) =>
    Effect.gen(function* () {
      const health = channels.health()
      const data = {
        version: VERSION,
        system_name: "Sluice",
        status: overallStatus(health),
        oauth_providers: oauth.providers
      }
      const presented = credentialOf("bearer", request)
      if (presented === undefined) {
        // An admin's browser session sees the detail too; anyone else the overall word.
        const cookie = sessionCookieOf(request)
        const caller = cookie === "" ? Option.none() : yield* sessions.resolve(cookie)
        const detail = Option.isSome(caller) && roleRank(caller.value.role) >= roleRank("admin")
        return HttpServerResponse.jsonUnsafe({
          success: true,
          message: "",
          data: detail ? { ...data, channels: health } : data
        })
      }
      if (!isStatusToken(settings.statusToken, presented)) {
        return HttpServerResponse.jsonUnsafe({ success: false, message: "The status token is not valid." }, {
          status: 401
        })
      }
      return HttpServerResponse.jsonUnsafe({ success: true, message: "", data: { ...data, channels: health } })
    }))

  yield* router.add("GET", "/api/usage/token", (request) =>
    Effect.gen(function* () {
      const principal = yield* caller(request)
      const row = yield* ledger.balances(principal)
      const unlimited = row.tokenRemain === null
      const available = unlimited ? row.userQuota : row.tokenRemain!
      return HttpServerResponse.jsonUnsafe({
        success: true,
        message: "",
        data: {
          object: "token_usage",
          name: principal.tokenName,
          total_granted: Number(row.tokenUsed + available),
          total_used: Number(row.tokenUsed),
          total_available: Number(available),
          unlimited_quota: unlimited,
          expires_at: principal.expiresAt ?? 0
        }
      })
    }).pipe(respondWith((problem) => envelopeBody("api", problem))))

  const gateway = respondWith((problem) => envelopeBody("gateway", problem))

  yield* router.add("GET", "/dashboard/billing/subscription", (request) =>
    Effect.gen(function* () {
      const principal = yield* caller(request)
      const row = yield* ledger.balances(principal)
      const granted = row.tokenRemain === null ? row.userQuota + row.userUsed : row.tokenRemain + row.tokenUsed
      const limit = usd(granted)
      return HttpServerResponse.jsonUnsafe({
        object: "billing_subscription",
        has_payment_method: true,
        soft_limit_usd: limit,
        hard_limit_usd: limit,
        system_hard_limit_usd: limit,
        access_until: principal.expiresAt ?? 0
      })
    }).pipe(gateway))

  yield* router.add("GET", "/dashboard/billing/usage", (request) =>
    Effect.gen(function* () {
      const principal = yield* caller(request)
      const row = yield* ledger.balances(principal)
      const used = row.tokenRemain === null ? row.userUsed : row.tokenUsed
      return HttpServerResponse.jsonUnsafe({ object: "list", total_usage: usd(used) * 100 })
    }).pipe(gateway))
}))
