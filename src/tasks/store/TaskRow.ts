/**
 * A `tasks` row and a `Task`, both ways: the columns every statement that
 * returns tasks selects (`TASK_COLUMNS`), the row they arrive as (`TaskRow`),
 * the task it maps to (`taskOf`), and what a poll's record writes back
 * (`clampedProgress`, `advanceBatchJson`). Pure.
 *
 * @since 0.1.0
 */
import type { TaskStatus } from "../../canonical/Video.ts"
import type { Advance, Task, TaskBilling, TaskKind, TaskResult } from "./Task.ts"

/**
 * One `tasks` row as `TASK_COLUMNS` selects it: BIGINT columns as bigints,
 * the JSON columns (`request`, `result`, `public_result`, `billing`) as their
 * text, times as `Date`s.
 *
 * @category models
 */
export interface TaskRow {
  readonly id: bigint
  readonly publicId: string
  readonly kind: TaskKind
  readonly userId: bigint
  readonly tokenId: bigint
  readonly channelId: bigint
  readonly keyPosition: number
  readonly upstreamId: string | null
  readonly model: string
  readonly upstreamModel: string
  readonly request: string
  readonly status: TaskStatus
  readonly progress: number
  readonly result: string | null
  readonly publicResult: string | null
  readonly errorCode: string | null
  readonly errorMessage: string | null
  readonly requestId: string
  readonly billing: string
  readonly quotaCharged: bigint
  readonly settled: boolean
  readonly refunded: bigint
  readonly pollFailures: number
  readonly createdAt: Date
  readonly completedAt: Date | null
  readonly deadlineAt: Date
}

/**
 * The columns of `TaskRow`, for every statement that returns tasks (a
 * literal: no parameters).
 *
 * @category sql
 */
export const TASK_COLUMNS = `id, public_id AS "publicId", kind, user_id AS "userId", token_id AS "tokenId",
  channel_id AS "channelId", key_position AS "keyPosition", upstream_id AS "upstreamId", model,
  upstream_model AS "upstreamModel", request, status, progress, result, public_result AS "publicResult",
  error_code AS "errorCode", error_message AS "errorMessage", request_id AS "requestId", billing,
  quota_charged AS "quotaCharged", settled, refunded, poll_failures AS "pollFailures", created_at AS "createdAt",
  completed_at AS "completedAt", deadline_at AS "deadlineAt"`

/** The JSON in `text`; null for SQL NULL or text that is not JSON. */
const parse = (text: string | null): unknown => {
  if (text === null) return null
  try {
    return JSON.parse(text)
  } catch {
    return null
  }
}

/**
 * The task stored as `row`. A JSON column that does not parse reads as null;
 * then the request is `{}` and the billing free at ratio 0. Times become
 * epoch milliseconds.
 *
 * @category mapping
 */
export const taskOf = (row: TaskRow): Task => ({
  id: BigInt(row.id),
  publicId: row.publicId,
  kind: row.kind,
  userId: BigInt(row.userId),
  tokenId: BigInt(row.tokenId),
  channelId: Number(row.channelId),
  keyPosition: row.keyPosition,
  upstreamId: row.upstreamId,
  model: row.model,
  upstreamModel: row.upstreamModel,
  request: (parse(row.request) ?? {}) as Record<string, unknown>,
  status: row.status,
  progress: row.progress,
  result: parse(row.result) as TaskResult | null,
  publicResult: parse(row.publicResult),
  errorCode: row.errorCode,
  errorMessage: row.errorMessage,
  requestId: row.requestId,
  billing: (parse(row.billing) ?? { ratio: "0", free: true }) as TaskBilling,
  quotaCharged: BigInt(row.quotaCharged),
  settled: row.settled,
  refunded: BigInt(row.refunded),
  pollFailures: row.pollFailures,
  createdAt: new Date(row.createdAt).getTime(),
  completedAt: row.completedAt === null ? null : new Date(row.completedAt).getTime(),
  deadlineAt: new Date(row.deadlineAt).getTime()
})

/**
 * The progress a running task is stored with: percent within 0–99 (100 is
 * for a task that ended).
 *
 * @category mapping
 */
export const clampedProgress = (progress: number): number => Math.max(0, Math.min(99, progress))

/**
 * A poll cycle's batch of running tasks as the one JSON parameter of
 * `recordAdvances` (`[{id, status, progress}]`, the id as a decimal string,
 * the progress rounded and clamped), so the statement is the same for any
 * batch size.
 *
 * @category mapping
 */
export const advanceBatchJson = (batch: ReadonlyArray<{ readonly task: Task; readonly state: Advance }>): string =>
  JSON.stringify(batch.map(({ task, state }) => ({
    id: task.id.toString(),
    status: state.status,
    progress: clampedProgress(Math.round(state.progress))
  })))
