import { deepStrictEqual, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import type { Response as CanonicalResponse } from "../../../../src/canonical/Response.ts"
import { UpstreamFailed } from "../../../../src/errors/GatewayError.ts"
import { OpenAiResponsesFormat } from "../../../../src/formats/openai/responses/Format.ts"

/** Shaped like the API reference's "Response object" example. */
const upstreamBody = (overrides: Record<string, unknown> = {}) => ({
  id: "resp_67ccd3a9da748190baa7f1570fe91ac604becb25c45c1d41",
  object: "response",
  created_at: 1741476777,
  status: "completed",
  error: null,
  incomplete_details: null,
  instructions: null,
  max_output_tokens: null,
  model: "gpt-4o-2024-08-06",
  output: [{
    type: "message",
    id: "msg_67ccd3acc8d48190a77525dc6de64b4104becb25c45c1d41",
    status: "completed",
    role: "assistant",
    content: [{ type: "output_text", text: "The image depicts a scenic landscape.", annotations: [] }]
  }],
  parallel_tool_calls: true,
  previous_response_id: null,
  reasoning: { effort: null, summary: null },
  store: true,
  temperature: 1,
  text: { format: { type: "text" } },
  tool_choice: "auto",
  tools: [],
  top_p: 1,
  truncation: "disabled",
  usage: {
    input_tokens: 328,
    input_tokens_details: { cached_tokens: 128, cache_write_tokens: 0 },
    output_tokens: 52,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 380
  },
  user: null,
  metadata: {},
  ...overrides
})

const decoded = (body: unknown): CanonicalResponse => {
  const result = OpenAiResponsesFormat.decodeResponse(body)
  if (result instanceof UpstreamFailed) throw new Error(`expected a response, got ${result.kind}: ${result.message}`)
  return result
}

Deno.test("decodeResponse: plain text answer with usage incl. cached tokens", () => {
  deepStrictEqual(decoded(upstreamBody()), {
    id: "resp_67ccd3a9da748190baa7f1570fe91ac604becb25c45c1d41",
    model: "gpt-4o-2024-08-06",
    created: 1741476777,
    content: [{ type: "text", text: "The image depicts a scenic landscape." }],
    finishReason: "stop",
    usage: {
      inputTokens: 328,
      outputTokens: 52,
      cachedInputTokens: 128,
      cacheCreationInputTokens: 0,
      reasoningTokens: 0
    }
  })
})

Deno.test("decodeResponse: reasoning with signature, refusal, parallel function calls → tool-calls", () => {
  const response = decoded(upstreamBody({
    output: [
      {
        type: "reasoning",
        id: "rs_1",
        summary: [{ type: "summary_text", text: "Need both cities." }],
        encrypted_content: "gAAAAB-opaque"
      },
      { type: "web_search_call", id: "ws_1", status: "completed" },
      {
        type: "message",
        id: "msg_1",
        status: "completed",
        role: "assistant",
        content: [{ type: "refusal", refusal: "Not that part." }]
      },
      {
        type: "function_call",
        id: "fc_1",
        call_id: "call_1",
        name: "get_weather",
        arguments: '{"location":"Paris"}',
        status: "completed"
      },
      {
        type: "function_call",
        id: "fc_2",
        call_id: "call_2",
        name: "get_weather",
        arguments: '{"location":"Bogotá"}',
        status: "completed"
      }
    ],
    usage: {
      input_tokens: 10,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 200,
      output_tokens_details: { reasoning_tokens: 150 },
      total_tokens: 210
    }
  }))
  deepStrictEqual(response.content, [
    { type: "reasoning", text: "Need both cities.", signature: "gAAAAB-opaque", origin: "openai" },
    { type: "text", text: "Not that part." },
    { type: "tool-call", callId: "call_1", name: "get_weather", arguments: '{"location":"Paris"}' },
    { type: "tool-call", callId: "call_2", name: "get_weather", arguments: '{"location":"Bogotá"}' }
  ])
  strictEqual(response.finishReason, "tool-calls")
  deepStrictEqual(response.usage, { inputTokens: 10, outputTokens: 200, cachedInputTokens: 0, reasoningTokens: 150 })
})

Deno.test("decodeResponse: incomplete → length / content-filter; failed and garbage → UpstreamFailed", () => {
  const length = decoded(upstreamBody({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" } }))
  strictEqual(length.finishReason, "length")
  strictEqual(length.rawFinishReason, "max_output_tokens")
  const filtered = decoded(upstreamBody({ status: "incomplete", incomplete_details: { reason: "content_filter" } }))
  strictEqual(filtered.finishReason, "content-filter")
  const failed = OpenAiResponsesFormat.decodeResponse(
    upstreamBody({ status: "failed", error: { code: "rate_limit_exceeded", message: "Slow down." }, output: [] })
  )
  strictEqual(failed instanceof UpstreamFailed && failed.kind, "throttled")
  strictEqual(failed instanceof UpstreamFailed && failed.message, "Slow down.")
  const serverFailed = OpenAiResponsesFormat.decodeResponse(
    upstreamBody({ status: "failed", error: { code: "server_error", message: "Oops." }, output: [] })
  )
  strictEqual(serverFailed instanceof UpstreamFailed && serverFailed.kind, "server")
  const garbage = OpenAiResponsesFormat.decodeResponse({ hello: "world" })
  strictEqual(garbage instanceof UpstreamFailed && garbage.kind, "bad-body")
  const badItem = OpenAiResponsesFormat.decodeResponse(upstreamBody({ output: [{ type: "function_call" }] }))
  strictEqual(badItem instanceof UpstreamFailed && badItem.kind, "bad-body")
})

const meta = { id: "resp_abc", model: "gpt-4.1", created: 1741476542 }

Deno.test("encodeResponse: a full Response object with deterministic item ids and usage details", () => {
  const body = OpenAiResponsesFormat.encodeResponse({
    id: "upstream-id",
    model: "upstream-model",
    created: 1,
    content: [
      { type: "reasoning", text: "Thinking.", signature: "sig-1" },
      { type: "text", text: "In a peaceful grove, " },
      { type: "text", text: "a unicorn slept." },
      { type: "tool-call", callId: "call_1", name: "get_weather", arguments: "{}" }
    ],
    finishReason: "tool-calls",
    usage: { inputTokens: 36, outputTokens: 87, cachedInputTokens: 4, reasoningTokens: 20 }
  }, meta)
  deepStrictEqual(body, {
    id: "resp_abc",
    object: "response",
    created_at: 1741476542,
    status: "completed",
    error: null,
    incomplete_details: null,
    instructions: null,
    max_output_tokens: null,
    model: "gpt-4.1",
    output: [
      {
        id: "rs_abc_0",
        type: "reasoning",
        summary: [{ type: "summary_text", text: "Thinking." }],
        encrypted_content: "sig-1"
      },
      {
        id: "msg_abc_1",
        type: "message",
        status: "completed",
        role: "assistant",
        content: [
          { type: "output_text", text: "In a peaceful grove, ", annotations: [], logprobs: [] },
          { type: "output_text", text: "a unicorn slept.", annotations: [], logprobs: [] }
        ]
      },
      {
        id: "fc_abc_2",
        type: "function_call",
        status: "completed",
        call_id: "call_1",
        name: "get_weather",
        arguments: "{}"
      }
    ],
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    store: true,
    temperature: null,
    text: { format: { type: "text" } },
    tool_choice: "auto",
    tools: [],
    top_p: null,
    truncation: "disabled",
    usage: {
      input_tokens: 36,
      input_tokens_details: { cached_tokens: 4, cache_write_tokens: 0 },
      output_tokens: 87,
      output_tokens_details: { reasoning_tokens: 20 },
      total_tokens: 123
    },
    metadata: {}
  })
})

Deno.test("encodeResponse: length → incomplete with max_output_tokens; decodeResponse reads it back", () => {
  const response: CanonicalResponse = {
    id: "x",
    model: "m",
    created: 1,
    content: [{ type: "text", text: "Once upon" }],
    finishReason: "length",
    usage: { inputTokens: 5, outputTokens: 16 }
  }
  const body = OpenAiResponsesFormat.encodeResponse(response, meta) as Record<string, unknown>
  strictEqual(body.status, "incomplete")
  deepStrictEqual(body.incomplete_details, { reason: "max_output_tokens" })
  const back = decoded(body)
  strictEqual(back.finishReason, "length")
  deepStrictEqual(back.content, response.content)
})

Deno.test("classifyError: status and vendor codes → failure kinds; encodeError is the OpenAI envelope", () => {
  const classify = OpenAiResponsesFormat.classifyError
  const body = (code: string, type = "invalid_request_error") =>
    JSON.stringify({ error: { message: `m-${code}`, type, param: null, code } })
  deepStrictEqual(classify(401, body("invalid_api_key")), { kind: "unauthorized", message: "m-invalid_api_key" })
  strictEqual(classify(403, body("unsupported_country_region_territory")).kind, "unauthorized")
  strictEqual(classify(429, body("rate_limit_exceeded", "requests")).kind, "throttled")
  strictEqual(classify(429, body("insufficient_quota", "insufficient_quota")).kind, "quota")
  for (const status of [400, 404, 413, 422]) strictEqual(classify(status, body("invalid_value")).kind, "rejected")
  strictEqual(classify(500, body("server_error", "server_error")).kind, "server")
  strictEqual(classify(503, "<html>unavailable</html>").kind, "server")
  deepStrictEqual(
    OpenAiResponsesFormat.encodeError({
      status: 400,
      type: "invalid_request_error",
      code: "invalid_request",
      message: "Invalid model",
      param: "model"
    }),
    { error: { message: "Invalid model", type: "invalid_request_error", param: "model", code: "invalid_request" } }
  )
})

Deno.test("encodeResponse: the OpenAI SDK's responses.create() reads the body; output_text is the text", async () => {
  const body = OpenAiResponsesFormat.encodeResponse({
    id: "x",
    model: "m",
    created: 1,
    content: [
      { type: "reasoning", text: "", signature: "sig" },
      { type: "text", text: "In a peaceful grove, a unicorn slept." }
    ],
    finishReason: "stop",
    usage: { inputTokens: 36, outputTokens: 87 }
  }, meta)
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (request) => {
    await request.body?.cancel()
    return Response.json(body)
  })
  try {
    const client = new OpenAI({ apiKey: "test-key", baseURL: `http://127.0.0.1:${server.addr.port}/v1`, maxRetries: 0 })
    const answer = await client.responses.create({ model: "gpt-4.1", input: "Tell me a story." })
    strictEqual(answer.id, "resp_abc")
    strictEqual(answer.output_text, "In a peaceful grove, a unicorn slept.")
    strictEqual(answer.usage?.total_tokens, 123)
    deepStrictEqual(answer.output[0], { id: "rs_abc_0", type: "reasoning", summary: [], encrypted_content: "sig" })
  } finally {
    await server.shutdown()
  }
})
