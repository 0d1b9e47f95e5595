/**
 * The embedded store's own thread: a Web Worker that opens PGlite (WASM
 * PostgreSQL) in the data directory it is sent and serves it on a random
 * loopback port with `@electric-sql/pglite-socket`, so the database's CPU work
 * runs beside the gateway's event loop instead of on it.
 *
 * Messages in: `{ type: "open", dataDir }`, then `{ type: "close" }`.
 * Messages out: `{ type: "ready", host, port }` or `{ type: "failed", message }`
 * after open; `{ type: "closed" }` after close.
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
  | { readonly type: "failed"; readonly message: string }
  | { readonly type: "closed" }

let open: { readonly db: PGlite; readonly server: PGLiteSocketServer } | undefined

const send = (event: PgliteWorkerEvent) => self.postMessage(event)

self.onmessage = async (message: MessageEvent<PgliteWorkerCommand>) => {
  const command = message.data
  if (command.type === "open") {
    try {
      const db = await PGlite.create(command.dataDir)
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
