/**
 * Assets (spec "Resources: Asset", "Asset statuses"): a public media URL a
 * user registered, named by a bare id `asset-<timestamp>-<suffix>` and used
 * in a video request's media fields as `asset://<id>`. `status` is
 * `Processing` while the gateway checks the URL, then `Active` (usable) or
 * `Failed` (with `reason`); `media_type` and `size_bytes` are what the check
 * saw (the size when the server announced it).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE assets (
      id          TEXT PRIMARY KEY,
      user_id     BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      name        TEXT,
      url         TEXT NOT NULL,
      status      TEXT NOT NULL CHECK (status IN ('Processing', 'Active', 'Failed')),
      reason      TEXT,
      media_type  TEXT,
      size_bytes  BIGINT,
      created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
      updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX assets_user_idx ON assets (user_id, created_at)`
})
