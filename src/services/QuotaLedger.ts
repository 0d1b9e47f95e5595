/**
 * Quota accounting: pre-consume an estimate before the upstream call, settle
 * to the exact cost after it, refund everything on failure. A reservation is a
 * conditional debit (`… SET quota = quota - n WHERE quota >= n`) of both the
 * token's and the user's balance in one transaction, never a read-then-write,
 * so concurrent requests cannot overspend. Amounts are quota units (micro-USD)
 * as bigints, bounded to PostgreSQL BIGINT.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { InsufficientQuota, InvalidRequest } from "../errors/GatewayError.ts"
import type { Principal } from "./Auth.ts"

/** The largest amount a ledger operation accepts (PostgreSQL BIGINT). @category models */
export const MAX_AMOUNT = 9_223_372_036_854_775_807n

/**
 * Quota held for one request. `settled` flips once, so a hold is never
 * settled twice.
 *
 * @category models
 */
export interface Hold {
  readonly tokenId: bigint
  readonly userId: bigint
  readonly limitedToken: boolean
  readonly amount: bigint
  settled: boolean
}

/** @category services */
export class QuotaLedger extends Context.Service<QuotaLedger, {
  /**
   * Debits `amount` from the token (unless unlimited) and the user, or fails
   * with `InsufficientQuota` naming which balance is short. A negative or
   * oversized amount is an `InvalidRequest`.
   */
  readonly reserve: (principal: Principal, amount: bigint) => Effect.Effect<Hold, InsufficientQuota | InvalidRequest>
  /**
   * Charges `cost` against the hold: refunds `amount - cost`, or debits the
   * excess when the cost is higher (never below zero: the excess is capped at
   * what remains). Returns what was charged. Uninterruptible; idempotent.
   * The user's `request_count` counts charged requests: a hold released with
   * cost 0 (a failed request) leaves it alone.
   */
  readonly settle: (hold: Hold, cost: bigint) => Effect.Effect<bigint>
}>()("sluice/services/QuotaLedger") {
  /** SQL-backed. */
  static readonly layer = Layer.effect(
    QuotaLedger,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      const reserve = Effect.fnUntraced(function* (principal: Principal, amount: bigint) {
        if (amount < 0n || amount > MAX_AMOUNT) {
          return yield* new InvalidRequest({ message: `Quota amount out of range: ${amount}`, param: "" })
        }
        const limitedToken = !principal.unlimitedQuota
        const debit = Effect.gen(function* () {
          if (limitedToken) {
            const rows = yield* sql<{ readonly left: bigint }>`
              UPDATE tokens SET remain_quota = remain_quota - ${amount}
              WHERE id = ${principal.tokenId} AND remain_quota >= ${amount}
              RETURNING remain_quota AS "left"`
            if (rows.length === 0) {
              const [row] = yield* sql<{ readonly left: bigint | null }>`
                SELECT remain_quota AS "left" FROM tokens WHERE id = ${principal.tokenId}`
              return yield* new InsufficientQuota({ required: amount, remaining: row?.left ?? 0n, scope: "token" })
            }
          }
          const rows = yield* sql<{ readonly left: bigint }>`
            UPDATE users SET quota = quota - ${amount}
            WHERE id = ${principal.userId} AND quota >= ${amount}
            RETURNING quota AS "left"`
          if (rows.length === 0) {
            const [row] = yield* sql<{ readonly left: bigint }>`SELECT quota AS "left" FROM users
              WHERE id = ${principal.userId}`
            return yield* new InsufficientQuota({ required: amount, remaining: row?.left ?? 0n, scope: "user" })
          }
        })
        yield* amount === 0n ? Effect.void : sql.withTransaction(debit).pipe(Effect.catchTag("SqlError", Effect.die))
        const hold: Hold = {
          tokenId: principal.tokenId,
          userId: principal.userId,
          limitedToken,
          amount,
          settled: false
        }
        return hold
      })

      const settleOnce = Effect.fnUntraced(function* (hold: Hold, requested: bigint) {
        const cost = requested < 0n ? 0n : requested > MAX_AMOUNT ? MAX_AMOUNT : requested
        if (cost <= hold.amount) {
          const refund = hold.amount - cost
          if (refund === 0n && cost === 0n) return 0n
          yield* sql`
            WITH t AS (
              UPDATE tokens SET remain_quota = remain_quota + ${refund}, used_quota = used_quota + ${cost}
              WHERE id = ${hold.tokenId} RETURNING id
            )
            UPDATE users SET quota = quota + ${refund}, used_quota = used_quota + ${cost},
              request_count = request_count + ${cost > 0n ? 1 : 0}
            WHERE id = ${hold.userId}`
          return cost
        }
        // The real cost exceeds the hold: take the excess from what is left, never below zero.
        return yield* sql.withTransaction(Effect.gen(function* () {
          const excess = cost - hold.amount
          const [user] = yield* sql<{ readonly quota: bigint }>`
            SELECT quota FROM users WHERE id = ${hold.userId} FOR UPDATE`
          let available = user?.quota ?? 0n
          if (hold.limitedToken) {
            const [token] = yield* sql<{ readonly left: bigint | null }>`
              SELECT remain_quota AS "left" FROM tokens WHERE id = ${hold.tokenId} FOR UPDATE`
            const left = token?.left ?? 0n
            if (left < available) available = left
          }
          const extra = excess < available ? excess : available
          const charged = hold.amount + extra
          yield* sql`UPDATE tokens SET remain_quota = remain_quota - ${extra}, used_quota = used_quota + ${charged}
            WHERE id = ${hold.tokenId}`
          yield* sql`UPDATE users SET quota = quota - ${extra}, used_quota = used_quota + ${charged},
              request_count = request_count + 1
            WHERE id = ${hold.userId}`
          return charged
        }))
      })

      const settle = (hold: Hold, cost: bigint): Effect.Effect<bigint> =>
        Effect.suspend(() => {
          if (hold.settled) return Effect.succeed(0n)
          hold.settled = true
          return settleOnce(hold, cost).pipe(Effect.orDie)
        }).pipe(Effect.uninterruptible)

      return QuotaLedger.of({ reserve, settle })
    })
  )
}
