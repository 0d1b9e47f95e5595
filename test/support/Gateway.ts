/**
 * Starts the gateway in-process on a random loopback port, in front of an
 * emulator, on a fresh store: embedded PGlite (a copy of a created and
 * migrated template in a temporary directory, deleted when the gateway stops,
 * as an in-memory store would vanish; see `PgliteTemplate.ts`), or a new
 * PostgreSQL database created for the test and dropped after it.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted, Result } from "effect"
import { SqlClient } from "effect/sql"
import { makeHandler } from "../../src/App.ts"
import { type BootstrapFile, parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { type Emulator, startEmulator } from "../../emulator/Emulator.ts"
import type { OtlpOptions } from "../../src/observability/Tracing.ts"
import { assertNoSecrets, collectingTelemetry, promptsOf, secretsOf } from "./LogScan.ts"
import { freshPglite } from "./PgliteTemplate.ts"

/** The PostgreSQL server the tests use (trust auth on this machine and in CI). */
export const POSTGRES_URL = Deno.env.get("SLUICE_TEST_POSTGRES") ?? "postgres://postgres@127.0.0.1:5432/postgres"

/** The root user's password in test gateways. */
export const ROOT_PASSWORD = "root-password-for-tests"

/** The stores a test can run on. */
export type Store = "pglite" | "postgres"

const admin = <A>(statement: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  Effect.runPromise(
    Effect.flatMap(SqlClient.SqlClient, statement).pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(POSTGRES_URL), maxConnections: 1 })),
      Effect.scoped
    ) as Effect.Effect<A, unknown, never>
  )

/** Creates an empty PostgreSQL database; returns its URL and a function that drops it. */
export const freshPostgres = async (): Promise<{ url: string; drop: () => Promise<void> }> => {
  const name = `sluice_test_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`
  await admin((sql) => sql.unsafe(`CREATE DATABASE ${name}`))
  const url = POSTGRES_URL.replace(/\/[^/]*$/, `/${name}`)
  return {
    url,
    drop: () => admin((sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined)
  }
}

/** A running gateway for a test. */
export interface TestGateway {
  readonly url: string
  /** With `tls`: the same gateway on a second, TLS listener (`https://127.0.0.1:<port>`), for `wss://` clients. */
  readonly tlsUrl: string | undefined
  readonly emulator: Emulator
  /** Every log line the gateway wrote (access log and Effect's lines, JSON), in order. */
  readonly logs: ReadonlyArray<string>
  /** Runs SQL against the gateway's store. */
  /** Runs `text` on the gateway's PostgreSQL store, once its charges are folded (`settled`) unless `settle` is false. */
  readonly query: <A extends object>(text: string, settle?: boolean) => Promise<ReadonlyArray<A>>
  /**
   * Resolves once every charge the gateway booked is folded into the balances and the usage log (an answer ends
   * once its charge is journaled; the fold follows within a tick). `query` waits for it first.
   */
  readonly settled: () => Promise<void>
  readonly handler: (request: Request) => Promise<Response>
  /** The graceful shutdown's socket drain: responses in flight finish until `deadline` (epoch ms), then 1001. */
  readonly drainSockets: (deadline: number) => Promise<void>
  /** Stops the server, disposes the app (flushing the usage log), stops the emulator, drops the store. */
  readonly close: () => Promise<void>
  /** Stops only the server and the app, keeping the store (for restart tests). */
  readonly stop: () => Promise<void>
  readonly databaseUrl: string | undefined
}

/** A bootstrap file with one openai channel on the emulator, one user `alice` and one key. */
export const basicConfig = (emulatorUrl: string, overrides: Partial<BootstrapFile> = {}): BootstrapFile => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: { "gpt-test": { input: 2, output: 8 }, "gpt-free": { free: true } },
      channels: [{
        name: "emu-openai",
        type: "openai",
        base_url: emulatorUrl,
        keys: ["sk-test-upstream-1"],
        models: ["gpt-test", "gpt-free"]
      }],
      users: [{
        username: "alice",
        group: "default",
        quota: 10_000_000,
        tokens: [{ name: "main", key: "sk-test-alice-0001" }]
      }],
      ...overrides
    }),
    "test.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

/** Starts an emulator and a gateway configured by `config(emulatorUrl)`. */
export const startGateway = async (options: {
  readonly config: (emulatorUrl: string) => BootstrapFile
  readonly store?: Store
  readonly databaseUrl?: string
  /**
   * On PostgreSQL: the gateway's data directory (`SLUICE_DATA_DIR`), where the charge journal spills when the
   * database refuses it (default none: `memory://`, no spill file). Ignored on PGlite (its store's directory).
   */
  readonly dataDir?: string
  /** The embedded store in memory (`memory://`, as `deno task demo` runs it) instead of a data directory on disk. */
  readonly inMemoryStore?: boolean
  readonly emulator?: Emulator
  /** Closes the given `emulator` with the gateway too (one the caller started only for it); default: only one it started. */
  readonly ownsEmulator?: boolean
  readonly redisUrl?: string
  readonly redisPrefix?: string
  /** OTLP export of traces and logs (default none). */
  readonly otlp?: OtlpOptions
  /** The root user's password (default `ROOT_PASSWORD`). */
  readonly rootPassword?: string
  /** The address the gateway is told it listens on (`HOST`), for its startup notices (default none). */
  readonly listenHost?: string
  /** The body deadline in seconds (`SLUICE_BODY_TIMEOUT_SECONDS`; default the gateway's). */
  readonly bodyTimeoutSeconds?: number
  /** Requests one address may have open (`SLUICE_MAX_OPEN_REQUESTS_PER_ADDRESS`; default the gateway's). */
  readonly maxOpenRequestsPerAddress?: number
  /** A certificate and key (PEM) to serve a second, TLS listener with (`tlsUrl`); default none. */
  readonly tls?: { readonly cert: string; readonly key: string }
}): Promise<TestGateway> => {
  const emulator = options.emulator ?? startEmulator()
  const postgres = options.databaseUrl === undefined && options.store === "postgres" ? await freshPostgres() : undefined
  const databaseUrl = options.databaseUrl ?? postgres?.url
  const pglite = databaseUrl === undefined && options.inMemoryStore !== true ? await freshPglite() : undefined
  const file = options.config(emulator.url)
  const telemetry = collectingTelemetry()
  const { handler, dispose, drainSockets } = makeHandler({
    databaseUrl,
    dataDir: pglite?.dataDir ?? options.dataDir ?? "memory://",
    redisUrl: options.redisUrl,
    redisPrefix: options.redisPrefix,
    file,
    usageFlushMillis: 50,
    telemetry: telemetry.options,
    otlp: options.otlp,
    rootPassword: options.rootPassword ?? ROOT_PASSWORD,
    listenHost: options.listenHost,
    bodyTimeoutSeconds: options.bodyTimeoutSeconds,
    maxOpenRequestsPerAddress: options.maxOpenRequestsPerAddress
  })
  const ready = await handler(new Request("http://localhost/healthz"))
  await ready.body?.cancel()
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    (request, info) => handler(request, info)
  )
  const url = `http://127.0.0.1:${server.addr.port}`
  const tlsServer = options.tls === undefined ? undefined : Deno.serve(
    { port: 0, hostname: "127.0.0.1", cert: options.tls.cert, key: options.tls.key, onListen: () => {} },
    (request, info) => handler(request, info)
  )
  let stopped = false
  const stop = async () => {
    if (stopped) return
    stopped = true
    // As `main.ts` does: WebSocket sessions drain before the servers' shutdown would close them.
    await drainSockets(Date.now() + 5_000)
    await tlsServer?.shutdown()
    await server.shutdown()
    await dispose()
    await pglite?.remove()
    // Every gateway's log output is scanned for keys and prompt text (see LogScan.ts).
    assertNoSecrets(telemetry.lines, secretsOf(file), promptsOf(emulator.requests))
  }
  /** Resolves once the gateway keeps no batch of charges unfolded (journaled answers are committed within a tick). */
  const settled = async () => {
    // A stopped gateway folded everything when its layers closed.
    for (let tries = 0; tries < 200 && !stopped; tries++) {
      const response = await fetch(`${url}/metrics`)
      const text = await response.text()
      const line = text.split("\n").find((entry) => entry.startsWith("sluice_ledger_unfolded_batches"))
      if (line === undefined || line.trim().endsWith(" 0")) return
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    if (!stopped) throw new Error("the gateway's charges were not folded within 2 s")
  }
  const query = async <A extends object>(text: string, settle = true): Promise<ReadonlyArray<A>> => {
    if (settle) await settled()
    if (databaseUrl !== undefined) {
      return await Effect.runPromise(
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<A>(text)).pipe(
          Effect.provide(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 1 })),
          Effect.scoped
        ) as Effect.Effect<ReadonlyArray<A>, unknown, never>
      )
    }
    const response = await handler(new Request("http://localhost/__never"))
    await response.body?.cancel()
    throw new Error("query() needs a PostgreSQL store; use the usage routes on PGlite")
  }
  return {
    url,
    tlsUrl: tlsServer === undefined ? undefined : `https://127.0.0.1:${tlsServer.addr.port}`,
    emulator,
    query,
    settled,
    handler,
    drainSockets,
    databaseUrl,
    logs: telemetry.lines,
    stop,
    // The database is dropped whatever the stops threw, so a failed test leaves no database behind.
    close: async () => {
      try {
        await stop()
        if (options.emulator === undefined || options.ownsEmulator === true) await emulator.close()
      } finally {
        await postgres?.drop()
      }
    }
  }
}

/** Lays `Layer` out for tests that need it. */
export type { Layer }
