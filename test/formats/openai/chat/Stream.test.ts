/**
 * `chat.completion.chunk` streams in both directions. Decoder fixtures follow
 * the chunk sequences of platform.openai.com/docs/api-reference/chat-streaming
 * and the function calling guide's streaming section (first tool-call chunk
 * with id and name, later ones with `id: null` and argument fragments), and
 * DeepSeek's `reasoning_content` deltas. The encoder's output is fed to the
 * openai SDK's own stream accumulator.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { Sse } from "effect/encoding"
import OpenAI from "openai"
import type { StreamPart } from "../../../../src/canonical/StreamPart.ts"
import { OpenAiChatFormat } from "../../../../src/formats/openai/chat/Format.ts"
import { runDecoder, runEncoder, sse } from "../../../support/StreamSteps.ts"

const chunk = (delta: Record<string, unknown>, finish_reason: string | null = null, extra: object = {}) =>
  sse({
    id: "chatcmpl-123",
    object: "chat.completion.chunk",
    created: 1694268190,
    model: "gpt-4o-mini",
    system_fingerprint: "fp_44709d6fcb",
    choices: [{ index: 0, delta, logprobs: null, finish_reason }],
    ...extra
  })

const usageChunk = (usage: object) =>
  sse({
    id: "chatcmpl-123",
    object: "chat.completion.chunk",
    created: 1694268190,
    model: "gpt-4o-mini",
    choices: [],
    usage
  })

const done = sse("[DONE]")

const start: StreamPart = { _tag: "ResponseStart", id: "chatcmpl-123", model: "gpt-4o-mini", created: 1694268190 }

Deno.test("streamDecoder: text stream with a usage chunk", () => {
  const result = runDecoder(OpenAiChatFormat.streamDecoder, [
    chunk({ role: "assistant", content: "" }),
    chunk({ content: "Hello" }),
    chunk({ content: "!" }),
    chunk({}, "stop"),
    usageChunk({
      prompt_tokens: 9,
      completion_tokens: 2,
      total_tokens: 11,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0 }
    }),
    done
  ])
  strictEqual(result.complete, true)
  strictEqual(result.failure, undefined)
  const usage = { inputTokens: 9, outputTokens: 2, cachedInputTokens: 0, reasoningTokens: 0 }
  deepStrictEqual(result.parts, [
    start,
    { _tag: "BlockStart", index: 0, block: { type: "text" } },
    { _tag: "TextDelta", index: 0, text: "Hello" },
    { _tag: "TextDelta", index: 0, text: "!" },
    { _tag: "BlockStop", index: 0 },
    { _tag: "UsageUpdate", usage, final: true },
    { _tag: "Finish", reason: "stop", rawReason: "stop", usage }
  ])
})

Deno.test("streamDecoder: parallel tool calls, one block per tool_calls index", () => {
  const result = runDecoder(OpenAiChatFormat.streamDecoder, [
    chunk({
      role: "assistant",
      content: null,
      tool_calls: [{
        index: 0,
        id: "call_DdmO9pD3xa9XTPNJ32zg2hcA",
        type: "function",
        function: { name: "get_weather", arguments: "" }
      }]
    }),
    chunk({ tool_calls: [{ index: 0, id: null, type: null, function: { name: null, arguments: '{"location":' } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
    chunk({
      tool_calls: [{ index: 1, id: "call_b", type: "function", function: { name: "get_weather", arguments: "" } }]
    }),
    chunk({ tool_calls: [{ index: 1, function: { arguments: '{"location":"Rome"}' } }] }),
    chunk({}, "tool_calls"),
    done
  ])
  strictEqual(result.complete, true)
  deepStrictEqual(result.parts, [
    start,
    {
      _tag: "BlockStart",
      index: 0,
      block: { type: "tool-call", callId: "call_DdmO9pD3xa9XTPNJ32zg2hcA", name: "get_weather" }
    },
    { _tag: "ToolInputDelta", index: 0, json: '{"location":' },
    { _tag: "ToolInputDelta", index: 0, json: '"Paris"}' },
    { _tag: "BlockStop", index: 0 },
    { _tag: "BlockStart", index: 1, block: { type: "tool-call", callId: "call_b", name: "get_weather" } },
    { _tag: "ToolInputDelta", index: 1, json: '{"location":"Rome"}' },
    { _tag: "BlockStop", index: 1 },
    { _tag: "Finish", reason: "tool-calls", rawReason: "tool_calls", usage: { inputTokens: 0, outputTokens: 0 } }
  ])
})

Deno.test("streamDecoder: reasoning_content then content; usage on the last chunk", () => {
  const result = runDecoder(OpenAiChatFormat.streamDecoder, [
    chunk({ role: "assistant", content: null, reasoning_content: "" }),
    chunk({ content: null, reasoning_content: "9.11 vs 9.8" }),
    chunk({ content: null, reasoning_content: ": compare tenths." }),
    chunk({ content: "9.8", reasoning_content: null }),
    chunk({ content: " is greater." }),
    chunk({ content: "" }, "stop", {
      usage: {
        prompt_tokens: 20,
        completion_tokens: 60,
        total_tokens: 80,
        prompt_tokens_details: { cached_tokens: 16 },
        completion_tokens_details: { reasoning_tokens: 50 }
      }
    }),
    done
  ])
  const usage = { inputTokens: 20, outputTokens: 60, cachedInputTokens: 16, reasoningTokens: 50 }
  deepStrictEqual(result.parts, [
    start,
    { _tag: "BlockStart", index: 0, block: { type: "reasoning" } },
    { _tag: "ReasoningDelta", index: 0, text: "9.11 vs 9.8" },
    { _tag: "ReasoningDelta", index: 0, text: ": compare tenths." },
    { _tag: "BlockStop", index: 0 },
    { _tag: "BlockStart", index: 1, block: { type: "text" } },
    { _tag: "TextDelta", index: 1, text: "9.8" },
    { _tag: "TextDelta", index: 1, text: " is greater." },
    { _tag: "BlockStop", index: 1 },
    { _tag: "UsageUpdate", usage, final: true },
    { _tag: "Finish", reason: "stop", rawReason: "stop", usage }
  ])
})

Deno.test("streamDecoder: an in-band error is an UpstreamFailed", () => {
  const result = runDecoder(OpenAiChatFormat.streamDecoder, [
    chunk({ role: "assistant", content: "" }),
    chunk({ content: "Partial" }),
    sse({
      error: {
        message: "The server had an error while processing your request. Sorry about that!",
        type: "server_error",
        param: null,
        code: null
      }
    }),
    done
  ])
  ok(result.failure !== undefined)
  strictEqual(result.failure.kind, "server")
  strictEqual(result.failure.status, 0)
  strictEqual(result.failure.message, "The server had an error while processing your request. Sorry about that!")
  const throttled = runDecoder(OpenAiChatFormat.streamDecoder, [
    sse({ error: { message: "Rate limited", code: 429 } })
  ])
  strictEqual(throttled.failure?.kind, "throttled")
  strictEqual(throttled.failure?.status, 429)
})

Deno.test("streamDecoder: a stream that stops before [DONE] is not complete", () => {
  const result = runDecoder(OpenAiChatFormat.streamDecoder, [
    chunk({ role: "assistant", content: "" }),
    chunk({ content: "Hello" }),
    chunk({}, "stop")
  ])
  strictEqual(result.complete, false)
  strictEqual(result.failure, undefined)
  strictEqual(result.parts.some((part) => part._tag === "Finish"), false)
})

Deno.test("streamDecoder: data that is not JSON is a bad-body failure", () => {
  const result = runDecoder(OpenAiChatFormat.streamDecoder, [chunk({ content: "a" }), sse("{not json")])
  strictEqual(result.failure?.kind, "bad-body")
})

const meta = { id: "chatcmpl-gw", model: "gpt-4.1", created: 1700000000, includeUsage: true }

const usage = { inputTokens: 30, outputTokens: 25, cachedInputTokens: 10, reasoningTokens: 5 }

const parts: ReadonlyArray<StreamPart> = [
  { _tag: "ResponseStart", id: "msg_up", model: "claude-x", created: 1 },
  { _tag: "BlockStart", index: 0, block: { type: "reasoning" } },
  { _tag: "ReasoningDelta", index: 0, text: "Thinking" },
  { _tag: "ReasoningSignature", index: 0, signature: "sig" },
  { _tag: "BlockStop", index: 0 },
  { _tag: "BlockStart", index: 1, block: { type: "text" } },
  { _tag: "TextDelta", index: 1, text: "Let me check." },
  { _tag: "BlockStop", index: 1 },
  { _tag: "BlockStart", index: 2, block: { type: "tool-call", callId: "call_1", name: "get_weather" } },
  { _tag: "ToolInputDelta", index: 2, json: '{"city":' },
  { _tag: "ToolInputDelta", index: 2, json: '"Paris"}' },
  { _tag: "BlockStop", index: 2 },
  { _tag: "BlockStart", index: 3, block: { type: "tool-call", callId: "call_2", name: "get_time" } },
  { _tag: "ToolInputDelta", index: 3, json: "{}" },
  { _tag: "BlockStop", index: 3 },
  { _tag: "UsageUpdate", usage },
  { _tag: "Finish", reason: "tool-calls", rawReason: "tool_use", usage }
]

const payloads = (events: ReadonlyArray<Sse.Event>) =>
  events.map((event) => (event.data === "[DONE]" ? "[DONE]" : JSON.parse(event.data)))

Deno.test("streamEncoder: chunks for reasoning, text, two tool calls, finish and usage, then [DONE]", () => {
  const events = runEncoder(OpenAiChatFormat.streamEncoder, meta, parts)
  const envelope = { id: "chatcmpl-gw", object: "chat.completion.chunk", created: 1700000000, model: "gpt-4.1" }
  const delta = (value: object, finish_reason: string | null = null) => ({
    ...envelope,
    choices: [{ index: 0, delta: value, finish_reason }]
  })
  deepStrictEqual(payloads(events), [
    delta({ role: "assistant", content: "" }),
    delta({ reasoning_content: "Thinking" }),
    delta({ content: "Let me check." }),
    delta({
      tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "get_weather", arguments: "" } }]
    }),
    delta({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
    delta({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
    delta({
      tool_calls: [{ index: 1, id: "call_2", type: "function", function: { name: "get_time", arguments: "" } }]
    }),
    delta({ tool_calls: [{ index: 1, function: { arguments: "{}" } }] }),
    delta({}, "tool_calls"),
    {
      ...envelope,
      choices: [],
      usage: {
        prompt_tokens: 30,
        completion_tokens: 25,
        total_tokens: 55,
        prompt_tokens_details: { cached_tokens: 10 },
        completion_tokens_details: { reasoning_tokens: 5 }
      }
    },
    "[DONE]"
  ])
  const withoutUsage = runEncoder(OpenAiChatFormat.streamEncoder, { ...meta, includeUsage: false }, parts)
  strictEqual(payloads(withoutUsage).some((payload) => typeof payload === "object" && "usage" in payload), false)
})

Deno.test("streamEncoder: a failure is one error event and no [DONE]", () => {
  const events = runEncoder(OpenAiChatFormat.streamEncoder, meta, parts.slice(0, 7), {
    status: 502,
    type: "platform_api_error",
    code: "bad_response",
    message: "The upstream stream broke",
    param: ""
  })
  const last = events[events.length - 1]
  deepStrictEqual(JSON.parse(last.data), {
    error: { message: "The upstream stream broke", type: "platform_api_error", param: "", code: "bad_response" }
  })
  strictEqual(events.some((event) => event.data === "[DONE]"), false)
})

Deno.test("streamEncoder → streamDecoder keeps text, reasoning, tool calls, finish and usage", () => {
  const events = runEncoder(OpenAiChatFormat.streamEncoder, meta, parts)
  const result = runDecoder(OpenAiChatFormat.streamDecoder, events)
  strictEqual(result.complete, true)
  const kept = parts.filter((part) => part._tag !== "ReasoningSignature" && part._tag !== "ResponseStart")
  deepStrictEqual(result.parts.slice(1), [
    ...kept.filter((part) => part._tag !== "UsageUpdate" && part._tag !== "Finish"),
    { _tag: "UsageUpdate", usage, final: true },
    { _tag: "Finish", reason: "tool-calls", rawReason: "tool_calls", usage }
  ])
})

const sseBody = (events: ReadonlyArray<Sse.Event>): string => events.map((event) => Sse.encoder.write(event)).join("")

const clientReturning = (body: string) =>
  new OpenAI({
    apiKey: "test-key",
    baseURL: "http://sdk.test/v1",
    fetch: () => Promise.resolve(new Response(body, { headers: { "content-type": "text/event-stream" } }))
  })

Deno.test("streamEncoder output builds the right completion in the openai SDK's ChatCompletionStream", async () => {
  const client = clientReturning(sseBody(runEncoder(OpenAiChatFormat.streamEncoder, meta, parts)))
  const stream = client.chat.completions.stream({
    model: "gpt-4.1",
    messages: [{ role: "user", content: "Weather in Paris?" }]
  })
  const completion = await stream.finalChatCompletion()
  strictEqual(completion.id, "chatcmpl-gw")
  strictEqual(completion.model, "gpt-4.1")
  strictEqual(completion.created, 1700000000)
  const choice = completion.choices[0]
  strictEqual(choice.finish_reason, "tool_calls")
  strictEqual(choice.message.role, "assistant")
  strictEqual(choice.message.content, "Let me check.")
  deepStrictEqual(
    choice.message.tool_calls?.map((call) =>
      call.type === "function" ? [call.id, call.function.name, call.function.arguments] : []
    ),
    [["call_1", "get_weather", '{"city":"Paris"}'], ["call_2", "get_time", "{}"]]
  )
  strictEqual(completion.usage?.prompt_tokens, 30)
  strictEqual(completion.usage?.completion_tokens_details?.reasoning_tokens, 5)
})

Deno.test("streamEncoder failure surfaces as an APIError in the openai SDK", async () => {
  const events = runEncoder(OpenAiChatFormat.streamEncoder, meta, parts.slice(0, 7), {
    status: 502,
    type: "platform_api_error",
    code: "bad_response",
    message: "The upstream stream broke",
    param: ""
  })
  const stream = clientReturning(sseBody(events)).chat.completions.stream({ model: "gpt-4.1", messages: [] })
  let message = ""
  try {
    await stream.finalChatCompletion()
  } catch (error) {
    message = error instanceof Error ? error.message : String(error)
  }
  ok(message.includes("The upstream stream broke"), message)
})
