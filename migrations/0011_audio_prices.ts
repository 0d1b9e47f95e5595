/**
 * The prices of the audio and rerank routes: `per_1m_characters` (USD per
 * million input characters, speech) and `per_search` (USD per search unit,
 * rerank) on `models`, beside `per_image` and `per_second`.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE models
    ADD COLUMN per_1m_characters NUMERIC CHECK (per_1m_characters >= 0),
    ADD COLUMN per_search NUMERIC CHECK (per_search >= 0)`
})
