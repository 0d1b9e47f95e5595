/**
 * The SQL client plus migrations, as one layer, for both stores: PostgreSQL
 * (`DATABASE_URL`) and the embedded PGlite (WASM Postgres persisted in
 * `SLUICE_DATA_DIR`), reached through the same `@effect/sql-pg` client over a
 * loopback socket, so there is one SQL dialect and one migration set.
 *
 * @since 0.1.0
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { Migrator, type SqlClient, SqlError } from "effect/sql"
import { loader } from "../../migrations/mod.ts"
import type { PgliteWorkerCommand, PgliteWorkerEvent } from "./PgliteWorker.ts"

// Migrations run at start, before serving: one that fails is a gateway that cannot start, a defect.
const runMigrations = Layer.effectDiscard(Migrator.make({})({ loader }).pipe(Effect.orDie))

/**
 * PostgreSQL at `url` (`postgres://…`), pool of `maxConnections`, migrated.
 *
 * @category layers
 */
export const layerPostgres = (
  url: string,
  maxConnections = 10
): Layer.Layer<SqlClient.SqlClient | PgClient.PgClient, SqlError.SqlError> =>
  runMigrations.pipe(
    Layer.provideMerge(PgClient.layer({ url: Redacted.make(url), maxConnections, applicationName: "sluice" }))
  )

type Opened = { readonly worker: Worker; readonly host: string; readonly port: number }

/**
 * Starts one PGlite worker (`PgliteWorker.ts`) on `dataDir`: `Opened` once it
 * serves, or `"initialized"` when it has just created the database there (the
 * worker is then ended: the next one serves).
 */
const startWorker = (dataDir: string) =>
  Effect.callback<Opened | "initialized", SqlError.SqlError>((resume) => {
    const worker = new Worker(new URL("./PgliteWorker.ts", import.meta.url), { type: "module" })
    const fail = (message: string) => {
      worker.terminate()
      resume(Effect.fail(
        new SqlError.SqlError({ reason: new SqlError.ConnectionError({ cause: new Error(message), message }) })
      ))
    }
    worker.onerror = (event) => {
      event.preventDefault()
      fail(`The embedded database could not start: ${event.message}`)
    }
    worker.onmessage = (message: MessageEvent<PgliteWorkerEvent>) => {
      const event = message.data
      if (event.type === "ready") resume(Effect.succeed({ worker, host: event.host, port: event.port }))
      else if (event.type === "initialized") {
        // Ending the worker hands back the memory the creation used (see `PgliteWorker.ts`).
        worker.terminate()
        resume(Effect.succeed("initialized"))
      } else if (event.type === "failed") fail(`The embedded database could not open ${dataDir}: ${event.message}`)
    }
    worker.postMessage({ type: "open", dataDir } satisfies PgliteWorkerCommand)
  })

/**
 * Starts the PGlite worker on `dataDir` and waits for its socket (when the
 * directory held no database, a first worker creates it and is ended, and a
 * second one serves); closing stops the server and the database, then the
 * worker.
 */
const pgliteWorker = (dataDir: string) =>
  Effect.acquireRelease(
    Effect.gen(function* () {
      const first = yield* startWorker(dataDir)
      const opened = first === "initialized" ? yield* startWorker(dataDir) : first
      if (opened !== "initialized") return opened
      const message = `The embedded database in ${dataDir} was created but could not be opened.`
      return yield* Effect.fail(
        new SqlError.SqlError({ reason: new SqlError.ConnectionError({ cause: new Error(message), message }) })
      )
    }),
    ({ worker }) =>
      Effect.callback<void>((resume) => {
        worker.onmessage = (message: MessageEvent<PgliteWorkerEvent>) => {
          if (message.data.type === "closed") resume(Effect.void)
        }
        worker.postMessage({ type: "close" } satisfies PgliteWorkerCommand)
      }).pipe(
        Effect.timeoutOrElse({ duration: "10 seconds", orElse: () => Effect.void }),
        Effect.ensuring(Effect.sync(() => worker.terminate()))
      )
  )

/**
 * The embedded store: PGlite in `dataDir` (created if absent; `undefined` or
 * `memory://` keeps it in memory), running in its own worker thread and
 * served on a random loopback port to one `PgClient` connection (PGlite has a
 * single session), migrated. The worker closes with the layer's scope.
 *
 * @category layers
 */
export const layerPglite = (
  dataDir: string | undefined
): Layer.Layer<SqlClient.SqlClient | PgClient.PgClient, SqlError.SqlError> =>
  Layer.unwrap(
    Effect.gen(function* () {
      const { host, port } = yield* pgliteWorker(dataDir ?? "memory://")
      return runMigrations.pipe(
        Layer.provideMerge(
          PgClient.layer({
            host,
            port,
            database: "postgres",
            username: "postgres",
            maxConnections: 1,
            applicationName: "sluice"
          })
        )
      )
    })
  )

/**
 * Chooses the store from the environment values: PostgreSQL when
 * `databaseUrl` is set, else PGlite in `dataDir`.
 *
 * @category layers
 */
export const layerFromSettings = (settings: {
  readonly databaseUrl: string | undefined
  readonly dataDir: string
}): Layer.Layer<SqlClient.SqlClient | PgClient.PgClient, SqlError.SqlError> =>
  settings.databaseUrl !== undefined && settings.databaseUrl !== ""
    ? layerPostgres(settings.databaseUrl)
    : layerPglite(settings.dataDir)
