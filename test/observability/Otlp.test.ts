/**
 * OTLP traces: a loopback receiver decodes what Effect's OTLP exporter sends
 * (`POST /v1/traces`, `/v1/logs`, JSON) while a gateway serves a request that
 * fails over and a generate-content call with its key in the query. The
 * request's server span has, as children, one `upstream.attempt` span per
 * attempt (channel, upstream model, attempt number, status, failover reason),
 * the ledger's hold and the settlement; the usage log's commit is a span; the
 * gateway's log lines are exported too; and nothing the receiver got holds a
 * key or the prompt text.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { basicConfig, startGateway } from "../support/Gateway.ts"
import { KEY, twoChannels } from "./Support.ts"

interface Attribute {
  readonly key: string
  readonly value: { readonly stringValue?: string; readonly intValue?: string | number; readonly boolValue?: boolean }
}

interface Span {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: number
  readonly attributes: ReadonlyArray<Attribute>
}

const attribute = (span: Span, key: string): string | number | boolean | undefined => {
  const value = span.attributes.find((item) => item.key === key)?.value
  if (value === undefined) return undefined
  return value.stringValue ?? (value.intValue === undefined ? value.boolValue : Number(value.intValue))
}

const PROMPT = "the confidential prompt text 4711"

Deno.test("otlp: request and attempt spans with their parents and attributes, and no key or prompt", async () => {
  const bodies: Array<{ readonly path: string; readonly text: string }> = []
  const receiver = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (request) => {
    bodies.push({ path: new URL(request.url).pathname, text: await request.text() })
    return new Response("{}", { headers: { "content-type": "application/json" } })
  })
  const gateway = await startGateway({
    store: "postgres",
    // One failure puts a channel in cooldown, which the gateway logs: a log line to export.
    config: (url) => twoChannels(url, { cooldown_failures: 1 }),
    otlp: { endpoint: `http://127.0.0.1:${receiver.addr.port}/`, serviceName: "sluice-test", exportIntervalMillis: 100 }
  })
  let closed = false
  try {
    gateway.emulator.setFaults([{ match: { key: "sk-test-upstream-primary" }, status: 500, times: 1 }])
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json", "x-request-id": "otlp-trace-1" },
      body: JSON.stringify({ model: "gpt-test", messages: [{ role: "user", content: PROMPT }], max_tokens: 16 })
    })
    strictEqual(response.status, 200)
    await response.body?.cancel()
    const gemini = await fetch(`${gateway.url}/v1beta/models/gpt-test:generateContent?key=${KEY}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: PROMPT }] }] })
    })
    strictEqual(gemini.status, 200)
    await gemini.body?.cancel()
    await new Promise((resolve) => setTimeout(resolve, 400))
    // Closing the gateway flushes what the exporter still holds.
    await gateway.close()
    closed = true

    const traces = bodies.filter((body) => body.path === "/v1/traces")
    ok(traces.length > 0, "the exporter sent traces")
    const spans: Array<Span> = traces.flatMap((body) =>
      JSON.parse(body.text).resourceSpans.flatMap((resource: { scopeSpans: Array<{ spans: Array<Span> }> }) =>
        resource.scopeSpans.flatMap((scope) => scope.spans)
      )
    )
    const resource = JSON.parse(traces[0].text).resourceSpans[0].resource.attributes as Array<Attribute>
    ok(resource.some((item) => item.key === "service.name" && item.value.stringValue === "sluice-test"))

    const server = spans.find((span) => span.name === "POST /v1/chat/completions")
    ok(server !== undefined, `a server span; got ${spans.map((span) => span.name).join(", ")}`)
    strictEqual(server.kind, 2, "SERVER")
    strictEqual(attribute(server, "http.response.status_code"), 200)
    const children = spans.filter((span) => span.parentSpanId === server.spanId)
    for (const child of children) strictEqual(child.traceId, server.traceId)

    const attempts = children.filter((span) => span.name === "upstream.attempt")
    deepStrictEqual(attempts.map((span) => attribute(span, "sluice.attempt")).sort(), [1, 2])
    const [first, second] = [...attempts].sort((a, b) =>
      Number(attribute(a, "sluice.attempt")) - Number(attribute(b, "sluice.attempt"))
    )
    strictEqual(attribute(first, "sluice.channel"), "primary")
    strictEqual(attribute(first, "sluice.upstream_model"), "gpt-test")
    strictEqual(attribute(first, "http.response.status_code"), 500)
    strictEqual(attribute(first, "sluice.failover_reason"), "server")
    strictEqual(attribute(second, "sluice.channel"), "secondary")
    strictEqual(attribute(second, "http.response.status_code"), 200)
    strictEqual(attribute(second, "sluice.failover_reason"), undefined)
    ok(children.some((span) => span.name === "QuotaLedger.hold"), "the ledger's hold is a child span")
    ok(children.some((span) => span.name === "Settlement.settle"), "the settlement is a child span")
    ok(spans.some((span) => span.name === "UsageLog.commit"), "the usage log's commit is a span")
    ok(spans.some((span) => span.name === "POST /v1beta/models/{model}:generateContent"))

    // The gateway's log lines go out too.
    const logs = bodies.filter((body) => body.path === "/v1/logs").map((body) => body.text).join("\n")
    ok(logs.includes("Channel put in cooldown"), "the cooldown warning was exported")

    // Nothing sent anywhere holds a key or the prompt.
    const everything = bodies.map((body) => body.text).join("\n")
    for (const secret of [KEY, "sk-test-upstream-primary", "sk-test-upstream-second", PROMPT]) {
      ok(!everything.includes(secret), `the export holds ${secret}`)
    }
  } finally {
    if (!closed) await gateway.close()
    await receiver.shutdown()
  }
})

Deno.test("otlp: each Realtime response is a realtime.response span under the handshake's, with its usage and cost", async () => {
  const bodies: Array<{ readonly path: string; readonly text: string }> = []
  const receiver = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (request) => {
    bodies.push({ path: new URL(request.url).pathname, text: await request.text() })
    return new Response("{}", { headers: { "content-type": "application/json" } })
  })
  const key = "sk-test-otlp-realtime-1"
  const gateway = await startGateway({
    config: (url) =>
      basicConfig(url, {
        models: { "gpt-realtime-test": { input: 10, output: 10, audio_input: 10, audio_output: 10 } },
        channels: [{
          name: "emu-realtime",
          type: "openai",
          base_url: `${url}/v1`,
          keys: ["sk-test-upstream-rt-otlp"],
          models: ["gpt-realtime-test"]
        }],
        users: [{ username: "alice", group: "default", quota: 10_000_000, tokens: [{ name: "main", key }] }]
      }),
    otlp: { endpoint: `http://127.0.0.1:${receiver.addr.port}/`, serviceName: "sluice-test", exportIntervalMillis: 100 }
  })
  let closed = false
  try {
    const socket = new WebSocket(`${gateway.url.replace("http", "ws")}/v1/realtime?model=gpt-realtime-test`, [
      "realtime",
      `openai-insecure-api-key.${key}`
    ])
    const done = new Promise<{ response: { id: string } }>((resolve) =>
      socket.onmessage = (message) => {
        const event = JSON.parse(message.data)
        if (event.type === "session.created") {
          socket.send(JSON.stringify({ type: "response.create", response: { output_modalities: ["text"] } }))
        }
        if (event.type === "response.done") resolve(event)
      }
    )
    const { response } = await done
    const ended = new Promise((resolve) => socket.onclose = resolve)
    socket.close(1000)
    await ended
    await new Promise((resolve) => setTimeout(resolve, 400))
    await gateway.close()
    closed = true
    const spans: Array<Span> = bodies.filter((body) => body.path === "/v1/traces").flatMap((body) =>
      JSON.parse(body.text).resourceSpans.flatMap((resource: { scopeSpans: Array<{ spans: Array<Span> }> }) =>
        resource.scopeSpans.flatMap((scope) => scope.spans)
      )
    )
    const handshake = spans.find((span) => span.name === "GET /v1/realtime")
    ok(handshake !== undefined, `a handshake span; got ${spans.map((span) => span.name).join(", ")}`)
    const responses = spans.filter((span) => span.name === "realtime.response")
    strictEqual(responses.length, 1)
    const [span] = responses
    strictEqual(span.parentSpanId, handshake.spanId)
    strictEqual(span.traceId, handshake.traceId)
    strictEqual(attribute(span, "sluice.response_id"), response.id)
    const record = gateway.emulator.realtime.find((entry) => entry.responseId === response.id)!
    strictEqual(attribute(span, "sluice.input_tokens"), record.usage.input_tokens)
    strictEqual(attribute(span, "sluice.output_tokens"), record.usage.output_tokens)
    strictEqual(
      attribute(span, "sluice.cost"),
      String((Number(record.usage.input_tokens) + Number(record.usage.output_tokens)) * 10)
    )
    strictEqual(attribute(span, "sluice.status"), 200)
    ok(!bodies.map((body) => body.text).join("\n").includes(key), "no key in the export")
  } finally {
    if (!closed) await gateway.close()
    await receiver.shutdown()
  }
})
