/**
 * The task store: asynchronous tasks (video generations, async image
 * generations, Midjourney tasks) in the `tasks` table (migrations/0006_tasks.ts). A task is
 * read by its public id for its owner only (anyone else: `NotFound`, the same
 * answer as for an id that does not exist, so ids cannot be probed). Pollers
 * claim due tasks with `FOR UPDATE SKIP LOCKED` and a lease (`claimed_by`,
 * `claimed_until`), so gateway instances sharing one PostgreSQL never poll the
 * same task at once, and a crashed instance's claims lapse with their lease.
 * A claim is released by clearing `claimed_until`; `claimed_by` keeps the
 * name of the instance that claimed the task last.
 *
 * A task ends once (`finish`): its final state and its final bill — a refund
 * on failure or timeout, or the difference after re-pricing on the actual
 * duration — are written in one transaction that starts by flipping
 * `settled` on the task row (`WHERE NOT settled`), so a second instance, a
 * retried poll or a read racing the poller finds nothing to do: the bill is
 * adjusted exactly once. The bill goes through the ledger in that same
 * transaction: `QuotaLedger.adjustWithin` credits (or debits) the user's
 * `quota` and the token's `remain_quota` (unless unlimited) and their
 * `used_quota` — a debit capped at what no instance's quota lease holds —, a
 * credit also returns the budget spend the submit took to the windows it was
 * charged in (`refundBudgetSpendWithin`), and
 * `UsageLog.writeWithin` writes the usage-log row `attempt = 0` of the
 * submit's request id with the signed difference as its cost, so the logged
 * costs keep summing to `used_quota` (QuotaLedger's invariant) at every
 * committed point. A transaction that does not commit writes none of it, and
 * the next `finish` starts over. This module writes no SQL of its own on
 * `users`, `tokens` or `usage_logs`.
 *
 * Amounts are quota units (micro-USD) as bigints; times epoch milliseconds
 * unless named seconds.
 *
 * @since 0.1.0
 */
import { Context, Data, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import type { TaskStatus } from "../canonical/Video.ts"
import { offsetOf, type PageRequest } from "../domain/Page.ts"
import { NotFound } from "../errors/GatewayError.ts"
import { refundBudgetSpendWithin } from "../services/BudgetRefund.ts"
import { QuotaLedger } from "../services/QuotaLedger.ts"
import { cleanText, UsageLog } from "../services/UsageLog.ts"

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

/** What a task makes: a video, async images, or a Midjourney task (`/mj/*`). @category models */
export type TaskKind = "video" | "image" | "midjourney"

/**
 * The prices a task was charged at, kept to re-price it on completion:
 * decimal strings of the fixed-point values (`domain/Pricing.ts`), the
 * seconds or images billed at submit.
 *
 * @category models
 */
export interface TaskBilling {
  readonly ratio: string
  readonly perSecond?: string | undefined
  readonly perImage?: string | undefined
  readonly free: boolean
  /** Seconds billed at submit (video). */
  readonly seconds?: number | undefined
  /** Images billed at submit (image). */
  readonly n?: number | undefined
}

/** What a poll of a running task found: its status and progress (percent, 0–99). @category models */
export interface Advance {
  readonly status: "queued" | "in_progress"
  readonly progress: number
}

/**
 * Where a finished task's bytes are (private: a vendor URL is never shown to
 * a caller) and what the upstream reported of them.
 *
 * @category models
 */
export interface TaskResult {
  readonly url?: string | undefined
  readonly withKey: boolean
  /** Epoch seconds after which the vendor no longer serves the bytes. */
  readonly expiresAt?: number | undefined
  readonly seconds?: number | undefined
  readonly width?: number | undefined
  readonly height?: number | undefined
  readonly fps?: number | undefined
  /** The usage the vendor billed, in its own unit, when it says (passed through to the video object). */
  readonly usage?: number | undefined
}

/** One task as stored. @category models */
export interface Task {
  readonly id: bigint
  readonly publicId: string
  readonly kind: TaskKind
  readonly userId: bigint
  readonly tokenId: bigint
  readonly channelId: number
  readonly keyPosition: number
  /** The upstream's task id: private, never in a response, header or log line. */
  readonly upstreamId: string | null
  readonly model: string
  readonly upstreamModel: string
  /** The request as decoded at submit (for remix and for the public object's `seconds`, `size`). */
  readonly request: Readonly<Record<string, unknown>>
  readonly status: TaskStatus
  readonly progress: number
  readonly result: TaskResult | null
  /** What a caller is shown of a finished image task (`data[]`). */
  readonly publicResult: unknown
  readonly errorCode: string | null
  readonly errorMessage: string | null
  /** The submit's usage-log request id. */
  readonly requestId: string
  readonly billing: TaskBilling
  readonly quotaCharged: bigint
  readonly settled: boolean
  /** Quota units given back by the final adjustment (negative: charged extra). */
  readonly refunded: bigint
  readonly pollFailures: number
  readonly createdAt: number
  readonly completedAt: number | null
  readonly deadlineAt: number
}

/** A task to insert (queued, progress 0). @category models */
export interface NewTask {
  readonly publicId: string
  readonly kind: TaskKind
  readonly userId: bigint
  readonly tokenId: bigint
  readonly channelId: number
  readonly keyPosition: number
  readonly upstreamId: string | null
  readonly model: string
  readonly upstreamModel: string
  readonly request: Readonly<Record<string, unknown>>
  readonly status: TaskStatus
  readonly requestId: string
  readonly billing: TaskBilling
  readonly quotaCharged: bigint
  /** Epoch ms of the first poll. */
  readonly nextPollAt: number
  /** Epoch ms after which the task fails and is refunded. */
  readonly deadlineAt: number
}

/**
 * The task `insert` just stored as row `id` at `createdAt` (epoch ms): what a
 * relay hands on without reading the row back (no progress, result or error
 * yet, nothing refunded).
 *
 * @category constructors
 */
export const insertedTask = (task: NewTask, id: bigint, createdAt: number): Task => ({
  ...task,
  id,
  progress: 0,
  result: null,
  publicResult: null,
  errorCode: null,
  errorMessage: null,
  settled: false,
  refunded: 0n,
  pollFailures: 0,
  createdAt,
  completedAt: null
})

/** How a task ends. @category models */
export interface TaskEnd {
  readonly status: "completed" | "failed"
  readonly result?: TaskResult | undefined
  readonly publicResult?: unknown
  readonly error?: { readonly code: string; readonly message: string } | undefined
  /**
   * The task's final cost in quota units: the difference with what was
   * charged is refunded (or charged, capped at what the balances hold beyond
   * every live quota lease: `QuotaLedger.adjustWithin`).
   */
  readonly cost: bigint
}

/** What `finish` did: whether this call ended the task, and the adjustment it made. @category models */
export interface Finished {
  readonly ended: boolean
  /** Quota units given back (negative: charged extra). */
  readonly refunded: bigint
}

interface Row {
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

const parse = (text: string | null): unknown => {
  if (text === null) return null
  try {
    return JSON.parse(text)
  } catch {
    return null
  }
}

const taskOf = (row: Row): Task => ({
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

/** The columns of `Row`, for every statement that returns tasks. */
const COLUMNS = `id, public_id AS "publicId", kind, user_id AS "userId", token_id AS "tokenId",
  channel_id AS "channelId", key_position AS "keyPosition", upstream_id AS "upstreamId", model,
  upstream_model AS "upstreamModel", request, status, progress, result, public_result AS "publicResult",
  error_code AS "errorCode", error_message AS "errorMessage", request_id AS "requestId", billing,
  quota_charged AS "quotaCharged", settled, refunded, poll_failures AS "pollFailures", created_at AS "createdAt",
  completed_at AS "completedAt", deadline_at AS "deadlineAt"`

/** A public id worth looking up: what the gateway makes (letters, digits, `._-`), at most 100 characters. */
const plausibleId = (publicId: string): boolean => /^[A-Za-z0-9._-]{1,100}$/.test(publicId)

/** @category services */
export class TaskStore extends Context.Service<TaskStore, {
  /** This instance's claim name. */
  readonly instance: string
  /** Inserts a new task; its row id. Storage failures are defects. */
  readonly insert: (task: NewTask) => Effect.Effect<bigint>
  /** The task `publicId` of user `userId`; `NotFound` (task) for any other user's or an unknown id. */
  readonly find: (publicId: string, userId: bigint) => Effect.Effect<Task, NotFound>
  /**
   * The task `publicId`, whoever owns it: only for what an unguessable id may
   * open without a key (a Midjourney task's image). `NotFound` (task) for an
   * unknown id.
   */
  readonly findAnyOwner: (publicId: string) => Effect.Effect<Task, NotFound>
  /**
   * One page of user `userId`'s own tasks, newest first, and how many the
   * user has in all. Storage failures are defects.
   */
  readonly listOwn: (
    userId: bigint,
    page: PageRequest
  ) => Effect.Effect<{ readonly tasks: ReadonlyArray<Task>; readonly total: number }>
  /**
   * Claims up to `limit` due tasks of channel `channelId` (not final, next
   * poll due, not claimed by a live lease) for `leaseMillis`, skipping rows
   * another transaction holds. Counts the poll attempt.
   */
  readonly claimDue: (channelId: number, limit: number, leaseMillis: number) => Effect.Effect<ReadonlyArray<Task>>
  /** Claims up to `limit` unfinished tasks past their deadline, whatever their channel. */
  readonly claimExpired: (limit: number, leaseMillis: number) => Effect.Effect<ReadonlyArray<Task>>
  /**
   * Claims the one task `taskId` when it is unclaimed and its poll is due, or
   * (no failed poll pending a backoff) it was last polled, or submitted, at
   * least `minAgeMillis` ago: a read of a stale task polls it on demand.
   */
  readonly claimOne: (taskId: bigint, leaseMillis: number, minAgeMillis: number) => Effect.Effect<Task | undefined>
  /**
   * Records a poll that found the task still running: status, progress, and
   * the next poll in `nextPollMillis`; releases this instance's claim. A task
   * already final is left alone.
   */
  readonly advance: (task: Task, state: Advance, nextPollMillis: number) => Effect.Effect<void>
  /**
   * `advance` for many tasks in one statement (a poll cycle's batch): each
   * task's status and progress, all next polled in `nextPollMillis`; their
   * claims released. Tasks already final are left alone. Nothing to do for an
   * empty batch.
   */
  readonly advanceMany: (
    batch: ReadonlyArray<{ readonly task: Task; readonly state: Advance }>,
    nextPollMillis: number
  ) => Effect.Effect<void>
  /** Records a failed poll: counts it and puts the next poll `delayMillis` away; releases the claim. */
  readonly backoff: (task: Task, delayMillis: number) => Effect.Effect<void>
  /**
   * Ends the task and makes its final bill, once (see the module doc). The
   * amount adjusted is what the submit's committed usage row says it was
   * charged (at most `quota_charged`): a submit abandoned before its charge
   * (the caller gone after the task row was written) is refunded nothing.
   * Fails with `TaskChargePending` while that row is not committed (within
   * `CHARGE_WAIT_MILLIS` of the submit), or the `SqlError` of a transaction
   * that did not commit; nothing is written then: try again later.
   */
  readonly finish: (task: Task, end: TaskEnd) => Effect.Effect<Finished, SqlError.SqlError | TaskChargePending>
}>()("sluice/services/TaskStore") {
  /**
   * SQL-backed (PGlite or PostgreSQL); bills through the `QuotaLedger` and
   * the `UsageLog`, which must share its `SqlClient` (the final bill is one
   * transaction of the three).
   */
  static readonly layer = Layer.effect(
    TaskStore,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const ledger = yield* QuotaLedger
      const usageLog = yield* UsageLog
      const instance = crypto.randomUUID()
      const columns = sql.literal(COLUMNS)

      const insert = Effect.fn("TaskStore.insert")(function* (task: NewTask) {
        const [row] = yield* sql<
          { readonly id: bigint }
        >`INSERT INTO tasks (public_id, kind, user_id, token_id, channel_id, key_position, upstream_id, model,
            upstream_model, request, status, progress, request_id, billing, quota_charged, next_poll_at, deadline_at)
          VALUES (${task.publicId}, ${task.kind}, ${task.userId}, ${task.tokenId}, ${task.channelId},
            ${task.keyPosition}, ${task.upstreamId}, ${task.model}, ${task.upstreamModel},
            ${JSON.stringify(task.request)}, ${task.status}, 0, ${task.requestId}, ${JSON.stringify(task.billing)},
            ${task.quotaCharged}, ${new Date(task.nextPollAt)}, ${new Date(task.deadlineAt)})
          RETURNING id`
        return BigInt(row.id)
      }, Effect.orDie)

      const find = (publicId: string, userId: bigint): Effect.Effect<Task, NotFound> =>
        (plausibleId(publicId)
          ? sql<Row>`SELECT ${columns} FROM tasks WHERE public_id = ${publicId} AND user_id = ${userId}`.pipe(
            Effect.orDie
          )
          : Effect.succeed([])).pipe(
            Effect.flatMap((rows) =>
              rows.length === 0
                ? Effect.fail(new NotFound({ what: "task", id: publicId.slice(0, 100) }))
                : Effect.succeed(taskOf(rows[0]))
            )
          )

      const findAnyOwner = (publicId: string): Effect.Effect<Task, NotFound> =>
        (plausibleId(publicId)
          ? sql<Row>`SELECT ${columns} FROM tasks WHERE public_id = ${publicId}`.pipe(Effect.orDie)
          : Effect.succeed([])).pipe(
            Effect.flatMap((rows) =>
              rows.length === 0
                ? Effect.fail(new NotFound({ what: "task", id: publicId.slice(0, 100) }))
                : Effect.succeed(taskOf(rows[0]))
            )
          )

      const listOwn = (userId: bigint, page: PageRequest) =>
        Effect.gen(function* () {
          const [{ total }] = yield* sql<{ readonly total: bigint }>`SELECT count(*) AS total FROM tasks
            WHERE user_id = ${userId}`
          const rows = yield* sql<Row>`SELECT ${columns} FROM tasks WHERE user_id = ${userId}
            ORDER BY created_at DESC, id DESC LIMIT ${page.size} OFFSET ${offsetOf(page)}`
          return { tasks: rows.map(taskOf), total: Number(total) }
        }).pipe(Effect.orDie)

      const claimDue = (channelId: number, limit: number, leaseMillis: number) =>
        sql<
          Row
        >`UPDATE tasks SET claimed_by = ${instance}, claimed_until = now() + ${leaseMillis} * interval '1 millisecond',
            poll_attempts = poll_attempts + 1, polled_at = now()
          WHERE id IN (
            SELECT id FROM tasks
            WHERE channel_id = ${channelId} AND status IN ('queued', 'in_progress') AND next_poll_at <= now()
              AND (claimed_until IS NULL OR claimed_until < now())
            ORDER BY next_poll_at LIMIT ${limit}
            FOR UPDATE SKIP LOCKED)
          RETURNING ${columns}`.pipe(Effect.map((rows) => rows.map(taskOf)), Effect.orDie)

      const claimExpired = (limit: number, leaseMillis: number) =>
        sql<
          Row
        >`UPDATE tasks SET claimed_by = ${instance}, claimed_until = now() + ${leaseMillis} * interval '1 millisecond'
          WHERE id IN (
            SELECT id FROM tasks
            WHERE status IN ('queued', 'in_progress') AND deadline_at <= now()
              AND (claimed_until IS NULL OR claimed_until < now())
            ORDER BY deadline_at LIMIT ${limit}
            FOR UPDATE SKIP LOCKED)
          RETURNING ${columns}`.pipe(Effect.map((rows) => rows.map(taskOf)), Effect.orDie)

      const claimOne = (taskId: bigint, leaseMillis: number, minAgeMillis: number) =>
        sql<
          Row
        >`UPDATE tasks SET claimed_by = ${instance}, claimed_until = now() + ${leaseMillis} * interval '1 millisecond',
            poll_attempts = poll_attempts + 1, polled_at = now()
          WHERE id IN (
            SELECT id FROM tasks
            WHERE id = ${taskId} AND status IN ('queued', 'in_progress')
              AND (next_poll_at <= now() OR (poll_failures = 0
                AND COALESCE(polled_at, created_at) <= now() - ${minAgeMillis} * interval '1 millisecond'))
              AND (claimed_until IS NULL OR claimed_until < now())
            FOR UPDATE SKIP LOCKED)
          RETURNING ${columns}`.pipe(
          Effect.map((rows) => rows.length === 0 ? undefined : taskOf(rows[0])),
          Effect.orDie
        )

      const advance = (
        task: Task,
        state: { readonly status: "queued" | "in_progress"; readonly progress: number },
        nextPollMillis: number
      ) =>
        sql`UPDATE tasks SET status = ${state.status}, progress = ${Math.max(0, Math.min(99, state.progress))},
            poll_failures = 0, next_poll_at = now() + ${nextPollMillis} * interval '1 millisecond',
            claimed_until = NULL
          WHERE id = ${task.id} AND NOT settled AND status IN ('queued', 'in_progress')`.pipe(
          Effect.asVoid,
          Effect.orDie
        )

      const advanceMany = (
        batch: ReadonlyArray<{ readonly task: Task; readonly state: Advance }>,
        nextPollMillis: number
      ) => {
        if (batch.length === 0) return Effect.void
        // One parameter, the batch as JSON rows, so the statement is the same for any batch size.
        const rows = JSON.stringify(batch.map(({ task, state }) => ({
          id: task.id.toString(),
          status: state.status,
          progress: Math.max(0, Math.min(99, Math.round(state.progress)))
        })))
        return sql`UPDATE tasks SET status = batch.status, progress = batch.progress, poll_failures = 0,
            next_poll_at = now() + ${nextPollMillis} * interval '1 millisecond', claimed_until = NULL
          FROM jsonb_to_recordset(${rows}::jsonb) AS batch(id bigint, status text, progress integer)
          WHERE tasks.id = batch.id AND NOT tasks.settled AND tasks.status IN ('queued', 'in_progress')
            AND batch.status IN ('queued', 'in_progress')`.pipe(Effect.asVoid, Effect.orDie)
      }

      const backoff = (task: Task, delayMillis: number) =>
        sql`UPDATE tasks SET poll_failures = poll_failures + 1,
            next_poll_at = now() + ${delayMillis} * interval '1 millisecond', claimed_until = NULL
          WHERE id = ${task.id} AND NOT settled`.pipe(Effect.asVoid, Effect.orDie)

      const finish = Effect.fn("TaskStore.finish")(function* (task: Task, end: TaskEnd) {
        const errorCode = end.error === undefined ? null : cleanText(end.error.code, 64)
        const errorMessage = end.error === undefined ? null : cleanText(end.error.message, 1000)
        const result = end.result === undefined ? null : JSON.stringify(end.result)
        const publicResult = end.publicResult === undefined ? null : JSON.stringify(end.publicResult)
        return yield* sql.withTransaction(Effect.gen(function* () {
          // The guard: only the first transaction to flip `settled` goes on; a concurrent one waits on the row
          // lock, then finds it flipped and ends here.
          const [row] = yield* sql<{ readonly charged: bigint; readonly old: boolean }>`
            UPDATE tasks SET status = ${end.status}, progress = 100, result = ${result},
              public_result = ${publicResult}, error_code = ${errorCode}, error_message = ${errorMessage},
              completed_at = now(), settled = TRUE, claimed_until = NULL
            WHERE id = ${task.id} AND NOT settled
            RETURNING quota_charged AS charged,
              created_at < now() - ${CHARGE_WAIT_MILLIS} * interval '1 millisecond' AS old`
          if (row === undefined) return { ended: false, refunded: 0n }
          // What the submit was charged, as committed: its settled usage rows (written with the charge in one
          // ledger commit; a failed attempt's row carries its error). None yet: the commit is pending (this or
          // another instance), so wait; none after `CHARGE_WAIT_MILLIS`: the submit was never charged (abandoned
          // after the task row was written).
          const logged = yield* usageLog.committedCharge(task.requestId)
          if (logged.rows === 0 && !row.old) return yield* new TaskChargePending({ task: task.publicId })
          const charged = BigInt(row.charged) < logged.total ? BigInt(row.charged) : logged.total
          const cost = end.cost < 0n ? 0n : end.cost
          // The balance change and its usage row in this transaction, with the flip above: all or nothing.
          const refunded = yield* ledger.adjustWithin(task, charged - cost)
          // A refund hands back the budget spend the submit took too, in its windows (this transaction as well).
          yield* refundBudgetSpendWithin(sql, task, refunded, new Date(task.createdAt))
          if (refunded !== 0n) {
            yield* sql`UPDATE tasks SET refunded = ${refunded}, quota_charged = quota_charged - ${refunded}
              WHERE id = ${task.id}`
            const note = end.status === "failed"
              ? `Task ${task.publicId} failed (${errorCode ?? "failed"}): ${refunded} quota units refunded.`
              : refunded > 0n
              ? `Task ${task.publicId} re-priced on its actual length: ${refunded} quota units refunded.`
              : `Task ${task.publicId} re-priced on its actual length: ${-refunded} quota units charged.`
            yield* usageLog.writeWithin({
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
              error: note
            })
          }
          return { ended: true, refunded }
        }))
      })

      return TaskStore.of({
        instance,
        insert,
        find,
        findAnyOwner,
        listOwn,
        claimDue,
        claimExpired,
        claimOne,
        advance,
        advanceMany,
        backoff,
        finish
      })
    })
  )
}
