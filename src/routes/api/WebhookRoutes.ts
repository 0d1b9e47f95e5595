/**
 * Alert endpoints: `POST /api/webhook/` (`{url, events, thresholds?,
 * balance_below?}` (USD, required with `balance.low`) →
 * `{id, url, events, thresholds, secret, …}`, the Standard Webhooks secret
 * shown once), `GET /api/webhook/` (the caller's endpoints with delivery
 * counts and `status`, as an array; with any of `page`, `page_size`,
 * `keyword` (in the URL), `status`, `event`, `sort` (`WEBHOOK_SORTS`) or
 * `order` (`asc`, `desc`; oldest first by default): one page of the matching
 * endpoints, `{items, total, page, page_size}`), `POST /api/webhook/bulk`
 * (`{ids: [up to 100], action: enable | disable | delete}`: each of the
 * caller's endpoints changed in turn, the answer listing each id's outcome; a
 * disabled endpoint is written no new event), `DELETE /api/webhook/{id}`, `GET /api/webhook/{id}/deliveries`
 * (the delivery log: status, attempts, last HTTP status and error) and
 * `POST /api/webhook/{id}/test` (queues a `webhook.test` event, returns its
 * `webhook-id`). Users subscribe to their own events (`budget.threshold`,
 * `balance.low`, `key.expiring`); admins also to the operator's
 * (`channel.key_disabled`, `channel.unhealthy`, `channel.recovered`).
 * Another user's endpoint is "not found".
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"
import { HttpRouter } from "effect/http"
import { roleRank, Sessions, type SessionUser } from "../../accounts/Sessions.ts"
import { WEBHOOK_SORTS, type WebhookQuery, Webhooks } from "../../accounts/Webhooks.ts"
import { BulkBody, runBulk } from "./BulkAction.ts"
import { decodeBody, idOf, makeGuards, ok, pageOf, queryOf, queryText, respondApi } from "./Api.ts"
import { Status, Text } from "./Fields.ts"
import { ORDERS, queryChoice } from "./ListQuery.ts"

const NewEndpointBody = Schema.Struct({
  url: Text(2048).check(Schema.isMinLength(1)),
  events: Schema.Array(Text(64)).check(Schema.isMinLength(1), Schema.isMaxLength(16)),
  thresholds: Schema.optional(
    Schema.Array(Schema.Number.check(Schema.isGreaterThan(0), Schema.isLessThanOrEqualTo(1))).check(
      Schema.isMinLength(1),
      Schema.isMaxLength(10)
    )
  ),
  balance_below: Schema.optional(
    Schema.Number.check(Schema.isFinite(), Schema.isGreaterThanOrEqualTo(0), Schema.isLessThanOrEqualTo(9_000_000_000))
  )
})

/** The query parameters that ask for a page rather than the whole array. */
const LIST_PARAMS = ["page", "page_size", "keyword", "status", "event", "sort", "order"]

const webhookQueryOf = (query: URLSearchParams) =>
  Effect.gen(function* () {
    const webhookQuery: WebhookQuery = {
      keyword: yield* queryText(query.get("keyword"), "keyword", 256),
      status: yield* queryChoice(query.get("status"), "status", Status.literals),
      event: yield* queryText(query.get("event"), "event", 64),
      sort: yield* queryChoice(query.get("sort"), "sort", WEBHOOK_SORTS),
      order: yield* queryChoice(query.get("order"), "order", ORDERS)
    }
    return webhookQuery
  })

const callerOf = (user: SessionUser) => ({ id: user.id, admin: roleRank(user.role) >= roleRank("admin") })

/** @category routes */
export const WebhookRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const webhooks = yield* Webhooks
  const guards = makeGuards(yield* Sessions)
  const created = decodeBody(NewEndpointBody)
  const bulk = decodeBody(BulkBody)

  yield* router.add("GET", "/api/webhook", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.user(request)
      const query = queryOf(request)
      if (!LIST_PARAMS.some((name) => query.has(name))) return ok(yield* webhooks.list(callerOf(caller)))
      return ok(yield* webhooks.search(callerOf(caller), yield* webhookQueryOf(query), yield* pageOf(request)))
    }).pipe(respondApi))

  yield* router.add("POST", "/api/webhook", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.user(request)
      return ok(yield* webhooks.create(callerOf(caller), yield* created(request)))
    }).pipe(respondApi))

  yield* router.add("POST", "/api/webhook/bulk", (request) =>
    Effect.gen(function* () {
      const caller = callerOf(yield* guards.user(request))
      const body = yield* bulk(request)
      const results = yield* runBulk(body, {
        remove: (id) => webhooks.remove(caller, BigInt(id)),
        setEnabled: (id, enabled) => webhooks.setEnabled(caller, BigInt(id), enabled)
      })
      return ok(results)
    }).pipe(respondApi))

  yield* router.add("DELETE", "/api/webhook/:id", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.user(request)
      const params = yield* HttpRouter.params
      yield* webhooks.remove(callerOf(caller), yield* idOf(params.id, "id"))
      return ok(null)
    }).pipe(respondApi))

  yield* router.add("GET", "/api/webhook/:id/deliveries", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.user(request)
      const params = yield* HttpRouter.params
      return ok(yield* webhooks.deliveries(callerOf(caller), yield* idOf(params.id, "id")))
    }).pipe(respondApi))

  yield* router.add("POST", "/api/webhook/:id/test", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.user(request)
      const params = yield* HttpRouter.params
      return ok({ id: yield* webhooks.sendTest(callerOf(caller), yield* idOf(params.id, "id")) })
    }).pipe(respondApi))
}))
