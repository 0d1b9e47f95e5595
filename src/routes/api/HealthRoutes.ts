/**
 * The operator's health view, admins only: `GET /api/health/channels` and `GET /api/health/models`. Query:
 * `window` (`hour`, `day` or `week`; default `hour`), `channel` (a channel id) or `model` (a model name) to
 * narrow to one series, `limit` (the busiest series kept, 1 to 100, default 20). The answer is
 * `HealthReport` (`src/accounts/HealthQueries.ts`) in the api envelope; a bad value is `success: false` with
 * the parameter named.
 *
 * @since 0.4.0
 */
import { Effect } from "effect"
import { HttpRouter, type HttpServerRequest } from "effect/http"
import { InvalidRequest } from "../../errors/GatewayError.ts"
import {
  HEALTH_WINDOWS,
  HealthQueries,
  type HealthQuery,
  type HealthSubject,
  type HealthWindow,
  MAX_SERIES
} from "../../accounts/HealthQueries.ts"
import { Sessions } from "../../accounts/Sessions.ts"
import { idOf, makeGuards, ok, queryOf, queryText, respondApi } from "./Api.ts"

const isWindow = (value: string): value is HealthWindow => Object.hasOwn(HEALTH_WINDOWS, value)

/**
 * The query of `request` for series by `by`: `InvalidRequest` naming `window`, `channel`, `model` or `limit`.
 *
 * @category decoding
 */
export const healthQueryOf = (
  request: HttpServerRequest.HttpServerRequest,
  by: HealthSubject
): Effect.Effect<HealthQuery, InvalidRequest> =>
  Effect.gen(function* () {
    const query = queryOf(request)
    const window = query.get("window") ?? ""
    if (window !== "" && !isWindow(window)) {
      return yield* new InvalidRequest({ message: "window must be hour, day or week.", param: "window" })
    }
    const channel = query.get("channel")
    const channelId = channel === null || channel === "" ? undefined : yield* idOf(channel, "channel")
    const model = yield* queryText(query.get("model"), "model", 200)
    const limitText = query.get("limit")
    let limit = 20
    if (limitText !== null && limitText !== "") {
      if (!/^\d{1,3}$/.test(limitText) || Number(limitText) < 1 || Number(limitText) > MAX_SERIES) {
        return yield* new InvalidRequest({ message: `limit must be between 1 and ${MAX_SERIES}.`, param: "limit" })
      }
      limit = Number(limitText)
    }
    return { by, window: window === "" ? "hour" : window as HealthWindow, channelId, model, limit }
  })

/** @category routes */
export const HealthRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const health = yield* HealthQueries
  const guards = makeGuards(yield* Sessions)
  for (const [path, by] of [["/api/health/channels", "channel"], ["/api/health/models", "model"]] as const) {
    yield* router.add("GET", path, (request) =>
      Effect.gen(function* () {
        yield* guards.admin(request)
        return ok(yield* health.report(yield* healthQueryOf(request, by)))
      }).pipe(respondApi))
  }
}))
