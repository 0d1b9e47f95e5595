/**
 * Account hardening: one rule for usernames that differ only in case (a
 * unique index on the lower-cased name, so OAuth sign-up and password
 * registration cannot make `Root` beside `root`; names that already clash
 * keep the oldest and get `-<id>` appended to the others), and the session
 * that asked for an OAuth link state (its digest), so the link completes
 * only while that session lives.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    UPDATE users u SET username = u.username || '-' || u.id
    WHERE EXISTS (SELECT 1 FROM users v WHERE lower(v.username) = lower(u.username) AND v.id < u.id)`
  yield* sql`CREATE UNIQUE INDEX users_username_lower_idx ON users (lower(username))`
  yield* sql`ALTER TABLE oauth_states ADD COLUMN session_hash TEXT`
  yield* sql`CREATE INDEX oauth_states_user_idx ON oauth_states (user_id)`
})
