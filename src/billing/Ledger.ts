/**
 * The ledger as the relays and the task store bill through it: one service
 * whose operations take the usage row they write as an argument, so that "a
 * row and its charge commit together" is a signature, not a rule kept in a
 * comment. It composes the parts: the quota leases, holds and the fold
 * (`QuotaLedger`), the usage rows as the fold's outbox (`UsageLog`), and the
 * budget spend a refund hands back (`BudgetRefund`).
 *
 * The road of an answer's bill: `hold` before the call; `book` at the final
 * usage (the charge against the hold and its row in one step); `durable`
 * before the answer's end (one journal append); the fold on the next tick.
 * The road of a task's final bill: `adjust` inside the task store's
 * transaction (the balance change, the budget spend handed back and the
 * adjustment row, all or nothing). Amounts are quota units (micro-USD).
 *
 * @since 0.2.0
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import type { BudgetExceeded, InsufficientQuota, InvalidRequest, LedgerUnavailable } from "../errors/GatewayError.ts"
import type { Principal } from "../services/Auth.ts"
import { refundBudgetSpendWithin } from "./BudgetRefund.ts"
import { type BalanceOwner, type Hold, QuotaLedger } from "./QuotaLedger.ts"
import { UsageLog, type UsageRow } from "./UsageLog.ts"

/** @category services */
export class Ledger extends Context.Service<Ledger, {
  /** `QuotaLedger.reserve`: holds `amount` of the principal's balances and budgets, or fails naming which is short. */
  readonly hold: (
    principal: Principal,
    amount: bigint
  ) => Effect.Effect<Hold, InsufficientQuota | BudgetExceeded | InvalidRequest | LedgerUnavailable>
  /**
   * Charges `cost` against `hold` (`QuotaLedger.settle`: the rest refunded, an excess taken within what remains)
   * and records the usage row `row(charged)` in the very step the charge is booked, so no commit takes one without
   * the other. Without a hold (a request that held nothing) the row is recorded with cost 0. Returns what was
   * charged. Uninterruptible; a hold booked twice charges and records once.
   */
  readonly book: (hold: Hold | undefined, cost: bigint, row: (charged: bigint) => UsageRow) => Effect.Effect<bigint>
  /** Gives `hold` back whole (an extension of a request, or a request that failed): no charge, no row. */
  readonly release: (hold: Hold) => Effect.Effect<void>
  /** Records a row that carries no charge (an attempt that failed before its answer began). */
  readonly record: (row: UsageRow) => void
  /** `UsageLog.durable`: true once every charge and row booked before it is journaled (see there). */
  readonly durable: Effect.Effect<boolean>
  /** `QuotaLedger.withdraw`: takes back a booked charge no journal holds, for an answer withheld whole. */
  readonly withdraw: (hold: Hold, charged: bigint, requestId: string, attempt: number) => boolean
  /**
   * A task's final bill, inside the caller's open transaction: the signed `amount` applied to `owner`'s balances
   * (`QuotaLedger.adjustWithin`: a credit whole, a debit capped at what no lease holds), the budget spend a
   * credit hands back in the windows that held `chargedAt` (`BudgetRefund`), and, when anything was applied, the
   * row `row(applied)` — all committed with whatever the caller writes beside them, or none. Returns what was
   * applied. Fails with a statement's `SqlError`; called with no transaction open, it dies.
   */
  readonly adjust: (
    owner: BalanceOwner,
    amount: bigint,
    chargedAt: Date,
    row: (applied: bigint) => UsageRow
  ) => Effect.Effect<bigint, SqlError.SqlError>
  /** `UsageLog.committedCharge`: what a request was charged, as committed (rows and the sum of their costs). */
  readonly committedCharge: (
    requestId: string
  ) => Effect.Effect<{ readonly rows: number; readonly total: bigint }, SqlError.SqlError>
  /** Folds every charge and row booked so far now (`UsageLog.flush`). */
  readonly flush: Effect.Effect<void>
}>()("sluice/billing/Ledger") {
  /** Over the layer's `QuotaLedger`, `UsageLog` and SQL client. */
  static readonly layer = Layer.effect(
    Ledger,
    Effect.gen(function* () {
      const quota = yield* QuotaLedger
      const usageLog = yield* UsageLog
      const sql = yield* SqlClient.SqlClient
      return Ledger.of({
        hold: quota.reserve,
        book: (hold, cost, row) =>
          hold === undefined
            ? Effect.sync(() => {
              usageLog.record(row(0n))
              return 0n
            })
            : quota.settle(hold, cost, (charged) => usageLog.record(row(charged))),
        release: (hold) => Effect.asVoid(quota.settle(hold, 0n)),
        record: usageLog.record,
        durable: usageLog.durable,
        withdraw: quota.withdraw,
        adjust: (owner, amount, chargedAt, row) =>
          Effect.gen(function* () {
            const applied = yield* quota.adjustWithin(owner, amount)
            yield* refundBudgetSpendWithin(sql, owner, applied, chargedAt)
            if (applied !== 0n) yield* usageLog.writeWithin(row(applied))
            return applied
          }),
        committedCharge: usageLog.committedCharge,
        flush: usageLog.flush
      })
    })
  )
}
