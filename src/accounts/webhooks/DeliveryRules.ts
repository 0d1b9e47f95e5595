/**
 * How one delivery attempt is sent and what follows it, over plain values:
 * the request signed as the Standard Webhooks specification says
 * (https://www.standardwebhooks.com: `webhook-id`, `webhook-timestamp`,
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, by the
 * `standardwebhooks` package), and after a failure the backoff (2^attempts
 * seconds, at most an hour) and whether the delivery is given up (its event
 * older than `RETRY_HOURS`).
 *
 * @since 0.1.0
 */
import { Webhook } from "standardwebhooks"

/** How long a delivery is retried from its event, in hours. @category constants */
export const RETRY_HOURS = 24

/** A claimed delivery: its `webhook-id`, body, endpoint, attempts so far and whether its event is too old. @category models */
export interface ClaimedDelivery {
  readonly id: string
  readonly payload: string
  readonly url: string
  readonly secret: string
  readonly attempts: number
  readonly expired: boolean
}

/** The headers of an attempt at `now`, signed with the endpoint's secret over the delivery's id and payload. */
export const signedHeaders = (delivery: ClaimedDelivery, now: Date): Record<string, string> => ({
  "content-type": "application/json",
  "webhook-id": delivery.id,
  "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
  "webhook-signature": new Webhook(delivery.secret).sign(delivery.id, now, delivery.payload)
})

/**
 * After a failed attempt: the seconds until the next (2^attempts, at most
 * 3,600) and the status the delivery takes (`failed` once its event is older
 * than `RETRY_HOURS`, else still `pending`).
 */
export const afterFailure = (
  delivery: Pick<ClaimedDelivery, "attempts" | "expired">
): { readonly backoffSeconds: number; readonly status: "pending" | "failed" } => ({
  backoffSeconds: Math.min(2 ** Math.min(Number(delivery.attempts), 12), 3_600),
  status: delivery.expired ? "failed" : "pending"
})
