/**
 * Webhook endpoints and their deliveries as `/api/webhooks` shows them, and
 * the rows they are read from: amounts in USD (stored in quota units, 10⁻⁶
 * USD), times in epoch seconds. Pure.
 *
 * @since 0.1.0
 */

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
  /** `disabled`: no new event is written for it (pending deliveries still go out). */
  readonly status: "enabled" | "disabled"
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

/**
 * A `webhook_endpoints` row with its deliveries counted by status
 * (`thresholds` as NUMERIC text, `balanceBelow` in quota units).
 *
 * @category models
 */
export interface EndpointRow {
  readonly id: bigint
  readonly url: string
  readonly events: Array<string>
  readonly thresholds: Array<string>
  readonly operator: boolean
  readonly balanceBelow: bigint | null
  readonly enabled: boolean
  readonly createdAt: Date
  readonly pending: bigint
  readonly delivered: bigint
  readonly failed: bigint
}

/** A `webhook_outbox` row as the delivery log reads it. @category models */
export interface DeliveryRow {
  readonly id: string
  readonly event: string
  readonly status: DeliveryView["status"]
  readonly attempts: number
  readonly lastStatus: number | null
  readonly lastError: string | null
  readonly createdAt: Date
  readonly deliveredAt: Date | null
}

/** A time in whole epoch seconds; `null` stays `null`. @category views */
export const secondsOf = (date: Date | null): number | null =>
  date === null ? null : Math.floor(new Date(date).getTime() / 1000)

/** The endpoint row as listed. @category views */
export const endpointViewOf = (row: EndpointRow): EndpointView => ({
  id: Number(row.id),
  url: row.url,
  events: row.events,
  thresholds: row.thresholds.map(Number),
  operator: row.operator,
  balance_below: row.balanceBelow === null ? null : Number(row.balanceBelow) / 1_000_000,
  status: row.enabled ? "enabled" : "disabled",
  created_at: secondsOf(row.createdAt) ?? 0,
  deliveries: {
    pending: Number(row.pending),
    delivered: Number(row.delivered),
    failed: Number(row.failed)
  }
})

/** The outbox row as the delivery log shows it. @category views */
export const deliveryViewOf = (row: DeliveryRow): DeliveryView => ({
  id: row.id,
  event: row.event,
  status: row.status,
  attempts: Number(row.attempts),
  last_status: row.lastStatus === null ? null : Number(row.lastStatus),
  last_error: row.lastError,
  created_at: secondsOf(row.createdAt) ?? 0,
  delivered_at: secondsOf(row.deliveredAt)
})
