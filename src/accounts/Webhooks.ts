/**
 * Webhook endpoints and the delivery of their outbox (`WebhookOutbox.ts`
 * writes it). Deliveries are signed as the Standard Webhooks specification
 * says (https://www.standardwebhooks.com: `webhook-id`, `webhook-timestamp`,
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`) by the
 * `standardwebhooks` package, POSTed through the SSRF guard (`safeFetch`: no
 * private address unless `webhook_allow_hosts` trusts the host, no redirect
 * followed), and retried with exponential backoff (2^attempt seconds, at most
 * an hour) for 24 hours from the event, then marked failed. At least once:
 * an attempt claims its row for a minute before sending, so a gateway that
 * dies mid-attempt leaves it to the next one (on any instance); a receiver
 * deduplicates by `webhook-id`, the same on every attempt of one event.
 * Every minute it also writes `key.expiring` events (keys expiring within
 * three days, once per key and expiry).
 *
 * @since 0.1.0
 */
import { Clock, Context, Duration, Effect, Layer, Option, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { Forbidden, InvalidRequest, NotFound, type StorageUnavailable } from "../errors/GatewayError.ts"
import { enqueueExpiringKeys, messageId, payloadOf } from "../services/WebhookOutbox.ts"
import {
  endpointOf,
  isEndpointRefusal,
  type NewEndpoint,
  newSecret,
  type WebhookCaller
} from "./webhooks/EndpointRules.ts"
import type { Page, PageRequest } from "../domain/Page.ts"
import type { WebhookQuery } from "./webhooks/WebhookListing.ts"
import { makeDeliverDue } from "./webhooks/WebhookDelivery.ts"
import { makeWebhookStore } from "./webhooks/WebhookStore.ts"
import { type DeliveryView, deliveryViewOf, type EndpointView, endpointViewOf } from "./webhooks/WebhookViews.ts"

/** An endpoint and a delivery as listed (defined with the rows they are read from, `webhooks/WebhookViews.ts`). */
export type { DeliveryView, EndpointView } from "./webhooks/WebhookViews.ts"

/** The endpoint list's search, filters and sort (defined with their SQL, `webhooks/WebhookListing.ts`). */
export { WEBHOOK_SORTS, type WebhookQuery, type WebhookSort } from "./webhooks/WebhookListing.ts"

/** A new endpoint and whose it is (defined with their rules, `webhooks/EndpointRules.ts`). */
export type { NewEndpoint, WebhookCaller } from "./webhooks/EndpointRules.ts"

/** Delivery settings. @category models */
export interface WebhookOptions {
  /** Host names trusted although they resolve to non-public addresses. */
  readonly allowHosts: ReadonlyArray<string>
  /** How often due deliveries are looked for (default 1,000 ms). */
  readonly pollMillis?: number | undefined
  /** One attempt's time limit (default 10,000 ms). */
  readonly timeoutMs?: number | undefined
  /** How often keys about to expire are looked for (default 60,000 ms). */
  readonly scanMillis?: number | undefined
}

/** @category services */
export class Webhooks extends Context.Service<Webhooks, {
  /**
   * Makes an endpoint for `caller`; returns its view and its secret (shown
   * once). Operator events need an admin (`Forbidden`); an unknown event or
   * a URL that is not http(s) is an `InvalidRequest` naming the field.
   */
  readonly create: (
    caller: WebhookCaller,
    input: NewEndpoint
  ) => Effect.Effect<EndpointView & { readonly secret: string }, InvalidRequest | Forbidden | StorageUnavailable>
  readonly list: (caller: WebhookCaller) => Effect.Effect<ReadonlyArray<EndpointView>, StorageUnavailable>
  /** One page of the caller's endpoints matching `query` (`webhooks/WebhookListing.ts`). */
  readonly search: (
    caller: WebhookCaller,
    query: WebhookQuery,
    page: PageRequest
  ) => Effect.Effect<Page<EndpointView>, StorageUnavailable>
  /** Enables or disables the caller's endpoint `id` (disabled: no new event is written for it); its view. */
  readonly setEnabled: (
    caller: WebhookCaller,
    id: bigint,
    enabled: boolean
  ) => Effect.Effect<EndpointView, NotFound | StorageUnavailable>
  readonly remove: (caller: WebhookCaller, id: bigint) => Effect.Effect<void, NotFound | StorageUnavailable>
  /** The endpoint's latest 100 deliveries, newest first. */
  readonly deliveries: (
    caller: WebhookCaller,
    id: bigint
  ) => Effect.Effect<ReadonlyArray<DeliveryView>, NotFound | StorageUnavailable>
  /** Queues a `webhook.test` event to the endpoint; returns its `webhook-id`. */
  readonly sendTest: (caller: WebhookCaller, id: bigint) => Effect.Effect<string, NotFound | StorageUnavailable>
  /** Attempts every due delivery once now (also run every `pollMillis`). */
  readonly deliverDue: Effect.Effect<void, StorageUnavailable>
}>()("sluice/accounts/Webhooks") {
  /** SQL-backed; delivers in the background while the layer is open. */
  static readonly layer = (options: WebhookOptions) =>
    Layer.effect(
      Webhooks,
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const store = makeWebhookStore(sql)

        const owned = (caller: WebhookCaller, id: bigint) =>
          Effect.flatMap(store.endpoints(caller.id, id), (rows) =>
            Option.match(Option.fromNullishOr(rows[0]), {
              onNone: () => Effect.fail(new NotFound({ what: "webhook", id: String(id), param: "id" })),
              onSome: (row) => Effect.succeed(endpointViewOf(row))
            }))

        const create = Effect.fn("Webhooks.create")(function* (caller: WebhookCaller, input: NewEndpoint) {
          const fields = endpointOf(caller, input)
          if (isEndpointRefusal(fields)) {
            return yield* fields._tag === "forbidden"
              ? new Forbidden({ message: fields.message })
              : new InvalidRequest({ message: fields.message, param: fields.param })
          }
          const secret = newSecret()
          const id = yield* store.insertEndpoint(caller.id, fields, secret)
          // The row was written or checked just before: its absence would be a bug, so a defect.
          const view = yield* owned(caller, id).pipe(Effect.catchTag("NotFound", Effect.die))
          return { ...view, secret }
        })

        const list = (caller: WebhookCaller) =>
          Effect.map(store.endpoints(caller.id), (rows) => rows.map(endpointViewOf))

        const search = Effect.fn("Webhooks.search")(
          function* (caller: WebhookCaller, query: WebhookQuery, page: PageRequest) {
            const total = yield* store.count(caller.id, query)
            const rows = yield* store.page(caller.id, page, query)
            return { items: rows.map(endpointViewOf), total, page: page.page, page_size: page.size }
          }
        )

        const setEnabled = Effect.fn("Webhooks.setEnabled")(
          function* (caller: WebhookCaller, id: bigint, enabled: boolean) {
            yield* owned(caller, id)
            yield* store.setEnabled(caller.id, id, enabled)
            // The row was checked just before: its absence would be a bug, so a defect.
            return yield* owned(caller, id).pipe(Effect.catchTag("NotFound", Effect.die))
          }
        )

        const remove = Effect.fn("Webhooks.remove")(function* (caller: WebhookCaller, id: bigint) {
          yield* owned(caller, id)
          yield* store.removeEndpoint(caller.id, id)
        })

        const deliveries = Effect.fn("Webhooks.deliveries")(function* (caller: WebhookCaller, id: bigint) {
          yield* owned(caller, id)
          return (yield* store.deliveries(id)).map(deliveryViewOf)
        })

        const sendTest = Effect.fn("Webhooks.sendTest")(function* (caller: WebhookCaller, id: bigint) {
          yield* owned(caller, id)
          const message = messageId()
          const at = new Date(yield* Clock.currentTimeMillis)
          yield* store.insertTest(id, message, payloadOf("webhook.test", { endpoint_id: Number(id) }, at))
          return message
        })

        const deliverDue = makeDeliverDue(store, {
          allowHosts: options.allowHosts,
          timeoutMs: options.timeoutMs ?? 10_000
        })

        yield* deliverDue.pipe(
          Effect.repeat(Schedule.spaced(Duration.millis(options.pollMillis ?? 1_000))),
          Effect.forkScoped
        )
        // Keys expiring within three days: looked for every minute (each warning is written once).
        yield* enqueueExpiringKeys(sql).pipe(
          Effect.catch((error) => Effect.logWarning("Could not look for expiring keys", error.message)),
          Effect.repeat(Schedule.spaced(Duration.millis(options.scanMillis ?? 60_000))),
          Effect.forkScoped
        )

        return Webhooks.of({ create, list, search, setEnabled, remove, deliveries, sendTest, deliverDue })
      })
    )
}
