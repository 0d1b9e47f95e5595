/**
 * `refundBudgetSpendWithin` on PostgreSQL: a refund comes off the budget
 * windows of the key and its user that held the charge's time (yesterday's
 * daily window for a charge made yesterday, not today's), the latest such
 * window per budget, never below zero; nothing moves for another key or
 * user, for a debit, or outside a transaction (it dies), and a rolled-back
 * transaction moves nothing.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { refundBudgetSpendWithin } from "../../src/billing/BudgetRefund.ts"
import { layerPostgres } from "../../src/storage/Database.ts"
import { freshPostgres } from "../support/Gateway.ts"

const DAY = 86_400_000
const at = (text: string) => new Date(text)

Deno.test("budget refund: the windows of the charge's time, per key and user, never below zero", async () => {
  const database = await freshPostgres()
  try {
    await Effect.runPromise(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const owner = (name: string) =>
          Effect.gen(function* () {
            const [user] = yield* sql<{ readonly id: bigint }>`
              INSERT INTO users (username, group_name, quota) VALUES (${name}, 'default', 1000000) RETURNING id`
            const [token] = yield* sql<{ readonly id: bigint }>`
              INSERT INTO tokens (user_id, name, key_hash, key_prefix) VALUES (${user.id}, 'main', ${name}, 'sk-test')
              RETURNING id`
            return { userId: BigInt(user.id), tokenId: BigInt(token.id) }
          })
        const alice = yield* owner("alice")
        const bob = yield* owner("bob")
        const window = (
          who: { userId: bigint; tokenId: bigint },
          subject: "token" | "user",
          period: string,
          start: Date,
          end: Date | null,
          spent: number
        ) =>
          sql<{ readonly id: bigint }>`
            INSERT INTO budget_periods (subject, subject_id, period, period_start, period_end, spent)
            VALUES (${subject}, ${subject === "token" ? who.tokenId : who.userId}, ${period}, ${start}, ${end},
              ${spent}) RETURNING id`.pipe(Effect.map(([row]) => BigInt(row.id)))
        const yesterday = at("2026-03-09T00:00:00Z")
        const today = at("2026-03-10T00:00:00Z")
        const ids = {
          tokenYesterday: yield* window(alice, "token", "day", yesterday, today, 700),
          tokenToday: yield* window(alice, "token", "day", today, new Date(today.getTime() + DAY), 300),
          // The same period in another time zone started later: the latest window started by the charge is the one.
          tokenYesterdayParis: yield* window(
            alice,
            "token",
            "day",
            at("2026-03-08T23:00:00Z"),
            at("2026-03-09T23:00:00Z"),
            50
          ),
          userMonth: yield* window(
            alice,
            "user",
            "month",
            at("2026-03-01T00:00:00Z"),
            at("2026-04-01T00:00:00Z"),
            1000
          ),
          userTotal: yield* window(alice, "user", "total", at("1970-01-01T00:00:00Z"), null, 100),
          bobDay: yield* window(bob, "token", "day", yesterday, today, 700)
        }
        const spent = () =>
          sql<{ readonly id: bigint; readonly spent: bigint }>`SELECT id, spent FROM budget_periods ORDER BY id`.pipe(
            Effect.map((rows) => rows.map((row) => Number(row.spent)))
          )

        // Outside a transaction: a defect, nothing moved.
        const outside = yield* Effect.exit(refundBudgetSpendWithin(sql, alice, 200n, at("2026-03-09T12:00:00Z")))
        strictEqual(Exit.hasDies(outside), true)
        deepStrictEqual(yield* spent(), [700, 300, 50, 1000, 100, 700])

        // A refund of a charge made yesterday at noon: yesterday's windows, this month's, the total; the total
        // is taken to zero, not below.
        const moved = yield* sql.withTransaction(
          refundBudgetSpendWithin(sql, alice, 200n, at("2026-03-09T12:00:00Z"))
        )
        deepStrictEqual(
          [...moved].sort(),
          [ids.tokenYesterday, ids.userMonth, ids.userTotal].sort()
        )
        deepStrictEqual(yield* spent(), [500, 300, 50, 800, 0, 700])

        // A debit or nothing moves nothing.
        yield* sql.withTransaction(refundBudgetSpendWithin(sql, alice, -50n, at("2026-03-10T12:00:00Z")))
        yield* sql.withTransaction(refundBudgetSpendWithin(sql, alice, 0n, at("2026-03-10T12:00:00Z")))
        deepStrictEqual(yield* spent(), [500, 300, 50, 800, 0, 700])

        // A rolled-back transaction moves nothing.
        yield* sql.withTransaction(
          refundBudgetSpendWithin(sql, alice, 100n, at("2026-03-10T12:00:00Z")).pipe(
            Effect.andThen(Effect.fail("rolled back" as const))
          )
        ).pipe(Effect.ignore)
        deepStrictEqual(yield* spent(), [500, 300, 50, 800, 0, 700])

        // Today's charge: today's window only (and the month).
        yield* sql.withTransaction(refundBudgetSpendWithin(sql, alice, 100n, at("2026-03-10T12:00:00Z")))
        deepStrictEqual(yield* spent(), [500, 200, 50, 700, 0, 700])
      }).pipe(Effect.provide(Layer.fresh(layerPostgres(database.url, 2))), Effect.scoped)
    )
  } finally {
    await database.drop()
  }
})
