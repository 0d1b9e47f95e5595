/**
 * A throwaway PostgreSQL database for `deno task bench --postgres`: created on
 * the server at `SLUICE_BENCH_POSTGRES` (default
 * `postgres://postgres@127.0.0.1:5432/postgres`), dropped after the run.
 *
 * @since 0.1.0
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"

/** The maintenance database the bench connects to for CREATE / DROP DATABASE. @category constants */
export const adminUrl = Deno.env.get("SLUICE_BENCH_POSTGRES") ?? "postgres://postgres@127.0.0.1:5432/postgres"

const admin = (statement: string): Promise<void> =>
  Effect.runPromise(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(statement)).pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(adminUrl), maxConnections: 1 })),
      Effect.scoped,
      Effect.asVoid
    ) as Effect.Effect<void, unknown, never>
  )

/** A created database: its URL and how to drop it. @category models */
export interface BenchDatabase {
  readonly name: string
  readonly url: string
  /** Drops it (`WITH (FORCE)`, so a leftover connection does not block). */
  readonly drop: () => Promise<void>
}

/**
 * Creates an empty database `sluice_bench_<16 hex>`. Fails with the server's
 * error when PostgreSQL cannot be reached or refuses.
 *
 * @category postgres
 */
export const createBenchDatabase = async (): Promise<BenchDatabase> => {
  const name = `sluice_bench_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`
  await admin(`CREATE DATABASE ${name}`)
  return {
    name,
    url: adminUrl.replace(/\/[^/]*$/, `/${name}`),
    drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  }
}
