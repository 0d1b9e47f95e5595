/**
 * `GET /readyz` is 503 with the reason while the database does not answer and
 * 200 again once it does; `GET /healthz` (liveness) stays 200 throughout. The
 * database "goes away" for the gateway's own database only: connections to it
 * are refused (`ALLOW_CONNECTIONS false`) and the open ones ended.
 */
import { PgClient } from "@effect/sql-pg"
import { ok, strictEqual } from "node:assert/strict"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { POSTGRES_URL, startGateway } from "../support/Gateway.ts"
import { twoChannels } from "./Support.ts"

const admin = (text: string) =>
  Effect.runPromise(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(text)).pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(POSTGRES_URL), maxConnections: 1 })),
      Effect.scoped
    ) as Effect.Effect<unknown, unknown, never>
  )

const probe = async (url: string) => {
  const response = await fetch(url)
  return { status: response.status, body: await response.json() as Record<string, unknown> }
}

/** Polls `/readyz` until it answers `status` (the pool notices a lost connection on its next use). */
const until = async (url: string, status: number) => {
  let last = await probe(url)
  for (let tries = 0; tries < 100 && last.status !== status; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    last = await probe(url)
  }
  return last
}

Deno.test("readyz: 503 with the reason while the database is away, 200 when it returns", async () => {
  const gateway = await startGateway({ store: "postgres", config: (url) => twoChannels(url) })
  const name = new URL(gateway.databaseUrl!).pathname.slice(1)
  try {
    const ready = await probe(`${gateway.url}/readyz`)
    strictEqual(ready.status, 200)
    strictEqual(ready.body.status, "ready")

    await admin(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`)
    await admin(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${name}'`)
    const away = await until(`${gateway.url}/readyz`, 503)
    strictEqual(away.status, 503)
    strictEqual(away.body.status, "not_ready")
    strictEqual(away.body.reason, "The database does not answer.")
    strictEqual((await probe(`${gateway.url}/healthz`)).status, 200, "liveness is not readiness")

    await admin(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`)
    const back = await until(`${gateway.url}/readyz`, 200)
    strictEqual(back.status, 200)
    ok(back.body.status === "ready")
  } finally {
    await admin(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`).catch(() => undefined)
    await gateway.close()
  }
})
