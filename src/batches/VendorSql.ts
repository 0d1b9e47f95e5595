/**
 * The statements of a batch's vendor state (migrations/0025_vendor_batches.ts): its phase, the claim of the
 * instance that submits and polls it at the vendor (a lease in `vendor_claimed_by` / `vendor_claimed_until`, taken
 * with `FOR UPDATE SKIP LOCKED`, so instances sharing one PostgreSQL never submit or poll one batch at once and a
 * stopped instance's batch is taken over once its lease ran out), the vendor's ids, the lines read for a submit,
 * the vendor's results recorded on the lines, and which lines' usage rows are already logged (a takeover's check).
 * Times are the database's (`now()`); durations are milliseconds. Storage failures are defects (`Effect.orDie`).
 *
 * @since 0.4.0
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import type { BatchApi } from "./Batch.ts"

/**
 * Where a batch stands with the vendors: `undefined` (not decided), `deciding` (an instance submits it),
 * `gateway` (the gateway runs its lines), `running` / `cancelling` (at the vendor), `done` (its results recorded).
 *
 * @category models
 */
export type VendorPhase = "deciding" | "gateway" | "running" | "cancelling" | "done"

/** A batch's vendor state as a claim reads it. @category models */
export interface VendorState {
  readonly phase: VendorPhase | undefined
  readonly api: BatchApi | undefined
  readonly channelId: number | undefined
  readonly keyPosition: number | undefined
  readonly vendorBatchId: string | undefined
  /** The claim was another instance's, whose lease ran out: its work may have been half done. */
  readonly takenOver: boolean
}

/**
 * The vendor phase of each of `ids` (a batch whose phase is not decided is absent).
 *
 * @category statements
 */
export const vendorPhases = (
  sql: SqlClient.SqlClient,
  ids: ReadonlyArray<bigint>
): Effect.Effect<ReadonlyMap<bigint, VendorPhase>> =>
  ids.length === 0 ? Effect.succeed(new Map()) : sql<
    { readonly id: bigint | number | string; readonly phase: VendorPhase }
  >`SELECT id, vendor_phase AS phase FROM batches
      WHERE id IN ${sql.in(ids.map(String))} AND vendor_phase IS NOT NULL`.pipe(
    Effect.map((rows) => new Map(rows.map((row) => [BigInt(row.id), row.phase]))),
    Effect.orDie
  )

interface StateRow {
  readonly phase: VendorPhase | null
  readonly api: BatchApi | null
  readonly channelId: number | null
  readonly keyPosition: number | null
  readonly vendorBatchId: string | null
  readonly previous: string | null
}

const stateOf = (row: StateRow, instance: string): VendorState => ({
  phase: row.phase ?? undefined,
  api: row.api ?? undefined,
  channelId: row.channelId === null ? undefined : Number(row.channelId),
  keyPosition: row.keyPosition === null ? undefined : Number(row.keyPosition),
  vendorBatchId: row.vendorBatchId ?? undefined,
  takenOver: row.previous !== null && row.previous !== instance
})

/** What a claim returns of the batch it took (as `StateRow`), and who held it before (`picked.previous`). */
const CLAIMED_STATE = `b.vendor_phase AS phase, b.vendor_api AS api, b.vendor_channel_id AS "channelId",
  b.vendor_key_position AS "keyPosition", b.vendor_batch_id AS "vendorBatchId", picked.previous`

/**
 * Claims batch `batchId` for `instance` for `leaseMillis` to decide whether it goes to a vendor: a batch not
 * decided yet, or one whose deciding instance's lease ran out. `undefined`: another instance holds it, or it was
 * decided. The phase is `deciding` from here on, so no instance starts its lines meanwhile.
 *
 * @category claims
 */
export const claimDecision = (
  sql: SqlClient.SqlClient,
  batchId: bigint,
  instance: string,
  leaseMillis: number
): Effect.Effect<VendorState | undefined> =>
  sql<StateRow>`WITH picked AS (
      SELECT id, vendor_claimed_by AS previous FROM batches
      WHERE id = ${batchId} AND ended_at IS NULL
        AND (vendor_phase IS NULL OR (vendor_phase = 'deciding'
          AND (vendor_claimed_by = ${instance} OR vendor_claimed_until < now())))
      FOR UPDATE SKIP LOCKED)
    UPDATE batches b SET vendor_phase = 'deciding', vendor_claimed_by = ${instance},
      vendor_claimed_until = now() + ${leaseMillis} * interval '1 millisecond'
    FROM picked WHERE b.id = picked.id
    RETURNING ${sql.literal(CLAIMED_STATE)}`.pipe(
    Effect.map((rows) => rows[0] === undefined ? undefined : stateOf(rows[0], instance)),
    Effect.orDie
  )

/**
 * Claims delegated batch `batchId` (`running` or `cancelling`) for `instance` for `leaseMillis` to poll it at the
 * vendor, when it is due: not retrieved for `pollMillis`, or a cancel (or the window's end) to forward. `undefined`:
 * not due, or another instance holds it.
 *
 * @category claims
 */
export const claimPoll = (
  sql: SqlClient.SqlClient,
  batchId: bigint,
  instance: string,
  leaseMillis: number,
  pollMillis: number
): Effect.Effect<VendorState | undefined> =>
  sql<StateRow>`WITH picked AS (
      SELECT id, vendor_claimed_by AS previous FROM batches
      WHERE id = ${batchId} AND ended_at IS NULL AND vendor_phase IN ('running', 'cancelling')
        AND (vendor_claimed_by IS NULL OR vendor_claimed_by = ${instance} OR vendor_claimed_until < now())
        AND (vendor_polled_at IS NULL OR vendor_polled_at < now() - ${pollMillis} * interval '1 millisecond'
          OR (vendor_phase = 'running' AND (status = 'cancelling' OR expires_at <= now())))
      FOR UPDATE SKIP LOCKED)
    UPDATE batches b SET vendor_claimed_by = ${instance},
      vendor_claimed_until = now() + ${leaseMillis} * interval '1 millisecond'
    FROM picked WHERE b.id = picked.id
    RETURNING ${sql.literal(CLAIMED_STATE)}`.pipe(
    Effect.map((rows) => rows[0] === undefined ? undefined : stateOf(rows[0], instance)),
    Effect.orDie
  )

/**
 * Sets batch `batchId`'s phase to `phase` (with `polled`: its last retrieve now), if `instance` still holds its
 * claim; whether it did.
 *
 * @category claims
 */
export const setPhase = (
  sql: SqlClient.SqlClient,
  batchId: bigint,
  instance: string,
  phase: VendorPhase,
  polled = false
): Effect.Effect<boolean> =>
  sql<{ readonly id: unknown }>`UPDATE batches SET vendor_phase = ${phase},
      vendor_polled_at = CASE WHEN ${polled} THEN now() ELSE vendor_polled_at END
    WHERE id = ${batchId} AND vendor_claimed_by = ${instance} RETURNING id`.pipe(
    Effect.map((rows) => rows.length > 0),
    Effect.orDie
  )

/**
 * Renews `instance`'s claim of batch `batchId` for `leaseMillis` (its heartbeat during a long submit or finish);
 * whether it still held it.
 *
 * @category claims
 */
export const renewClaim = (
  sql: SqlClient.SqlClient,
  batchId: bigint,
  instance: string,
  leaseMillis: number
): Effect.Effect<boolean> =>
  sql<{ readonly id: unknown }>`UPDATE batches
    SET vendor_claimed_until = now() + ${leaseMillis} * interval '1 millisecond'
    WHERE id = ${batchId} AND vendor_claimed_by = ${instance} RETURNING id`.pipe(
    Effect.map((rows) => rows.length > 0),
    Effect.orDie
  )

/** What a submit stored: the vendor API, channel, key position, the vendor's batch id and input file id. @category models */
export interface Submitted {
  readonly api: BatchApi
  readonly channelId: number
  readonly keyPosition: number
  readonly vendorBatchId: string
  readonly vendorFileId: string | undefined
}

/**
 * Records that batch `batchId` was submitted (`running`, retrieved now), if `instance` still holds its claim.
 *
 * @category claims
 */
export const setSubmitted = (
  sql: SqlClient.SqlClient,
  batchId: bigint,
  instance: string,
  submitted: Submitted
): Effect.Effect<boolean> =>
  sql<{ readonly id: unknown }>`UPDATE batches SET vendor_phase = 'running', vendor_api = ${submitted.api},
      vendor_channel_id = ${submitted.channelId}, vendor_key_position = ${submitted.keyPosition},
      vendor_batch_id = ${submitted.vendorBatchId}, vendor_file_id = ${submitted.vendorFileId ?? null},
      vendor_polled_at = now()
    WHERE id = ${batchId} AND vendor_claimed_by = ${instance} RETURNING id`.pipe(
    Effect.map((rows) => rows.length > 0),
    Effect.orDie
  )

/** One stored line: its index and JSON text (`{custom_id, body, …}`). @category models */
export interface StoredLine {
  readonly lineIndex: number
  readonly line: string
}

/**
 * Up to `limit` lines of batch `batchId` from index `from` on, in input order, whatever their state.
 *
 * @category statements
 */
export const selectLines = (
  sql: SqlClient.SqlClient,
  batchId: bigint,
  from: number,
  limit: number
): Effect.Effect<ReadonlyArray<StoredLine>> =>
  sql<StoredLine>`SELECT line_index AS "lineIndex", line FROM batch_lines
    WHERE batch_id = ${batchId} AND line_index >= ${from} ORDER BY line_index LIMIT ${limit}`.pipe(
    Effect.map((rows) => rows.map((row) => ({ lineIndex: Number(row.lineIndex), line: row.line }))),
    Effect.orDie
  )

/** A line's end as recorded. @category models */
export interface LineRecord {
  readonly lineIndex: number
  readonly state: "succeeded" | "errored" | "canceled" | "expired"
  readonly statusCode: number | null
  readonly result: string | null
}

/**
 * Records `ends` on batch `batchId`'s lines still pending, in one transaction that first checks `instance` still
 * holds the batch's claim (and renews it for `leaseMillis`); whether it did (nothing is recorded when not).
 *
 * @category claims
 */
export const recordLines = (
  sql: SqlClient.SqlClient,
  batchId: bigint,
  instance: string,
  leaseMillis: number,
  ends: ReadonlyArray<LineRecord>
): Effect.Effect<boolean> =>
  sql.withTransaction(Effect.gen(function* () {
    const held = yield* sql<{ readonly id: unknown }>`UPDATE batches
      SET vendor_claimed_until = now() + ${leaseMillis} * interval '1 millisecond'
      WHERE id = ${batchId} AND vendor_claimed_by = ${instance} RETURNING id`
    if (held.length === 0) return false
    if (ends.length === 0) return true
    // One JSON array per statement: the line texts are JSON already, NUL and lone surrogates escaped.
    const rows = JSON.stringify(ends.map((end) => [end.lineIndex, end.state, end.statusCode, end.result]))
    yield* sql`UPDATE batch_lines b SET state = item->>1, status_code = (item->>2)::int, result = item->>3,
        finished_at = now(), claimed_until = NULL
      FROM jsonb_array_elements(${rows}::jsonb) AS item
      WHERE b.batch_id = ${batchId} AND b.line_index = (item->>0)::int AND b.state = 'pending'`
    return true
  })).pipe(Effect.orDie)

/**
 * Which of `requestIds` have a usage row, or a charge-journal record not yet folded that names them (a stopped
 * instance's, until a live one folds it): the lines a takeover must not bill again.
 *
 * @category claims
 */
export const loggedRequests = (
  sql: SqlClient.SqlClient,
  requestIds: ReadonlyArray<string>
): Effect.Effect<ReadonlySet<string>> =>
  requestIds.length === 0 ? Effect.succeed(new Set()) : sql<{ readonly id: string }>`SELECT r.id FROM
      jsonb_array_elements_text(${JSON.stringify(requestIds)}::jsonb) AS r(id)
      WHERE EXISTS (SELECT 1 FROM usage_logs WHERE request_id = r.id)
        OR EXISTS (SELECT 1 FROM charge_journal WHERE strpos(record, to_jsonb(r.id)::text) > 0)`.pipe(
    Effect.map((rows) => new Set(rows.map((row) => row.id))),
    Effect.orDie
  )
