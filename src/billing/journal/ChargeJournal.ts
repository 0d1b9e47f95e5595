/**
 * The charge journal: where a batch of settled charges becomes durable before
 * an answer's end leaves, in one append, to be folded into the balances and
 * the usage log later (docs/BILLING.md, "The journal").
 *
 * - On the embedded store (PGlite) the journal is a file beside the data
 *   directory (`JournalFile`: framed, checksummed records, rotated by size).
 *   An append is a write system call, made in the step the batch is taken;
 *   with `journal_fsync` the answer also waits for a group-committed
 *   `fdatasync`, for durability against a power cut (PGlite itself never
 *   fsyncs, so without it the journal is exactly as durable as the store).
 * - On PostgreSQL it is the narrow `charge_journal` table (migration 0015): a
 *   group-committed INSERT of the batches taken meanwhile. Rows are deleted in
 *   the transaction that folds them; a dead instance's rows are folded by any
 *   live one (`foreign`), before its stale leases are dropped
 *   (`LeaseStore.lease`). When the INSERT fails the batches spill to the file
 *   journal in `SLUICE_DATA_DIR`, when that directory is writable, and are
 *   folded from there once the database is back (or at the next start).
 *
 * An embedded store in memory (`memory://`) has no journal: its batches are `Volatile`, as durable as the store.
 * A batch neither could write keeps no place: `QuotaLedger.durable` then
 * answers false and the answer's end is withheld. Every such failure is
 * counted (`sluice_charge_journal_unwritten`) and logged.
 *
 * @since 0.2.0
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient, SqlError } from "effect/sql"
import { CurrentMetrics } from "../../observability/Metrics.ts"
import { type Batch, type JournalHooks, rowsOf } from "../ledger/CommitBatcher.ts"
import { type BatchRecord, decodeBatch, encodeBatch } from "./BatchRecord.ts"
import { type JournalFile, openJournalFile } from "./JournalFile.ts"

/**
 * How long an answer waits for the journal's INSERT before its batch spills to the file (or, with none, is
 * unwritten). An INSERT still landing later is harmless: the batch is folded once, under its commit id.
 */
const INSERT_TIMEOUT = "2 seconds"

/** How the journal is kept. @category models */
export interface ChargeJournalOptions {
  /** PostgreSQL: the table journal, the file (if any) only for spills. False: the embedded store's file journal. */
  readonly table: boolean
  /** The file journal's directory (created if missing); `undefined`: none. */
  readonly dir: string | undefined
  /**
   * The embedded store is in memory (`memory://`, the demo): it keeps nothing past the process, so a batch needs
   * no record to be as durable as the store, and is placed `Volatile`. Only with `table` false and no `dir`.
   */
  readonly volatileStore?: boolean | undefined
  /** Wait for a group-committed `fdatasync` of the file after writing to it (`settings.journal_fsync`). */
  readonly fsync: boolean
  /** Bytes after which the file starts a new segment (default `JournalFile.DEFAULT_MAX_SEGMENT_BYTES`). */
  readonly maxSegmentBytes?: number | undefined
}

/** The batch of a record read back from a journal: it keeps its place there. */
const batchOf = (record: BatchRecord, place: Batch["place"]): Batch => ({
  id: record.id,
  instance: record.instance,
  alongside: record.rows.length === 0 ? undefined : { _tag: "Rows", rows: [...record.rows] },
  taken: record.taken,
  final: false,
  place
})

const recordOf = (batch: Batch): BatchRecord => ({
  id: batch.id,
  instance: batch.instance,
  taken: batch.taken,
  rows: rowsOf(batch)
})

/** @category services */
export class ChargeJournal extends Context.Service<ChargeJournal, {
  /** True on PostgreSQL (the table journal). */
  readonly table: boolean
  /**
   * Writes the record of every batch of `batches` without a place (one INSERT, or one append each) and gives each
   * written batch its place; never fails. Returns false when a batch could not be written anywhere, or a wanted
   * `fdatasync` failed.
   */
  readonly write: (batches: ReadonlyArray<Batch>) => Effect.Effect<boolean>
  /** What the ledger's commits call (`CommitBatcher.JournalHooks`). */
  readonly hooks: JournalHooks
  /** The file's records found past its folded position at open, as batches: folded before the gateway serves. */
  readonly recovered: ReadonlyArray<Batch>
  /**
   * Up to `limit` table records written at least `staleMillis` ago by instances that renewed no lease for
   * `staleMillis` (a dead instance's charges, for a live one to fold), or by `instance` itself (rows a journal write
   * left behind a commit that had already folded them; the caller leaves out the batches it still keeps). None on
   * PGlite.
   */
  readonly foreign: (
    instance: string,
    staleMillis: number,
    limit: number
  ) => Effect.Effect<ReadonlyArray<Batch>, SqlError.SqlError>
}>()("sluice/billing/journal/ChargeJournal") {
  /** The journal per `options` over the layer's SQL client; the file (if any) opened and recovered here. */
  static readonly layer = (options: ChargeJournalOptions) =>
    Layer.effect(
      ChargeJournal,
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const metrics = yield* CurrentMetrics
        const file: JournalFile | undefined = options.dir === undefined
          ? undefined
          : yield* openJournalFile(options.dir, { maxSegmentBytes: options.maxSegmentBytes }).pipe(
            Effect.catch((error) =>
              options.table
                // PostgreSQL without a writable data directory: no spill, logged once.
                ? Effect.as(
                  Effect.logWarning("The charge journal has no spill file", { reason: error.message }),
                  undefined
                )
                : Effect.die(error)
            )
          )
        const counts = { unwritten: 0, spilled: 0, lastSeq: 0 }
        const bytes = new TextEncoder()
        const decoder = new TextDecoder()
        if (metrics !== undefined) {
          const unregister = [
            metrics.pull(
              "sluice_charge_journal_unwritten",
              "Charge batches no journal could write since start (their answers' ends were withheld)",
              () => counts.unwritten
            ),
            metrics.pull(
              "sluice_charge_journal_spilled",
              "Charge batches written to the local journal file because the database refused them, since start",
              () => counts.spilled
            )
          ]
          yield* Effect.addFinalizer(() => Effect.sync(() => unregister.forEach((remove) => remove())))
        }

        const recovered: Array<Batch> = []
        for (const record of file?.unfolded ?? []) {
          counts.lastSeq = Math.max(counts.lastSeq, record.seq)
          const batch = decodeBatch(decoder.decode(record.payload))
          if (batch === undefined) {
            yield* Effect.logError("Charge journal record unreadable; skipped", { seq: record.seq })
            continue
          }
          recovered.push(batchOf(batch, { _tag: "File", seq: record.seq }))
        }

        /** Appends each of `batches` (none has a place yet) to the file; returns how many it could not. */
        const append = (batches: ReadonlyArray<Batch>): number => {
          let failed = 0
          for (const batch of batches) {
            if (file === undefined) {
              failed += 1
              continue
            }
            try {
              const seq = file.append(bytes.encode(encodeBatch(recordOf(batch))))
              counts.lastSeq = seq
              batch.place = { _tag: "File", seq }
            } catch {
              failed += 1
            }
          }
          return failed
        }

        /** Deletes the table records of `ids` (none: no statement). */
        const forget = (ids: ReadonlyArray<string>) =>
          options.table && ids.length > 0
            ? sql`DELETE FROM charge_journal WHERE id = ANY(${ids}::text[])`.pipe(Effect.asVoid)
            : Effect.void

        const insert = (batches: ReadonlyArray<Batch>) =>
          sql`INSERT INTO charge_journal (id, instance_id, record)
            SELECT * FROM unnest(${batches.map((batch) => batch.id)}::text[],
              ${batches.map((batch) => batch.instance)}::text[],
              ${batches.map((batch) => encodeBatch(recordOf(batch)))}::text[])
            ON CONFLICT (id) DO NOTHING`.pipe(
            Effect.tap(() =>
              Effect.suspend(() => {
                for (const batch of batches) batch.place = { _tag: "Table" }
                // A commit that took a batch while its record was on its way could not delete the record: now.
                return forget(batches.filter((batch) => batch.folded === true).map((batch) => batch.id)).pipe(
                  Effect.ignore
                )
              })
            )
          )

        const synced = (wrote: boolean): Effect.Effect<boolean> =>
          !options.fsync || file === undefined || !wrote ? Effect.succeed(true) : file.sync.pipe(
            Effect.as(true),
            Effect.catch((error) =>
              Effect.as(Effect.logError("Charge journal fdatasync failed", { reason: error.message }), false)
            )
          )

        const unwritten = (failed: number): Effect.Effect<boolean> => {
          if (failed === 0) return Effect.succeed(true)
          counts.unwritten += failed
          return Effect.as(
            Effect.logError("Charges could not be journaled; the answers' ends are withheld", { batches: failed }),
            false
          )
        }

        const write = (batches: ReadonlyArray<Batch>): Effect.Effect<boolean> =>
          Effect.suspend(() => {
            const todo = batches.filter((batch) => batch.place === undefined)
            if (todo.length === 0) return Effect.succeed(true)
            if (!options.table && options.dir === undefined && options.volatileStore === true) {
              for (const batch of todo) batch.place = { _tag: "Volatile" }
              return Effect.succeed(true)
            }
            if (!options.table) {
              const failed = append(todo)
              return Effect.andThen(unwritten(failed), (ok) => ok ? synced(true) : Effect.succeed(false))
            }
            return insert(todo).pipe(
              // A database that hangs is a failed write too: the answer does not wait on it longer.
              Effect.timeoutOrElse({
                duration: INSERT_TIMEOUT,
                orElse: () =>
                  Effect.fail(
                    new SqlError.SqlError({
                      reason: new SqlError.UnknownError({ cause: "timeout", message: "The journal insert timed out" })
                    })
                  )
              }),
              Effect.as(true),
              Effect.catch((error) =>
                Effect.suspend(() => {
                  const failed = append(todo)
                  counts.spilled += todo.length - failed
                  return Effect.logWarning("Charge journal insert failed; spilled to the local journal file", {
                    kind: error.reason._tag,
                    spilled: todo.length - failed
                  }).pipe(
                    Effect.andThen(unwritten(failed)),
                    Effect.flatMap((ok) => ok ? synced(todo.length > failed) : Effect.succeed(false))
                  )
                })
              )
            )
          })

        const hooks: JournalHooks = {
          forgetWithin: forget,
          markFolded: (seq) => {
            if (file !== undefined && seq > 0) file.markFolded(seq)
          },
          lastSeq: () => counts.lastSeq
        }

        const foreign = (instance: string, staleMillis: number, limit: number) =>
          !options.table ? Effect.succeed([]) : sql<{ readonly record: string }>`
            SELECT j.record FROM charge_journal j
            WHERE j.written_at < now() - ${staleMillis} * interval '1 millisecond'
              AND (j.instance_id = ${instance} OR NOT EXISTS (SELECT 1 FROM quota_leases l
                WHERE l.instance_id = j.instance_id
                  AND l.renewed_at >= now() - ${staleMillis} * interval '1 millisecond'))
            ORDER BY j.written_at LIMIT ${limit}`.pipe(
            Effect.map((rows) =>
              rows.flatMap((row) => {
                const record = decodeBatch(row.record)
                return record === undefined ? [] : [batchOf(record, { _tag: "Table" })]
              })
            )
          )

        return ChargeJournal.of({ table: options.table, write, hooks, recovered, foreign })
      })
    )
}
