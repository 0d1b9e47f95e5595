/**
 * Raising webhook events: one `webhook_outbox` row per subscribed endpoint,
 * written with the statement's own client so it joins the transaction of the
 * change that raised the event (nothing is sent from here; `Webhooks`
 * delivers the outbox). The body is the Standard Webhooks payload
 * `{type, timestamp, data}` (https://www.standardwebhooks.com, "Payload
 * structure"), fixed when the row is written so every attempt sends, and
 * signs, the same bytes under the same `webhook-id`. A disabled endpoint
 * (`webhook_endpoints.enabled` false) is written no event.
 *
 * @since 0.1.0
 */
import { Clock, Effect } from "effect"
import type { SqlClient, SqlError } from "effect/sql"
import { storedBudgets } from "../domain/BudgetPeriod.ts"

/**
 * Every event type: the user's own (`budget.threshold`, `balance.low`,
 * `key.expiring`) and the operator's (`channel.*`, admins only), plus
 * `webhook.test` (the "send test event" button, never subscribed to).
 *
 * @category models
 */
export const USER_EVENTS = ["budget.threshold", "balance.low", "key.expiring"] as const

/** @category models */
export const OPERATOR_EVENTS = ["channel.key_disabled", "channel.unhealthy", "channel.recovered"] as const

/** @category models */
export type WebhookEvent = typeof USER_EVENTS[number] | typeof OPERATOR_EVENTS[number] | "webhook.test"

/** A fresh message id (`msg_` and 32 hex digits), the `webhook-id` every attempt of one row sends. @category ids */
export const messageId = (): string => `msg_${crypto.randomUUID().replaceAll("-", "")}`

/** The body of an event as sent and signed; `at` is the event's time (read from Effect's `Clock`). @category encoding */
export const payloadOf = (type: WebhookEvent, data: Record<string, unknown>, at: Date): string =>
  JSON.stringify({ type, timestamp: at.toISOString(), data })

/**
 * One budget window's spend as the ledger commit moved it: `before` and
 * `after` in quota units.
 *
 * @category models
 */
export interface SpendMove {
  readonly periodId: bigint
  readonly subject: "token" | "user"
  readonly subjectId: bigint
  readonly userId: bigint
  readonly period: string
  readonly periodStart: Date
  readonly periodEnd: Date | null
  readonly before: bigint
  readonly after: bigint
}

/**
 * Writes a `budget.threshold` event for every fraction of a budget (an
 * endpoint's `thresholds`, default 0.5, 0.8 and 1) that `moves` crossed, to
 * each endpoint of the budget's user subscribed to it; at most once per
 * window, fraction and endpoint (`event_key`), however often the commit is
 * re-run. One query when no endpoint subscribes.
 *
 * @category events
 */
export const enqueueBudgetThresholds = (
  sql: SqlClient.SqlClient,
  moves: ReadonlyArray<SpendMove>
): Effect.Effect<void, SqlError.SqlError> =>
  Effect.gen(function* () {
    if (moves.length === 0) return
    const userIds = [...new Set(moves.map((move) => String(move.userId)))]
    const endpoints = yield* sql<{ readonly id: bigint; readonly userId: bigint; readonly thresholds: Array<string> }>`
      SELECT id, user_id AS "userId", thresholds::text[] AS thresholds FROM webhook_endpoints
      WHERE enabled AND 'budget.threshold' = ANY(events) AND user_id = ANY(${userIds}::bigint[])`
    if (endpoints.length === 0) return
    const at = new Date(yield* Clock.currentTimeMillis)
    const owners = yield* sql<{ readonly subject: string; readonly id: bigint; readonly budgets: unknown }>`
      SELECT 'token' AS subject, id, budgets FROM tokens
      WHERE id = ANY(${
      moves.filter((move) => move.subject === "token").map((move) => String(move.subjectId))
    }::bigint[])
      UNION ALL SELECT 'user', id, budgets FROM users
      WHERE id = ANY(${
      moves.filter((move) => move.subject === "user").map((move) => String(move.subjectId))
    }::bigint[])`
    const rows: Array<Record<string, string>> = []
    for (const move of moves) {
      const stored = owners.find((owner) => owner.subject === move.subject && BigInt(owner.id) === move.subjectId)
      const budget = storedBudgets(stored?.budgets).find((entry) => entry.period === move.period)
      if (budget === undefined || budget.amount === 0n) continue
      for (const endpoint of endpoints) {
        if (BigInt(endpoint.userId) !== move.userId) continue
        for (const text of endpoint.thresholds) {
          // Fractions are stored with up to 4 decimals: compare in ten-thousandths, exactly.
          const parts = Math.round(Number(text) * 10_000)
          const mark = (budget.amount * BigInt(parts) + 9_999n) / 10_000n
          if (!(move.before < mark && move.after >= mark)) continue
          rows.push({
            id: messageId(),
            endpoint_id: String(endpoint.id),
            event_key: `budget.threshold:${move.periodId}:${parts}`,
            event_type: "budget.threshold",
            payload: payloadOf("budget.threshold", {
              subject: move.subject,
              [move.subject === "token" ? "token_id" : "user_id"]: Number(move.subjectId),
              period: move.period,
              timezone: budget.timezone,
              threshold: parts / 10_000,
              amount: Number(budget.amount) / 1_000_000,
              spent: Number(move.after) / 1_000_000,
              period_start: move.periodStart.toISOString(),
              resets_at: move.periodEnd === null ? null : move.periodEnd.toISOString()
            }, at)
          })
        }
      }
    }
    const [first, ...rest] = rows
    if (first === undefined) return
    yield* sql`INSERT INTO webhook_outbox ${
      sql.insert([first, ...rest])
    } ON CONFLICT (endpoint_id, event_key) DO NOTHING`
  })

/**
 * Writes an operator event (`channel.*`) to every operator endpoint
 * subscribed to it, once per `key` (`event_key`): call it in the transaction
 * of the change, and only when the change happened (a row updated), so two
 * instances seeing the same failure raise one event.
 *
 * @category events
 */
export const enqueueOperatorEvent = (
  sql: SqlClient.SqlClient,
  type: typeof OPERATOR_EVENTS[number],
  key: string,
  data: Record<string, unknown>
): Effect.Effect<void, SqlError.SqlError> =>
  Effect.flatMap(
    Clock.currentTimeMillis,
    (now) =>
      sql`INSERT INTO webhook_outbox (id, endpoint_id, event_key, event_type, payload)
    SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), e.id, ${`${type}:${key}`}, ${type},
      ${payloadOf(type, data, new Date(now))}
    FROM webhook_endpoints e WHERE e.enabled AND e.operator AND ${type} = ANY(e.events)
    ON CONFLICT (endpoint_id, event_key) DO NOTHING`.pipe(Effect.asVoid)
  )

/**
 * Writes a `key.expiring` event for every enabled key that expires within
 * `withinDays` (default 3) to its owner's endpoints subscribed to it: once
 * per key and expiry time (`event_key`), so running it on every instance
 * and every minute raises each warning once. One statement.
 *
 * @category events
 */
export const enqueueExpiringKeys = (
  sql: SqlClient.SqlClient,
  withinDays = 3
): Effect.Effect<void, SqlError.SqlError> =>
  sql`INSERT INTO webhook_outbox (id, endpoint_id, event_key, event_type, payload)
    SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), e.id,
      'key.expiring:' || t.id || ':' || extract(epoch FROM t.expires_at)::bigint, 'key.expiring',
      json_build_object('type', 'key.expiring', 'timestamp', to_char(now() AT TIME ZONE 'UTC',
          'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'data', json_build_object('token_id', t.id, 'name', t.name,
          'expires_at', to_char(t.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')))::text
    FROM tokens t
      JOIN webhook_endpoints e ON e.user_id = t.user_id AND e.enabled AND 'key.expiring' = ANY(e.events)
    WHERE t.enabled AND t.expires_at > now() AND t.expires_at <= now() + ${withinDays} * interval '1 day'
    ON CONFLICT (endpoint_id, event_key) DO NOTHING`.pipe(Effect.asVoid)

/**
 * Writes a `balance.low` event for every user whose balance a commit's
 * charges (`charges`: user id and amount, quota units) took from at least an
 * endpoint's `balance_below` to under it, to that user's endpoints
 * subscribed to it. Run in the ledger commit after the users' balances were
 * written; once per crossing (`event_key` holds the user's `used_quota`,
 * which only grows). One statement.
 *
 * @category events
 */
export const enqueueLowBalances = (
  sql: SqlClient.SqlClient,
  charges: ReadonlyArray<{ readonly userId: bigint; readonly charged: bigint }>
): Effect.Effect<void, SqlError.SqlError> =>
  charges.length === 0 ? Effect.void : sql.unsafe(
    `WITH charged AS (SELECT u.id, u.quota, u.used_quota, d.charged
       FROM unnest($1::bigint[], $2::bigint[]) AS d(id, charged) JOIN users u ON u.id = d.id)
     ${lowBalanceEvents("charged")}`,
    [charges.map((charge) => String(charge.userId)), charges.map((charge) => String(charge.charged))]
  ).pipe(Effect.asVoid)

/**
 * The `balance.low` insert of `enqueueLowBalances` over `source`, a relation of the charged users after their
 * charge (`id`, `quota`, `used_quota`, `charged`): the ledger's single-statement commit reads it from its users'
 * update (`RETURNING`), a separate statement from the table.
 *
 * @category events
 */
export const lowBalanceEvents = (source: string): string =>
  `INSERT INTO webhook_outbox (id, endpoint_id, event_key, event_type, payload)
    SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), e.id, 'balance.low:' || c.id || ':' || c.used_quota,
      'balance.low',
      json_build_object('type', 'balance.low', 'timestamp', to_char(now() AT TIME ZONE 'UTC',
          'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'data', json_build_object('user_id', c.id, 'balance', c.quota::float8 / 1000000,
          'below', e.balance_below::float8 / 1000000))::text
    FROM ${source} c
    JOIN webhook_endpoints e ON e.user_id = c.id AND e.enabled AND 'balance.low' = ANY(e.events)
      AND e.balance_below IS NOT NULL
    WHERE c.quota < e.balance_below AND c.quota + c.charged >= e.balance_below
    ON CONFLICT (endpoint_id, event_key) DO NOTHING`
