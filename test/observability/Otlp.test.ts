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
import { startGateway } from "../support/Gateway.ts"
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
