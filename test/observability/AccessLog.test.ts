/**
 * The access log of known requests, read back from the gateway's log output
 * and checked field by field (a failover, a stream whose line waits for its
 * settlement, an error, a route with no model), and `x-request-id`: taken
 * from the caller when well-formed, made otherwise (then also the usage log's
 * `request_id`), returned on every answer and sent upstream.
 */
import { deepStrictEqual, match, notStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { fieldsOf, jsonLine, textLine } from "../../src/observability/AccessLog.ts"
import { RequestRecord } from "../../src/observability/RequestRecord.ts"
import { startGateway, type TestGateway } from "../support/Gateway.ts"
import { KEY, twoChannels } from "./Support.ts"

const FIELDS = [
  "time",
  "level",
  "msg",
  "request_id",
  "method",
  "route",
  "status",
  "latency_ms",
  "ttfb_ms",
  "format",
  "model",
  "group",
  "channel",
  "prompt_tokens",
  "completion_tokens",
  "cached_tokens",
  "reasoning_tokens",
  "cost",
  "failover"
]

/** The access-log line of `requestId`, waiting a little for a stream's settlement. */
const lineOf = async (gateway: TestGateway, requestId: string): Promise<Record<string, unknown>> => {
  for (let tries = 0; tries < 50; tries++) {
    const lines = gateway.logs.map((line) => JSON.parse(line) as Record<string, unknown>)
    const found = lines.filter((line) => line.msg === "request" && line.request_id === requestId)
    if (found.length > 1) throw new Error(`${found.length} lines for one request`)
    if (found.length === 1) return found[0]
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  throw new Error(`No access-log line for ${requestId}`)
}

const chat = (gateway: TestGateway, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  fetch(`${gateway.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(body)
  })

Deno.test("access log: known requests read back field by field; x-request-id taken, made, returned, sent", async (t) => {
  const gateway = await startGateway({ store: "postgres", config: (url) => twoChannels(url) })
  try {
    await t.step("a failover, logged with its path, tokens and the ledger's cost", async () => {
      gateway.emulator.reset()
      gateway.emulator.setFaults([{ match: { key: "sk-test-upstream-primary" }, status: 500, times: 1 }])
      const response = await chat(gateway, {
        model: "gpt-test",
        messages: [{ role: "user", content: "a secret prompt that must never be logged" }],
        max_tokens: 20
      }, { "x-request-id": "trace-0001.abc" })
      strictEqual(response.status, 200)
      strictEqual(response.headers.get("x-request-id"), "trace-0001.abc")
      const answer = await response.json()
      // Sent upstream with both attempts.
      deepStrictEqual(gateway.emulator.requests.map((request) => request.headers["x-request-id"]), [
        "trace-0001.abc",
        "trace-0001.abc"
      ])
      const line = await lineOf(gateway, "trace-0001.abc")
      deepStrictEqual(Object.keys(line), FIELDS)
      ok(Math.abs(Date.parse(line.time as string) - Date.now()) < 60_000)
      strictEqual(line.level, "info")
      strictEqual(line.msg, "request")
      strictEqual(line.method, "POST")
      strictEqual(line.route, "/v1/chat/completions")
      strictEqual(line.status, 200)
      ok(typeof line.latency_ms === "number" && typeof line.ttfb_ms === "number")
      ok((line.ttfb_ms as number) >= 0 && (line.latency_ms as number) >= (line.ttfb_ms as number))
      strictEqual(line.format, "openai-chat")
      strictEqual(line.model, "gpt-test")
      strictEqual(line.group, "default")
      strictEqual(line.channel, "secondary")
      strictEqual(line.prompt_tokens, answer.usage.prompt_tokens)
      strictEqual(line.completion_tokens, answer.usage.completion_tokens)
      strictEqual(line.cached_tokens, 0)
      strictEqual(line.reasoning_tokens, 0)
      deepStrictEqual(line.failover, ["primary:server", "secondary:ok"])
      // The caller's id is not the usage log's (a caller's value is never trusted to be unique); this is the first
      // answered request of a fresh store, so its cost is the one successful row.
      await new Promise((resolve) => setTimeout(resolve, 200))
      const rows = await gateway.query<{ cost: string }>(`SELECT cost::text AS cost FROM usage_logs WHERE status = 200`)
      strictEqual(rows.length, 1)
      strictEqual(line.cost, Number(rows[0].cost))
      ok((line.cost as number) > 0)
    })

    await t.step(
      "a made id: 32 hex digits, also the usage log's request_id; a stream's line after its end",
      async () => {
        gateway.emulator.reset()
        const client = new OpenAI({
          baseURL: `${gateway.url}/v1`,
          apiKey: KEY,
          maxRetries: 0,
          defaultHeaders: { "x-request-id": "not a well-formed id!" }
        })
        const { data: stream, response } = await client.chat.completions.create({
          model: "gpt-test",
          messages: [{ role: "user", content: "stream me an answer please" }],
          max_tokens: 20,
          stream: true,
          stream_options: { include_usage: true }
        }).withResponse()
        const requestId = response.headers.get("x-request-id")!
        match(requestId, /^[0-9a-f]{32}$/)
        let usage: OpenAI.CompletionUsage | undefined
        for await (const chunk of stream) usage = chunk.usage ?? usage
        strictEqual(gateway.emulator.requests[0].headers["x-request-id"], requestId)
        const line = await lineOf(gateway, requestId)
        strictEqual(line.status, 200)
        strictEqual(line.channel, "primary")
        strictEqual(line.prompt_tokens, usage!.prompt_tokens)
        strictEqual(line.completion_tokens, usage!.completion_tokens)
        deepStrictEqual(line.failover, [])
        await new Promise((resolve) => setTimeout(resolve, 200))
        const rows = await gateway.query<{ cost: string }>(
          `SELECT cost::text AS cost FROM usage_logs WHERE request_id = '${requestId}'`
        )
        strictEqual(rows.length, 1)
        strictEqual(line.cost, Number(rows[0].cost))
      }
    )

    await t.step("an error and routes without a model: warn level, x-request-id on every answer", async () => {
      const refused = await chat(gateway, { model: "gpt-test", messages: [] }, { "x-request-id": "bad-request-1" })
      strictEqual(refused.status, 400)
      strictEqual(refused.headers.get("x-request-id"), "bad-request-1")
      await refused.body?.cancel()
      const refusedLine = await lineOf(gateway, "bad-request-1")
      strictEqual(refusedLine.level, "warn")
      strictEqual(refusedLine.status, 400)
      strictEqual(refusedLine.channel, null)
      strictEqual(refusedLine.cost, 0)

      for (const path of ["/healthz", "/readyz", "/v1/models", "/no/such/route"]) {
        const response = await fetch(`${gateway.url}${path}`, { headers: { authorization: `Bearer ${KEY}` } })
        await response.body?.cancel()
        const id = response.headers.get("x-request-id")
        ok(id !== null && /^[0-9a-f]{32}$/.test(id), `${path} answers with an x-request-id`)
        const line = await lineOf(gateway, id)
        strictEqual(line.status, response.status)
        strictEqual(line.model, null)
        strictEqual(line.route, path === "/no/such/route" ? "other" : path)
      }
      // Two requests never share a made id.
      const [a, b] = await Promise.all([fetch(`${gateway.url}/healthz`), fetch(`${gateway.url}/healthz`)])
      await a.body?.cancel()
      await b.body?.cancel()
      notStrictEqual(a.headers.get("x-request-id"), b.headers.get("x-request-id"))
    })
  } finally {
    await gateway.close()
  }
})

Deno.test("access log: the readable form holds the same facts on one line; a hostile model name is masked", () => {
  const owner = { attempt: () => {}, finished: () => {} }
  const record = new RequestRecord(
    owner,
    "req-1",
    false,
    "POST",
    "/v1beta/models/x:generateContent?key=sk-secret",
    Date.now()
  )
  record.relayed("gemini", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz\u0000\nhostile")
  record.responded(503)
  const json = JSON.parse(jsonLine(record))
  strictEqual(json.route, "/v1beta/models/{model}:generateContent")
  strictEqual(json.level, "error")
  ok(!JSON.stringify(json).includes("abcdefghijklmnop"), "a key-like model name is masked")
  ok(!JSON.stringify(json).includes("sk-secret"), "the query string is never logged")
  const text = textLine(record)
  ok(!text.includes("\n"), "one line")
  match(
    text,
    /ERROR request request_id=req-1 method=POST route=\/v1beta\/models\/\{model\}:generateContent status=503 .* format=gemini model="sk-ant-\[redacted\] \\nhostile" prompt_tokens=0 /
  )
  ok(!text.includes("abcdefghijklmnop"))
})

Deno.test("access log: the JSON line is exactly JSON.stringify of the line's fields, hostile text included", () => {
  const owner = { attempt: () => {}, finished: () => {} }
  const hostile = 'a"b\\c\u0000d\ud800e\u2028f\n' + "sk-test-" + "x".repeat(40)
  const plain = new RequestRecord(owner, "req-2", false, "GET", "/healthz", Date.now())
  plain.responded(200)
  const billed = new RequestRecord(
    owner,
    "0123456789abcdef0123456789abcdef",
    true,
    "POST",
    "/v1/chat/completions",
    Date.now()
  )
  billed.relayed("openai-chat", hostile)
  billed.priced('group "x"')
  billed.attemptFailed("first\u0000channel", "server", true)
  billed.billed("second", 12, 34, 5, 6, 123_456_789n)
  billed.responded(200)
  for (const record of [plain, billed]) {
    const line = jsonLine(record)
    strictEqual(line, JSON.stringify(fieldsOf(record)))
    deepStrictEqual(JSON.parse(line), fieldsOf(record))
  }
})

Deno.test("log scan: a line holding a key or prompt text is found", async () => {
  const { assertNoSecrets } = await import("../support/LogScan.ts")
  const lines = ['{"msg":"request","model":"gpt-test"}']
  assertNoSecrets(lines, ["sk-test-alice-0001"], ["a prompt of some length"])
  let thrown = 0
  for (const bad of ['{"note":"sk-test-alice-0001"}', '{"note":"… a prompt of some length …"}']) {
    try {
      assertNoSecrets([bad], ["sk-test-alice-0001"], ["a prompt of some length"])
    } catch {
      thrown++
    }
  }
  strictEqual(thrown, 2)
})
