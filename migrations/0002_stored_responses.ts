/**
 * The conversations behind Responses answers, so a later request can continue
 * one with `previous_response_id` on any upstream type. Rows belong to the
 * token that made them; `messages` is the canonical history (input and output).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE stored_responses (
      id         TEXT PRIMARY KEY,
      token_id   BIGINT NOT NULL,
      messages   JSONB NOT NULL,
      created_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )`
})
