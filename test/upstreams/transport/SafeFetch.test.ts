import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { Effect } from "effect"
import {
  blockedRange,
  type OpenedDownload,
  type Resolver,
  safeFetch,
  type SafeFetchError,
  safeOpen
} from "../../../src/upstreams/transport/SafeFetch.ts"

const limits = { maxBytes: 1024, timeoutMs: 2000 }

/** A resolver that must not be asked (IP literals need no DNS). */
const noDns: Resolver = (hostname) => Promise.reject(new Error(`unexpected DNS lookup of ${hostname}`))

/** A resolver with a fixed table. */
const table = (entries: Record<string, ReadonlyArray<string>>): Resolver => (hostname) => {
  const addresses = entries[hostname]
  return addresses === undefined
    ? Promise.reject(Object.assign(new Error("not found"), { code: "ENOTFOUND" }))
    : Promise.resolve(addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 })))
}

const failure = (url: string, options: Parameters<typeof safeFetch>[1]): Promise<SafeFetchError> =>
  Effect.runPromise(Effect.flip(safeFetch(url, options)))

const PNG = Uint8Array.from(
  atob("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="),
  (c) => c.charCodeAt(0)
)

Deno.test("blockedRange: non-public addresses are named, public unicast passes", () => {
  const blocked: Record<string, string> = {
    "169.254.169.254": "linkLocal",
    "10.0.0.1": "private",
    "172.16.5.4": "private",
    "192.168.1.1": "private",
    "127.0.0.1": "loopback",
    "0.0.0.0": "unspecified",
    "100.64.0.1": "carrierGradeNat",
    "224.0.0.1": "multicast",
    "255.255.255.255": "broadcast",
    "::1": "loopback",
    "[::1]": "loopback",
    "::": "unspecified",
    "fe80::1%eth0": "linkLocal",
    "fd12:3456::1": "uniqueLocal",
    "ff02::1": "multicast",
    "::ffff:127.0.0.1": "ipv4Mapped loopback",
    "::ffff:10.1.2.3": "ipv4Mapped private",
    "::ffff:169.254.169.254": "ipv4Mapped linkLocal",
    "64:ff9b::a9fe:a9fe": "rfc6052 linkLocal",
    "::7f00:1": "ipv4Compatible",
    "2001:db8::1": "reserved",
    "example.com": "invalid"
  }
  for (const [address, range] of Object.entries(blocked)) strictEqual(blockedRange(address), range, address)
  for (const address of ["8.8.8.8", "1.1.1.1", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"]) {
    strictEqual(blockedRange(address), undefined, address)
  }
})

Deno.test("safeFetch: IP literals of internal ranges are refused before any network use", async () => {
  const cases: Record<string, string> = {
    "http://169.254.169.254/latest/meta-data/": "169.254.169.254 is linkLocal",
    "http://10.0.0.1/a.png": "10.0.0.1 is private",
    "http://[::1]:8080/a.png": "::1 is loopback",
    "http://0.0.0.0/a.png": "0.0.0.0 is unspecified",
    "http://[::ffff:127.0.0.1]/a.png": "::ffff:7f00:1 is ipv4Mapped loopback",
    "https://2130706433/a.png": "127.0.0.1 is loopback",
    "http://0x7f.1/a.png": "127.0.0.1 is loopback"
  }
  for (const [url, expected] of Object.entries(cases)) {
    const error = await failure(url, { ...limits, resolve: noDns })
    strictEqual(error.reason, "blocked-address", url)
    ok(error.message.includes(expected), `${url}: ${error.message}`)
  }
})

Deno.test("safeFetch: a host name with any non-public address is refused; the query string is not echoed", async () => {
  const resolve = table({ "mixed.test": ["93.184.216.34", "10.0.0.7"], "meta.test": ["169.254.169.254"] })
  const mixed = await failure("http://mixed.test/cat.png?X-Signature=secret", { ...limits, resolve })
  strictEqual(mixed.reason, "blocked-address")
  ok(mixed.message.includes("10.0.0.7 is private"), mixed.message)
  ok(mixed.message.includes("http://mixed.test/cat.png"), mixed.message)
  ok(!mixed.message.includes("secret"), "no query string in the message")
  const meta = await failure("https://meta.test/", { ...limits, resolve })
  strictEqual(meta.reason, "blocked-address")
  const unknown = await failure("https://nowhere.test/", { ...limits, resolve })
  strictEqual(unknown.reason, "network")
  ok(unknown.message.includes("could not be resolved"), unknown.message)
})

Deno.test("safeFetch: only http and https", async () => {
  for (const url of ["ftp://example.com/a.png", "file:///etc/passwd", "gs://bucket/a.png", "not a url"]) {
    strictEqual((await failure(url, { ...limits, resolve: noDns })).reason, "invalid-url", url)
  }
})

/** A local server for the network cases; `hits` counts requests by path. */
const serve = (handler: (request: Request, url: URL) => Response | Promise<Response>) => {
  const hits = new Map<string, number>()
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, (request) => {
    const url = new URL(request.url)
    hits.set(url.pathname, (hits.get(url.pathname) ?? 0) + 1)
    return handler(request, url)
  })
  return { port: server.addr.port, hits, close: () => server.shutdown() }
}

Deno.test("safeFetch: connects to the address it checked, with the URL's host name", async () => {
  let host = ""
  const server = serve((request) => {
    host = request.headers.get("host") ?? ""
    return new Response(PNG, { headers: { "content-type": "image/png" } })
  })
  try {
    // "images.test" exists in no DNS: the bytes can only come from the address the guard resolved and checked.
    const fetched = await Effect.runPromise(
      safeFetch(`http://images.test:${server.port}/pixel.png`, {
        ...limits,
        allowHosts: ["IMAGES.test"],
        resolve: table({ "images.test": ["127.0.0.1"] })
      })
    )
    deepStrictEqual(fetched.bytes, PNG)
    strictEqual(fetched.contentType, "image/png")
    strictEqual(host, `images.test:${server.port}`)
    // Without the allow-list entry the same name is refused for its loopback address.
    const refused = await failure(`http://images.test:${server.port}/pixel.png`, {
      ...limits,
      resolve: table({ "images.test": ["127.0.0.1"] })
    })
    strictEqual(refused.reason, "blocked-address")
    strictEqual(server.hits.get("/pixel.png"), 1)
  } finally {
    await server.close()
  }
})

Deno.test("safeFetch: redirects are followed by hand, re-checked and capped", async () => {
  const server = serve((_request, url) => {
    const step = Number(url.searchParams.get("n") ?? "0")
    if (url.pathname === "/loop") return Response.redirect(`http://127.0.0.1:${server.port}/loop?n=${step + 1}`, 302)
    if (url.pathname === "/to-localhost") return Response.redirect(`http://localhost:${server.port}/pixel.png`, 302)
    if (url.pathname === "/to-meta") return Response.redirect("http://169.254.169.254/latest/meta-data/", 301)
    if (url.pathname === "/twice") return Response.redirect(`http://127.0.0.1:${server.port}/once`, 307)
    if (url.pathname === "/once") return new Response(null, { status: 308, headers: { location: "/pixel.png" } })
    return new Response(PNG, { headers: { "content-type": "image/png" } })
  })
  const options = { ...limits, allowHosts: ["127.0.0.1"] }
  try {
    const fetched = await Effect.runPromise(safeFetch(`http://127.0.0.1:${server.port}/twice`, options))
    strictEqual(fetched.url, `http://127.0.0.1:${server.port}/pixel.png`)
    deepStrictEqual(fetched.bytes, PNG)

    const loop = await failure(`http://127.0.0.1:${server.port}/loop`, options)
    strictEqual(loop.reason, "too-many-redirects")
    strictEqual(server.hits.get("/loop"), 6, "the first request and five redirects")

    const localhost = await failure(`http://127.0.0.1:${server.port}/to-localhost`, options)
    strictEqual(localhost.reason, "blocked-address")
    ok(/localhost:\d+\/pixel\.png points to a blocked address/.test(localhost.message), localhost.message)

    const meta = await failure(`http://127.0.0.1:${server.port}/to-meta`, options)
    strictEqual(meta.reason, "blocked-address")
    ok(meta.message.includes("169.254.169.254 is linkLocal"), meta.message)
    strictEqual(server.hits.get("/pixel.png"), 1, "only the allowed chain reached the image")
  } finally {
    await server.close()
  }
})

Deno.test("safeFetch: size cap (announced and counted), time limit, HTTP status", async () => {
  const server = serve((_request, url) => {
    switch (url.pathname) {
      case "/announced":
        return new Response(new Uint8Array(4096), { headers: { "content-type": "image/png" } })
      case "/chunked": {
        // No Content-Length: the cap must be enforced while reading.
        let sent = 0
        const body = new ReadableStream<Uint8Array>({
          pull(controller) {
            if (sent >= 8) return controller.close()
            sent += 1
            controller.enqueue(new Uint8Array(512))
          }
        })
        return new Response(body, { headers: { "content-type": "image/png" } })
      }
      case "/stall": {
        // Headers and a first chunk at once, then nothing: the limit covers the body too.
        const body = new ReadableStream<Uint8Array>({ start: (controller) => controller.enqueue(PNG.slice(0, 8)) })
        return new Response(body, { headers: { "content-type": "image/png" } })
      }
      default:
        return new Response("gone", { status: 404 })
    }
  })
  const options = { maxBytes: 1024, timeoutMs: 300, allowHosts: ["127.0.0.1"] }
  try {
    const announced = await failure(`http://127.0.0.1:${server.port}/announced`, options)
    strictEqual(announced.reason, "too-large")
    ok(announced.message.includes("1024 bytes"), announced.message)
    strictEqual((await failure(`http://127.0.0.1:${server.port}/chunked`, options)).reason, "too-large")

    const started = Date.now()
    const stalled = await failure(`http://127.0.0.1:${server.port}/stall`, options)
    strictEqual(stalled.reason, "timeout")
    ok(stalled.message.includes("within 300 ms"), stalled.message)
    ok(Date.now() - started < 2000, "the download was cut at the limit")

    const missing = await failure(`http://127.0.0.1:${server.port}/missing.png`, options)
    strictEqual(missing.reason, "http-status")
    ok(missing.message.includes("HTTP 404"), missing.message)
  } finally {
    await server.close()
  }
})

Deno.test("safeFetch head mode: asks for the first bytes, cuts a server that ignores the range, reports the total", async () => {
  const whole = new Uint8Array(100_000).map((_, index) => index % 251)
  const ranges: Array<string | null> = []
  const server = serve((request, url) => {
    ranges.push(request.headers.get("range"))
    if (url.pathname === "/ranged") {
      return new Response(whole.slice(0, 1024), {
        status: 206,
        headers: { "content-type": "video/mp4", "content-range": `bytes 0-1023/${whole.length}` }
      })
    }
    // Ignores the range: the whole body, streamed.
    return new Response(whole, { headers: { "content-type": "video/mp4", "content-length": String(whole.length) } })
  })
  const options = { ...limits, allowHosts: ["127.0.0.1"], head: true }
  try {
    const ranged = await Effect.runPromise(safeFetch(`http://127.0.0.1:${server.port}/ranged`, options))
    deepStrictEqual(ranged.bytes, whole.slice(0, 1024))
    strictEqual(ranged.totalBytes, whole.length)
    strictEqual(ranges[0], "bytes=0-1023")
    const ignored = await Effect.runPromise(safeFetch(`http://127.0.0.1:${server.port}/whole`, options))
    deepStrictEqual(ignored.bytes, whole.slice(0, 1024))
    strictEqual(ignored.totalBytes, whole.length)
    strictEqual(ignored.contentType, "video/mp4")
    // Without head mode the same answer is refused as too large.
    strictEqual(
      (await failure(`http://127.0.0.1:${server.port}/whole`, { ...options, head: false })).reason,
      "too-large"
    )
  } finally {
    await server.close()
  }
})

/** Reads an opened download to its end: the bytes, or the failure that ended it. */
const drain = async (opened: OpenedDownload): Promise<Uint8Array | SafeFetchError> =>
  await Effect.runPromise(
    Effect.gen(function* () {
      const chunks: Array<Uint8Array> = []
      while (true) {
        const chunk = yield* opened.read
        if (chunk === undefined) break
        chunks.push(chunk)
      }
      const bytes = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0))
      let offset = 0
      for (const chunk of chunks) {
        bytes.set(chunk, offset)
        offset += chunk.byteLength
      }
      return bytes
    }).pipe(Effect.catch((error: SafeFetchError) => Effect.succeed(error)))
  )

Deno.test("safeOpen: the answer read chunk by chunk under the same guard; the cap and the time limit run while it is read", async () => {
  const whole = new Uint8Array(3000).map((_, index) => index % 251)
  const ranges: Array<string | null> = []
  const server = serve((request, url) => {
    ranges.push(request.headers.get("range"))
    switch (url.pathname) {
      case "/video":
        return new Response(whole.slice(0, 1000), {
          status: 206,
          headers: { "content-type": "video/mp4", "content-range": `bytes 0-999/${whole.length}` }
        })
      case "/to-video":
        return Response.redirect(`http://127.0.0.1:${server.port}/video`, 302)
      case "/to-localhost":
        return Response.redirect(`http://localhost:${server.port}/video`, 302)
      case "/announced":
        return new Response(whole)
      case "/chunked": {
        let sent = 0
        const body = new ReadableStream<Uint8Array>({
          pull(controller) {
            if (sent >= 8) return controller.close()
            sent += 1
            controller.enqueue(new Uint8Array(512))
          }
        })
        return new Response(body)
      }
      case "/stall": {
        const body = new ReadableStream<Uint8Array>({ start: (controller) => controller.enqueue(whole.slice(0, 8)) })
        return new Response(body)
      }
      default:
        return new Response("gone", { status: 410 })
    }
  })
  const options = { maxBytes: 2048, timeoutMs: 300, allowHosts: ["127.0.0.1"] }
  const open = (path: string, extra: Partial<Parameters<typeof safeOpen>[1]> = {}) =>
    Effect.runPromise(safeOpen(`http://127.0.0.1:${server.port}${path}`, { ...options, ...extra }))
  const refusal = (path: string, extra: Partial<Parameters<typeof safeOpen>[1]> = {}) =>
    Effect.runPromise(Effect.flip(safeOpen(`http://127.0.0.1:${server.port}${path}`, { ...options, ...extra })))
  try {
    const opened = await open("/to-video", { headers: { range: "bytes=0-999" } })
    strictEqual(opened.status, 206)
    strictEqual(opened.url, `http://127.0.0.1:${server.port}/video`)
    strictEqual(opened.headers["content-range"], `bytes 0-999/${whole.length}`)
    strictEqual(opened.headers["content-type"], "video/mp4")
    deepStrictEqual(await drain(opened), whole.slice(0, 1000))
    deepStrictEqual(ranges.slice(0, 2), ["bytes=0-999", "bytes=0-999"], "the extra header went on every hop")

    const hitsBefore = server.hits.get("/video")
    strictEqual((await refusal("/to-localhost")).reason, "blocked-address")
    strictEqual(server.hits.get("/video"), hitsBefore, "a redirect to another host is checked again")
    strictEqual((await refusal("/", { allowHosts: [] })).reason, "blocked-address")

    const announced = await refusal("/announced")
    strictEqual(announced.reason, "too-large")
    const counted = await drain(await open("/chunked"))
    ok(!(counted instanceof Uint8Array))
    strictEqual(counted.reason, "too-large")

    const started = Date.now()
    const stalled = await drain(await open("/stall"))
    ok(!(stalled instanceof Uint8Array))
    strictEqual(stalled.reason, "timeout")
    ok(Date.now() - started < 2000, "the download was cut at the limit")

    const gone = await refusal("/missing")
    strictEqual(gone.reason, "http-status")
    strictEqual(gone.status, 410)
  } finally {
    await server.close()
  }
})
