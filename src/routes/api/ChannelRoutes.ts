/**
 * Channels for admins: `GET /api/channel/` (every channel, keys masked, with
 * this instance's health and the last test, as an array; with any of `page`,
 * `page_size`, `keyword` (name or base URL), `status`, `type`, `group`,
 * `model`, `sort` (`CHANNEL_SORTS`) or `order` (`asc`, `desc`): one page of
 * the matching channels, `{items, total, page, page_size}`), `POST
 * /api/channel/bulk` (`{ids: [up to 100], action: enable | disable | test}`:
 * each channel changed or tested in turn, audited as one change each; the
 * answer lists each id's outcome), `GET /api/channel/{id}`,
 * `POST /api/channel/` (the bootstrap file's channel fields), `PUT
 * /api/channel/` (`id` and any of them; `keys` replaces the list), `DELETE
 * /api/channel/{id}` and `POST /api/channel/test/{id}` (one test request,
 * its status and latency recorded on the channel; a failed test is
 * `success: false` with the reason and the same `data`).
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { ChannelSettings, ChannelType } from "../../config/BootstrapFile.ts"
import { CHANNEL_SORTS, ChannelAdmin, type ChannelQuery } from "../../accounts/ChannelAdmin.ts"
import { Sessions } from "../../accounts/Sessions.ts"
import { decodeBody, idOf, makeGuards, ok, pageOf, queryOf, queryText, respondApi } from "./Api.ts"
import { Id, ModelList, Name, Status, Text } from "./Fields.ts"
import { ORDERS, queryChoice } from "./ListQuery.ts"

/** An upstream key: up to 8 KiB, room for a Google service-account key JSON (about 2.4 KB) on vertex channels. */
const Key = Text(8192).check(Schema.isMinLength(1))
const Weight = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0), Schema.isLessThanOrEqualTo(1_000_000))
const Priority = Schema.Int.check(Schema.isBetween({ minimum: -1_000_000, maximum: 1_000_000 }))
const Mapping = Schema.Record(Name, Name)
const Url = Text(2048).check(Schema.isMinLength(1))

const CreateBody = Schema.Struct({
  name: Name,
  type: ChannelType,
  /**
   * Optional where the type has a default (`deepseek`; `bedrock`: its `settings.region`'s endpoint); refused as
   * missing otherwise (`ChannelChanges.placed`).
   */
  base_url: Schema.optional(Url),
  keys: Schema.Array(Key).check(Schema.isMinLength(1), Schema.isMaxLength(1000)),
  models: ModelList,
  groups: Schema.optional(Schema.Array(Name).check(Schema.isMaxLength(100))),
  priority: Schema.optional(Priority),
  weight: Schema.optional(Weight),
  model_mapping: Schema.optional(Mapping),
  settings: Schema.optional(ChannelSettings),
  enabled: Schema.optional(Schema.Boolean)
})

const UpdateBody = Schema.Struct({
  id: Id,
  name: Schema.optional(Name),
  type: Schema.optional(ChannelType),
  base_url: Schema.optional(Url),
  keys: Schema.optional(Schema.Array(Key).check(Schema.isMinLength(1), Schema.isMaxLength(1000))),
  models: Schema.optional(ModelList),
  groups: Schema.optional(Schema.Array(Name).check(Schema.isMaxLength(100))),
  priority: Schema.optional(Priority),
  weight: Schema.optional(Weight),
  model_mapping: Schema.optional(Mapping),
  settings: Schema.optional(ChannelSettings),
  enabled: Schema.optional(Schema.Boolean)
})

const BulkBody = Schema.Struct({
  ids: Schema.Array(Id).check(Schema.isMinLength(1), Schema.isMaxLength(100)),
  action: Schema.Literals(["enable", "disable", "test"])
})

/** The query parameters that ask for a page rather than the whole array. */
const LIST_PARAMS = ["page", "page_size", "keyword", "status", "type", "group", "model", "sort", "order"]

const channelQueryOf = (query: URLSearchParams) =>
  Effect.gen(function* () {
    const channelQuery: ChannelQuery = {
      keyword: yield* queryText(query.get("keyword"), "keyword", 256),
      status: yield* queryChoice(query.get("status"), "status", Status.literals),
      type: yield* queryChoice(query.get("type"), "type", ChannelType.literals),
      group: yield* queryText(query.get("group"), "group", 64),
      model: yield* queryText(query.get("model"), "model", 256),
      sort: yield* queryChoice(query.get("sort"), "sort", CHANNEL_SORTS),
      order: yield* queryChoice(query.get("order"), "order", ORDERS)
    }
    return channelQuery
  })

/** @category routes */
export const ChannelRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const channels = yield* ChannelAdmin
  const guards = makeGuards(yield* Sessions)
  const created = decodeBody(CreateBody)
  const updated = decodeBody(UpdateBody)
  const bulk = decodeBody(BulkBody)

  yield* router.add("GET", "/api/channel", (request) =>
    Effect.gen(function* () {
      yield* guards.admin(request)
      const query = queryOf(request)
      if (!LIST_PARAMS.some((name) => query.has(name))) return ok(yield* channels.list())
      return ok(yield* channels.search(yield* channelQueryOf(query), yield* pageOf(request)))
    }).pipe(respondApi))

  yield* router.add("POST", "/api/channel/bulk", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.admin(request)
      const body = yield* bulk(request)
      const results = []
      for (const id of new Set(body.ids)) {
        if (body.action === "test") {
          const outcome = yield* Effect.result(channels.test(BigInt(id)))
          results.push(
            outcome._tag === "Failure"
              ? { id, success: false, message: "No such channel." }
              : outcome.success.ok
              ? { id, success: true, status: outcome.success.status, latency_ms: outcome.success.latencyMs }
              : {
                id,
                success: false,
                message: outcome.success.message,
                status: outcome.success.status,
                latency_ms: outcome.success.latencyMs
              }
          )
        } else {
          const changed = yield* Effect.result(channels.update(caller, { id, enabled: body.action === "enable" }))
          results.push(
            changed._tag === "Failure"
              ? { id, success: false, message: changed.failure.message }
              : { id, success: true, status: changed.success.status }
          )
        }
      }
      return ok(results)
    }).pipe(respondApi))

  yield* router.add("GET", "/api/channel/:id", (request) =>
    Effect.gen(function* () {
      yield* guards.admin(request)
      const params = yield* HttpRouter.params
      return ok(yield* channels.get(yield* idOf(params.id, "id")))
    }).pipe(respondApi))

  yield* router.add("POST", "/api/channel", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.admin(request)
      return ok(yield* channels.create(caller, yield* created(request)))
    }).pipe(respondApi))

  yield* router.add("PUT", "/api/channel", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.admin(request)
      return ok(yield* channels.update(caller, yield* updated(request)))
    }).pipe(respondApi))

  yield* router.add("DELETE", "/api/channel/:id", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.admin(request)
      const params = yield* HttpRouter.params
      yield* channels.remove(caller, yield* idOf(params.id, "id"))
      return ok(null)
    }).pipe(respondApi))

  yield* router.add("POST", "/api/channel/test/:id", (request) =>
    Effect.gen(function* () {
      yield* guards.admin(request)
      const params = yield* HttpRouter.params
      const outcome = yield* channels.test(yield* idOf(params.id, "id"))
      const data = { status: outcome.status, latency_ms: outcome.latencyMs }
      return outcome.ok ? ok(data) : HttpServerResponse.jsonUnsafe({ success: false, message: outcome.message, data })
    }).pipe(respondApi))
}))
