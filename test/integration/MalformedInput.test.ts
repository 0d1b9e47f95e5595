/**
 * Malformed requests on every text route, generated: a valid request of each
 * format (tools, an image, a tool call round trip) with one or two of its
 * fields deleted or replaced by arbitrary JSON, sent raw to each upstream
 * type, streamed or not. Whatever arrives, the answer is a success or the
 * route's own error envelope with a string `message` and `param` (generate-content:
 * Google's numeric `code` and RPC `status`; a 503 only for `model_not_found`), never a stack or an upstream key; and afterwards no
 * failed request has cost anything, with the users' spent quota equal to the
 * usage log's costs.
 */
import { Result } from "effect"
import { ok, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { startGateway } from "../support/Gateway.ts"

const KEY = "sk-test-malformed-0001"
const UPSTREAM_KEYS = ["sk-test-upstream-openai", "sk-test-upstream-anthropic", "sk-test-upstream-gemini"]
const MODELS = ["gpt-m", "claude-m", "gemini-m"]
const PNG_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

const config = (emulatorUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: Object.fromEntries(MODELS.map((model) => [model, { input: 1, output: 2 }])),
      channels: (["openai", "anthropic", "gemini"] as const).map((type, index) => ({
        name: `emu-${type}`,
        type,
        base_url: emulatorUrl,
        keys: [UPSTREAM_KEYS[index]],
        models: [MODELS[index]]
      })),
      users: [{ username: "fuzz", group: "default", quota: 1_000_000_000, tokens: [{ name: "main", key: KEY }] }]
    }),
    "malformed.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

type Json = null | boolean | number | string | Array<Json> | { [key: string]: Json }

const parameters = { type: "object", properties: { city: { type: "string" } }, required: ["city"] }

/** One valid request per route, and how to send it. */
const routes: ReadonlyArray<{
  readonly name: string
  /** A fresh copy each call (JSON only; it is mutated). */
  readonly seed: () => object
  readonly path: (model: string, stream: boolean) => string
  readonly headers: Record<string, string>
  /** The route takes the model and streaming from its path rather than its body. */
  readonly modelInPath?: boolean
}> = [
  {
    name: "chat",
    path: () => "/v1/chat/completions",
    headers: { authorization: `Bearer ${KEY}` },
    seed: () => ({
      model: "gpt-m",
      max_tokens: 50,
      tools: [{ type: "function", function: { name: "get_weather", parameters } }],
      response_format: { type: "text" },
      messages: [
        { role: "system", content: "Be brief." },
        {
          role: "user",
          content: [{ type: "text", text: "hi" }, {
            type: "image_url",
            image_url: { url: `data:image/png;base64,${PNG_BASE64}` }
          }]
        },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"P"}' } }]
        },
        { role: "tool", tool_call_id: "call_1", content: "sunny" }
      ]
    })
  },
  {
    name: "completions",
    path: () => "/v1/completions",
    headers: { authorization: `Bearer ${KEY}` },
    seed: () => ({ model: "gpt-m", prompt: "Say hi", max_tokens: 20, stop: ["x"] })
  },
  {
    name: "messages",
    path: () => "/v1/messages",
    headers: { "x-api-key": KEY, "anthropic-version": "2023-06-01" },
    seed: () => ({
      model: "claude-m",
      max_tokens: 50,
      system: [{ type: "text", text: "Be brief." }],
      tools: [{ name: "get_weather", input_schema: parameters }],
      messages: [
        {
          role: "user",
          content: [{ type: "text", text: "hi" }, {
            type: "image",
            source: { type: "base64", media_type: "image/png", data: PNG_BASE64 }
          }]
        },
        {
          role: "assistant",
          content: [{ type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "P" } }]
        },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "sunny" }] }
      ]
    })
  },
  {
    name: "responses",
    path: () => "/v1/responses",
    headers: { authorization: `Bearer ${KEY}` },
    seed: () => ({
      model: "gpt-m",
      instructions: "Be brief.",
      max_output_tokens: 50,
      store: false,
      tools: [{ type: "function", name: "get_weather", parameters }],
      input: [
        {
          role: "user",
          content: [{ type: "input_text", text: "hi" }, {
            type: "input_image",
            image_url: `data:image/png;base64,${PNG_BASE64}`
          }]
        },
        { type: "function_call", call_id: "c1", name: "get_weather", arguments: '{"city":"P"}' },
        { type: "function_call_output", call_id: "c1", output: "sunny" }
      ]
    })
  },
  {
    name: "generate-content",
    path: (model, stream) =>
      `/v1beta/models/${encodeURIComponent(model)}:${stream ? "streamGenerateContent?alt=sse" : "generateContent"}`,
    headers: { "x-goog-api-key": KEY },
    modelInPath: true,
    seed: () => ({
      systemInstruction: { parts: [{ text: "Be brief." }] },
      generationConfig: { maxOutputTokens: 50, stopSequences: ["x"] },
      tools: [{ functionDeclarations: [{ name: "get_weather", parameters }] }],
      contents: [
        { role: "user", parts: [{ text: "hi" }, { inlineData: { mimeType: "image/png", data: PNG_BASE64 } }] },
        { role: "model", parts: [{ functionCall: { name: "get_weather", args: { city: "P" } } }] },
        { role: "user", parts: [{ functionResponse: { name: "get_weather", response: { forecast: "sunny" } } }] }
      ]
    })
  }
]

/** Every path into `value` (object keys and array indexes), the root excluded. */
const pathsOf = (value: Json, prefix: ReadonlyArray<string | number> = []): Array<ReadonlyArray<string | number>> => {
  const children: Array<[string | number, Json]> = Array.isArray(value)
    ? value.map((item, index) => [index, item])
    : typeof value === "object" && value !== null
    ? Object.entries(value)
    : []
  return children.flatMap(([key, child]) => [[...prefix, key], ...pathsOf(child, [...prefix, key])])
}

interface Mutation {
  readonly at: number
  readonly replacement: Json | undefined
}

/** `body` with each mutation applied in turn: the field at path `at` (modulo their count) deleted or replaced. */
const mutated = (body: { [key: string]: Json }, mutations: ReadonlyArray<Mutation>) => {
  for (const mutation of mutations) {
    // A copy: constant replacements are shared objects, and one placed inside another would make a cycle.
    const replacement = structuredClone(mutation.replacement)
    const paths = pathsOf(body)
    if (paths.length === 0) break
    const path = paths[mutation.at % paths.length]
    let parent = body as Json
    for (const key of path.slice(0, -1)) parent = (parent as Record<string | number, Json>)[key]
    const last = path[path.length - 1]
    if (Array.isArray(parent) && typeof last === "number") {
      if (replacement === undefined) parent.splice(last, 1)
      else parent[last] = replacement
    } else if (typeof parent === "object" && parent !== null) {
      const record = parent as Record<string, Json>
      if (replacement === undefined) delete record[last]
      else record[last] = replacement
    }
  }
  return body
}

const oddValue: fc.Arbitrary<Json> = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>,
  fc.constantFrom<Json>(null, "", -1, 1.5, 1e308, 2 ** 53 + 2, [], {}, true, "\u0000", { type: "zzz" }, [{
    type: "zzz"
  }])
)

const mutation: fc.Arbitrary<Mutation> = fc.record({
  at: fc.nat(),
  replacement: fc.option(oddValue, { nil: undefined, freq: 4 })
})

Deno.test("malformed input: every text route answers with its envelope, and failed requests cost nothing", async () => {
  const gateway = await startGateway({ config, store: "postgres" })
  try {
    for (const route of routes) {
      await fc.assert(
        fc.asyncProperty(
          fc.array(mutation, { minLength: 1, maxLength: 2 }),
          fc.constantFrom(...MODELS),
          fc.boolean(),
          async (mutations, model, stream) => {
            const body = mutated(route.seed() as { [key: string]: Json }, mutations)
            if (route.modelInPath !== true && stream) body.stream = true
            if (route.modelInPath !== true && body.model === MODELS[0]) body.model = model
            const response = await fetch(gateway.url + route.path(model, stream), {
              method: "POST",
              headers: { "content-type": "application/json", ...route.headers },
              body: JSON.stringify(body)
            })
            const text = await response.text()
            const where = `${route.name} ${response.status}: ${text.slice(0, 300)}`
            for (const key of UPSTREAM_KEYS) ok(!text.includes(key), `upstream key in ${where}`)
            ok(!/\n\s+at /.test(text), `stack in ${where}`)
            if (response.status < 400) return
            const parsed = JSON.parse(text)
            const error = parsed.error
            strictEqual(typeof error?.message, "string", where)
            ok(error.message.length > 0, where)
            if (route.name === "generate-content") {
              // Google's shape: numeric code, RPC status, the spec code in an ErrorInfo, the field in a BadRequest.
              strictEqual(error.code, response.status, where)
              strictEqual(typeof error.status, "string", where)
              const code = error.details?.[0]?.metadata?.code
              ok(response.status < 500 || (response.status === 503 && code === "model_not_found"), where)
              return
            }
            ok(response.status < 500 || (response.status === 503 && error?.code === "model_not_found"), where)
            strictEqual(typeof error.param, "string", where)
            if (route.name === "messages") strictEqual(parsed.type, "error", where)
          }
        ),
        { numRuns: 60 }
      )
    }
    // The ledger settles in the background: wait for it, then compare.
    let users: ReadonlyArray<{ used: string; logged: string; failedCost: string }> = []
    for (let attempt = 0; attempt < 100; attempt++) {
      users = await gateway.query<{ used: string; logged: string; failedCost: string }>(
        `SELECT (SELECT used_quota FROM users WHERE username = 'fuzz')::text AS used,
                (SELECT COALESCE(SUM(cost), 0) FROM usage_logs)::text AS logged,
                (SELECT COALESCE(SUM(cost), 0) FROM usage_logs WHERE status >= 400)::text AS "failedCost"`
      )
      if (users[0]?.used === users[0]?.logged) break
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    strictEqual(users[0]?.failedCost, "0")
    strictEqual(users[0]?.used, users[0]?.logged)
    ok(Number(users[0]?.used) > 0, "some requests were answered and billed")
  } finally {
    await gateway.close()
  }
})
