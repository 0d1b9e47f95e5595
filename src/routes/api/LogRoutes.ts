/**
 * Usage logs: `GET /api/log/self` (the caller's own rows) and `GET /api/log/`
 * (admin: everyone's, with the channel). Filters: `start_timestamp` and
 * `end_timestamp` (epoch seconds), `model_name`, `token_name` or `token_id`,
 * `request_id` (the id in a public answer's `id` after its prefix, such as
 * `chatcmpl-`), `batch_id` (the rows of a batch's lines; each row shows its `batch_id`, or `null`);
 * admins also `channel` (id) and `username`. Paginated with `page` and
 * `page_size`.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { HttpRouter, type HttpServerRequest } from "effect/http"
import { InvalidRequest } from "../../errors/GatewayError.ts"
import { Sessions } from "../../accounts/Sessions.ts"
import { type LogFilter, UsageQueries } from "../../accounts/UsageQueries.ts"
import { idOf, makeGuards, ok, pageOf, queryOf, queryText, respondApi } from "./Api.ts"

const filterOf = (request: HttpServerRequest.HttpServerRequest, admin: boolean) =>
  Effect.gen(function* () {
    const query = queryOf(request)
    const text = (name: string) => queryText(query.get(name), name)
    const seconds = (name: string) => {
      const value = query.get(name)
      if (value === null || value === "") return Effect.succeed(undefined)
      return /^\d{1,12}$/.test(value)
        ? Effect.succeed(Number(value))
        : Effect.fail(new InvalidRequest({ message: `${name} must be epoch seconds.`, param: name }))
    }
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
