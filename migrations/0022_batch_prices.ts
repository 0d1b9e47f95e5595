/**
 * The batch prices of `models`: `batch_input_price` and `batch_output_price` (USD per 1M tokens, like
 * `input_price`), charged for the lines of a batch delegated to a vendor's batch API; unset, the normal prices.
 *
 * @since 0.4.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE models
    ADD COLUMN batch_input_price NUMERIC CHECK (batch_input_price >= 0),
    ADD COLUMN batch_output_price NUMERIC CHECK (batch_output_price >= 0)`
})
