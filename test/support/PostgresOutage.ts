/**
 * A TCP proxy in front of PostgreSQL that can take the database away: `down()`
 * closes every open connection and, until `up()`, accepts new ones only to close
 * them at once (the client sees its connection end before the server's first
 * byte). `delay(marker, ms)` holds the server's answers to a connection for `ms`
 * after it sent `marker` (a statement's text), for races.
 */
import { contains } from "./CommitCutter.ts"

/** A running proxy. */
export interface PostgresOutage {
  /** `postgres://` URL of the proxy for the database at `databaseUrl`. */
  readonly url: string
  /** Closes every open connection; new ones are closed as soon as accepted, until `up()`. */
  readonly down: () => void
  readonly up: () => void
  /** Delays the server's bytes to a connection by `millis` after it sent `marker` (until its next statement). */
  readonly delay: (marker: string, millis: number) => void
  /** Connections refused while down. */
  readonly refused: () => number
  readonly close: () => Promise<void>
}

/** Starts a proxy on a random loopback port in front of the server of `databaseUrl`. */
export const startPostgresOutage = (databaseUrl: string): PostgresOutage => {
  const target = new URL(databaseUrl)
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 })
  const open = new Set<Deno.Conn>()
  const delays: Array<{ readonly marker: Uint8Array; readonly millis: number }> = []
  let isDown = false
  let refused = 0

  const close = (conn: Deno.Conn) => {
    open.delete(conn)
    try {
      conn.close()
    } catch {
      // Already closed.
    }
  }

  const serve = async (client: Deno.Conn) => {
    if (isDown) {
      refused++
      return close(client)
    }
    open.add(client)
    let server: Deno.Conn
    try {
      server = await Deno.connect({ hostname: target.hostname, port: Number(target.port || 5432) })
    } catch {
      return close(client)
    }
    if (isDown) {
      close(server)
      return close(client)
    }
    open.add(server)
    let dropped = false
    /** How long the server's next bytes wait (the last statement sent matched a `delay` marker). */
    let hold = 0
    const drop = () => {
      dropped = true
      close(client)
      close(server)
    }
    const toServer = (async () => {
      const buffer = new Uint8Array(64 * 1024)
      while (!dropped) {
        const read = await client.read(buffer).catch(() => null)
        if (read === null) break
        const chunk = buffer.subarray(0, read)
        hold = delays.find((delay) => contains(chunk, delay.marker))?.millis ?? 0
        const written = await server.write(chunk).catch(() => null)
        if (written === null) break
      }
      drop()
    })()
    const toClient = (async () => {
      const buffer = new Uint8Array(64 * 1024)
      while (!dropped) {
        const read = await server.read(buffer).catch(() => null)
        if (read === null || dropped) break
        if (hold > 0) await new Promise((resolve) => setTimeout(resolve, hold))
        const written = await client.write(buffer.slice(0, read)).catch(() => null)
        if (written === null) break
      }
      drop()
    })()
    await Promise.all([toServer, toClient])
  }

  const accepting = (async () => {
    for await (const conn of listener) serve(conn)
  })().catch(() => {})

  const address = listener.addr as Deno.NetAddr
  const url = new URL(databaseUrl)
  url.hostname = "127.0.0.1"
  url.port = String(address.port)
  return {
    url: url.toString(),
    down: () => {
      isDown = true
      for (const conn of [...open]) close(conn)
    },
    up: () => {
      isDown = false
    },
    delay: (marker, millis) => {
      delays.push({ marker: new TextEncoder().encode(marker), millis })
    },
    refused: () => refused,
    close: async () => {
      listener.close()
      for (const conn of [...open]) close(conn)
      await accepting
    }
  }
}
