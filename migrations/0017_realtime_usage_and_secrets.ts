/**
 * The Realtime API's second round: each usage row's audio tokens (`audio_input_tokens`, `audio_output_tokens`,
 * parts of `prompt_tokens` and `completion_tokens`, 0 where a response had none), and the ephemeral keys of
 * `POST /v1/realtime/client_secrets` (`realtime_client_secrets`: the key's SHA-256 digest, never the key, the token
 * it stands for, the model it is bound to, the session settings sent upstream first (JSON text: TEXT, not JSONB, holds a caller's NUL and lone surrogates), and its expiry in epoch
 * seconds).
 *
 * @since 0.3.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE usage_logs
    ADD COLUMN audio_input_tokens INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN audio_output_tokens INTEGER NOT NULL DEFAULT 0`
  yield* sql`CREATE TABLE realtime_client_secrets (
    secret_hash TEXT PRIMARY KEY,
    token_id    BIGINT NOT NULL REFERENCES tokens(id) ON DELETE CASCADE,
    model       TEXT NOT NULL,
    session     TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX realtime_client_secrets_expiry ON realtime_client_secrets (expires_at)`
})
