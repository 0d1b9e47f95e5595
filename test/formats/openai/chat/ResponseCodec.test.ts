/**
 * `chat.completion` answers (shaped after the examples of
 * platform.openai.com/docs/api-reference/chat/object and the function calling
 * guide, plus DeepSeek's `reasoning_content`) and upstream error
 * classification.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import type { Response } from "../../../../src/canonical/Response.ts"
import { UpstreamFailed } from "../../../../src/errors/GatewayError.ts"
import { OpenAiChatFormat } from "../../../../src/formats/openai/chat/Format.ts"

const meta = { id: "chatcmpl-gw-1", model: "gpt-4.1", created: 1741569952 }

const decoded = (body: unknown): Response => {
  const result = OpenAiChatFormat.decodeResponse(body)
  if (result instanceof UpstreamFailed) throw new Error(`expected a response, got ${result.message}`)
  return result
}

Deno.test("decodeResponse: plain text with cached and reasoning token details", () => {
  const response = decoded({
    id: "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
    object: "chat.completion",
    created: 1741569952,
    model: "gpt-4.1-2025-04-14",
    choices: [{
      index: 0,
      message: { role: "assistant", content: "Hello! How can I assist you today?", refusal: null, annotations: [] },
      logprobs: null,
      finish_reason: "stop"
    }],
    usage: {
      prompt_tokens: 19,
      completion_tokens: 10,
      total_tokens: 29,
      prompt_tokens_details: { cached_tokens: 4, audio_tokens: 0 },
      completion_tokens_details: {
        reasoning_tokens: 3,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0
      }
    },
    service_tier: "default"
  })
  deepStrictEqual(response, {
    id: "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
    model: "gpt-4.1-2025-04-14",
    created: 1741569952,
    content: [{ type: "text", text: "Hello! How can I assist you today?" }],
    finishReason: "stop",
    rawFinishReason: "stop",
    usage: { inputTokens: 19, outputTokens: 10, cachedInputTokens: 4, reasoningTokens: 3 }
  })
})

Deno.test("decodeResponse: tool calls with null content, and reasoning_content", () => {
  const response = decoded({
    id: "chatcmpl-2",
    object: "chat.completion",
    created: 1,
    model: "deepseek-reasoner",
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: null,
        reasoning_content: "The user wants the weather.",
        tool_calls: [
          { id: "call_a", type: "function", function: { name: "get_weather", arguments: '{"location":"Paris"}' } },
          { id: "call_b", type: "function", function: { name: "get_weather", arguments: '{"location":"Rome"}' } }
        ]
      },
      finish_reason: "tool_calls"
    }],
    usage: { prompt_tokens: 50, completion_tokens: 30, total_tokens: 80 }
  })
  deepStrictEqual(response.content, [
    { type: "reasoning", text: "The user wants the weather." },
    { type: "tool-call", callId: "call_a", name: "get_weather", arguments: '{"location":"Paris"}' },
    { type: "tool-call", callId: "call_b", name: "get_weather", arguments: '{"location":"Rome"}' }
  ])
  strictEqual(response.finishReason, "tool-calls")
  deepStrictEqual(response.usage, { inputTokens: 50, outputTokens: 30 })
})

Deno.test("decodeResponse: DeepSeek's prompt_cache_hit_tokens are the cached prompt tokens (any chat channel)", () => {
  // The usage of api-docs.deepseek.com/api/create-chat-completion: prompt_tokens = hits + misses.
  const usage = (value: Record<string, unknown>) =>
    decoded({
      id: "x",
      model: "deepseek-chat",
      created: 0,
      choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }],
      usage: value
    }).usage
  deepStrictEqual(
    usage({
      prompt_tokens: 100,
      completion_tokens: 12,
      total_tokens: 112,
      prompt_cache_hit_tokens: 64,
      prompt_cache_miss_tokens: 36,
      completion_tokens_details: { reasoning_tokens: 5 }
    }),
    { inputTokens: 100, outputTokens: 12, cachedInputTokens: 64, reasoningTokens: 5 }
  )
  // A compatibility layer's zero next to DeepSeek's count is no cache miss; a real nested count wins.
  deepStrictEqual(
    usage({
      prompt_tokens: 100,
      completion_tokens: 1,
      prompt_tokens_details: { cached_tokens: 0 },
      prompt_cache_hit_tokens: 64
    })
      .cachedInputTokens,
    64
  )
  deepStrictEqual(
    usage({
      prompt_tokens: 100,
      completion_tokens: 1,
      prompt_tokens_details: { cached_tokens: 32 },
      prompt_cache_hit_tokens: 64
    })
      .cachedInputTokens,
    32
  )
  // No prompt_tokens: the prompt is hits + misses.
  deepStrictEqual(usage({ completion_tokens: 1, prompt_cache_hit_tokens: 10, prompt_cache_miss_tokens: 5 }), {
    inputTokens: 15,
    outputTokens: 1,
    cachedInputTokens: 10
  })
  deepStrictEqual(usage({ prompt_tokens: 7, completion_tokens: 1 }), { inputTokens: 7, outputTokens: 1 })
})

Deno.test("decodeResponse: finish reasons", () => {
  const withReason = (finish_reason: string) =>
    decoded({ id: "x", model: "m", created: 0, choices: [{ index: 0, message: { content: "" }, finish_reason }] })
      .finishReason
  strictEqual(withReason("stop"), "stop")
  strictEqual(withReason("length"), "length")
  strictEqual(withReason("tool_calls"), "tool-calls")
  strictEqual(withReason("function_call"), "tool-calls")
  strictEqual(withReason("content_filter"), "content-filter")
  strictEqual(withReason("insufficient_system_resource"), "other")
})

Deno.test("decodeResponse: an error body or a body that is not an answer is a failure", () => {
  const quota = OpenAiChatFormat.decodeResponse({
    error: { message: "You exceeded your current quota", type: "insufficient_quota", code: "insufficient_quota" }
  })
  ok(quota instanceof UpstreamFailed)
  strictEqual(quota.kind, "quota")
  const bad = OpenAiChatFormat.decodeResponse({ object: "list", data: [] })
  ok(bad instanceof UpstreamFailed)
  strictEqual(bad.kind, "bad-body")
  ok(OpenAiChatFormat.decodeResponse("nope") instanceof UpstreamFailed)
})

Deno.test("encodeResponse: text, reasoning and tool calls; content null when only tool calls", () => {
  const base: Response = {
    id: "up-1",
    model: "claude-x",
    created: 5,
    content: [
      { type: "reasoning", text: "Let me think.", signature: "sig" },
      { type: "tool-call", callId: "toolu_1", name: "get_weather", arguments: '{"city":"Paris"}' }
    ],
    finishReason: "tool-calls",
    rawFinishReason: "tool_use",
    usage: { inputTokens: 100, outputTokens: 40, cachedInputTokens: 60, reasoningTokens: 20 }
  }
  deepStrictEqual(OpenAiChatFormat.encodeResponse(base, meta), {
    id: "chatcmpl-gw-1",
    object: "chat.completion",
    created: 1741569952,
    model: "gpt-4.1",
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: null,
        reasoning_content: "Let me think.",
        refusal: null,
        tool_calls: [{
          id: "toolu_1",
          type: "function",
          function: { name: "get_weather", arguments: '{"city":"Paris"}' }
        }]
      },
      logprobs: null,
      finish_reason: "tool_calls"
    }],
    usage: {
      prompt_tokens: 100,
      completion_tokens: 40,
      total_tokens: 140,
      prompt_tokens_details: { cached_tokens: 60 },
      completion_tokens_details: { reasoning_tokens: 20 }
    }
  })
  const text = OpenAiChatFormat.encodeResponse(
    { ...base, content: [{ type: "text", text: "Hi" }, { type: "text", text: " there" }], finishReason: "stop" },
    meta
  ) as { choices: Array<{ message: Record<string, unknown>; finish_reason: string }> }
  strictEqual(text.choices[0].message.content, "Hi there")
  strictEqual("reasoning_content" in text.choices[0].message, false)
  strictEqual(text.choices[0].finish_reason, "stop")
})

Deno.test("encodeResponse: finish reason mapping", () => {
  const finish = (finishReason: Response["finishReason"]) =>
    (OpenAiChatFormat.encodeResponse(
      { id: "", model: "", created: 0, content: [], finishReason, usage: { inputTokens: 0, outputTokens: 0 } },
      meta
    ) as { choices: Array<{ finish_reason: string }> }).choices[0].finish_reason
  strictEqual(finish("stop"), "stop")
  strictEqual(finish("length"), "length")
  strictEqual(finish("tool-calls"), "tool_calls")
  strictEqual(finish("content-filter"), "content_filter")
  strictEqual(finish("error"), "stop")
  strictEqual(finish("other"), "stop")
})

Deno.test("classifyError: statuses and the quota-exhausted error", () => {
  const body = (message: string, type: string, code: string | null) =>
    JSON.stringify({ error: { message, type, param: null, code } })
  const kind = (status: number, text: string) => OpenAiChatFormat.classifyError(status, text).kind
  strictEqual(kind(401, body("Incorrect API key provided", "invalid_request_error", "invalid_api_key")), "unauthorized")
  strictEqual(kind(403, body("Country not supported", "invalid_request_error", "unsupported_country")), "unauthorized")
  strictEqual(kind(429, body("Rate limit reached", "requests", "rate_limit_exceeded")), "throttled")
  strictEqual(kind(429, body("You exceeded your current quota", "insufficient_quota", "insufficient_quota")), "quota")
  for (const status of [400, 404, 413, 422]) {
    strictEqual(kind(status, body("bad", "invalid_request_error", null)), "rejected")
  }
  strictEqual(kind(500, body("The server had an error", "server_error", null)), "server")
  strictEqual(kind(503, "<html>unavailable</html>"), "server")
  strictEqual(
    OpenAiChatFormat.classifyError(401, body("Incorrect API key provided", "x", null)).message,
    "Incorrect API key provided"
  )
})

Deno.test("encodeError: the gateway envelope", () => {
  deepStrictEqual(
    OpenAiChatFormat.encodeError({
      status: 400,
      type: "invalid_request_error",
      code: "invalid_request",
      message: "Invalid model",
      param: "model"
    }),
    { error: { message: "Invalid model", type: "invalid_request_error", param: "model", code: "invalid_request" } }
  )
})
