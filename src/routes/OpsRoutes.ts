/**
 * The operator's probes and metrics: `GET /readyz` (200 only while the
 * database answers and this instance may serve quota holds (its leases are
 * fresh); 503 with the reason otherwise; the catalog is always loaded by the
 * time a route serves) and `GET /metrics` (Prometheus text
 * format through `effect/observability`'s `PrometheusMetrics`; open to a
 * loopback caller, otherwise only with `Authorization: Bearer
 * <settings.metrics_token>`). The caller's address is the one a trusted proxy
 * forwards (`settings.trusted_proxies`); a request that carries forwarding
 * headers no trusted proxy vouches for (any of `FORWARDING_HEADERS`, even
 * empty) is never taken as local). A proxy on the same host that sends none of
 * them makes its callers look local, which nothing in the request tells: so at
 * the start, a gateway listening on an address other than loopback with no
 * metrics token says that `/metrics` is loopback-only and that behind such a
 * proxy the token must be set. `GET /healthz` (liveness) stays in
 * `AccountRoutes`.
 *
 * @since 0.1.0
 */
import { Duration, Effect } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { PrometheusMetrics } from "effect/observability"
import { SqlClient } from "effect/sql"
import type { Metrics } from "../observability/Metrics.ts"
import { clientAddressOf, isLoopback, isUntrustedForward } from "../http/ClientAddress.ts"
import { ChannelRouter } from "../services/ChannelRouter.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"
import { QuotaLedger } from "../billing/QuotaLedger.ts"
import { Catalog } from "../storage/Catalog.ts"
import { isStatusToken } from "./AccountRoutes.ts"

/** How long `/readyz` waits for the database before it says it is away. */
const DATABASE_PROBE = Duration.seconds(2)

const notReady = (reason: string) => HttpServerResponse.jsonUnsafe({ status: "not_ready", reason }, { status: 503 })

/**
 * `GET /readyz`, and `GET /metrics` when `metrics` is given (metrics off:
 * the path is a 404 like any unknown one). `listenHost` is the address the
 * server listens on (`HOST`), for the startup notice; unset: no notice.
 *
 * @category routes
 */
export const OpsRoutes = (metrics: Metrics | undefined, listenHost?: string) =>
  HttpRouter.use(Effect.fnUntraced(function* (router) {
    const sql = yield* SqlClient.SqlClient
    // The catalog is loaded when its layer is built, before any route serves: taking it here makes that so.
    yield* Catalog
    const ledger = yield* QuotaLedger
    const channels = yield* ChannelRouter
    const settings = yield* GatewaySettings

    const databaseAnswers = sql`SELECT 1`.pipe(
      Effect.timeout(DATABASE_PROBE),
      Effect.as(true),
      Effect.catchCause(() => Effect.succeed(false))
    )

    yield* router.add(
      "GET",
      "/readyz",
      Effect.gen(function* () {
        if (!(yield* databaseAnswers)) return notReady("The database does not answer.")
        if (!ledger.serving()) {
          return notReady("The quota leases went unrenewed too long; this instance serves no holds until it renews.")
        }
        return HttpServerResponse.jsonUnsafe({ status: "ready" })
      })
    )

    if (metrics === undefined) return
    if (listenHost !== undefined && !isLoopback(listenHost) && settings.metricsToken === undefined) {
      yield* Effect.logWarning(
        `GET /metrics answers loopback callers only: the gateway listens on ${listenHost} and ` +
          "settings.metrics_token is not set, so a scraper on another host is refused. Behind a reverse proxy on " +
          "this host that sends no forwarding header every caller looks local: set settings.metrics_token"
      )
    }
    yield* router.add(
      "GET",
      "/metrics",
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const peer = clientAddressOf(request)
        const authorization = request.headers.authorization ?? ""
        const presented = authorization.startsWith("Bearer ") ? authorization.slice(7) : ""
        // A request a proxy forwarded is not local, whatever its peer address, unless a trusted proxy says whose it is.
        const local = isLoopback(peer) && !isUntrustedForward(request)
        if (!local && !isStatusToken(settings.metricsToken, presented)) {
          return HttpServerResponse.jsonUnsafe({
            error: {
              message: "Metrics are served on loopback, or with the metrics token as Bearer.",
              type: "invalid_request_error",
              param: null,
              code: "unauthorized"
            }
          }, { status: 401 })
        }
        for (const view of channels.health()) {
          metrics.channelHealth(
            view.name,
            view.state === "healthy",
            view.keys.filter((key) => key.enabled).length
          )
        }
        return HttpServerResponse.text(PrometheusMetrics.formatUnsafe(metrics.context), {
          contentType: "text/plain; version=0.0.4; charset=utf-8"
        })
      })
    )
  }))
