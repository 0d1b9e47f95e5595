/**
 * Alert endpoints: `POST /api/webhook/` (`{url, events, thresholds?,
 * balance_below?}` (USD, required with `balance.low`) →
 * `{id, url, events, thresholds, secret, …}`, the Standard Webhooks secret
 * shown once), `GET /api/webhook/` (the caller's endpoints with delivery
 * counts), `DELETE /api/webhook/{id}`, `GET /api/webhook/{id}/deliveries`
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
import { Webhooks } from "../../accounts/Webhooks.ts"
import { decodeBody, idOf, makeGuards, ok, respondApi } from "./Api.ts"
import { Text } from "./Fields.ts"

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

const callerOf = (user: SessionUser) => ({ id: user.id, admin: roleRank(user.role) >= roleRank("admin") })

/** @category routes */
export const WebhookRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const webhooks = yield* Webhooks
  const guards = makeGuards(yield* Sessions)
  const created = decodeBody(NewEndpointBody)

  yield* router.add("GET", "/api/webhook", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.user(request)
      return ok(yield* webhooks.list(callerOf(caller)))
    }).pipe(respondApi))

  yield* router.add("POST", "/api/webhook", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.user(request)
      return ok(yield* webhooks.create(callerOf(caller), yield* created(request)))
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
