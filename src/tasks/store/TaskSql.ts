/**
 * The task store's statements on the `tasks` table but the final bill's
 * (`FinishTask.ts`): inserting a task, reading it for its owner, a page of a
 * user's tasks, the claims of the poller (`FOR UPDATE SKIP LOCKED` and a lease
 * in `claimed_by`, `claimed_until`, so instances sharing one PostgreSQL never
 * claim one task at once), and what a poll records. Times in these statements
 * are the database's (`now()`); durations are milliseconds. A caller's reads
 * (`selectTask`, `selectOwnPage`) fail with `StorageUnavailable`; the insert
 * and the poller's claims and records keep storage failures as defects (each
 * says why).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { offsetOf, type PageRequest } from "../../domain/Page.ts"
import { NotFound, type StorageUnavailable } from "../../errors/GatewayError.ts"
import type { Advance, NewTask, Task } from "./Task.ts"
import { taskConditions, taskOrder, type TaskQuery } from "./TaskListing.ts"
import { advanceBatchJson, clampedProgress, TASK_COLUMNS, taskOf, type TaskRow } from "./TaskRow.ts"
import { storageFailure } from "../../storage/StorageFailure.ts"

/** A public id worth looking up: what the gateway makes (letters, digits, `._-`), at most 100 characters. */
/**
 * The poller's statements (claims, advances, backoffs) keep a storage failure
 * as a defect: no caller waits on them, and the poller's tick logs the
 * failure's kind with its SQLSTATE (`poller/FailureKind.ts`) and tries again.
 */
const orDiePolling = Effect.orDie

const plausibleId = (publicId: string): boolean => /^[A-Za-z0-9._-]{1,100}$/.test(publicId)

/**
 * Inserts `task` (progress 0); its row id. A failure is a defect: the
 * insert runs inside the accepted attempt, after the vendor took the task, so
 * a typed failure would fail over (a second task upstream) or change the bill.
 *
 * @category statements
 */
export const insertTask = (sql: SqlClient.SqlClient, task: NewTask): Effect.Effect<bigint> =>
  sql<{ readonly id: bigint }>`INSERT INTO tasks (public_id, kind, user_id, token_id, channel_id, key_position,
      upstream_id, model, upstream_model, request, status, progress, request_id, billing, quota_charged, next_poll_at,
      deadline_at)
    VALUES (${task.publicId}, ${task.kind}, ${task.userId}, ${task.tokenId}, ${task.channelId},
      ${task.keyPosition}, ${task.upstreamId}, ${task.model}, ${task.upstreamModel},
      ${JSON.stringify(task.request)}, ${task.status}, 0, ${task.requestId}, ${JSON.stringify(task.billing)},
      ${task.quotaCharged}, ${new Date(task.nextPollAt)}, ${new Date(task.deadlineAt)})
    RETURNING id`.pipe(Effect.map(([row]) => BigInt(row.id)), Effect.orDie)

/**
 * The task `publicId`, of user `userId` when one is given, else whoever owns
 * it. `NotFound` (task) when there is none, and for an id the gateway could
 * not have made (not looked up); `StorageUnavailable` when it cannot be read.
 *
 * @category statements
 */
export const selectTask = (
  sql: SqlClient.SqlClient,
  publicId: string,
  userId: bigint | undefined
): Effect.Effect<Task, NotFound | StorageUnavailable> =>
  (!plausibleId(publicId)
    ? Effect.succeed([])
    : userId === undefined
    ? sql<TaskRow>`SELECT ${sql.literal(TASK_COLUMNS)} FROM tasks WHERE public_id = ${publicId}`.pipe(
      storageFailure("tasks.find")
    )
    : sql<TaskRow>`SELECT ${sql.literal(TASK_COLUMNS)} FROM tasks
        WHERE public_id = ${publicId} AND user_id = ${userId}`.pipe(storageFailure("tasks.find"))).pipe(
      Effect.flatMap((rows) =>
        rows.length === 0
          ? Effect.fail(new NotFound({ what: "task", id: publicId.slice(0, 100) }))
          : Effect.succeed(taskOf(rows[0]))
      )
    )

/**
 * One page of user `userId`'s tasks matching `query` (`TaskListing.ts`;
 * newest first by default), and how many match in all;
 * `StorageUnavailable` when they cannot be read.
 *
 * @category statements
 */
export const selectOwnPage = (
  sql: SqlClient.SqlClient,
  userId: bigint,
  page: PageRequest,
  query: TaskQuery = {}
): Effect.Effect<{ readonly tasks: ReadonlyArray<Task>; readonly total: number }, StorageUnavailable> =>
  Effect.gen(function* () {
    const where = sql`user_id = ${userId} AND ${taskConditions(sql, query)}`
    const [{ total }] = yield* sql<{ readonly total: bigint }>`SELECT count(*) AS total FROM tasks WHERE ${where}`
    const rows = yield* sql<TaskRow>`SELECT ${sql.literal(TASK_COLUMNS)} FROM tasks WHERE ${where}
      ORDER BY ${taskOrder(sql, query)} LIMIT ${page.size} OFFSET ${offsetOf(page)}`
    return { tasks: rows.map(taskOf), total: Number(total) }
  }).pipe(storageFailure("tasks.list"))

/**
 * Claims for `instance`, for `leaseMillis`, up to `limit` unfinished tasks of
 * channel `channelId` whose next poll is due and no live lease holds, the
 * longest due first, skipping rows another transaction holds; counts the poll
 * attempt.
 *
 * @category claims
 */
export const claimDueTasks = (
  sql: SqlClient.SqlClient,
  instance: string,
  channelId: number,
  limit: number,
  leaseMillis: number
): Effect.Effect<ReadonlyArray<Task>> =>
  sql<TaskRow>`UPDATE tasks SET claimed_by = ${instance},
      claimed_until = now() + ${leaseMillis} * interval '1 millisecond',
      poll_attempts = poll_attempts + 1, polled_at = now()
    WHERE id IN (
      SELECT id FROM tasks
      WHERE channel_id = ${channelId} AND status IN ('queued', 'in_progress') AND next_poll_at <= now()
        AND (claimed_until IS NULL OR claimed_until < now())
      ORDER BY next_poll_at LIMIT ${limit}
      FOR UPDATE SKIP LOCKED)
    RETURNING ${sql.literal(TASK_COLUMNS)}`.pipe(Effect.map((rows) => rows.map(taskOf)), orDiePolling)

/**
 * Claims for `instance`, for `leaseMillis`, up to `limit` unfinished tasks
 * past their deadline, whatever their channel, the earliest deadline first.
 *
 * @category claims
 */
export const claimExpiredTasks = (
  sql: SqlClient.SqlClient,
  instance: string,
  limit: number,
  leaseMillis: number
): Effect.Effect<ReadonlyArray<Task>> =>
  sql<TaskRow>`UPDATE tasks SET claimed_by = ${instance},
      claimed_until = now() + ${leaseMillis} * interval '1 millisecond'
    WHERE id IN (
      SELECT id FROM tasks
      WHERE status IN ('queued', 'in_progress') AND deadline_at <= now()
        AND (claimed_until IS NULL OR claimed_until < now())
      ORDER BY deadline_at LIMIT ${limit}
      FOR UPDATE SKIP LOCKED)
    RETURNING ${sql.literal(TASK_COLUMNS)}`.pipe(Effect.map((rows) => rows.map(taskOf)), orDiePolling)

/**
 * Claims for `instance`, for `leaseMillis`, the one task `taskId` when it is
 * unfinished and unclaimed, and its poll is due or (no failed poll pending a
 * backoff) it was last polled, or submitted, at least `minAgeMillis` ago;
 * counts the poll attempt. `undefined` when it was not claimed.
 *
 * @category claims
 */
export const claimTask = (
  sql: SqlClient.SqlClient,
  instance: string,
  taskId: bigint,
  leaseMillis: number,
  minAgeMillis: number
): Effect.Effect<Task | undefined> =>
  sql<TaskRow>`UPDATE tasks SET claimed_by = ${instance},
      claimed_until = now() + ${leaseMillis} * interval '1 millisecond',
      poll_attempts = poll_attempts + 1, polled_at = now()
    WHERE id IN (
      SELECT id FROM tasks
      WHERE id = ${taskId} AND status IN ('queued', 'in_progress')
        AND (next_poll_at <= now() OR (poll_failures = 0
          AND COALESCE(polled_at, created_at) <= now() - ${minAgeMillis} * interval '1 millisecond'))
        AND (claimed_until IS NULL OR claimed_until < now())
      FOR UPDATE SKIP LOCKED)
    RETURNING ${sql.literal(TASK_COLUMNS)}`.pipe(
    Effect.map((rows) => rows.length === 0 ? undefined : taskOf(rows[0])),
    orDiePolling
  )

/**
 * Records a poll that found `task` still running: `state` (progress clamped
 * to 0–99), no failed polls, the next poll `nextPollMillis` away, the claim
 * released. A task already final is left alone.
 *
 * @category records
 */
export const recordAdvance = (
  sql: SqlClient.SqlClient,
  task: Task,
  state: Advance,
  nextPollMillis: number
): Effect.Effect<void> =>
  sql`UPDATE tasks SET status = ${state.status}, progress = ${clampedProgress(state.progress)},
      poll_failures = 0, next_poll_at = now() + ${nextPollMillis} * interval '1 millisecond',
      claimed_until = NULL
    WHERE id = ${task.id} AND NOT settled AND status IN ('queued', 'in_progress')`.pipe(Effect.asVoid, orDiePolling)

/**
 * `recordAdvance` for a batch in one statement (`advanceBatchJson`), all next
 * polled `nextPollMillis` away. Tasks already final are left alone; an empty
 * batch runs no statement.
 *
 * @category records
 */
export const recordAdvances = (
  sql: SqlClient.SqlClient,
  batch: ReadonlyArray<{ readonly task: Task; readonly state: Advance }>,
  nextPollMillis: number
): Effect.Effect<void> =>
  batch.length === 0
    ? Effect.void
    : sql`UPDATE tasks SET status = batch.status, progress = batch.progress, poll_failures = 0,
        next_poll_at = now() + ${nextPollMillis} * interval '1 millisecond', claimed_until = NULL
      FROM jsonb_to_recordset(${advanceBatchJson(batch)}::jsonb) AS batch(id bigint, status text, progress integer)
      WHERE tasks.id = batch.id AND NOT tasks.settled AND tasks.status IN ('queued', 'in_progress')
        AND batch.status IN ('queued', 'in_progress')`.pipe(Effect.asVoid, orDiePolling)

/**
 * Records a failed poll of `task`: counts it, puts the next poll
 * `delayMillis` away and releases the claim. A settled task is left alone.
 *
 * @category records
 */
export const recordBackoff = (sql: SqlClient.SqlClient, task: Task, delayMillis: number): Effect.Effect<void> =>
  sql`UPDATE tasks SET poll_failures = poll_failures + 1,
      next_poll_at = now() + ${delayMillis} * interval '1 millisecond', claimed_until = NULL
    WHERE id = ${task.id} AND NOT settled`.pipe(Effect.asVoid, orDiePolling)
