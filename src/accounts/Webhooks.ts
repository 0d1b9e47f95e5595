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
import { Webhook } from "standardwebhooks"
import { Forbidden, InvalidRequest, NotFound } from "../errors/GatewayError.ts"
import { safeFetch } from "../upstreams/transport/SafeFetch.ts"
import { enqueueExpiringKeys, messageId, OPERATOR_EVENTS, payloadOf, USER_EVENTS } from "../services/WebhookOutbox.ts"

/** An endpoint as listed: the secret only when made. @category models */
export interface EndpointView {
  readonly id: number
  readonly url: string
  readonly events: ReadonlyArray<string>
  /** The fractions of a budget at which `budget.threshold` fires (default 0.5, 0.8, 1). */
  readonly thresholds: ReadonlyArray<number>
  readonly operator: boolean
  /** USD, for `balance.low`; `null` when not set. */
  readonly balance_below: number | null
  readonly created_at: number
  /** Deliveries by status. */
  readonly deliveries: { readonly pending: number; readonly delivered: number; readonly failed: number }
}

/** One delivery of the log: times in epoch seconds. @category models */
export interface DeliveryView {
  readonly id: string
  readonly event: string
  readonly status: "pending" | "delivered" | "failed"
  readonly attempts: number
  readonly last_status: number | null
  readonly last_error: string | null
  readonly created_at: number
  readonly delivered_at: number | null
}

/** A new endpoint. @category models */
export interface NewEndpoint {
  readonly url: string
  readonly events: ReadonlyArray<string>
  readonly thresholds?: ReadonlyArray<number> | undefined
  /** USD: `balance.low` fires when the user's balance falls under it (required with that event). */
  readonly balance_below?: number | undefined
}

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

/** How long a delivery is retried from its event. */
const RETRY_HOURS = 24

const secondsOf = (date: Date | null) => date === null ? null : Math.floor(new Date(date).getTime() / 1000)

/** A new Standard Webhooks secret: `whsec_` and 24 random bytes in base64. */
const newSecret = () => {
  const bytes = crypto.getRandomValues(new Uint8Array(24))
  return `whsec_${btoa(String.fromCharCode(...bytes))}`
}

/** The caller an endpoint belongs to: its id and whether it is an admin (operator events). @category models */
export interface WebhookCaller {
  readonly id: bigint
  readonly admin: boolean
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
  ) => Effect.Effect<EndpointView & { readonly secret: string }, InvalidRequest | Forbidden>
  readonly list: (caller: WebhookCaller) => Effect.Effect<ReadonlyArray<EndpointView>>
  readonly remove: (caller: WebhookCaller, id: bigint) => Effect.Effect<void, NotFound>
  /** The endpoint's latest 100 deliveries, newest first. */
  readonly deliveries: (caller: WebhookCaller, id: bigint) => Effect.Effect<ReadonlyArray<DeliveryView>, NotFound>
  /** Queues a `webhook.test` event to the endpoint; returns its `webhook-id`. */
  readonly sendTest: (caller: WebhookCaller, id: bigint) => Effect.Effect<string, NotFound>
  /** Attempts every due delivery once now (also run every `pollMillis`). */
  readonly deliverDue: Effect.Effect<void>
}>()("sluice/services/Webhooks") {
  /** SQL-backed; delivers in the background while the layer is open. */
  static readonly layer = (options: WebhookOptions) =>
    Layer.effect(
      Webhooks,
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const timeoutMs = options.timeoutMs ?? 10_000

        const views = (where: "own" | "one", caller: WebhookCaller, id = 0n) =>
          sql<{
            readonly id: bigint
            readonly url: string
            readonly events: Array<string>
            readonly thresholds: Array<string>
            readonly operator: boolean
            readonly balanceBelow: bigint | null
            readonly createdAt: Date
            readonly pending: bigint
            readonly delivered: bigint
            readonly failed: bigint
          }>`
            SELECT e.id, e.url, e.events, e.thresholds::text[] AS thresholds, e.operator, e.balance_below AS "balanceBelow",
              e.created_at AS "createdAt",
              (SELECT count(*) FROM webhook_outbox o WHERE o.endpoint_id = e.id AND o.status = 'pending') AS pending,
              (SELECT count(*) FROM webhook_outbox o WHERE o.endpoint_id = e.id AND o.status = 'delivered')
                AS delivered,
              (SELECT count(*) FROM webhook_outbox o WHERE o.endpoint_id = e.id AND o.status = 'failed') AS failed
            FROM webhook_endpoints e
            WHERE e.user_id = ${caller.id} ${where === "one" ? sql`AND e.id = ${id}` : sql``}
            ORDER BY e.id`.pipe(
            Effect.orDie,
            Effect.map((rows) =>
              rows.map((row): EndpointView => ({
                id: Number(row.id),
                url: row.url,
                events: row.events,
                thresholds: row.thresholds.map(Number),
                operator: row.operator,
                balance_below: row.balanceBelow === null ? null : Number(row.balanceBelow) / 1_000_000,
                created_at: secondsOf(row.createdAt) ?? 0,
                deliveries: {
                  pending: Number(row.pending),
                  delivered: Number(row.delivered),
                  failed: Number(row.failed)
                }
              }))
            )
          )

        const owned = (caller: WebhookCaller, id: bigint) =>
          Effect.flatMap(views("one", caller, id), (rows) =>
            Option.match(Option.fromNullishOr(rows[0]), {
              onNone: () => Effect.fail(new NotFound({ what: "webhook", id: String(id), param: "id" })),
              onSome: Effect.succeed
            }))

        const create = Effect.fn("Webhooks.create")(function* (caller: WebhookCaller, input: NewEndpoint) {
          let url: URL
          try {
            url = new URL(input.url)
          } catch {
            return yield* new InvalidRequest({ message: "url: must be an absolute http or https URL.", param: "url" })
          }
          if (url.protocol !== "http:" && url.protocol !== "https:") {
            return yield* new InvalidRequest({ message: "url: must be an http or https URL.", param: "url" })
          }
          const known: ReadonlyArray<string> = [...USER_EVENTS, ...OPERATOR_EVENTS]
          const unknown = input.events.findIndex((event) => !known.includes(event))
          if (unknown >= 0) {
            return yield* new InvalidRequest({
              message: `events[${unknown}]: must be one of ${known.join(", ")}.`,
              param: `events[${unknown}]`
            })
          }
          const operator = input.events.some((event) => (OPERATOR_EVENTS as ReadonlyArray<string>).includes(event))
          if (operator && !caller.admin) {
            return yield* new Forbidden({ message: "Only an admin may subscribe to the operator's events." })
          }
          if (input.events.includes("balance.low") && input.balance_below === undefined) {
            return yield* new InvalidRequest({
              message: "balance_below: the balance (USD) under which balance.low fires is required with that event.",
              param: "balance_below"
            })
          }
          const balanceBelow = input.balance_below === undefined
            ? null
            : String(Math.round(input.balance_below * 1_000_000))
          const secret = newSecret()
          const thresholds = [...new Set(input.thresholds ?? [0.5, 0.8, 1])].sort().map((value) => value.toFixed(4))
          const [row] = yield* sql<{ readonly id: bigint }>`
            INSERT INTO webhook_endpoints (user_id, operator, url, events, thresholds, balance_below, secret)
            VALUES (${caller.id}, ${operator}, ${url.href}, ${[...new Set(input.events)]}::text[],
              ${thresholds}::numeric[], ${balanceBelow}::bigint, ${secret})
            RETURNING id`.pipe(Effect.orDie)
          const view = yield* owned(caller, BigInt(row.id)).pipe(Effect.orDie)
          return { ...view, secret }
        })

        const list = (caller: WebhookCaller) => views("own", caller)

        const remove = Effect.fn("Webhooks.remove")(function* (caller: WebhookCaller, id: bigint) {
          yield* owned(caller, id)
          yield* sql`DELETE FROM webhook_endpoints WHERE id = ${id} AND user_id = ${caller.id}`.pipe(Effect.orDie)
        })

        const deliveries = Effect.fn("Webhooks.deliveries")(function* (caller: WebhookCaller, id: bigint) {
          yield* owned(caller, id)
          const rows = yield* sql<{
            readonly id: string
            readonly event: string
            readonly status: DeliveryView["status"]
            readonly attempts: number
            readonly lastStatus: number | null
            readonly lastError: string | null
            readonly createdAt: Date
            readonly deliveredAt: Date | null
          }>`
            SELECT id, event_type AS event, status, attempts, last_status AS "lastStatus", last_error AS "lastError",
              created_at AS "createdAt", delivered_at AS "deliveredAt"
            FROM webhook_outbox WHERE endpoint_id = ${id} ORDER BY created_at DESC, id LIMIT 100`.pipe(Effect.orDie)
          return rows.map((row): DeliveryView => ({
            id: row.id,
            event: row.event,
            status: row.status,
            attempts: Number(row.attempts),
            last_status: row.lastStatus === null ? null : Number(row.lastStatus),
            last_error: row.lastError,
            created_at: secondsOf(row.createdAt) ?? 0,
            delivered_at: secondsOf(row.deliveredAt)
          }))
        })

        const sendTest = Effect.fn("Webhooks.sendTest")(function* (caller: WebhookCaller, id: bigint) {
          yield* owned(caller, id)
          const message = messageId()
          const at = new Date(yield* Clock.currentTimeMillis)
          yield* sql`INSERT INTO webhook_outbox (id, endpoint_id, event_key, event_type, payload)
            VALUES (${message}, ${id}, ${`webhook.test:${message}`}, 'webhook.test',
              ${payloadOf("webhook.test", { endpoint_id: Number(id) }, at)})`.pipe(Effect.orDie)
          return message
        })

        /** Claims up to 20 due deliveries for a minute (another instance skips them meanwhile). */
        const claim = sql<{
          readonly id: string
          readonly payload: string
          readonly url: string
          readonly secret: string
          readonly attempts: number
          readonly expired: boolean
        }>`
          UPDATE webhook_outbox o SET next_attempt_at = now() + interval '1 minute', attempts = o.attempts + 1
          FROM webhook_endpoints e
          WHERE e.id = o.endpoint_id AND o.id IN (
            SELECT id FROM webhook_outbox WHERE status = 'pending' AND next_attempt_at <= now()
            ORDER BY next_attempt_at LIMIT 20 FOR UPDATE SKIP LOCKED)
          RETURNING o.id, o.payload, e.url, e.secret, o.attempts,
            o.created_at < now() - ${RETRY_HOURS} * interval '1 hour' AS expired`

        const attempt = (
          row: typeof claim extends Effect.Effect<ReadonlyArray<infer A>, infer _E, infer _R> ? A
            : never
        ) =>
          Effect.gen(function* () {
            const now = new Date(yield* Clock.currentTimeMillis)
            const signature = new Webhook(row.secret).sign(row.id, now, row.payload)
            const result = yield* safeFetch(row.url, {
              maxBytes: 64 * 1024,
              timeoutMs,
              allowHosts: options.allowHosts,
              maxRedirects: 0,
              head: false,
              post: {
                body: row.payload,
                headers: {
                  "content-type": "application/json",
                  "webhook-id": row.id,
                  "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
                  "webhook-signature": signature
                }
              }
            }).pipe(Effect.result)
            if (result._tag === "Success") {
              yield* sql`UPDATE webhook_outbox SET status = 'delivered', delivered_at = now(), last_status = 200,
                last_error = NULL WHERE id = ${row.id}`
              return
            }
            const error = result.failure
            const backoffSeconds = Math.min(2 ** Math.min(Number(row.attempts), 12), 3_600)
            yield* sql`UPDATE webhook_outbox SET last_status = ${error.status ?? null}, last_error = ${error.message},
              status = ${row.expired ? "failed" : "pending"},
              next_attempt_at = now() + ${backoffSeconds} * interval '1 second'
              WHERE id = ${row.id}`
          })

        const deliverDue: Effect.Effect<void> = claim.pipe(
          Effect.flatMap((rows) => Effect.forEach(rows, attempt, { concurrency: 8, discard: true })),
          Effect.catch((error) => Effect.logWarning("Could not deliver webhooks", error.message))
        )

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

        return Webhooks.of({ create, list, remove, deliveries, sendTest, deliverDue })
      })
    )
}
