/**
 * The usage log's queue as plain values: rows cleaned and queued by
 * `UsageLog.record` (synchronously, no I/O), bounded at `MAX_QUEUED` (a row
 * on a full queue is dropped and counted with its cost), taken whole by a
 * commit and split into INSERT statements of `BATCH` rows; and the tally of
 * what was adjusted or dropped since the last report. No effect: `UsageLog`
 * logs the report and writes the statements.
 *
 * @since 0.1.0
 */
import { cleanRow, type UsageRow } from "./UsageRow.ts"

/** Rows per INSERT statement (a commit writes every queued row, in as many statements as it takes). @category models */
export const BATCH = 5_000

/**
 * The most rows the queue holds (about 100 MB at worst); a row recorded on a
 * full queue is dropped and counted. @category models
 */
export const MAX_QUEUED = 200_000

/** Rows dropped on a full queue and their summed cost (quota units). @category models */
export interface Dropped {
  rows: number
  cost: bigint
}

/**
 * The queue (mutable: updated in place on the request path).
 *
 * @category models
 */
export interface RowQueue {
  /** The cleaned rows waiting for the next commit, oldest first. */
  pending: Array<UsageRow>
  /** Fields adjusted by cleaning since the last report: field name → rows. */
  adjusted: Map<string, number>
  /** Rows dropped on a full queue since the last report. */
  dropped: Dropped
}

/** What was adjusted and dropped since the previous report. @category models */
export interface QueueReport {
  readonly adjusted: ReadonlyMap<string, number>
  readonly dropped: Readonly<Dropped>
}

/** An empty queue. @category constructors */
export const makeRowQueue = (): RowQueue => ({ pending: [], adjusted: new Map(), dropped: { rows: 0, cost: 0n } })

/** Counts each of `fields` once more as adjusted. @category queue */
export const countAdjusted = (queue: RowQueue, fields: ReadonlyArray<string>): void => {
  for (const field of fields) queue.adjusted.set(field, (queue.adjusted.get(field) ?? 0) + 1)
}

/**
 * Cleans `row` (`UsageRow.cleanRow`, the adjusted fields counted) and queues
 * it, or, when `max` rows are already queued, counts it as dropped with its
 * cleaned cost.
 *
 * @category queue
 */
export const enqueue = (queue: RowQueue, row: UsageRow, max: number = MAX_QUEUED): void => {
  const clean = cleanRow(row)
  countAdjusted(queue, clean.adjusted)
  if (queue.pending.length >= max) {
    queue.dropped.rows += 1
    queue.dropped.cost += clean.row.cost
    return
  }
  queue.pending.push(clean.row)
}

/** Takes every queued row, oldest first, leaving the queue empty. @category queue */
export const takeAll = (queue: RowQueue): Array<UsageRow> => {
  const rows = queue.pending
  queue.pending = []
  return rows
}

/** `rows` in order as consecutive statements of at most `batch` rows (none for no row). @category queue */
export const statementsOf = <A>(rows: ReadonlyArray<A>, batch: number = BATCH): Array<ReadonlyArray<A>> => {
  const statements: Array<ReadonlyArray<A>> = []
  for (let start = 0; start < rows.length; start += batch) statements.push(rows.slice(start, start + batch))
  return statements
}

/** Takes the tally of adjusted fields and dropped rows, starting a new one. @category queue */
export const takeReport = (queue: RowQueue): QueueReport => {
  const report = { adjusted: queue.adjusted, dropped: queue.dropped }
  queue.adjusted = new Map()
  queue.dropped = { rows: 0, cost: 0n }
  return report
}
