/**
 * Fresh embedded stores for tests without paying for `initdb` and the
 * migrations each time. Creating a PGlite cluster and migrating it costs
 * seconds of CPU; copying a cluster that was created and migrated once costs
 * a fraction of that, and the gateway opening the copy finds every migration
 * recorded, so it serves exactly the store a new one would have.
 *
 * The template is built once per machine for each set of inputs that shape it
 * (the migrations, the embedded store's code and the PGlite version pinned in
 * `deno.json`): in `<temp dir>/sluice_pglite_template_<hash>`, made by
 * `layerPglite` itself in a scratch directory and renamed into place when
 * complete, so parallel test processes either find a whole template or build
 * their own and keep the first one renamed. A change to any input gives a new
 * hash, hence a new template; old ones stay in the temp dir (about 40 MB each)
 * until it is cleared.
 *
 * A copy lives in its own temporary directory and is removed by `remove`, or
 * when the process exits if a test never closed its gateway.
 *
 * Not for tests of creating a store (`test/storage/PgliteStore.test.ts`, the
 * first start of `src/main.ts`): those create theirs.
 */
import type { PgClient } from "@effect/sql-pg"
import { Effect, Layer } from "effect"
import { Hex } from "effect/encoding"
import type { SqlClient, SqlError } from "effect/sql"
import { layerPglite } from "../../src/storage/Database.ts"

const ROOT = new URL("../../", import.meta.url)

/** Files whose contents decide what the template holds. */
const inputs = (): ReadonlyArray<URL> => {
  const migrations = [...Deno.readDirSync(new URL("migrations/", ROOT))]
    .filter((entry) => entry.isFile)
    .map((entry) => entry.name)
    .sort()
    .map((name) => new URL(`migrations/${name}`, ROOT))
  return [
    ...migrations,
    new URL("src/storage/Database.ts", ROOT),
    new URL("src/storage/PgliteWorker.ts", ROOT),
    new URL("deno.json", ROOT)
  ]
}

/** A SHA-256 over the template's inputs (names and contents), hex, first 16 characters. */
const inputsHash = async (): Promise<string> => {
  const parts: Array<string> = []
  for (const url of inputs()) parts.push(url.pathname.slice(ROOT.pathname.length), await Deno.readTextFile(url))
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(parts.join("\u0000")))
  return Hex.encode(new Uint8Array(digest)).slice(0, 16)
}

/** The system temp directory (where `Deno.makeTempDir` puts its directories). */
const tempRoot = async (): Promise<string> => {
  const probe = await Deno.makeTempDir({ prefix: "sluice_probe_" })
  await Deno.remove(probe)
  return probe.slice(0, probe.lastIndexOf("/"))
}

const exists = (path: string): Promise<boolean> => Deno.stat(path).then(() => true, () => false)

/** Builds the template in a scratch directory and renames it to `target` (unless another process did first). */
const build = async (target: string): Promise<void> => {
  const scratch = await Deno.makeTempDir({ prefix: "sluice_pglite_template_build_" })
  try {
    // The gateway's own store layer: `initdb` in its first worker, the migrations through the second; closed cleanly.
    await Effect.runPromise(Effect.scoped(Effect.asVoid(Effect.provide(Effect.void, layerPglite(`${scratch}/data`)))))
    await Deno.rename(`${scratch}/data`, target).catch(async (error) => {
      if (!(await exists(`${target}/PG_VERSION`))) throw error
    })
  } finally {
    await Deno.remove(scratch, { recursive: true }).catch(() => undefined)
  }
}

let template: Promise<string> | undefined

/** The path of a created and migrated PGlite data directory, built on first use; never write into it. */
export const pgliteTemplate = (): Promise<string> =>
  template ??= (async () => {
    const target = `${await tempRoot()}/sluice_pglite_template_${await inputsHash()}`
    if (!(await exists(`${target}/PG_VERSION`))) await build(target)
    return target
  })()

/** Copies the directory tree at `from` to `to` (which must not exist). */
const copyTree = async (from: string, to: string): Promise<void> => {
  await Deno.mkdir(to)
  const copies: Array<Promise<void>> = []
  for await (const entry of Deno.readDir(from)) {
    const source = `${from}/${entry.name}`
    const target = `${to}/${entry.name}`
    copies.push(entry.isDirectory ? copyTree(source, target) : Deno.copyFile(source, target))
  }
  await Promise.all(copies)
}

const live = new Set<string>()

globalThis.addEventListener("unload", () => {
  for (const directory of live) {
    try {
      Deno.removeSync(directory, { recursive: true })
    } catch {
      // Already gone.
    }
  }
})

/** A new embedded store for one gateway: `dataDir` to open, and `remove` to delete it once the gateway stopped. */
export interface PgliteCopy {
  readonly dataDir: string
  readonly remove: () => Promise<void>
}

/** A copy of the template in a new temporary directory. */
export const freshPglite = async (): Promise<PgliteCopy> => {
  const source = await pgliteTemplate()
  const directory = await Deno.makeTempDir({ prefix: "sluice_pglite_" })
  live.add(directory)
  const dataDir = `${directory}/data`
  await copyTree(source, dataDir)
  return {
    dataDir,
    remove: async () => {
      live.delete(directory)
      await Deno.remove(directory, { recursive: true }).catch(() => undefined)
    }
  }
}

/**
 * `layerPglite` on a copy of the template instead of a new in-memory store:
 * the same migrated embedded store, served the same way; the copy is removed
 * after the store closed, with the layer's scope.
 */
export const layerFreshPglite: Layer.Layer<SqlClient.SqlClient | PgClient.PgClient, SqlError.SqlError> = Layer.unwrap(
  Effect.acquireRelease(Effect.promise(freshPglite), (copy) => Effect.promise(copy.remove)).pipe(
    Effect.map((copy) => layerPglite(copy.dataDir))
  )
)
