/**
 * One journal record: a ledger batch as the text that makes it durable — its
 * commit id, the instance whose leases it lowers, the charges, hand-backs and
 * charged requests per account, and its usage rows (as the JSON tuples of
 * `storage/UsageRowsSql.ts`). A fold re-runs it under its commit id, so a
 * record folded twice (a crash between the fold's COMMIT and its mark) writes
 * once (`ledger_commits`, migrations/0004_exactly_once.ts).
 *
 * Amounts are quota units (micro-USD) as decimal strings; the text is JSON.
 *
 * @since 0.2.0
 */
import { Option, Schema } from "effect"
import { newAccount, type Taken } from "../ledger/LeaseMath.ts"
import { tupleOf, type UsageRow } from "../usage-log/UsageRow.ts"

/**
 * A batch as a journal holds it.
 *
 * @category models
 */
export interface BatchRecord {
  /** The commit id claimed in `ledger_commits` when the batch is folded. */
  readonly id: string
  /** The instance whose `quota_leases` rows the batch lowers. */
  readonly instance: string
  /** Per account: what it was charged, handed back and its charged requests. */
  readonly taken: ReadonlyArray<Taken>
  /** The usage rows written with the charges (cleaned, `UsageRow.cleanRow`). */
  readonly rows: ReadonlyArray<UsageRow>
}

const Amount = Schema.String.check(Schema.isPattern(/^-?\d{1,19}$/))

const Entry = Schema.Tuple([
  Schema.Literals(["user", "token", "budget"]),
  Amount,
  Schema.Boolean,
  Amount,
  Amount,
  Schema.Number
])

const Row = Schema.Tuple([
  Schema.String,
  Schema.Number,
  Amount,
  Amount,
  Schema.NullOr(Schema.Number),
  Schema.String,
  Schema.NullOr(Schema.String),
  Schema.Number,
  Schema.Number,
  Schema.Number,
  Schema.Number,
  Amount,
  Schema.Number,
  Schema.Boolean,
  Schema.Number,
  Schema.NullOr(Schema.String),
  // The audio counts, absent from the records written before them.
  Schema.optionalKey(Schema.Number),
  Schema.optionalKey(Schema.Number),
  // The time to first token (null: none), absent from the records written before it.
  Schema.optionalKey(Schema.NullOr(Schema.Number))
])

const Stored = Schema.Struct({
  v: Schema.Literal(1),
  id: Schema.String,
  instance: Schema.String,
  taken: Schema.Array(Entry),
  rows: Schema.Array(Row)
})

const decodeStored = Schema.decodeUnknownOption(Stored)

/**
 * The record's text (JSON, version 1).
 *
 * @category codec
 */
export const encodeBatch = (record: BatchRecord): string =>
  JSON.stringify({
    v: 1,
    id: record.id,
    instance: record.instance,
    taken: record.taken.map((entry) => [
      entry.account.subject,
      String(entry.account.id),
      entry.account.limited,
      String(entry.charged),
      String(entry.returned),
      entry.requests
    ]),
    rows: record.rows.map(tupleOf)
  })

/**
 * The record a text holds, or `undefined` when it is not one (not JSON, another version, a field out of shape):
 * a journal's framing catches torn and corrupt bytes, so this is a guard, not the recovery path.
 *
 * @category codec
 */
export const decodeBatch = (text: string): BatchRecord | undefined => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return undefined
  }
  const stored = decodeStored(json)
  if (Option.isNone(stored)) return undefined
  const { id, instance, taken, rows } = stored.value
  return {
    id,
    instance,
    taken: taken.map(([subject, account, limited, charged, returned, requests]) => ({
      // An account that stands only for the entry: nothing leased or held in this instance.
      account: newAccount(subject, BigInt(account), limited, 0n),
      charged: BigInt(charged),
      returned: BigInt(returned),
      requests
    })),
    rows: rows.map((row) => ({
      requestId: row[0],
      attempt: row[1],
      userId: BigInt(row[2]),
      tokenId: BigInt(row[3]),
      channelId: row[4],
      model: row[5],
      upstreamModel: row[6],
      promptTokens: row[7],
      completionTokens: row[8],
      cachedTokens: row[9],
      reasoningTokens: row[10],
      cost: BigInt(row[11]),
      latencyMs: row[12],
      stream: row[13],
      status: row[14],
      error: row[15],
      audioInputTokens: row[16] ?? 0,
      audioOutputTokens: row[17] ?? 0,
      ...(row[18] === undefined || row[18] === null ? {} : { firstTokenMs: row[18] })
    }))
  }
}
