/**
 * The prices of the Realtime API's audio tokens on `models`: `audio_input_price`, `audio_output_price` and
 * `cached_audio_input_price` (USD per 1M tokens, like `input_price`), beside the text prices.
 *
 * @since 0.3.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE models
    ADD COLUMN audio_input_price NUMERIC CHECK (audio_input_price >= 0),
    ADD COLUMN audio_output_price NUMERIC CHECK (audio_output_price >= 0),
    ADD COLUMN cached_audio_input_price NUMERIC CHECK (cached_audio_input_price >= 0)`
})
