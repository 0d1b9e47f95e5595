/**
 * The core schema: groups, model prices, channels with their keys and
 * abilities, users, tokens and usage logs. Every money amount is a BIGINT in
 * quota units (1 unit = 1 micro-USD); prices and ratios are exact NUMERICs.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE groups (
      name  TEXT PRIMARY KEY,
      ratio  NUMERIC NOT NULL CHECK (ratio >= 0),
      limits JSONB
    )`
  yield* sql`
    CREATE TABLE models (
      name         TEXT PRIMARY KEY,
      input_price  NUMERIC CHECK (input_price >= 0),
      output_price NUMERIC CHECK (output_price >= 0),
      per_image    NUMERIC CHECK (per_image >= 0),
      per_second   NUMERIC CHECK (per_second >= 0),
      family       TEXT,
      free         BOOLEAN NOT NULL DEFAULT FALSE
    )`
  yield* sql`
    CREATE TABLE channels (
      id            BIGINT PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
      name          TEXT NOT NULL UNIQUE,
      type          TEXT NOT NULL,
      base_url      TEXT NOT NULL,
      models        TEXT[] NOT NULL,
      groups        TEXT[] NOT NULL,
      priority      INTEGER NOT NULL DEFAULT 0,
      weight        INTEGER NOT NULL DEFAULT 1 CHECK (weight >= 0),
      model_mapping JSONB NOT NULL DEFAULT '{}',
      settings      JSONB NOT NULL DEFAULT '{}',
      enabled       BOOLEAN NOT NULL DEFAULT TRUE
    )`
  yield* sql`
    CREATE TABLE channel_keys (
      channel_id      BIGINT NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
      position        INTEGER NOT NULL,
      key             TEXT NOT NULL,
      enabled         BOOLEAN NOT NULL DEFAULT TRUE,
      disabled_reason TEXT,
      PRIMARY KEY (channel_id, position)
    )`
  yield* sql`
    CREATE TABLE abilities (
      group_name TEXT NOT NULL,
      model      TEXT NOT NULL,
      channel_id BIGINT NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
      priority   INTEGER NOT NULL,
      weight     INTEGER NOT NULL,
      enabled    BOOLEAN NOT NULL DEFAULT TRUE,
      PRIMARY KEY (group_name, model, channel_id)
    )`
  yield* sql`
    CREATE TABLE users (
      id            BIGINT PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
      username      TEXT NOT NULL UNIQUE,
      password_hash TEXT,
      role          TEXT NOT NULL DEFAULT 'user',
      group_name    TEXT NOT NULL,
      quota         BIGINT NOT NULL CHECK (quota >= 0),
      used_quota    BIGINT NOT NULL DEFAULT 0 CHECK (used_quota >= 0),
      request_count BIGINT NOT NULL DEFAULT 0,
      enabled       BOOLEAN NOT NULL DEFAULT TRUE,
      limits        JSONB,
      created_at    TIMESTAMPTZ NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE tokens (
      id           BIGINT PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
      user_id      BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      name         TEXT NOT NULL,
      key_hash     TEXT NOT NULL UNIQUE,
      key_prefix   TEXT NOT NULL,
      remain_quota BIGINT CHECK (remain_quota >= 0),
      used_quota   BIGINT NOT NULL DEFAULT 0 CHECK (used_quota >= 0),
      models       TEXT[],
      group_name   TEXT,
      expires_at   TIMESTAMPTZ,
      enabled      BOOLEAN NOT NULL DEFAULT TRUE,
      limits       JSONB,
      created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
      UNIQUE (user_id, name)
    )`
  yield* sql`
    CREATE TABLE usage_logs (
      id                BIGINT PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
      request_id        TEXT NOT NULL,
      attempt           INTEGER NOT NULL DEFAULT 1,
      user_id           BIGINT NOT NULL,
      token_id          BIGINT NOT NULL,
      channel_id        BIGINT,
      model             TEXT NOT NULL,
      upstream_model    TEXT,
      prompt_tokens     INTEGER NOT NULL DEFAULT 0,
      completion_tokens INTEGER NOT NULL DEFAULT 0,
      cached_tokens     INTEGER NOT NULL DEFAULT 0,
      reasoning_tokens  INTEGER NOT NULL DEFAULT 0,
      cost              BIGINT NOT NULL DEFAULT 0 CHECK (cost >= 0),
      latency_ms        INTEGER NOT NULL DEFAULT 0,
      stream            BOOLEAN NOT NULL DEFAULT FALSE,
      status            INTEGER NOT NULL,
      error             TEXT,
      created_at        TIMESTAMPTZ NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX usage_logs_token_idx ON usage_logs (token_id)`
  yield* sql`CREATE INDEX usage_logs_request_idx ON usage_logs (request_id)`
})
