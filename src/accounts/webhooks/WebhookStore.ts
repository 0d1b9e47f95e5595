/**
 * The webhook tables as the webhook service uses them: a user's endpoints
 * (`webhook_endpoints`, with their deliveries counted by status; in pages
 * searched, filtered and sorted as `WebhookListing.ts` says; enabled or
 * disabled), the
 * delivery log and test events (`webhook_outbox`), and the delivery queue:
 * due rows claimed for a minute (`FOR UPDATE SKIP LOCKED`, so instances
 * share it) and each attempt's outcome. A request's statement that cannot
 * run fails with `StorageUnavailable`; the queue's fail with their `SqlError`
 * (the poller logs them and tries again).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { SqlClient, SqlError } from "effect/sql"
import { type ClaimedDelivery, RETRY_HOURS } from "./DeliveryRules.ts"
import type { EndpointFields } from "./EndpointRules.ts"
import { webhookConditions, webhookOrder, type WebhookQuery } from "./WebhookListing.ts"
import { offsetOf, type PageRequest } from "../../domain/Page.ts"
import type { DeliveryRow, EndpointRow } from "./WebhookViews.ts"
import type { StorageUnavailable } from "../../errors/GatewayError.ts"
import { storageFailure } from "../../storage/StorageFailure.ts"

/**
 * The webhook service's SQL.
 *
 * @category models
 */
export interface WebhookStore {
  /** The endpoints of user `userId` by id, or only the one with `id`. */
  readonly endpoints: (userId: bigint, id?: bigint) => Effect.Effect<ReadonlyArray<EndpointRow>, StorageUnavailable>
  /** How many endpoints of user `userId` match `query`. */
  readonly count: (userId: bigint, query: WebhookQuery) => Effect.Effect<number, StorageUnavailable>
  /** One page of user `userId`'s endpoints matching `query`, in its order. */
  readonly page: (
    userId: bigint,
    page: PageRequest,
    query: WebhookQuery
  ) => Effect.Effect<ReadonlyArray<EndpointRow>, StorageUnavailable>
  /** Enables or disables endpoint `id` of `userId` (a disabled one is sent no new event). */
  readonly setEnabled: (userId: bigint, id: bigint, enabled: boolean) => Effect.Effect<void, StorageUnavailable>
  /** Stores an endpoint of `userId` with its `secret`; its id. */
  readonly insertEndpoint: (
    userId: bigint,
    fields: EndpointFields,
    secret: string
  ) => Effect.Effect<bigint, StorageUnavailable>
  /** Deletes endpoint `id` of `userId` (its deliveries go with it). */
  readonly removeEndpoint: (userId: bigint, id: bigint) => Effect.Effect<void, StorageUnavailable>
  /** The latest 100 deliveries of endpoint `id`, newest first. */
  readonly deliveries: (id: bigint) => Effect.Effect<ReadonlyArray<DeliveryRow>, StorageUnavailable>
  /** Queues a `webhook.test` event with `webhook-id` `message` and body `payload` to endpoint `id`. */
  readonly insertTest: (id: bigint, message: string, payload: string) => Effect.Effect<void, StorageUnavailable>
  /**
   * Claims up to 20 due deliveries for a minute (another instance skips them
   * meanwhile), counting the attempt.
   */
  readonly claim: Effect.Effect<ReadonlyArray<ClaimedDelivery>, SqlError.SqlError>
  /** Marks delivery `id` delivered (status 200). */
  readonly delivered: (id: string) => Effect.Effect<void, SqlError.SqlError>
  /**
   * Records a failed attempt of delivery `id`: its HTTP status (`null`: none
   * came back) and error, the status it takes, and the next attempt
   * `backoffSeconds` from now.
   */
  readonly failed: (
    id: string,
    outcome: {
      readonly lastStatus: number | null
      readonly lastError: string
      readonly status: "pending" | "failed"
      readonly backoffSeconds: number
    }
  ) => Effect.Effect<void, SqlError.SqlError>
}

/** The webhook store over `sql`. */
export const makeWebhookStore = (sql: SqlClient.SqlClient): WebhookStore => {
  const columns = sql`e.id, e.url, e.events, e.thresholds::text[] AS thresholds, e.operator,
    e.balance_below AS "balanceBelow", e.enabled, e.created_at AS "createdAt",
    (SELECT count(*) FROM webhook_outbox o WHERE o.endpoint_id = e.id AND o.status = 'pending') AS pending,
    (SELECT count(*) FROM webhook_outbox o WHERE o.endpoint_id = e.id AND o.status = 'delivered') AS delivered,
    (SELECT count(*) FROM webhook_outbox o WHERE o.endpoint_id = e.id AND o.status = 'failed') AS failed`
  return {
    endpoints: (userId, id) =>
      sql<EndpointRow>`
      SELECT ${columns}
      FROM webhook_endpoints e
      WHERE e.user_id = ${userId} ${id === undefined ? sql`` : sql`AND e.id = ${id}`}
      ORDER BY e.id`.pipe(storageFailure("webhooks.endpoints")),

    count: (userId, query) =>
      sql<{ readonly total: bigint }>`SELECT count(*) AS total FROM webhook_endpoints e
      WHERE e.user_id = ${userId} AND ${webhookConditions(sql, query)}`.pipe(
        Effect.map(([row]) => Number(row.total)),
        storageFailure("webhooks.count")
      ),

    page: (userId, page, query) =>
      sql<EndpointRow>`SELECT ${columns} FROM webhook_endpoints e
      WHERE e.user_id = ${userId} AND ${webhookConditions(sql, query)}
      ORDER BY ${webhookOrder(sql, query)} LIMIT ${page.size} OFFSET ${offsetOf(page)}`.pipe(
        storageFailure("webhooks.page")
      ),

    setEnabled: (userId, id, enabled) =>
      sql`UPDATE webhook_endpoints SET enabled = ${enabled} WHERE id = ${id} AND user_id = ${userId}`.pipe(
        Effect.asVoid,
        storageFailure("webhooks.set_enabled")
      ),

    insertEndpoint: (userId, fields, secret) =>
      sql<{ readonly id: bigint }>`
      INSERT INTO webhook_endpoints (user_id, operator, url, events, thresholds, balance_below, secret)
      VALUES (${userId}, ${fields.operator}, ${fields.url}, ${[...fields.events]}::text[],
        ${[...fields.thresholds]}::numeric[], ${fields.balanceBelow}::bigint, ${secret})
      RETURNING id`.pipe(Effect.map(([row]) => BigInt(row.id)), storageFailure("webhooks.insert_endpoint")),

    removeEndpoint: (userId, id) =>
      sql`DELETE FROM webhook_endpoints WHERE id = ${id} AND user_id = ${userId}`.pipe(
        Effect.asVoid,
        storageFailure("webhooks.remove_endpoint")
      ),

    deliveries: (id) =>
      sql<DeliveryRow>`
      SELECT id, event_type AS event, status, attempts, last_status AS "lastStatus", last_error AS "lastError",
        created_at AS "createdAt", delivered_at AS "deliveredAt"
      FROM webhook_outbox WHERE endpoint_id = ${id} ORDER BY created_at DESC, id LIMIT 100`.pipe(
        storageFailure("webhooks.deliveries")
      ),

    insertTest: (id, message, payload) =>
      sql`INSERT INTO webhook_outbox (id, endpoint_id, event_key, event_type, payload)
      VALUES (${message}, ${id}, ${`webhook.test:${message}`}, 'webhook.test', ${payload})`.pipe(
        Effect.asVoid,
        storageFailure("webhooks.insert_test")
      ),

    claim: sql<ClaimedDelivery>`
    UPDATE webhook_outbox o SET next_attempt_at = now() + interval '1 minute', attempts = o.attempts + 1
    FROM webhook_endpoints e
    WHERE e.id = o.endpoint_id AND o.id IN (
      SELECT id FROM webhook_outbox WHERE status = 'pending' AND next_attempt_at <= now()
      ORDER BY next_attempt_at LIMIT 20 FOR UPDATE SKIP LOCKED)
    RETURNING o.id, o.payload, e.url, e.secret, o.attempts,
      o.created_at < now() - ${RETRY_HOURS} * interval '1 hour' AS expired`,

    delivered: (id) =>
      sql`UPDATE webhook_outbox SET status = 'delivered', delivered_at = now(), last_status = 200,
      last_error = NULL WHERE id = ${id}`.pipe(Effect.asVoid),

    failed: (id, outcome) =>
      sql`UPDATE webhook_outbox SET last_status = ${outcome.lastStatus}, last_error = ${outcome.lastError},
      status = ${outcome.status},
      next_attempt_at = now() + ${outcome.backoffSeconds} * interval '1 second'
      WHERE id = ${id}`.pipe(Effect.asVoid)
  }
}
