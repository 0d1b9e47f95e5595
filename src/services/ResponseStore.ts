/**
 * Keeps the conversations of the Responses answers the gateway served (unless
 * the caller sent `store: false`), for the key that made them, so
 * `previous_response_id` works on every upstream type.
 *
 * JSON lets a string hold `\u0000` and lone surrogates; PostgreSQL's JSONB
 * refuses both (`22P05` "\u0000 cannot be converted to text", `22P02`
 * "Unicode low surrogate must follow a high surrogate"; postgresql.org/docs/current/datatype-json.html).
 * Rather than change the column (a TEXT column of `JSON.stringify` output would
 * also round-trip, at the cost of a migration and of JSONB's checks), every
 * string and object key is escaped reversibly before the insert and restored on
 * load; new rows are wrapped as `{"escaped": …}` so rows written before the
 * escape existed (bare arrays) still load unchanged.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { Message } from "../canonical/Request.ts"
import { NotFound, type StorageUnavailable } from "../errors/GatewayError.ts"
import { storageFailure } from "../storage/StorageFailure.ts"

/**
 * The escape character: U+E000 (the first private-use code point). After it,
 * `e` stands for U+E000 itself, `0` for U+0000, and `s` plus four lower-case
 * hex digits for a lone surrogate.
 */
const ESCAPE = "\ue000"

/** Whether `text` holds the escape itself, NUL, or a surrogate that is not half of a pair. */
const needsEscape = (text: string): boolean => !text.isWellFormed() || text.includes("\u0000") || text.includes(ESCAPE)

const escapeString = (text: string): string => {
  if (!needsEscape(text)) return text
  let out = ""
  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index)
    if (unit === 0) out += ESCAPE + "0"
    else if (unit === 0xe000) out += ESCAPE + "e"
    else if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(index + 1)
      if (next >= 0xdc00 && next <= 0xdfff) {
        out += text[index] + text[index + 1]
        index++
      } else out += ESCAPE + "s" + unit.toString(16)
    } else if (unit >= 0xdc00 && unit <= 0xdfff) out += ESCAPE + "s" + unit.toString(16)
    else out += text[index]
  }
  return out
}

const restoreString = (text: string): string => {
  if (!text.includes(ESCAPE)) return text
  let out = ""
  for (let index = 0; index < text.length; index++) {
    if (text[index] !== ESCAPE) {
      out += text[index]
      continue
    }
    const kind = text[index + 1]
    if (kind === "0") out += "\u0000"
    else if (kind === "e") out += ESCAPE
    else if (kind === "s") {
      out += String.fromCharCode(parseInt(text.slice(index + 2, index + 6), 16))
      index += 4
    } else out += ESCAPE + (kind ?? "")
    index++
  }
  return out
}

// Recursive: as deep as `value`, a conversation decoded from JSON that every parse bounds at `MAX_JSON_DEPTH`
// levels (domain/JsonDepth.ts) plus the canonical form's few.
const mapStrings = (value: unknown, map: (text: string) => string): unknown => {
  if (typeof value === "string") return map(value)
  if (Array.isArray(value)) return value.map((item) => mapStrings(item, map))
  // `fromEntries` defines own properties, so a `__proto__` key stays a key.
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [map(key), mapStrings(item, map)]))
  }
  return value
}

/**
 * `value` (any JSON value) made storable in a JSONB column: every string and
 * object key escaped (see the module header), wrapped as `{escaped: …}`.
 * `restoreFromJsonb` gives back exactly `value`.
 *
 * @category storage
 */
export const storableInJsonb = (value: unknown): { readonly escaped: unknown } => ({
  escaped: mapStrings(value, escapeString)
})

/**
 * The value `storableInJsonb` was given, from what JSONB gave back; a value
 * not wrapped as `{escaped: …}` (a row from before the escape) is returned as
 * it is.
 *
 * @category storage
 */
export const restoreFromJsonb = (stored: unknown): unknown =>
  typeof stored === "object" && stored !== null && !Array.isArray(stored) && "escaped" in stored
    ? mapStrings(stored.escaped, restoreString)
    : stored

/** @category services */
export class ResponseStore extends Context.Service<ResponseStore, {
  /** Saves the whole conversation (input and answer) under the answer's id; `StorageUnavailable` if it cannot. */
  readonly save: (
    id: string,
    tokenId: bigint,
    messages: ReadonlyArray<Message>
  ) => Effect.Effect<void, StorageUnavailable>
  /**
   * The conversation behind `id`, for this token only; `NotFound` (param `previous_response_id`) otherwise,
   * `StorageUnavailable` when it cannot be read.
   */
  readonly load: (id: string, tokenId: bigint) => Effect.Effect<ReadonlyArray<Message>, NotFound | StorageUnavailable>
}>()("sluice/services/ResponseStore") {
  /** SQL-backed. */
  static readonly layer = Layer.effect(
    ResponseStore,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      return ResponseStore.of({
        save: (id, tokenId, messages) =>
          sql`INSERT INTO stored_responses (id, token_id, messages)
              VALUES (${id}, ${tokenId}, ${JSON.stringify(storableInJsonb(messages))})
              ON CONFLICT (id) DO NOTHING`.pipe(Effect.asVoid, storageFailure("responses.save")),
        load: (id, tokenId) =>
          sql<{ readonly messages: unknown }>`
            SELECT messages FROM stored_responses WHERE id = ${id} AND token_id = ${tokenId}`.pipe(
            storageFailure("responses.load"),
            Effect.flatMap((rows) =>
              rows.length === 0
                ? Effect.fail(new NotFound({ what: "response", id, param: "previous_response_id" }))
                : Effect.succeed(restoreFromJsonb(rows[0].messages) as ReadonlyArray<Message>)
            )
          )
      })
    })
  )
}
