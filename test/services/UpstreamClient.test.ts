/**
 * The upstream client on its own, against a small local server: it asks for
 * an identity body and still reads a compressed one, reads a body whole or
 * chunk by chunk, leaves a redirect unfollowed, and names an unreachable
 * upstream `network` without its key anywhere in the message.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { gzipSync } from "node:zlib"
import { Context, Effect, Layer } from "effect"
import { UpstreamClient } from "../../src/services/UpstreamClient.ts"

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
