import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import Anthropic from "@anthropic-ai/sdk"
import { Sse } from "effect/encoding"
import type { StreamPart } from "../../../../src/canonical/StreamPart.ts"
import type { Problem } from "../../../../src/formats/Format.ts"
import { AnthropicFormat } from "../../../../src/formats/anthropic/messages/Format.ts"
import { runDecoder, runEncoder } from "../../../support/StreamSteps.ts"
import { thinkingToolStream } from "./Fixtures.ts"

const meta = { id: "msg_gateway_7", model: "claude-alias", created: 1_700_000_000, promptTokensEstimate: 40 }

const parts: ReadonlyArray<StreamPart> = [
  { _tag: "ResponseStart", id: "upstream-1", model: "upstream-model", created: 1_700_000_000 },
  { _tag: "BlockStart", index: 0, block: { type: "reasoning" } },
  { _tag: "ReasoningDelta", index: 0, text: "Thinking " },
  { _tag: "ReasoningDelta", index: 0, text: "hard." },
  { _tag: "ReasoningSignature", index: 0, signature: "sig-abc" },
  { _tag: "BlockStop", index: 0 },
  { _tag: "BlockStart", index: 1, block: { type: "reasoning" } },
  { _tag: "RedactedReasoning", index: 1, data: "EmwKAhgB" },
  { _tag: "BlockStop", index: 1 },
  { _tag: "BlockStart", index: 2, block: { type: "text" } },
  { _tag: "TextDelta", index: 2, text: "Checking " },
  { _tag: "TextDelta", index: 2, text: "now." },
  { _tag: "BlockStop", index: 2 },
  { _tag: "BlockStart", index: 3, block: { type: "tool-call", callId: "toolu_9", name: "get_weather" } },
  { _tag: "ToolInputDelta", index: 3, json: '{"location":' },
  { _tag: "ToolInputDelta", index: 3, json: '"Paris"}' },
  { _tag: "BlockStop", index: 3 },
  { _tag: "UsageUpdate", usage: { inputTokens: 50, outputTokens: 10 } },
  {
    _tag: "Finish",
    reason: "tool-calls",
    rawReason: "tool_use",
    usage: { inputTokens: 150, outputTokens: 60, cachedInputTokens: 100 }
  }
]

const sseText = (events: ReadonlyArray<Sse.Event>) => events.map((frame) => Sse.encoder.write(frame)).join("")

/** Runs the SDK's stream accumulator over `text`, served by a fetch stub. */
const sdkFinalMessage = (text: string) => {
  const client = new Anthropic({
    apiKey: "test-key",
    baseURL: "http://gateway.test",
    maxRetries: 0,
    fetch: () => Promise.resolve(new Response(text, { headers: { "content-type": "text/event-stream" } }))
  })
  return client.messages.stream({
    model: "claude-alias",
    max_tokens: 1024,
    messages: [{ role: "user", content: "Weather in Paris?" }]
  }).finalMessage()
}

Deno.test("streamEncoder writes the event sequence with event names equal to data types", () => {
  const events = runEncoder(AnthropicFormat.streamEncoder, meta, parts)
  deepStrictEqual(events.map((frame) => frame.event), [
    "message_start",
    "ping",
    "content_block_start",
    "content_block_delta",
    "content_block_delta",
    "content_block_delta",
    "content_block_stop",
    "content_block_start",
    "content_block_stop",
    "content_block_start",
    "content_block_delta",
    "content_block_delta",
    "content_block_stop",
    "content_block_start",
    "content_block_delta",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop"
  ])
  for (const frame of events) strictEqual(JSON.parse(frame.data).type, frame.event)
  deepStrictEqual(JSON.parse(events[0].data).message, {
    id: "msg_gateway_7",
    type: "message",
    role: "assistant",
    model: "claude-alias",
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: 40, output_tokens: 0 }
  })
  deepStrictEqual(JSON.parse(events[7].data), {
    type: "content_block_start",
    index: 1,
    content_block: { type: "redacted_thinking", data: "EmwKAhgB" }
  })
  deepStrictEqual(JSON.parse(events[17].data), {
    type: "message_delta",
    delta: { stop_reason: "tool_use", stop_sequence: null },
    usage: { output_tokens: 60, input_tokens: 50, cache_read_input_tokens: 100, cache_creation_input_tokens: 0 }
  })
})

Deno.test("streamEncoder output is accumulated by the SDK's MessageStream into the right message", async () => {
  const message = await sdkFinalMessage(sseText(runEncoder(AnthropicFormat.streamEncoder, meta, parts)))
  strictEqual(message.id, "msg_gateway_7")
  strictEqual(message.model, "claude-alias")
  strictEqual(message.stop_reason, "tool_use")
  deepStrictEqual(message.content.map((block) => ({ ...block })), [
    { type: "thinking", thinking: "Thinking hard.", signature: "sig-abc" },
    { type: "redacted_thinking", data: "EmwKAhgB" },
    { type: "text", text: "Checking now." },
    { type: "tool_use", id: "toolu_9", name: "get_weather", input: { location: "Paris" } }
  ])
  deepStrictEqual(
    [message.usage.input_tokens, message.usage.output_tokens, message.usage.cache_read_input_tokens],
    [50, 60, 100]
  )
})

Deno.test("streamEncoder re-encodes a decoded upstream stream that the SDK reads back", async () => {
  const decoded = runDecoder(AnthropicFormat.streamDecoder, thinkingToolStream)
  const message = await sdkFinalMessage(sseText(runEncoder(AnthropicFormat.streamEncoder, meta, decoded.parts)))
  deepStrictEqual(message.content.map((block) => ({ ...block })), [
    { type: "thinking", thinking: "Let me look up the weather.", signature: "EqQBCgIYAhIM1gbcDa9G" },
    {
      type: "tool_use",
      id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
      name: "get_weather",
      input: { location: "San Francisco, CA" }
    }
  ])
  strictEqual(message.stop_reason, "tool_use")
  strictEqual(message.usage.output_tokens, 89)
})

Deno.test("streamEncoder writes stop_sequence and closes blocks left open at Finish", () => {
  const events = runEncoder(AnthropicFormat.streamEncoder, meta, [
    { _tag: "ResponseStart", id: "u", model: "m", created: 0 },
    { _tag: "BlockStart", index: 0, block: { type: "text" } },
    { _tag: "TextDelta", index: 0, text: "1, 2, 3" },
    { _tag: "Finish", reason: "stop", stopSequence: "4", usage: { inputTokens: 5, outputTokens: 7 } }
  ])
  deepStrictEqual(events.slice(-3).map((frame) => JSON.parse(frame.data)), [
    { type: "content_block_stop", index: 0 },
    {
      type: "message_delta",
      delta: { stop_reason: "stop_sequence", stop_sequence: "4" },
      usage: { output_tokens: 7, input_tokens: 5, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 }
    },
    { type: "message_stop" }
  ])
})

Deno.test("streamEncoder fail writes an error event and never message_stop; the SDK raises it", async () => {
  const problem: Problem = {
    status: 502,
    type: "overloaded_error",
    code: "upstream_overloaded",
    message: "The upstream is overloaded.",
    param: ""
  }
  const events = runEncoder(AnthropicFormat.streamEncoder, meta, parts.slice(0, 4), problem)
  const last = events.at(-1)
  strictEqual(last?.event, "error")
  deepStrictEqual(JSON.parse(last?.data ?? "{}"), {
    type: "error",
    error: { type: "overloaded_error", message: "The upstream is overloaded.", param: "", code: "upstream_overloaded" }
  })
  strictEqual(events.some((frame) => frame.event === "message_stop"), false)
  let raised: unknown
  try {
    await sdkFinalMessage(sseText(events))
  } catch (error) {
    raised = error
  }
  ok(raised instanceof Anthropic.APIError)
  strictEqual(raised.type, "overloaded_error")
})

Deno.test("streamEncoder end without Finish still closes the message", () => {
  const events = runEncoder(AnthropicFormat.streamEncoder, meta, [])
  deepStrictEqual(events.map((frame) => frame.event), ["message_start", "ping", "message_delta", "message_stop"])
})
