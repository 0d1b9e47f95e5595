/**
 * The batch store's statements on `batches` and `batch_lines` (migrations/0019_batches.ts): inserting a batch with
 * its lines, reading and listing a user's batches with their line counts, the claims of the runner (`FOR UPDATE
 * SKIP LOCKED` and a lease in `claimed_by`, `claimed_until`, so instances sharing one PostgreSQL never claim one
 * line at once, and a dead instance's lines are claimed again once its lease ran out), a line's result, and the
 * end of a batch. Times are the database's (`now()`); durations are milliseconds. What a caller's request runs (the
 * create, the reads and lists, a cancel or delete, the results) fails with `StorageUnavailable` when the database
 * cannot be reached (503 with `Retry-After` at the route); the runner's claims and records keep storage failures as
 * defects (`Effect.orDie`): no caller waits on them, and the runner's poll logs the failure and tries again.
 *
 * @since 0.4.0
 */
import { Effect } from "effect"
import type { SqlClient, SqlError } from "effect/sql"
import { NotFound, type StorageUnavailable } from "../errors/GatewayError.ts"
import { storageFailure } from "../storage/StorageFailure.ts"
import {
  type Batch,
  type BatchApi,
  type BatchStatus,
  type BatchView,
  type ClaimedLine,
  type FinishedLine,
  type LineCounts,
  type LineState,
  noLines
} from "./Batch.ts"

/** A batch id worth looking up: what the gateway makes (letters, digits, `_`), at most 100 characters. */
const plausibleId = (publicId: string): boolean => /^[A-Za-z0-9_]{1,100}$/.test(publicId)

const BATCH_COLUMNS = `id, public_id AS "publicId", api, user_id AS "userId", token_id AS "tokenId",
  key_hash AS "keyHash", client_address AS "clientAddress", endpoint, status, line_count AS "lineCount",
  input_file_id AS "inputFileId", output_file_id AS "outputFileId", error_file_id AS "errorFileId", metadata,
  errors, created_at AS "createdAt", in_progress_at AS "inProgressAt", expires_at AS "expiresAt",
  cancel_initiated_at AS "cancelInitiatedAt", finalizing_at AS "finalizingAt", ended_at AS "endedAt",
  archived_at AS "archivedAt"`

interface BatchRow extends Omit<Batch, "metadata" | "errors" | "id" | "userId" | "tokenId"> {
  readonly id: bigint | number | string
  readonly userId: bigint | number | string
  readonly tokenId: bigint | number | string
  readonly metadata: string | null
  readonly errors: string | null
}

const dateOf = (value: Date | string | null): Date | null => value === null ? null : new Date(value)

const batchOf = (row: BatchRow): Batch => ({
  ...row,
  id: BigInt(row.id),
  userId: BigInt(row.userId),
  tokenId: BigInt(row.tokenId),
  lineCount: Number(row.lineCount),
  metadata: row.metadata === null ? null : JSON.parse(row.metadata),
  errors: row.errors === null ? null : JSON.parse(row.errors),
  createdAt: new Date(row.createdAt),
  expiresAt: new Date(row.expiresAt),
  inProgressAt: dateOf(row.inProgressAt),
  cancelInitiatedAt: dateOf(row.cancelInitiatedAt),
  finalizingAt: dateOf(row.finalizingAt),
  endedAt: dateOf(row.endedAt),
  archivedAt: dateOf(row.archivedAt)
})

/** A batch to insert. @category models */
export interface NewBatch {
  readonly publicId: string
  readonly api: BatchApi
  readonly userId: bigint
  readonly tokenId: bigint
  readonly keyHash: string
  readonly clientAddress: string | undefined
  readonly endpoint: string
  /** `in_progress` (its lines run) or `failed` (validation failed: no lines). */
  readonly status: BatchStatus
  readonly inputFileId?: string | undefined
  readonly metadata?: unknown
  readonly errors?: unknown
  readonly windowMillis: number
}

/** Lines per INSERT statement. */
const LINES_PER_INSERT = 1000

/**
 * Inserts `batch` and its `lines` (JSON texts, in input order) in one transaction; the stored batch.
 *
 * @category statements
 */
export const insertBatch = (
  sql: SqlClient.SqlClient,
  batch: NewBatch,
  lines: ReadonlyArray<string>
): Effect.Effect<Batch, StorageUnavailable> =>
  sql.withTransaction(Effect.gen(function* () {
    const [row] = yield* sql<BatchRow>`INSERT INTO batches (public_id, api, user_id, token_id, key_hash,
        client_address, endpoint, status, line_count, input_file_id, metadata, errors, expires_at, in_progress_at,
        ended_at)
      VALUES (${batch.publicId}, ${batch.api}, ${batch.userId}, ${batch.tokenId}, ${batch.keyHash},
        ${batch.clientAddress ?? null}, ${batch.endpoint}, ${batch.status}, ${lines.length},
        ${batch.inputFileId ?? null},
        ${batch.metadata === undefined || batch.metadata === null ? null : JSON.stringify(batch.metadata)},
        ${batch.errors === undefined || batch.errors === null ? null : JSON.stringify(batch.errors)},
        now() + ${batch.windowMillis} * interval '1 millisecond',
        CASE WHEN ${batch.status} = 'in_progress' THEN now() END, CASE WHEN ${batch.status} = 'failed' THEN now() END)
      RETURNING ${sql.literal(BATCH_COLUMNS)}`
    const stored = batchOf(row)
    for (let start = 0; start < lines.length; start += LINES_PER_INSERT) {
      // One JSON array of texts per statement; each text is `JSON.stringify` output, so it holds no NUL or lone
      // surrogate (both escaped), which TEXT and the JSON parser take.
      const chunk = JSON.stringify(lines.slice(start, start + LINES_PER_INSERT))
      yield* sql`INSERT INTO batch_lines (batch_id, line_index, line)
        SELECT ${stored.id}, ${start} + (ordinality - 1)::int, value
        FROM jsonb_array_elements_text(${chunk}::jsonb) WITH ORDINALITY`
    }
    return stored
  })).pipe(storageFailure("batches.insert"))

/** Counts of lines by state for each of `ids`. */
const countsOf = (
  sql: SqlClient.SqlClient,
  ids: ReadonlyArray<bigint>
): Effect.Effect<Map<bigint, LineCounts>, SqlError.SqlError> =>
  ids.length === 0 ? Effect.succeed(new Map()) : sql<
    { readonly batchId: bigint | string; readonly state: LineState; readonly n: bigint | number | string }
  >`SELECT batch_id AS "batchId", state, count(*) AS n FROM batch_lines
      WHERE batch_id IN ${sql.in(ids.map(String))} GROUP BY batch_id, state`.pipe(
    Effect.map((rows) => {
      const counts = new Map<bigint, Record<LineState, number>>()
      for (const row of rows) {
        const id = BigInt(row.batchId)
        const entry = counts.get(id) ?? { ...noLines }
        entry[row.state] = Number(row.n)
        counts.set(id, entry)
      }
      return counts as Map<bigint, LineCounts>
    })
  )

const withCounts = (sql: SqlClient.SqlClient, batches: ReadonlyArray<Batch>) =>
  Effect.map(
    countsOf(sql, batches.map((batch) => batch.id)),
    (counts) => batches.map((batch): BatchView => ({ batch, counts: counts.get(batch.id) ?? noLines }))
  )

/**
 * The batch `publicId` of `api` owned by user `userId`, with its counts. `NotFound` (batch) when there is none,
 * when another user owns it (the same answer), and for an id the gateway could not have made.
 *
 * @category statements
 */
export const selectBatch = (
  sql: SqlClient.SqlClient,
  api: BatchApi,
  publicId: string,
  userId: bigint
): Effect.Effect<BatchView, NotFound | StorageUnavailable> =>
  (!plausibleId(publicId) ? Effect.succeed([]) : sql<BatchRow>`SELECT ${sql.literal(BATCH_COLUMNS)} FROM batches
      WHERE public_id = ${publicId} AND user_id = ${userId} AND api = ${api}`.pipe(
    Effect.flatMap((rows) => withCounts(sql, rows.map(batchOf))),
    storageFailure("batches.get")
  )).pipe(
    Effect.flatMap((views) =>
      views.length === 0
        ? Effect.fail(new NotFound({ what: "batch", id: publicId.slice(0, 100) }))
        : Effect.succeed(views[0])
    )
  )

/** Where a page of batches starts: after (older than) or before (newer than) a batch id, or the newest. @category models */
export interface BatchCursor {
  readonly afterId?: string | undefined
  readonly beforeId?: string | undefined
  readonly limit: number
}

/**
 * A page of user `userId`'s batches of `api`, newest first: at most `limit`, and whether more lie beyond it in
 * the direction read. A cursor id that is not the user's reads as the end of the list.
 *
 * @category statements
 */
export const selectBatchPage = (
  sql: SqlClient.SqlClient,
  api: BatchApi,
  userId: bigint,
  cursor: BatchCursor
): Effect.Effect<{ readonly views: ReadonlyArray<BatchView>; readonly hasMore: boolean }, StorageUnavailable> =>
  Effect.gen(function* () {
    const take = cursor.limit + 1
    const anchor = cursor.beforeId ?? cursor.afterId
    const rows = anchor === undefined
      ? yield* sql<BatchRow>`SELECT ${sql.literal(BATCH_COLUMNS)} FROM batches
          WHERE user_id = ${userId} AND api = ${api} ORDER BY id DESC LIMIT ${take}`
      : !plausibleId(anchor)
      ? []
      : cursor.beforeId !== undefined
      ? (yield* sql<BatchRow>`SELECT ${sql.literal(BATCH_COLUMNS)} FROM batches
          WHERE user_id = ${userId} AND api = ${api}
            AND id > (SELECT id FROM batches WHERE public_id = ${anchor} AND user_id = ${userId})
          ORDER BY id ASC LIMIT ${take}`)
      : yield* sql<BatchRow>`SELECT ${sql.literal(BATCH_COLUMNS)} FROM batches
          WHERE user_id = ${userId} AND api = ${api}
            AND id < (SELECT id FROM batches WHERE public_id = ${anchor} AND user_id = ${userId})
          ORDER BY id DESC LIMIT ${take}`
    const hasMore = rows.length > cursor.limit
    const page = rows.slice(0, cursor.limit).map(batchOf)
    const ordered = cursor.beforeId !== undefined ? page.reverse() : page
    return { views: yield* withCounts(sql, ordered), hasMore }
  }).pipe(storageFailure("batches.list"))

/**
 * Asks batch `batchId` to stop: `in_progress` becomes `cancelling` (its `cancel_initiated_at` now). A batch in
 * another state is left as it is.
 *
 * @category statements
 */
export const requestCancel = (sql: SqlClient.SqlClient, batchId: bigint): Effect.Effect<void, StorageUnavailable> =>
  sql`UPDATE batches SET status = 'cancelling', cancel_initiated_at = now()
    WHERE id = ${batchId} AND status = 'in_progress' AND ended_at IS NULL`.pipe(
    Effect.asVoid,
    storageFailure("batches.cancel")
  )

/**
 * Deletes ended batch `batchId` with its lines; `false` when it has not ended (nothing deleted).
 *
 * @category statements
 */
export const deleteEnded = (sql: SqlClient.SqlClient, batchId: bigint): Effect.Effect<boolean, StorageUnavailable> =>
  sql<{ readonly id: unknown }>`DELETE FROM batches WHERE id = ${batchId} AND ended_at IS NOT NULL RETURNING id`.pipe(
    Effect.map((rows) => rows.length > 0),
    storageFailure("batches.delete")
  )

/**
 * The batches whose lines may run or end: not ended, `in_progress`, `cancelling` or a `finalizing` whose
 * finalizer stopped for longer than `staleMillis`, oldest first.
 *
 * @category claims
 */
export const selectActive = (
  sql: SqlClient.SqlClient,
  limit: number,
  staleMillis: number
): Effect.Effect<ReadonlyArray<Batch>> =>
  sql<BatchRow>`SELECT ${sql.literal(BATCH_COLUMNS)} FROM batches
    WHERE ended_at IS NULL AND (status IN ('in_progress', 'cancelling')
      OR (status = 'finalizing' AND finalizing_at < now() - ${staleMillis} * interval '1 millisecond'))
    ORDER BY id LIMIT ${limit}`.pipe(Effect.map((rows) => rows.map(batchOf)), Effect.orDie)

/**
 * Ends the lines of batch `batchId` that have not started: `canceled` when the batch is cancelling, `expired` when
 * its window has passed; running lines are left to finish.
 *
 * @category claims
 */
export const closePending = (sql: SqlClient.SqlClient, batchId: bigint, state: "canceled" | "expired") =>
  sql`UPDATE batch_lines SET state = ${state}, finished_at = now()
    WHERE batch_id = ${batchId} AND state = 'pending'`.pipe(Effect.asVoid, Effect.orDie)

/**
 * Claims for `instance`, for `leaseMillis`, up to `limit` lines of batch `batchId` in input order: lines not
 * started while the batch is in progress (not once it is cancelling), and lines whose claim ran out (their
 * instance stopped renewing it: `takenOver`). Each claim counts an attempt.
 *
 * @category claims
 */
export const claimLines = (
  sql: SqlClient.SqlClient,
  batchId: bigint,
  instance: string,
  limit: number,
  leaseMillis: number
): Effect.Effect<ReadonlyArray<ClaimedLine>> =>
  sql<
    { readonly lineIndex: number; readonly line: string; readonly attempts: number; readonly takenOver: boolean }
  >`WITH picked AS (
      SELECT line_index, state AS previous FROM batch_lines
      WHERE batch_id = ${batchId}
        AND ((state = 'pending' AND EXISTS (SELECT 1 FROM batches WHERE id = ${batchId} AND status = 'in_progress'))
          OR (state = 'running' AND claimed_until < now()))
      ORDER BY line_index LIMIT ${limit}
      FOR UPDATE SKIP LOCKED)
    UPDATE batch_lines b SET state = 'running', claimed_by = ${instance}, attempts = b.attempts + 1,
      claimed_until = now() + ${leaseMillis} * interval '1 millisecond'
    FROM picked WHERE b.batch_id = ${batchId} AND b.line_index = picked.line_index
    RETURNING b.line_index AS "lineIndex", b.line, b.attempts, picked.previous = 'running' AS "takenOver"`.pipe(
    Effect.map((rows) =>
      rows.map((row) => ({
        lineIndex: Number(row.lineIndex),
        line: row.line,
        attempts: Number(row.attempts),
        takenOver: row.takenOver === true
      })).sort((a, b) => a.lineIndex - b.lineIndex)
    ),
    Effect.orDie
  )

/**
 * Renews the lease of every line `instance` is running (its heartbeat).
 *
 * @category claims
 */
export const renewLeases = (sql: SqlClient.SqlClient, instance: string, leaseMillis: number): Effect.Effect<void> =>
  sql`UPDATE batch_lines SET claimed_until = now() + ${leaseMillis} * interval '1 millisecond'
    WHERE claimed_by = ${instance} AND state = 'running'`.pipe(Effect.asVoid, Effect.orDie)

/**
 * Records line `lineIndex`'s result, if `instance` still holds its claim; whether it did.
 *
 * @category claims
 */
export const finishLine = (
  sql: SqlClient.SqlClient,
  batchId: bigint,
  lineIndex: number,
  instance: string,
  state: Exclude<LineState, "pending" | "running">,
  statusCode: number | null,
  result: string | null
): Effect.Effect<boolean> =>
  sql<{ readonly lineIndex: number }>`UPDATE batch_lines
    SET state = ${state}, status_code = ${statusCode}, result = ${result}, finished_at = now(), claimed_until = NULL
    WHERE batch_id = ${batchId} AND line_index = ${lineIndex} AND claimed_by = ${instance} AND state = 'running'
    RETURNING line_index AS "lineIndex"`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

/**
 * Puts line `lineIndex` back to pending (a rate-limited attempt, nothing charged), if `instance` still holds it.
 *
 * @category claims
 */
export const releaseLine = (
  sql: SqlClient.SqlClient,
  batchId: bigint,
  lineIndex: number,
  instance: string
): Effect.Effect<void> =>
  sql`UPDATE batch_lines SET state = 'pending', claimed_by = NULL, claimed_until = NULL
    WHERE batch_id = ${batchId} AND line_index = ${lineIndex} AND claimed_by = ${instance} AND state = 'running'`.pipe(
    Effect.asVoid,
    Effect.orDie
  )

/**
 * Whether the request `requestId` was charged: a usage row of it that is billed (a status below 400 or a cost), or
 * a charge-journal record not yet folded that names it (a stopped instance's, until a live one folds it).
 *
 * @category claims
 */
export const wasCharged = (sql: SqlClient.SqlClient, requestId: string): Effect.Effect<boolean> =>
  sql<{ readonly charged: boolean }>`SELECT (
      EXISTS (SELECT 1 FROM usage_logs WHERE request_id = ${requestId} AND (status < 400 OR cost > 0))
      OR EXISTS (SELECT 1 FROM charge_journal WHERE strpos(record, ${JSON.stringify(requestId)}) > 0)
    ) AS charged`.pipe(Effect.map((rows) => rows[0]?.charged === true), Effect.orDie)

/**
 * Moves batch `batchId` on when none of its lines is pending or running: to `to` (`finalizing`, when an output is
 * still to be written, or an end), with `ended_at` for an end; whether this call moved it (so one instance
 * finalizes).
 *
 * @category claims
 */
export const settleBatch = (
  sql: SqlClient.SqlClient,
  batchId: bigint,
  from: ReadonlyArray<BatchStatus>,
  to: BatchStatus
): Effect.Effect<boolean> =>
  sql<{ readonly id: unknown }>`UPDATE batches SET status = ${to},
      finalizing_at = CASE WHEN ${to} = 'finalizing' THEN now() ELSE finalizing_at END,
      ended_at = CASE WHEN ${to} = 'finalizing' THEN NULL ELSE now() END
    WHERE id = ${batchId} AND ended_at IS NULL AND status IN ${sql.in([...from])}
      AND NOT EXISTS (SELECT 1 FROM batch_lines WHERE batch_id = ${batchId} AND state IN ('pending', 'running'))
    RETURNING id`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

/**
 * Sets the output and error file ids of batch `batchId` and ends it with `status`.
 *
 * @category claims
 */
export const endWithFiles = (
  sql: SqlClient.SqlClient,
  batchId: bigint,
  status: BatchStatus,
  outputFileId: string | null,
  errorFileId: string | null
): Effect.Effect<void> =>
  sql`UPDATE batches SET status = ${status}, ended_at = now(), output_file_id = ${outputFileId},
      error_file_id = ${errorFileId}
    WHERE id = ${batchId} AND ended_at IS NULL`.pipe(Effect.asVoid, Effect.orDie)

/**
 * Up to `limit` finished lines of batch `batchId` from index `from` on, in input order.
 *
 * @category statements
 */
export const selectFinishedLines = (
  sql: SqlClient.SqlClient,
  batchId: bigint,
  from: number,
  limit: number
): Effect.Effect<ReadonlyArray<FinishedLine>, StorageUnavailable> =>
  sql<FinishedLine>`SELECT line_index AS "lineIndex", line, state, status_code AS "statusCode", result
    FROM batch_lines WHERE batch_id = ${batchId} AND line_index >= ${from}
    ORDER BY line_index LIMIT ${limit}`.pipe(
    Effect.map((rows) =>
      rows.map((row) => ({
        ...row,
        lineIndex: Number(row.lineIndex),
        statusCode: row.statusCode === null ? null : Number(row.statusCode)
      }))
    ),
    storageFailure("batches.results")
  )

/**
 * How many batches user `userId` has unfinished.
 *
 * @category statements
 */
export const unfinishedBatches = (
  sql: SqlClient.SqlClient,
  userId: bigint
): Effect.Effect<number, StorageUnavailable> =>
  sql<{ readonly n: bigint | number | string }>`SELECT count(*) AS n FROM batches
    WHERE user_id = ${userId} AND ended_at IS NULL`.pipe(
    Effect.map((rows) => Number(rows[0]?.n ?? 0)),
    storageFailure("batches.count")
  )

/**
 * The stored key digest of token `tokenId`, or `undefined` when it has none.
 *
 * @category statements
 */
export const tokenDigest = (
  sql: SqlClient.SqlClient,
  tokenId: bigint
): Effect.Effect<string | undefined, StorageUnavailable> =>
  sql<{ readonly keyHash: string | null }>`SELECT key_hash AS "keyHash" FROM tokens WHERE id = ${tokenId}`.pipe(
    Effect.map((rows) => rows[0]?.keyHash ?? undefined),
    storageFailure("batches.token")
  )
