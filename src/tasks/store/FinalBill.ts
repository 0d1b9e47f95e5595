/**
 * The decisions of a task's final bill (`TaskStore.finish`), pure: what the
 * ending writes on the task row, what the submit was charged as committed
 * (or that its charge is still pending), the adjustment (positive: refunded,
 * negative: charged extra), and the usage-log row that records it with a
 * note a caller can read. The transaction that applies them is
 * `FinishTask.ts`.
 *
 * Amounts are quota units (micro-USD) as bigints.
 *
 * @since 0.1.0
 */
import { Data } from "effect"
import { cleanText, type UsageRow } from "../../billing/UsageLog.ts"
import type { Task, TaskEnd } from "./Task.ts"

/**
 * How long after its submit a task's charge may still be uncommitted (the
 * ledger commits within a second; ten minutes covers a database outage):
 * until then a task cannot end before its charge is seen (10 min).
 *
 * @category constants
 */
export const CHARGE_WAIT_MILLIS = 600_000

/**
 * A task cannot end yet: the charge of its submit is not committed (see
 * `TaskStore.finish`). Nothing was written; try again shortly.
 *
 * @category errors
 */
export class TaskChargePending extends Data.TaggedError("TaskChargePending")<{ readonly task: string }> {}

/**
 * What ending a task writes on its row besides its status: the error code
 * (at most 64 characters) and message (at most 1,000), the private result
 * and the public result as JSON text; null for what `end` does not say.
 *
 * @category final bill
 */
export const endColumns = (end: TaskEnd): {
  readonly errorCode: string | null
  readonly errorMessage: string | null
  readonly result: string | null
  readonly publicResult: string | null
} => ({
  errorCode: end.error === undefined ? null : cleanText(end.error.code, 64),
  errorMessage: end.error === undefined ? null : cleanText(end.error.message, 1000),
  result: end.result === undefined ? null : JSON.stringify(end.result),
  publicResult: end.publicResult === undefined ? null : JSON.stringify(end.publicResult)
})

/**
 * What the submit was charged, as committed: the sum of its accepted usage
 * rows (`logged`), at most `quotaCharged` (the task row's). `undefined` while
 * no row is committed and the submit is younger than `CHARGE_WAIT_MILLIS`
 * (`old` false): the commit is pending, so the task must wait. No row past
 * that: the submit was never charged (abandoned after the task row was
 * written), and nothing is refunded.
 *
 * @category final bill
 */
export const committedCharge = (
  quotaCharged: bigint,
  logged: { readonly rows: number; readonly total: bigint },
  old: boolean
): bigint | undefined => {
  if (logged.rows === 0 && !old) return undefined
  return quotaCharged < logged.total ? quotaCharged : logged.total
}

/**
 * The adjustment that brings a charge of `charged` to the final `cost` (a
 * negative cost counts as 0): positive gives back, negative charges extra.
 *
 * @category final bill
 */
export const adjustmentOf = (charged: bigint, cost: bigint): bigint => charged - (cost < 0n ? 0n : cost)

/**
 * The usage-log row that records an adjustment of `refunded` (as the ledger
 * made it) on `task`: attempt 0 of the submit's request id, its cost the
 * negated adjustment, and a note saying why (`errorCode` is the failed task's,
 * as stored).
 *
 * @category final bill
 */
export const adjustmentRow = (
  task: Task,
  status: TaskEnd["status"],
  errorCode: string | null,
  refunded: bigint
): UsageRow => ({
  requestId: task.requestId,
  attempt: 0,
  userId: task.userId,
  tokenId: task.tokenId,
  channelId: task.channelId,
  model: task.model,
  upstreamModel: task.upstreamModel,
  promptTokens: 0,
  completionTokens: 0,
  cachedTokens: 0,
  reasoningTokens: 0,
  cost: -refunded,
  latencyMs: 0,
  stream: false,
  status: 200,
  error: status === "failed"
    ? `Task ${task.publicId} failed (${errorCode ?? "failed"}): ${refunded} quota units refunded.`
    : refunded > 0n
    ? `Task ${task.publicId} re-priced on its actual length: ${refunded} quota units refunded.`
    : `Task ${task.publicId} re-priced on its actual length: ${-refunded} quota units charged.`
})
