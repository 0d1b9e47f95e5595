/**
 * The embedded store (`layerPglite`): a new data dir is created, migrated and
 * served with the memory settings of `pgliteStartParams` (shared_buffers and
 * maintenance_work_mem 16 MB); what it stored is there when the directory is
 * opened again (this time without creating it); an in-memory store gets the
 * same settings.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { layerPglite } from "../../src/storage/Database.ts"

type Setting = { readonly setting: string }

/** The server's memory settings and the migrations it recorded. */
const inspect = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const [buffers] = yield* sql.unsafe<Setting>("SELECT current_setting('shared_buffers') AS setting")
  const [maintenance] = yield* sql.unsafe<Setting>("SELECT current_setting('maintenance_work_mem') AS setting")
  const migrations = yield* sql.unsafe<{ readonly count: unknown }>(
    "SELECT count(*) AS count FROM effect_sql_migrations"
  )
  return { buffers: buffers.setting, maintenance: maintenance.setting, migrations: Number(migrations[0].count) }
})

const run = <A>(dataDir: string | undefined, program: Effect.Effect<A, unknown, SqlClient.SqlClient>) =>
  program.pipe(Effect.provide(layerPglite(dataDir)), Effect.scoped, Effect.runPromise)

Deno.test("embedded store: a new data dir is created, migrated and served with 16 MB buffers; reopened, it keeps its rows", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "sluice-pglite-" })
  try {
    const first = await run(
      dataDir,
      Effect.gen(function* () {
        const figures = yield* inspect
        const sql = yield* SqlClient.SqlClient
        yield* sql.unsafe("CREATE TABLE kept (note text NOT NULL)")
        yield* sql.unsafe("INSERT INTO kept (note) VALUES ('written before the restart')")
        return figures
      })
    )
    deepStrictEqual({ buffers: first.buffers, maintenance: first.maintenance }, {
      buffers: "16MB",
      maintenance: "16MB"
    })
    ok(first.migrations >= 10, `every migration ran (${first.migrations} recorded)`)
    const version = await Deno.readTextFile(`${dataDir}/PG_VERSION`)
    ok(/^\d+\s*$/.test(version), `the data dir holds a cluster (PG_VERSION "${version.trim()}")`)

    const second = await run(
      dataDir,
      Effect.gen(function* () {
        const figures = yield* inspect
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql.unsafe<{ readonly note: string }>("SELECT note FROM kept")
        return { ...figures, notes: rows.map((row) => row.note) }
      })
    )
    deepStrictEqual(second.notes, ["written before the restart"])
    strictEqual(second.migrations, first.migrations, "no migration ran twice")
    strictEqual(second.buffers, "16MB")
  } finally {
    await Deno.remove(dataDir, { recursive: true })
  }
})

Deno.test("embedded store: an in-memory store is served with the same settings", async () => {
  const figures = await run(undefined, inspect)
  deepStrictEqual({ buffers: figures.buffers, maintenance: figures.maintenance }, {
    buffers: "16MB",
    maintenance: "16MB"
  })
  ok(figures.migrations >= 10)
})
