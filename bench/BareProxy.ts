/**
 * The benchmark's baseline: a bare Deno forward proxy with no auth, routing,
 * translation, metering or storage. It forwards method, path, query, headers
 * and body to `PROXY_UPSTREAM` with `fetch` and streams the answer back, so the
 * gap between it and the gateway is what the gateway itself costs.
 * Environment: `PROXY_PORT` (required), `PROXY_UPSTREAM` (base URL, required).
 * Listens on 127.0.0.1 only. A failed upstream call answers 502 with a
 * plain-text reason. Run as its own process: `deno run -A bench/BareProxy.ts`.
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
 * Forwards one request to `upstream` (base URL) and streams the answer back.
 * The request body is read whole first (the bodies here are small JSON), so the
 * upstream gets a `content-length` like the gateway sends; the response body is
 * streamed as it arrives. A client that goes away aborts the upstream call.
 *
 * @category proxy
 */
export const forward = async (upstream: URL, request: Request): Promise<Response> => {
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
    return new Response(answer.body, {
      status: answer.status,
      statusText: answer.statusText,
      headers: copyHeaders(answer.headers)
    })
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error)
    return new Response(`Could not reach the upstream ${target.origin}: ${reason}\n`, { status: 502 })
  }
}

if (import.meta.main) {
  const port = Number(Deno.env.get("PROXY_PORT"))
  const upstreamText = Deno.env.get("PROXY_UPSTREAM") ?? ""
  if (!Number.isInteger(port) || port <= 0 || !URL.canParse(upstreamText)) {
    throw new Error(`Could not start the bare proxy: PROXY_PORT "${port}" / PROXY_UPSTREAM "${upstreamText}" invalid.`)
  }
  const upstream = new URL(upstreamText)
  Deno.serve({ port, hostname: "127.0.0.1", onListen: () => {} }, (request) => forward(upstream, request))
}
