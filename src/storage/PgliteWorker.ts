/**
 * The embedded store's own thread: a Web Worker that opens PGlite (WASM
 * PostgreSQL) in the data directory it is sent and serves it on a random
 * loopback port with `@electric-sql/pglite-socket`, so the database's CPU work
 * runs beside the gateway's event loop instead of on it.
 *
 * Messages in: `{ type: "open", dataDir }`, then `{ type: "close" }`.
 * Messages out, after open: `{ type: "ready", host, port }`; `{ type:
 * "initialized" }` when `dataDir` held no database yet and this worker has just
 * created one (and closed it again): the caller ends this worker and opens the
 * directory in a fresh one (below); or `{ type: "failed", message }`.
 * `{ type: "closed" }` after close.
 *
 * Memory. A WASM memory never shrinks, and creating a database runs a second,
 * temporary PGlite and `initdb`'s own WASM module next to the one that serves:
 * about 330 MiB that the worker's heap keeps until a full collection, which an
 * idle gateway may never run. Creating the database in a worker that is then
 * ended hands all of it back at once. (An in-memory store, `memory://`, cannot
 * outlive its worker, so it is created and served in the same one.) The server
 * runs with `pgliteStartParams`.
 *
 * @since 0.1.0
 */
/// <reference lib="deno.worker" />
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"

/** A message the worker accepts. @category models */
export type PgliteWorkerCommand = { readonly type: "open"; readonly dataDir: string } | { readonly type: "close" }

/** A message the worker sends. @category models */
export type PgliteWorkerEvent =
  | { readonly type: "ready"; readonly host: string; readonly port: number }
  | { readonly type: "initialized" }
  | { readonly type: "failed"; readonly message: string }
  | { readonly type: "closed" }

/**
 * The server's start parameters: PGlite's own defaults (single-user mode, no
 * parallel workers, …) and two memory settings
 * (postgresql.org/docs/current/runtime-config-resource.html), both fixed at
 * allocation inside a WASM memory that never shrinks:
 * - `shared_buffers` 16 MB instead of `initdb`'s 128 MB. The buffer pool is
 *   allocated and zeroed at start, so all of it was resident (with the WAL
 *   buffers, 1/32 of it); the data files stay in the operating system's page
 *   cache, so a page read outside the pool is a read from memory, not disk.
 * - `maintenance_work_mem` 16 MB instead of 64 MB: the most an index build
 *   of a migration may take, and then keep as heap.
 *
 * @category settings
 */
export const pgliteStartParams: ReadonlyArray<string> = [
  ...PGlite.defaultStartParams,
  "-c",
  "shared_buffers=16MB",
  "-c",
  "maintenance_work_mem=16MB"
]

/** Whether `dataDir` (a path, `file://` URL or `memory://`) is on disk and holds no database yet. */
const needsCreating = async (dataDir: string): Promise<boolean> => {
  if (dataDir.startsWith("memory://")) return false
  const path = dataDir.startsWith("file://") ? dataDir.slice("file://".length) : dataDir
  return await Deno.stat(`${path}/PG_VERSION`).then(() => false, () => true)
}

let open: { readonly db: PGlite; readonly server: PGLiteSocketServer } | undefined

const send = (event: PgliteWorkerEvent) => self.postMessage(event)

self.onmessage = async (message: MessageEvent<PgliteWorkerCommand>) => {
  const command = message.data
  if (command.type === "open") {
    try {
      if (await needsCreating(command.dataDir)) {
        // `initdb` runs inside `create`; closing shuts the new cluster down cleanly (checkpoint written).
        const created = await PGlite.create(command.dataDir)
        await created.close()
        send({ type: "initialized" })
        return
      }
      const db = await PGlite.create(command.dataDir, { startParams: [...pgliteStartParams] })
      const server = new PGLiteSocketServer({ db, port: 0, host: "127.0.0.1" })
      await server.start()
      open = { db, server }
      const [host, port] = server.getServerConn().split(":")
      send({ type: "ready", host, port: Number(port) })
    } catch (error) {
      send({ type: "failed", message: error instanceof Error ? error.message : String(error) })
    }
    return
  }
  if (open !== undefined) {
    await open.server.stop().catch(() => undefined)
    await open.db.close().catch(() => undefined)
    open = undefined
  }
  send({ type: "closed" })
}
