/**
 * The usage log's table as SQL: the one insert of usage rows (from a JSON
 * array of row tuples, so any number of rows is one short statement), and how
 * to tell a row the database refused from a database that could not be
 * reached. Used by `UsageLog` (its commits and the rows written inside a
 * task's transaction) and `QuotaLedger` (a commit's single statement).
 *
 * @since 0.1.0
 */
import type { SqlError } from "effect/sql"

/**
 * `INSERT INTO usage_logs … SELECT … FROM jsonb_array_elements(<tuples>)`:
 * the rows of the JSON array `tuples` (a SQL expression of type `jsonb`, e.g.
 * `$3::jsonb`), each a tuple in column order (`request_id, attempt, user_id,
 * token_id, channel_id, model, upstream_model, prompt_tokens,
 * completion_tokens, cached_tokens, reasoning_tokens, cost, latency_ms,
 * stream, status, error, audio_input_tokens, audio_output_tokens, first_token_ms`; bigints as strings; the two
 * audio counts may be absent, from a journal record written before they were, and read as 0; the time to first
 * token may be absent or null, read as NULL). Read as `jsonb`, so each row
 * is parsed once (on `json` every `->>` parses the row's text again, which
 * made the embedded database spend about three times as long on each row). A
 * row already written (`(request_id, attempt)` taken) is skipped, never
 * doubled. `where` adds a condition on every row (the ledger's claim).
 *
 * @category usage rows
 */
export const insertUsageRows = (tuples: string, where = "TRUE"): string =>
  `INSERT INTO usage_logs (request_id, attempt, user_id, token_id, channel_id, model, upstream_model,
    prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, cost, latency_ms, stream, status, error,
    audio_input_tokens, audio_output_tokens, first_token_ms)
  SELECT r->>0, (r->>1)::int, (r->>2)::bigint, (r->>3)::bigint, (r->>4)::bigint, r->>5, r->>6,
    (r->>7)::int, (r->>8)::int, (r->>9)::int, (r->>10)::int, (r->>11)::bigint, (r->>12)::int,
    (r->>13)::boolean, (r->>14)::int, r->>15, COALESCE((r->>16)::int, 0), COALESCE((r->>17)::int, 0),
    (r->>18)::int
  FROM jsonb_array_elements(${tuples}) AS r
  WHERE ${where}
  ON CONFLICT (request_id, attempt) DO NOTHING`

/**
 * The PostgreSQL SQLSTATE of a failed statement, when the server sent one.
 *
 * @category usage rows
 */
export const sqlStateOf = (error: SqlError.SqlError): string | undefined => {
  const cause: unknown = error.reason.cause
  if (typeof cause !== "object" || cause === null || !("code" in cause)) return undefined
  return typeof cause.code === "string" ? cause.code : undefined
}

/**
 * Whether the database refused the rows themselves (SQLSTATE class 22, data
 * exception, or 23, integrity constraint violation: PostgreSQL docs, appendix A
 * "PostgreSQL Error Codes"), as opposed to a lost connection or a timeout.
 *
 * @category usage rows
 */
export const isRowRejection = (error: SqlError.SqlError): boolean => {
  if (error.reason._tag === "ConstraintError" || error.reason._tag === "UniqueViolation") return true
  const state = sqlStateOf(error)
  return state !== undefined && (state.startsWith("22") || state.startsWith("23"))
}
