/**
 * SQL access to a gateway's store from a test, on both stores: PostgreSQL at
 * any time, and PGlite kept in a temporary directory (instead of memory), so
 * a test can open it after the gateway stopped and read what it wrote. The
 * PGlite directory starts as a copy of a created and migrated template
 * (`PgliteTemplate.ts`).
 */
import { PgClient } from "@effect/sql-pg"
import { PGlite } from "@electric-sql/pglite"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { makeHandler } from "../../src/App.ts"
import type { BootstrapFile } from "../../src/config/BootstrapFile.ts"
import { type Emulator, startEmulator } from "../../emulator/Emulator.ts"
import { freshPostgres, type Store } from "./Gateway.ts"
import { assertNoSecrets, collectingTelemetry, promptsOf, secretsOf } from "./LogScan.ts"
import { freshPglite } from "./PgliteTemplate.ts"

/** A row as the store returned it; numbers may arrive as `number`, `bigint` or numeric strings. */
export type Row = Readonly<Record<string, unknown>>

/** Runs one SQL statement on the PostgreSQL database at `url`. */
export const queryPostgres = (url: string, text: string): Promise<ReadonlyArray<Row>> =>
  Effect.runPromise(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<Row>(text)).pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })),
      Effect.scoped
    ) as Effect.Effect<ReadonlyArray<Row>, unknown, never>
  )

/** Opens the (closed) PGlite store in `dataDir`, runs one statement and closes it again. */
export const queryPglite = async (dataDir: string, text: string): Promise<ReadonlyArray<Row>> => {
  const db = await PGlite.create(dataDir)
  try {
    const result = await db.query<Row>(text)
    return result.rows
  } finally {
    await db.close()
  }
}

/** A store value as a bigint (`BIGINT`, `NUMERIC` sums and counts arrive in different JS types). */
export const big = (value: unknown): bigint => BigInt(String(value ?? 0))

/** The number of tables outside the system schemas of the PostgreSQL database at `url`. */
export const tableCount = async (url: string): Promise<number> => {
  const [row] = await queryPostgres(
    url,
    "SELECT count(*) AS count FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema')"
  )
  return Number(row.count)
}

/** A running gateway whose store can be read after it stopped. */
export interface StoredGateway {
  readonly url: string
  readonly emulator: Emulator
  readonly store: Store
  /** Stops the server and disposes the app (flushing the usage log); the store stays. */
  readonly stop: () => Promise<void>
  /** Runs SQL on the store: PostgreSQL at any time, PGlite only after `stop()`. */
  readonly query: (text: string) => Promise<ReadonlyArray<Row>>
  /** Stops everything and removes the store. */
  readonly close: () => Promise<void>
}

/**
 * Starts an emulator (unless one is given) and a gateway configured by
 * `config(emulatorUrl)` on a fresh store: a new PostgreSQL database, or PGlite
 * in a new temporary directory (a copy of the migrated template).
 */
export const startStoredGateway = async (options: {
  readonly store: Store
  readonly config: (emulatorUrl: string) => BootstrapFile
  readonly emulator?: Emulator
}): Promise<StoredGateway> => {
  const emulator = options.emulator ?? startEmulator()
  const postgres = options.store === "postgres" ? await freshPostgres() : undefined
  const pglite = options.store === "pglite" ? await freshPglite() : undefined
  const dataDir = pglite?.dataDir ?? "memory://"
  const file = options.config(emulator.url)
  const telemetry = collectingTelemetry()
  const { handler, dispose } = makeHandler({
    databaseUrl: postgres?.url,
    dataDir,
    redisUrl: undefined,
    file,
    usageFlushMillis: 50,
    telemetry: telemetry.options
  })
  const removeStore = async () => {
    await postgres?.drop()
    await pglite?.remove()
  }
  try {
    const ready = await handler(new Request("http://localhost/healthz"))
    await ready.body?.cancel()
    if (ready.status !== 200) throw new Error(`The gateway did not start: ${ready.status}`)
  } catch (error) {
    await dispose()
    await removeStore()
    if (options.emulator === undefined) await emulator.close()
    throw error
  }
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    (request, info) => handler(request, info)
  )
  let stopped = false
  const stop = async () => {
    if (stopped) return
    stopped = true
    await server.shutdown()
    await dispose()
    // Every gateway's log output is scanned for keys and prompt text (see LogScan.ts).
    assertNoSecrets(telemetry.lines, secretsOf(file), promptsOf(emulator.requests))
  }
  const query = (text: string): Promise<ReadonlyArray<Row>> => {
    if (postgres !== undefined) return queryPostgres(postgres.url, text)
    if (!stopped) return Promise.reject(new Error("PGlite is read only after stop(): it has a single session"))
    return queryPglite(dataDir, text)
  }
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    emulator,
    store: options.store,
    stop,
    query,
    close: async () => {
      await stop()
      if (options.emulator === undefined) await emulator.close()
      await removeStore()
    }
  }
}
