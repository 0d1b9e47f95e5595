/**
 * Accounts and the admin API: user profile fields, server-side browser
 * sessions (only the SHA-256 of a session id is stored), OAuth states and
 * linked identities, the audit table, quota top-ups (one row per top-up),
 * the token IP allow-list, the two cache prices of a model, a channel's last
 * test, and the catalog version that other instances poll to reload their
 * routing index after an admin change.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE users ADD COLUMN display_name TEXT NOT NULL DEFAULT ''`
  yield* sql`ALTER TABLE users ADD COLUMN email TEXT`
  yield* sql`ALTER TABLE tokens ADD COLUMN allow_ips TEXT[]`
  yield* sql`ALTER TABLE models ADD COLUMN cached_input_price NUMERIC CHECK (cached_input_price >= 0)`
  yield* sql`ALTER TABLE models ADD COLUMN cache_write_price NUMERIC CHECK (cache_write_price >= 0)`
  yield* sql`ALTER TABLE channels ADD COLUMN tested_at TIMESTAMPTZ`
  yield* sql`ALTER TABLE channels ADD COLUMN test_latency_ms INTEGER`
  yield* sql`ALTER TABLE channels ADD COLUMN test_error TEXT`
  yield* sql`
    CREATE TABLE sessions (
      id_hash      TEXT PRIMARY KEY,
      user_id      BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
      last_seen_at TIMESTAMPTZ NOT NULL DEFAULT now(),
      expires_at   TIMESTAMPTZ NOT NULL
    )`
  yield* sql`CREATE INDEX sessions_user_idx ON sessions (user_id)`
  yield* sql`
    CREATE TABLE oauth_states (
      state_hash    TEXT PRIMARY KEY,
      browser_hash  TEXT NOT NULL,
      user_id       BIGINT REFERENCES users (id) ON DELETE CASCADE,
      provider      TEXT,
      nonce         TEXT NOT NULL,
      code_verifier TEXT NOT NULL,
      expires_at    TIMESTAMPTZ NOT NULL
    )`
  yield* sql`
    CREATE TABLE oauth_identities (
      provider   TEXT NOT NULL,
      subject    TEXT NOT NULL,
      user_id    BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
      PRIMARY KEY (provider, subject),
      UNIQUE (user_id, provider)
    )`
  yield* sql`
    CREATE TABLE audit_log (
      id         BIGINT PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
      actor_id   BIGINT,
      actor_name TEXT NOT NULL,
      action     TEXT NOT NULL,
      target     TEXT NOT NULL,
      before     JSONB,
      after      JSONB,
      created_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE quota_topups (
      id         BIGINT PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
      user_id    BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      amount     BIGINT NOT NULL CHECK (amount > 0),
      actor_id   BIGINT,
      note       TEXT NOT NULL DEFAULT '',
      created_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE catalog_version (
      id      INTEGER PRIMARY KEY CHECK (id = 1),
      version BIGINT NOT NULL
    )`
  yield* sql`INSERT INTO catalog_version (id, version) VALUES (1, 0)`
  yield* sql`CREATE INDEX usage_logs_user_created_idx ON usage_logs (user_id, created_at)`
  yield* sql`CREATE INDEX usage_logs_created_idx ON usage_logs (created_at)`
})
