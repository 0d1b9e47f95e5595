/**
 * Health, status and the caller's usage: `GET /healthz`, `GET /api/status`
 * (overall status, the names of the configured OAuth/OIDC providers for the
 * sign-in page's buttons, and each provider's public parameters
 * (`oauth_clients`: client id, authorization endpoint, scope, redirect URI)
 * for a front end that builds the provider's URL itself, for anyone; per-channel health with the
 * operator's status token or an admin's browser session), `GET /api/usage/token`
 * (docs/ARCHITECTURE.md, "Outer contract") and the OpenAI legacy billing shapes
 * `GET /dashboard/billing/subscription` and `GET /dashboard/billing/usage` (amounts in USD; `total_usage` in cents, as
 * OpenAI's legacy endpoint reported it; with `start_date` and `end_date`
 * (`YYYY-MM-DD`, UTC, the end exclusive, as OpenAI's took them) the usage of
 * those days only, with OpenAI's `daily_costs`).
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
import { OAuth } from "../accounts/OAuth.ts"
import { QuotaLedger } from "../billing/QuotaLedger.ts"
import { roleRank, Sessions } from "../accounts/Sessions.ts"
import { sessionCookieOf } from "./api/Api.ts"
import { UsageQueries } from "../accounts/UsageQueries.ts"
import { InvalidRequest } from "../errors/GatewayError.ts"

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

/**
 * The gateway's address as the browser reached it, for the OAuth redirect
 * URIs `GET /api/status` publishes: `oauth.public_url` when set, else the
 * request's origin (the same base the OAuth callback uses).
 */
const redirectBaseOf = (request: HttpServerRequest.HttpServerRequest, publicUrl: string | undefined): string => {
  if (publicUrl !== undefined) return publicUrl
  const url = request.source instanceof Request ? request.source.url : request.url
  const host = (request.headers["x-forwarded-host"] ?? request.headers["host"] ?? "localhost").split(",")[0].trim()
  return `${url.startsWith("https:") ? "https" : "http"}://${host}`
}

/** A `YYYY-MM-DD` query date as the UTC midnight it names, or `undefined` when it is not a real date. */
const dayOf = (text: string): Date | undefined => {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text)
  if (match === null) return undefined
  const date = new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])))
  return date.toISOString().slice(0, 10) === text ? date : undefined
}

/**
 * The `start_date` / `end_date` window of a billing usage query: `undefined`
 * when neither is given, else both as dates (each must be a real
 * `YYYY-MM-DD`, the end after the start), or the `InvalidRequest` naming the
 * field.
 *
 * @category billing
 */
export const usageWindow = (
  query: URLSearchParams
): { readonly from: Date; readonly to: Date } | undefined | InvalidRequest => {
  const start = query.get("start_date")
  const end = query.get("end_date")
  if (start === null && end === null) return undefined
  for (const [name, value] of [["start_date", start], ["end_date", end]] as const) {
    if (value === null) return new InvalidRequest({ message: `${name} is required with the other date.`, param: name })
    if (dayOf(value) === undefined) {
      return new InvalidRequest({ message: `${name} must be a date YYYY-MM-DD.`, param: name })
    }
  }
  const from = dayOf(start!)!
  const to = dayOf(end!)!
  if (to.getTime() <= from.getTime()) {
    return new InvalidRequest({ message: "end_date must be after start_date.", param: "end_date" })
  }
  return { from, to }
}

/** @category routes */
export const AccountRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const auth = yield* Auth
  const ledger = yield* QuotaLedger
  const channels = yield* ChannelRouter
  const settings = yield* GatewaySettings
  const sessions = yield* Sessions
  const oauth = yield* OAuth
  const usage = yield* UsageQueries

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
        oauth_providers: oauth.providers,
        // What a front end needs to send a browser to each provider itself (no secret).
        oauth_clients: yield* oauth.clients(redirectBaseOf(request, oauth.publicUrl))
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
      const window = usageWindow(new URL(request.url, "http://gateway").searchParams)
      if (window instanceof InvalidRequest) return yield* window
      const row = yield* ledger.balances(principal)
      const unlimited = row.tokenRemain === null
      if (window === undefined) {
        return HttpServerResponse.jsonUnsafe({
          object: "list",
          total_usage: usd(unlimited ? row.userUsed : row.tokenUsed) * 100
        })
      }
      // The same scope as without dates: the token's own usage, or the user's for an unlimited token.
      const rows = yield* usage.costs(
        { userId: principal.userId, tokenId: unlimited ? undefined : principal.tokenId },
        window.from,
        window.to
      )
      const days = new Map<string, Array<{ name: string; cost: number }>>()
      for (const item of rows) {
        const items = days.get(item.date) ?? []
        items.push({ name: item.model, cost: usd(item.quota) * 100 })
        days.set(item.date, items)
      }
      const total = rows.reduce((sum, item) => sum + item.quota, 0n)
      return HttpServerResponse.jsonUnsafe({
        object: "list",
        daily_costs: [...days].map(([date, items]) => ({
          timestamp: Date.parse(`${date}T00:00:00Z`) / 1000,
          line_items: items
        })),
        total_usage: usd(total) * 100
      })
    }).pipe(gateway))
}))
