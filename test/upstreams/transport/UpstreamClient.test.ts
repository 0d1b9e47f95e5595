/**
 * The upstream client on its own, against a small local server: it asks for
 * an identity body and still reads a compressed one, reads a body whole or
 * chunk by chunk, leaves a redirect unfollowed, and names an unreachable
 * upstream `network` without its key anywhere in the message, and opens a
 * new connection when the upstream closed an idle one; `readJsonAnswer`
 * refuses an answer nested deeper than `MAX_JSON_DEPTH` unparsed.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { gzipSync } from "node:zlib"
import { Context, Effect, Layer } from "effect"
import { MAX_JSON_DEPTH } from "../../../src/domain/JsonDepth.ts"
import {
  readableErrorBody,
  readJsonAnswer,
  UpstreamClient,
  type UpstreamResponse
} from "../../../src/upstreams/transport/UpstreamClient.ts"

const timeouts = { firstByteMs: 5_000, idleMs: 5_000, totalMs: 10_000 }

/** Runs `use` with a client whose layer is closed afterwards. */
const withClient = <A, E>(use: (client: UpstreamClient["Service"]) => Effect.Effect<A, E>) =>
  Effect.runPromise(Effect.scoped(
    Layer.build(UpstreamClient.layer).pipe(
      Effect.flatMap((context) => use(Context.get(context, UpstreamClient)))
    )
  ))

const serve = (handler: (request: Request) => Response | Promise<Response>) => {
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, handler)
  return { url: `http://127.0.0.1:${server.addr.port}`, close: () => server.shutdown() }
}

Deno.test("upstream client: identity asked, a gzip body read anyway, whole and by chunks", async () => {
  const seen: Array<string | null> = []
  const upstream = serve((request) => {
    seen.push(request.headers.get("accept-encoding"))
    return new Response(gzipSync(new TextEncoder().encode('{"ok":true}')), {
      headers: { "content-type": "application/json", "content-encoding": "gzip" }
    })
  })
  try {
    const [whole, chunks] = await withClient((client) =>
      Effect.gen(function* () {
        const first = yield* client.post(`${upstream.url}/v1/x`, { authorization: "Bearer sk-test-up" }, "{}", timeouts)
        const text = yield* first.text
        const second = yield* client.post(`${upstream.url}/v1/x`, {}, "{}", timeouts)
        const parts: Array<Uint8Array> = []
        while (true) {
          const chunk = yield* second.read
          if (chunk === undefined) break
          parts.push(chunk)
        }
        return [text, new TextDecoder().decode(new Uint8Array(parts.flatMap((part) => [...part])))] as const
      })
    )
    strictEqual(whole, '{"ok":true}')
    strictEqual(chunks, '{"ok":true}')
    deepStrictEqual(seen, ["identity", "identity"])
  } finally {
    await upstream.close()
  }
})

Deno.test("upstream client: a redirect is the answer; an unreachable upstream is a network failure", async () => {
  const upstream = serve(() =>
    new Response(null, { status: 307, headers: { location: "http://127.0.0.1:9/elsewhere" } })
  )
  try {
    const status = await withClient((client) =>
      client.post(`${upstream.url}/v1/x`, {}, "{}", timeouts).pipe(
        Effect.tap((response) => response.text),
        Effect.map((response) => response.status)
      )
    )
    strictEqual(status, 307)
  } finally {
    await upstream.close()
  }
  // Port 9 (discard) has no listener here: the connection is refused.
  const failure = await withClient((client) =>
    Effect.flip(client.post("http://127.0.0.1:9/v1/x", { authorization: "Bearer sk-test-secret" }, "{}", timeouts))
  )
  strictEqual(failure.kind, "network")
  strictEqual(failure.status, 0)
  ok(!failure.message.includes("sk-test-secret"), failure.message)
})

/**
 * A raw HTTP/1.1 upstream that answers each connection's first request with a keep-alive answer (no
 * `Connection: close`, no `Keep-Alive` hint), then closes the connection after `closeAfterMs`: a server
 * whose idle timeout is shorter than the pool's. Counts the connections it accepted.
 */
const closingUpstream = (closeAfterMs: number) => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 })
  let connections = 0
  const handle = async (connection: Deno.Conn) => {
    connections++
    const buffer = new Uint8Array(64 * 1024)
    let received = ""
    while (!received.includes("\r\n\r\n")) {
      const read = await connection.read(buffer).catch(() => null)
      if (read === null) return connection.close()
      received += new TextDecoder().decode(buffer.subarray(0, read))
    }
    const body = '{"ok":true}'
    await connection.write(new TextEncoder().encode(
      `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`
    ))
    setTimeout(() => connection.close(), closeAfterMs)
  }
  const accepting = (async () => {
    for await (const connection of listener) handle(connection)
  })().catch(() => undefined)
  const { port } = listener.addr as Deno.NetAddr
  return {
    url: `http://127.0.0.1:${port}`,
    connections: () => connections,
    close: async () => {
      listener.close()
      await accepting
    }
  }
}

Deno.test("upstream client: a connection the upstream closed while idle is not reused", async () => {
  // The upstream closes each connection 30 ms after its answer; the calls come 120 ms apart.
  const upstream = closingUpstream(30)
  try {
    const texts = await withClient((client) =>
      Effect.forEach([1, 2, 3], () =>
        client.post(`${upstream.url}/v1/x`, {}, "{}", timeouts).pipe(
          Effect.flatMap((response) => response.text),
          Effect.tap(() => Effect.sleep(120))
        ))
    )
    deepStrictEqual(texts, Array(3).fill('{"ok":true}'))
    strictEqual(upstream.connections(), 3)
  } finally {
    await upstream.close()
  }
})

/** An answer of `status` whose body is `text`, read in one chunk. */
const answerOf = (status: number, text: string): UpstreamResponse => {
  let sent = false
  return {
    status,
    headers: { "content-type": "application/json" },
    read: Effect.sync(() => {
      if (sent) return undefined
      sent = true
      return new TextEncoder().encode(text)
    }),
    text: Effect.succeed(text),
    abort: () => {}
  }
}

Deno.test("readJsonAnswer: an answer nested deeper than MAX_JSON_DEPTH is bad-body; a deep error body is not parsed", async () => {
  const nested = (levels: number) => "[".repeat(levels) + "]".repeat(levels)
  const seen: Array<string> = []
  const classify = (status: number, text: string) => {
    seen.push(text)
    return { kind: "rejected" as const, message: `HTTP ${status}` }
  }
  const limit = 8 * 1024 * 1024
  const deep = await Effect.runPromise(
    Effect.flip(readJsonAnswer(answerOf(200, nested(1_000_000)), classify, 7, limit))
  )
  deepStrictEqual([deep.kind, deep.message], ["bad-body", "Nested too deep."])
  const fine = await Effect.runPromise(readJsonAnswer(answerOf(200, nested(MAX_JSON_DEPTH)), classify, 7, limit))
  strictEqual(fine.text, nested(MAX_JSON_DEPTH))
  const refused = await Effect.runPromise(Effect.flip(readJsonAnswer(answerOf(400, nested(100)), classify, 7, limit)))
  deepStrictEqual([refused.kind, refused.status], ["rejected", 400])
  deepStrictEqual(seen, [""], "the classifier got no bomb to parse")
  strictEqual(readableErrorBody('{"error":{"message":"[[["}}'), '{"error":{"message":"[[["}}')
})
