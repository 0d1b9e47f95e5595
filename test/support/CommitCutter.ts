/**
 * A TCP proxy in front of PostgreSQL that can make a transaction's outcome
 * unknown: once armed, it forwards the next `COMMIT` (or the ledger's
 * single-statement commit, which commits on its own) of a connection that
 * sent `marker` (e.g. a table name) since its last `COMMIT` to the server and
 * then drops both sides of that connection before the server's answer comes
 * back. The server commits; the client sees a
 * broken connection and cannot tell whether it did.
 */

/** A running proxy. */
export interface CommitCutter {
  /** `postgres://` URL of the proxy for the database at `databaseUrl`. */
  readonly url: string
  /** Cuts the next `times` connections that send a `COMMIT` after `marker` (any `COMMIT` when empty). */
  readonly arm: (times: number, marker?: string) => void
  /** How many connections were cut after a `COMMIT`. */
  readonly cuts: () => number
  readonly close: () => Promise<void>
}

const COMMIT = new TextEncoder().encode("COMMIT")
/** The ledger's single-statement commit (`QuotaLedger`): a statement that commits on its own. */
const SINGLE_STATEMENT_COMMIT = new TextEncoder().encode("WITH claim AS (INSERT INTO ledger_commits")

/** Whether `needle` occurs in `haystack`. */
export const contains = (haystack: Uint8Array, needle: Uint8Array): boolean => {
  outer: for (let start = 0; start + needle.length <= haystack.length; start++) {
    for (let offset = 0; offset < needle.length; offset++) {
      if (haystack[start + offset] !== needle[offset]) continue outer
    }
    return true
  }
  return false
}

/**
 * The name (with its terminating NUL) of a statement `chunk` prepares as `COMMIT`: a Parse message
 * (`P`, length, name, NUL, query, NUL), or `undefined`.
 */
const preparedCommit = (chunk: Uint8Array): Uint8Array | undefined => {
  for (let start = 0; start + COMMIT.length < chunk.length; start++) {
    if (chunk[start] !== 0x50) continue
    const nameStart = start + 5
    let nameEnd = nameStart
    while (nameEnd < chunk.length && chunk[nameEnd] !== 0) nameEnd++
    if (nameEnd === nameStart || nameEnd >= chunk.length) continue
    const query = chunk.subarray(nameEnd + 1, nameEnd + 1 + COMMIT.length + 1)
    if (query.length === COMMIT.length + 1 && contains(query, COMMIT) && query[COMMIT.length] === 0) {
      return chunk.slice(nameStart, nameEnd + 1)
    }
  }
  return undefined
}

/** Starts a proxy on a random loopback port in front of the server of `databaseUrl`. */
export const startCommitCutter = (databaseUrl: string): CommitCutter => {
  const target = new URL(databaseUrl)
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 })
  const open = new Set<Deno.Conn>()
  let armed = 0
  let marker = new Uint8Array()
  let cut = 0

  const close = (conn: Deno.Conn) => {
    open.delete(conn)
    try {
      conn.close()
    } catch {
      // Already closed.
    }
  }

  const serve = async (client: Deno.Conn) => {
    open.add(client)
    let server: Deno.Conn
    try {
      server = await Deno.connect({ hostname: target.hostname, port: Number(target.port || 5432) })
    } catch {
      return close(client)
    }
    open.add(server)
    let dropped = false
    /** A COMMIT went through: nothing more reaches the client. */
    let holding = false
    /** The marker was sent since this connection's last COMMIT. */
    let marked = false
    /** The names this connection prepared COMMIT under, each followed by its NUL. */
    const commitNames: Array<Uint8Array> = []
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
        if (marker.length > 0 && contains(chunk, marker)) marked = true
        // The driver prepares COMMIT once and then only binds it by name: that name commits too.
        const prepared = preparedCommit(chunk)
        if (prepared !== undefined) commitNames.push(prepared)
        const committing = contains(chunk, COMMIT) || contains(chunk, SINGLE_STATEMENT_COMMIT) ||
          commitNames.some((name) => contains(chunk, name))
        const cutting = armed > 0 && committing && (marked || marker.length === 0)
        if (committing) marked = false
        if (cutting) {
          armed--
          cut++
          holding = true
        }
        await server.write(chunk).catch(() => 0)
        if (cutting) {
          // Give the server time to read and commit before both sides go away.
          await new Promise((resolve) => setTimeout(resolve, 20))
          break
        }
      }
      drop()
    })()
    const toClient = (async () => {
      const buffer = new Uint8Array(64 * 1024)
      while (!dropped) {
        const read = await server.read(buffer).catch(() => null)
        if (read === null || dropped || holding) break
        await client.write(buffer.subarray(0, read)).catch(() => 0)
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
    arm: (times, after = "") => {
      armed += times
      marker = new TextEncoder().encode(after)
    },
    cuts: () => cut,
    close: async () => {
      listener.close()
      for (const conn of [...open]) close(conn)
      await accepting
    }
  }
}
