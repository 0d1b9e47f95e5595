/**
 * Health, status and the caller's usage: `GET /healthz`, `GET /api/status`,
 * `GET /api/usage/token` (outer contract, DESIGN.md) and the OpenAI legacy
 * billing shapes `GET /dashboard/billing/subscription` and
 * `GET /dashboard/billing/usage` (amounts in USD; `total_usage` in cents, as
 * OpenAI's legacy endpoint reported it).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { envelopeBody } from "../errors/Envelope.ts"
import { credentialOf } from "../http/Credentials.ts"
import { respondWith } from "../http/Respond.ts"
import { Auth } from "../services/Auth.ts"
import { ChannelRouter } from "../services/ChannelRouter.ts"
import { QuotaLedger } from "../services/QuotaLedger.ts"

/** The version `GET /api/status` reports. @category constants */
export const VERSION = "0.1.0"

const usd = (units: bigint): number => Number(units) / 1_000_000

/** @category routes */
export const AccountRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const auth = yield* Auth
  const ledger = yield* QuotaLedger
  const channels = yield* ChannelRouter

  const caller = (request: HttpServerRequest.HttpServerRequest) => auth.authenticate(credentialOf("bearer", request))

  yield* router.add("GET", "/healthz", HttpServerResponse.jsonUnsafe({ status: "ok" }))

  yield* router.add(
    "GET",
    "/api/status",
    Effect.sync(() =>
      HttpServerResponse.jsonUnsafe({
        success: true,
        message: "",
        data: { version: VERSION, system_name: "Sluice", channels: channels.health() }
      })
    )
  )

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
