/**
 * A raw HTTP/1.1 caller on its own TCP connection, for tests of slow clients:
 * it sends a request head and the start of a body (or only part of a head),
 * may send more later, and reads the one answer that comes back. Every wait is
 * bounded, so a gateway that never answers fails the test instead of hanging it.
 */

/** An answer as it came off the wire. */
export interface RawAnswer {
  readonly status: number
  readonly headers: Headers
  readonly body: string
}

/** One slow request in flight. */
export interface SlowRequest {
  /** Sends more bytes of the request. */
  readonly send: (text: string) => Promise<void>
  /** The answer, once it arrived whole; rejects when none did within `withinMs`. */
  readonly answer: (withinMs: number) => Promise<RawAnswer>
  /** Whether the server closed the connection within `withinMs`. */
  readonly closedWithin: (withinMs: number) => Promise<boolean>
  /** Closes the connection (idempotent). */
  readonly close: () => void
}

const HEAD_END = "\r\n\r\n"

/** The answer in `text` when it is complete (content-length or chunked), else `undefined`. */
const parse = (text: string): RawAnswer | undefined => {
  const end = text.indexOf(HEAD_END)
  if (end < 0) return undefined
  const [statusLine, ...lines] = text.slice(0, end).split("\r\n")
  const headers = new Headers()
  for (const line of lines) {
    const colon = line.indexOf(":")
    headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim())
  }
  const rest = text.slice(end + HEAD_END.length)
  const status = Number(statusLine.split(" ")[1])
  const length = headers.get("content-length")
  if (length !== null) {
    return rest.length >= Number(length) ? { status, headers, body: rest.slice(0, Number(length)) } : undefined
  }
  if (!rest.includes("0\r\n\r\n")) return undefined
  let body = ""
  let cursor = 0
  while (true) {
    const lineEnd = rest.indexOf("\r\n", cursor)
    const size = parseInt(rest.slice(cursor, lineEnd), 16)
    if (!(size > 0)) return { status, headers, body }
    body += rest.slice(lineEnd + 2, lineEnd + 2 + size)
    cursor = lineEnd + 2 + size + 2
  }
}

const within = <A>(promise: Promise<A>, ms: number, what: string): Promise<A> => {
  let timer: ReturnType<typeof setTimeout> | undefined
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms)
    })
  ])
}

/**
 * Opens a connection to `url` (`http://host:port`) and sends `start`: a
 * request head, whole or not, and perhaps the start of its body.
 */
export const openSlow = async (url: string, start: string): Promise<SlowRequest> => {
  const { hostname, port } = new URL(url)
  const connection = await Deno.connect({ hostname, port: Number(port) })
  const encoder = new TextEncoder()
  let received = ""
  let closed = false
  const decoder = new TextDecoder()
  const reading = (async () => {
    const buffer = new Uint8Array(16 * 1024)
    try {
      while (true) {
        const read = await connection.read(buffer)
        if (read === null) break
        received += decoder.decode(buffer.subarray(0, read), { stream: true })
      }
    } catch {
      // reset or closed by us
    }
    closed = true
  })()
  const answer = (async () => {
    while (true) {
      const parsed = parse(received)
      if (parsed !== undefined) return parsed
      if (closed) throw new Error(`The connection closed before a whole answer: ${JSON.stringify(received)}`)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  })()
  answer.catch(() => undefined)
  const close = () => {
    if (closed) return
    closed = true
    try {
      connection.close()
    } catch {
      // already closed
    }
  }
  await connection.write(encoder.encode(start))
  return {
    send: async (text) => {
      await connection.write(encoder.encode(text))
    },
    answer: (withinMs) => within(answer, withinMs, "no whole answer"),
    closedWithin: (withinMs) => within(reading, withinMs, "still open").then(() => true, () => false),
    close
  }
}

/** A request head for `path` with `headers` (and `Host`), ready to be sent. */
export const requestHead = (method: string, path: string, headers: Record<string, string>): string =>
  `${method} ${path} HTTP/1.1\r\nHost: gateway.test\r\n` +
  Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join("") + "\r\n"
