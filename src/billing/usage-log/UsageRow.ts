/**
 * A usage-log row and what makes it fit the `usage_logs` columns, as plain
 * functions: text cleaned of NUL and lone surrogates and bounded, counts,
 * latency and status clamped to non-negative PostgreSQL INTEGERs, the cost to
 * BIGINT; the row's JSON tuple for the batch insert; and the minimal form a
 * row the database rejected is written in (its cost kept). See `UsageLog`'s
 * module doc for when each applies.
 *
 * @since 0.1.0
 */
import { MAX_AMOUNT } from "../ledger/LeaseMath.ts"

/** One usage row. Counts are tokens; `cost` quota units; `latencyMs` milliseconds. @category models */
export interface UsageRow {
  readonly requestId: string
  readonly attempt: number
  readonly userId: bigint
  readonly tokenId: bigint
  readonly channelId: number | null
  readonly model: string
  readonly upstreamModel: string | null
  readonly promptTokens: number
  readonly completionTokens: number
  readonly cachedTokens: number
  readonly reasoningTokens: number
  /** Audio tokens among `promptTokens` (a Realtime response's `input_token_details.audio_tokens`); absent: 0. */
  readonly audioInputTokens?: number | undefined
  /** Audio tokens among `completionTokens` (`output_token_details.audio_tokens`); absent: 0. */
  readonly audioOutputTokens?: number | undefined
  readonly cost: bigint
  readonly latencyMs: number
  /**
   * Time to first token of a streamed answer: milliseconds from the request's start to the first answer content
   * metered from the upstream; absent or `null` when not streamed or no content came.
   */
  readonly firstTokenMs?: number | null | undefined
  readonly stream: boolean
  readonly status: number
  readonly error: string | null
}

/** The largest PostgreSQL INTEGER. */
const MAX_INTEGER = 2_147_483_647

/** Longest text kept, in UTF-16 code units, per field. @category models */
export const TEXT_LIMITS = { requestId: 200, model: 200, upstreamModel: 200, error: 2_000 } as const

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff

/**
 * `text` as PostgreSQL TEXT accepts it: at most `limit` code units, cut at a
 * code-point boundary (a trailing high surrogate, the first half of a pair cut
 * off here or upstream, is dropped), NUL removed, other lone surrogates
 * replaced by U+FFFD.
 *
 * @category sanitizing
 */
export const cleanText = (text: string, limit: number): string => {
  let cut = text.length > limit ? text.slice(0, limit) : text
  if (cut.length > 0 && isHighSurrogate(cut.charCodeAt(cut.length - 1))) cut = cut.slice(0, -1)
  return cut.replaceAll("\u0000", "").toWellFormed()
}

/**
 * `value` as a non-negative PostgreSQL INTEGER: a fraction is truncated, a
 * negative or non-finite number is 0, a number above 2^31 − 1 is 2^31 − 1.
 *
 * @category sanitizing
 */
export const cleanInteger = (value: number): number =>
  !Number.isFinite(value) || value <= 0 ? 0 : value >= MAX_INTEGER ? MAX_INTEGER : Math.trunc(value)

/**
 * The row made safe to insert, and the names of the fields that had to change
 * (never their values: they may hold a caller's or a vendor's text). The cost
 * is bounded to [0, `MAX_AMOUNT`].
 *
 * @category sanitizing
 */
export const cleanRow = (row: UsageRow): { readonly row: UsageRow; readonly adjusted: ReadonlyArray<string> } => {
  const adjusted: Array<string> = []
  const text = (field: keyof typeof TEXT_LIMITS, value: string): string => {
    const clean = cleanText(value, TEXT_LIMITS[field])
    if (clean !== value) adjusted.push(field)
    return clean
  }
  const integer = (field: string, value: number): number => {
    const clean = cleanInteger(value)
    if (clean !== value) adjusted.push(field)
    return clean
  }
  const channelId = row.channelId === null || (Number.isSafeInteger(row.channelId) && row.channelId >= 0)
    ? row.channelId
    : null
  if (channelId !== row.channelId) adjusted.push("channelId")
  const cost = row.cost < 0n ? 0n : row.cost > MAX_AMOUNT ? MAX_AMOUNT : row.cost
  if (cost !== row.cost) adjusted.push("cost")
  const clean: UsageRow = {
    requestId: text("requestId", row.requestId),
    attempt: integer("attempt", row.attempt),
    userId: row.userId,
    tokenId: row.tokenId,
    channelId,
    model: text("model", row.model),
    upstreamModel: row.upstreamModel === null ? null : text("upstreamModel", row.upstreamModel),
    promptTokens: integer("promptTokens", row.promptTokens),
    completionTokens: integer("completionTokens", row.completionTokens),
    cachedTokens: integer("cachedTokens", row.cachedTokens),
    reasoningTokens: integer("reasoningTokens", row.reasoningTokens),
    ...(row.audioInputTokens === undefined
      ? {}
      : { audioInputTokens: integer("audioInputTokens", row.audioInputTokens) }),
    ...(row.audioOutputTokens === undefined
      ? {}
      : { audioOutputTokens: integer("audioOutputTokens", row.audioOutputTokens) }),
    cost,
    latencyMs: integer("latencyMs", row.latencyMs),
    ...(row.firstTokenMs === undefined || row.firstTokenMs === null
      ? {}
      : { firstTokenMs: integer("firstTokenMs", row.firstTokenMs) }),
    stream: row.stream === true,
    status: integer("status", row.status),
    error: row.error === null ? null : text("error", row.error)
  }
  return { row: clean, adjusted }
}

/**
 * An adjustment row's cost (`UsageLog.writeWithin`, `attempt = 0`): kept
 * signed, since it may be a credit, and bounded to ±`MAX_AMOUNT`.
 *
 * @category sanitizing
 */
export const signedCost = (cost: bigint): bigint =>
  cost > MAX_AMOUNT ? MAX_AMOUNT : cost < -MAX_AMOUNT ? -MAX_AMOUNT : cost

/**
 * A row as a JSON-ready array in the column order of `insertUsageRows`
 * (bigints as strings): a third of the bytes of an object.
 *
 * @category encoding
 */
export const tupleOf = (row: UsageRow): Array<string | number | boolean | null> => [
  row.requestId,
  row.attempt,
  String(row.userId),
  String(row.tokenId),
  row.channelId,
  row.model,
  row.upstreamModel,
  row.promptTokens,
  row.completionTokens,
  row.cachedTokens,
  row.reasoningTokens,
  String(row.cost),
  row.latencyMs,
  row.stream,
  row.status,
  row.error,
  row.audioInputTokens ?? 0,
  row.audioOutputTokens ?? 0,
  row.firstTokenMs ?? null
]

/**
 * The form a row the database rejected is set aside in: its ids, attempt,
 * cost, stream flag and status kept; no channel, text or counts; the error
 * naming `sqlState`, the rejection's SQLSTATE (or its kind).
 *
 * @category sanitizing
 */
export const minimalRow = (row: UsageRow, sqlState: string): UsageRow => ({
  ...row,
  channelId: null,
  model: "",
  upstreamModel: null,
  promptTokens: 0,
  completionTokens: 0,
  cachedTokens: 0,
  reasoningTokens: 0,
  audioInputTokens: 0,
  audioOutputTokens: 0,
  latencyMs: 0,
  firstTokenMs: null,
  error: `Usage row set aside: the database rejected it (SQLSTATE ${sqlState}).`
})
