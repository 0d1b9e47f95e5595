/**
 * Images the gateway keeps for a caller who asked for a `url` from a model
 * that answers only Base64 (`GET /v1/images/content/{id}` serves them):
 * `data` is the image's Base64, `media_type` its type, `token` the secret
 * a URL carries so that a plain HTTP client may fetch it without a key,
 * `expires_at` when it stops being served (rows past it are pruned).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE image_contents (
      id          TEXT PRIMARY KEY,
      user_id     BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      token       TEXT NOT NULL,
      media_type  TEXT NOT NULL,
      data        TEXT NOT NULL,
      created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
      expires_at  TIMESTAMPTZ NOT NULL
    )`
  yield* sql`CREATE INDEX image_contents_expires_idx ON image_contents (expires_at)`
})
