/**
 * Secrets the gateway makes for itself and every instance sharing the
 * database must agree on: one row per `name` (`url_signing`: the key of the
 * signed URLs the gateway hands out, `services/UrlSigner.ts`), `secret` its
 * value as hex. A row is written once, by the first instance that needs it
 * (`ON CONFLICT DO NOTHING`), and then only read.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE gateway_secrets (
      name        TEXT PRIMARY KEY,
      secret      TEXT NOT NULL,
      created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
    )`
})
