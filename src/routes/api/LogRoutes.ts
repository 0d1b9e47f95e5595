/**
 * Usage logs: `GET /api/log/self` (the caller's own rows) and `GET /api/log/`
 * (admin: everyone's, with the channel). Filters: `start_timestamp` and
 * `end_timestamp` (epoch seconds), `model_name`, `token_name` or `token_id`,
 * `request_id` (the id in a public answer's `id` after its prefix, such as
 * `chatcmpl-`), `batch_id` (the rows of a batch's lines; each row shows its `batch_id`, or `null`);
 * `status` (`success`: 2xx, `failed`: the others), `sort`
 * (`id`, `quota`, `latency`, `tokens`) and `order` (`asc`, `desc`; newest
 * first by default);
 * admins also `channel` (id) and `username`. Paginated with `page` and
 * `page_size`. A request's story: `GET /api/log/self/{request_id}` (the
 * caller's own request) and `GET /api/log/{request_id}` (admin: anyone's),
 * its rows in attempt order with the failover path, the total charged and
 * the model's prices (`RequestStory.ts`); another user's request is 404.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { HttpRouter, type HttpServerRequest } from "effect/http"
import { InvalidRequest, NotFound } from "../../errors/GatewayError.ts"
import { Sessions } from "../../accounts/Sessions.ts"
import { LOG_SORTS, type LogFilter, UsageQueries } from "../../accounts/UsageQueries.ts"
import { idOf, makeGuards, ok, pageOf, queryOf, queryText, respondApi } from "./Api.ts"
import { ORDERS, queryChoice, querySeconds } from "./ListQuery.ts"

const filterOf = (request: HttpServerRequest.HttpServerRequest, admin: boolean) =>
  Effect.gen(function* () {
    const query = queryOf(request)
    const text = (name: string) => queryText(query.get(name), name)
    const seconds = (name: string) => querySeconds(query.get(name), name)
    const id = (name: string) => {
      const value = query.get(name)
      return value === null || value === "" ? Effect.succeed(undefined) : idOf(value, name)
    }
    const filter: LogFilter = {
      start: yield* seconds("start_timestamp"),
      end: yield* seconds("end_timestamp"),
      model: yield* text("model_name"),
      tokenName: yield* text("token_name"),
      tokenId: yield* id("token_id"),
      requestId: yield* text("request_id"),
      batchId: yield* text("batch_id"),
      outcome: yield* queryChoice(query.get("status"), "status", ["success", "failed"] as const),
      sort: yield* queryChoice(query.get("sort"), "sort", LOG_SORTS),
      order: yield* queryChoice(query.get("order"), "order", ORDERS),
      ...(admin ? { channelId: yield* id("channel"), username: yield* text("username") } : {})
    }
    return filter
  })

/** @category routes */
export const LogRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const usage = yield* UsageQueries
  const guards = makeGuards(yield* Sessions)

  yield* router.add("GET", "/api/log/self", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.user(request)
      const filter = yield* filterOf(request, false)
      return ok(yield* usage.logs({ ...filter, userId: caller.id }, yield* pageOf(request), false))
    }).pipe(respondApi))

  const storyOf = (userId: bigint | undefined, admin: boolean) =>
    Effect.gen(function* () {
      const params = yield* HttpRouter.params
      const requestId = yield* queryText(params.request_id ?? null, "request_id", 128)
      if (requestId === undefined) {
        return yield* new InvalidRequest({ message: "request_id is required.", param: "request_id" })
      }
      const story = yield* usage.story(requestId, userId, admin)
      if (story === undefined) return yield* new NotFound({ what: "request", id: requestId, param: "request_id" })
      return ok(story)
    })

  yield* router.add("GET", "/api/log/self/:request_id", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.user(request)
      return yield* storyOf(caller.id, false)
    }).pipe(respondApi))

  yield* router.add("GET", "/api/log/:request_id", (request) =>
    Effect.gen(function* () {
      yield* guards.admin(request)
      return yield* storyOf(undefined, true)
    }).pipe(respondApi))

  // The router ignores a trailing slash: "/api/log" also serves "/api/log/".
  {
    const path = "/api/log"
    yield* router.add("GET", path, (request) =>
      Effect.gen(function* () {
        yield* guards.admin(request)
        const filter = yield* filterOf(request, true)
        return ok(yield* usage.logs(filter, yield* pageOf(request), true))
      }).pipe(respondApi))
  }
}))
