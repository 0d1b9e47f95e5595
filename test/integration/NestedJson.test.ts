/**
 * Deeply nested JSON (issue 37, item 3): a body of nested brackets is refused
 * before it is parsed, on every JSON route (`/v1` chat, messages, responses,
 * generate-content, and `/api/*`), in the route's own envelope with a
 * message naming the limit, without charge, while `/healthz` keeps
 * answering; 64 levels and brackets inside strings still pass the parser.
 * The same bound holds for an upstream's answer: a hostile channel's bracket
 * bomb, as a JSON answer or as a stream event, is an unreadable answer.
 */
import { ok, strictEqual } from "node:assert/strict"
import { MAX_JSON_DEPTH } from "../../src/domain/JsonDepth.ts"
import { basicConfig, startGateway } from "../support/Gateway.ts"

const KEY = "sk-test-alice-0001"
const LIMIT_TEXT = `deeper than ${MAX_JSON_DEPTH} levels`

const nested = (levels: number, inner = ""): string => "[".repeat(levels) + inner + "]".repeat(levels)
/** A JSON object whose field `x` nests `levels - 1` arrays: `levels` levels in all. */
const objectOf = (levels: number, fields = ""): string => `{${fields}"x":${nested(levels - 1)}}`

/** Each JSON route, its headers, and how its error envelope carries the message. */
const routes: ReadonlyArray<{
  readonly name: string
  readonly path: string
  readonly headers: Record<string, string>
  /** The message of a refusal in the route's envelope, after checking the envelope's shape. */
  readonly refusal: (status: number, body: Record<string, unknown>) => string
}> = [
  {
    name: "chat",
    path: "/v1/chat/completions",
    headers: { authorization: `Bearer ${KEY}` },
    refusal: (status, body) => gatewayRefusal(status, body)
  },
  {
    name: "responses",
    path: "/v1/responses",
    headers: { authorization: `Bearer ${KEY}` },
    refusal: (status, body) => gatewayRefusal(status, body)
  },
  {
    name: "messages",
    path: "/v1/messages",
    headers: { "x-api-key": KEY, "anthropic-version": "2023-06-01" },
    refusal: (status, body) => {
      strictEqual(body.type, "error")
      return gatewayRefusal(status, body)
    }
  },
  {
    name: "generate-content",
    path: "/v1beta/models/x:generateContent",
    headers: { "x-goog-api-key": KEY },
    refusal: (status, body) => {
      strictEqual(status, 400)
      const error = body.error as { code: number; status: string; message: string }
      strictEqual(error.code, 400)
      strictEqual(error.status, "INVALID_ARGUMENT")
      return error.message
    }
  },
  {
    name: "api login",
    path: "/api/user/login",
    headers: {},
    refusal: (status, body) => {
      // The api envelope: a request error is HTTP 200 with `success: false`.
      strictEqual(status, 200)
      strictEqual(body.success, false)
      return body.message as string
    }
  }
]

const gatewayRefusal = (status: number, body: Record<string, unknown>): string => {
  strictEqual(status, 400)
  const error = body.error as { message: string; type: string; param: string; code: string }
  strictEqual(error.type, "invalid_request_error")
  strictEqual(error.param, "")
  strictEqual(error.code, "invalid_request")
  return error.message
}

/** The nesting depth of a value, by walking it (0 for a scalar). */
const depthOf = (value: unknown): number =>
  typeof value === "object" && value !== null ? 1 + Math.max(0, ...Object.values(value).map(depthOf)) : 0

const post = async (url: string, headers: Record<string, string>, body: string) => {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body
  })
  const text = await response.text()
  return { status: response.status, text, body: JSON.parse(text) as Record<string, unknown> }
}

const healthz = async (url: string) => {
  const response = await fetch(`${url}/healthz`)
  await response.body?.cancel()
  return response.status
}

Deno.test("nested JSON: every JSON route refuses a bracket bomb before parsing it, in its envelope, for free", async () => {
  const gateway = await startGateway({ config: basicConfig, store: "postgres" })
  try {
    // 100 levels, and a million or more: 6 MB on /v1 (the size that stalled /healthz for seconds), 1 MB on /api
    // (its body limit is 1 MiB).
    const bombs = [nested(100), objectOf(100, '"model":"gpt-test",'), nested(3_000_000), nested(500_000)]
    for (const body of bombs) {
      for (const route of routes) {
        if (body.length > 1_000_000 && route.path.startsWith("/api/")) continue
        const [answer, health] = await Promise.all([
          post(gateway.url + route.path, route.headers, body),
          healthz(gateway.url)
        ])
        const where = `${route.name} (${body.length} characters): ${answer.text.slice(0, 300)}`
        const message = route.refusal(answer.status, answer.body)
        ok(message.includes(LIMIT_TEXT), where)
        strictEqual(health, 200, "healthz answered while the bomb was refused")
      }
    }
    // A bomb sent without a declared length (chunked) is refused the same way.
    const chunked = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(nested(200_000)))
        controller.close()
      }
    })
    const streamed = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
      body: chunked
    })
    strictEqual(streamed.status, 400)
    ok((await streamed.text()).includes(LIMIT_TEXT))

    // Nothing was charged or logged as billed for the refusals.
    await new Promise((resolve) => setTimeout(resolve, 200))
    const [spent] = await gateway.query<{ used: string; billed: string }>(
      `SELECT (SELECT COALESCE(SUM(used_quota), 0) FROM users)::text AS used,
              (SELECT COALESCE(SUM(cost), 0) FROM usage_logs)::text AS billed`
    )
    strictEqual(spent.used, "0")
    strictEqual(spent.billed, "0")
  } finally {
    await gateway.close()
  }
})

Deno.test("nested JSON: 64 levels pass the parser, and brackets inside strings do not count", async () => {
  const gateway = await startGateway({ config: basicConfig })
  try {
    for (const route of routes) {
      // Exactly 64 levels: whatever the route says of the body, it is not the nesting limit.
      const answer = await post(
        gateway.url + route.path,
        route.headers,
        objectOf(MAX_JSON_DEPTH, '"model":"gpt-test",')
      )
      ok(!answer.text.includes(LIMIT_TEXT), `${route.name}: ${answer.text.slice(0, 300)}`)
      const deeper = await post(gateway.url + route.path, route.headers, objectOf(MAX_JSON_DEPTH + 1))
      ok(route.refusal(deeper.status, deeper.body).includes(LIMIT_TEXT), route.name)
    }
    // A chat request 64 levels deep (a tool whose JSON Schema nests objects 29 deep) is answered.
    let schema: Record<string, unknown> = { type: "string", enum: [] }
    for (let level = 0; level < 29; level++) schema = { type: "object", properties: { a: schema } }
    const request = {
      model: "gpt-test",
      max_tokens: 5,
      messages: [{ role: "user", content: "hi" }],
      tools: [{ type: "function", function: { name: "f", parameters: schema } }]
    }
    strictEqual(depthOf(request), MAX_JSON_DEPTH)
    const deepest = await post(
      `${gateway.url}/v1/chat/completions`,
      { authorization: `Bearer ${KEY}` },
      JSON.stringify(request)
    )
    strictEqual(deepest.status, 200, deepest.text.slice(0, 300))
    // A prompt and a key made of brackets, quotes and backslashes.
    const tricky = `${"[{".repeat(50_000)}\\"]}`
    const strings = await post(
      `${gateway.url}/v1/chat/completions`,
      { authorization: `Bearer ${KEY}` },
      JSON.stringify({ model: "gpt-test", max_tokens: 5, messages: [{ role: "user", content: tricky }] })
    )
    strictEqual(strings.status, 200, strings.text.slice(0, 300))
    const login = await post(
      `${gateway.url}/api/user/login`,
      {},
      JSON.stringify({ username: "alice", password: tricky, [`${"[".repeat(100)}"`]: 1 })
    )
    strictEqual(login.body.success, false)
    ok(!(login.body.message as string).includes(LIMIT_TEXT), login.text.slice(0, 300))
  } finally {
    await gateway.close()
  }
})

Deno.test("nested JSON: a hostile upstream's bracket bomb, as an answer or a stream event, is an unreadable answer", async () => {
  const bomb = nested(3_000_000)
  // Well-formed OpenAI answers but for one extra field holding the bomb: read whole, they would be served and billed.
  const usage = '"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}'
  const answer = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-bomb",` +
    `"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],${usage},` +
    `"x":${bomb}}`
  const chunk = (delta: string, finish: string, extra: string) =>
    `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-bomb",` +
    `"choices":[{"index":0,"delta":${delta},"finish_reason":${finish}}]${extra}}\n\n`
  const events = chunk('{"role":"assistant","content":"hi"}', "null", `,"x":${bomb}`) +
    chunk("{}", '"stop"', `,${usage}`) + "data: [DONE]\n\n"
  const hostile = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (request) => {
    const body = await request.json() as { stream?: boolean }
    return body.stream === true
      ? new Response(events, { headers: { "content-type": "text/event-stream" } })
      : new Response(answer, { headers: { "content-type": "application/json" } })
  })
  const hostileUrl = `http://127.0.0.1:${hostile.addr.port}`
  const gateway = await startGateway({
    config: (url) =>
      basicConfig(url, {
        models: { "gpt-test": { input: 2, output: 8 }, "gpt-bomb": { input: 2, output: 8 } },
        channels: [
          { name: "emu-openai", type: "openai", base_url: url, keys: ["sk-test-upstream-1"], models: ["gpt-test"] },
          {
            name: "hostile",
            type: "openai",
            base_url: hostileUrl,
            keys: ["sk-test-upstream-hostile"],
            models: ["gpt-bomb"]
          }
        ]
      }),
    store: "postgres"
  })
  try {
    for (const stream of [false, true]) {
      for (const path of ["/v1/chat/completions", "/v1/messages"]) {
        const headers: Record<string, string> = path === "/v1/messages"
          ? { "x-api-key": KEY, "anthropic-version": "2023-06-01" }
          : { authorization: `Bearer ${KEY}` }
        const [answer, health] = await Promise.all([
          post(
            gateway.url + path,
            headers,
            JSON.stringify({ model: "gpt-bomb", max_tokens: 5, stream, messages: [{ role: "user", content: "hi" }] })
          ),
          healthz(gateway.url)
        ])
        const where = `${path} stream=${stream}: ${answer.status} ${answer.text.slice(0, 300)}`
        strictEqual(answer.status, 500, where)
        strictEqual((answer.body.error as { code: string }).code, "bad_response_body", where)
        strictEqual(health, 200)
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 200))
    const [spent] = await gateway.query<{ used: string }>(
      "SELECT COALESCE(SUM(used_quota), 0)::text AS used FROM users"
    )
    strictEqual(spent.used, "0", "an unreadable answer costs nothing")
  } finally {
    await gateway.close()
    await hostile.shutdown()
  }
})
