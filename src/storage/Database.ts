/**
 * The SQL client plus migrations, as one layer, for both stores: PostgreSQL
 * (`DATABASE_URL`) and the embedded PGlite (WASM Postgres persisted in
 * `SLUICE_DATA_DIR`), reached through the same `@effect/sql-pg` client over a
 * loopback socket, so there is one SQL dialect and one migration set.
 *
 * @since 0.1.0
 */
import { PgClient } from "@effect/sql-pg"
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { Effect, Layer, Redacted } from "effect"
import { Migrator, type SqlClient, type SqlError } from "effect/sql"
import { loader } from "../../migrations/mod.ts"

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

/**
 * The embedded store: PGlite in `dataDir` (created if absent; `undefined` or
 * `memory://` keeps it in memory), served on a random loopback port to one
 * `PgClient` connection (PGlite has a single session), migrated. The socket
 * server and the database close with the layer's scope.
 *
 * @category layers
 */
export const layerPglite = (
  dataDir: string | undefined
): Layer.Layer<SqlClient.SqlClient | PgClient.PgClient, SqlError.SqlError> =>
  Layer.unwrap(
    Effect.gen(function* () {
      const db = yield* Effect.acquireRelease(
        Effect.promise(() => PGlite.create(dataDir ?? "memory://")),
        (db) => Effect.promise(() => db.close()).pipe(Effect.ignore)
      )
      const server = yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const server = new PGLiteSocketServer({ db, port: 0, host: "127.0.0.1" })
          await server.start()
          return server
        }),
        (server) => Effect.promise(() => server.stop()).pipe(Effect.ignore)
      )
      const [host, port] = server.getServerConn().split(":")
      return runMigrations.pipe(
        Layer.provideMerge(
          PgClient.layer({
            host,
            port: Number(port),
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
