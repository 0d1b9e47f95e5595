/**
 * The benchmark's baseline: a bare Deno forward proxy with no auth, routing,
 * translation, metering or storage. It forwards method, path, query, headers
 * and body to `PROXY_UPSTREAM` with `fetch` and streams the answer back, so the
 * gap between it and the gateway is what the gateway itself costs.
 * Environment: `PROXY_PORT` (required), `PROXY_UPSTREAM` (base URL, required),
 * `PROXY_READ_EVENTS` (optional, below).
 * Listens on 127.0.0.1 only. A failed upstream call answers 502 with a
 * plain-text reason. Run as its own process: `deno run -A bench/BareProxy.ts`.
 *
 * With `PROXY_READ_EVENTS=1` it is the stream floor instead: it reads the answer
 * body in JavaScript, parses the JSON of every SSE `data:` line (the least a
 * gateway that bills from the stream must do) and re-emits the bytes unchanged.
 * The gap between the two modes is what touching a stream in JavaScript costs
 * on this runtime, before any gateway work.
 *
 * @since 0.1.0
 */

/** Hop-by-hop headers (RFC 9110 §7.6.1) plus the ones `fetch` and `Deno.serve` set themselves. */
const notForwarded: ReadonlySet<string> = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  "host",
  "content-length"
])

const copyHeaders = (from: Headers): Headers => {
  const headers = new Headers()
  for (const [name, value] of from) {
    if (!notForwarded.has(name)) headers.set(name, value)
  }
  return headers
}

/**
 * Forwards one request to `upstream` (base URL) and streams the answer back
 * (natively, or through `readingEvents` when `readEvents`).
 * The request body is read whole first (the bodies here are small JSON), so the
 * upstream gets a `content-length` like the gateway sends; the response body is
 * streamed as it arrives. A client that goes away aborts the upstream call.
 *
 * @category proxy
 */
export const forward = async (upstream: URL, request: Request, readEvents = false): Promise<Response> => {
  const url = new URL(request.url)
  const target = new URL(url.pathname + url.search, upstream)
  try {
    const body = request.body === null ? undefined : await request.arrayBuffer()
    const answer = await fetch(target, {
      method: request.method,
      headers: copyHeaders(request.headers),
      body,
      redirect: "manual",
      signal: request.signal
    })
    return new Response(readEvents && answer.body !== null ? readingEvents(answer.body) : answer.body, {
      status: answer.status,
      statusText: answer.statusText,
      headers: copyHeaders(answer.headers)
    })
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error)
    return new Response(`Could not reach the upstream ${target.origin}: ${reason}\n`, { status: 502 })
  }
}

/**
 * The same bytes as `body`, read chunk by chunk in JavaScript, with the JSON of
 * every complete SSE `data:` line parsed on the way (`[DONE]` and non-JSON data
 * are let through). One upstream read is one chunk out; a cancel cancels the
 * upstream body.
 *
 * @category proxy
 */
export const readingEvents = (body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> => {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let carry = ""
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read()
      if (done) {
        controller.close()
        return
      }
      const lines = (carry + decoder.decode(value, { stream: true })).split("\n")
      carry = lines.pop() ?? ""
      for (const line of lines) {
        if (!line.startsWith("data:")) continue
        try {
          JSON.parse(line.slice(5))
        } catch {
          // `[DONE]`, or data that is not JSON: passed on as is.
        }
      }
      controller.enqueue(value)
    },
    cancel: (reason) => reader.cancel(reason)
  }, { highWaterMark: 0 })
}

if (import.meta.main) {
  const port = Number(Deno.env.get("PROXY_PORT"))
  const upstreamText = Deno.env.get("PROXY_UPSTREAM") ?? ""
  if (!Number.isInteger(port) || port <= 0 || !URL.canParse(upstreamText)) {
    throw new Error(`Could not start the bare proxy: PROXY_PORT "${port}" / PROXY_UPSTREAM "${upstreamText}" invalid.`)
  }
  const upstream = new URL(upstreamText)
  const readEvents = Deno.env.get("PROXY_READ_EVENTS") === "1"
  Deno.serve({ port, hostname: "127.0.0.1", onListen: () => {} }, (request) => forward(upstream, request, readEvents))
}
