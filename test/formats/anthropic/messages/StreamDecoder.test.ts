import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { AnthropicFormat } from "../../../../src/formats/anthropic/messages/Format.ts"
import { runDecoder, sse } from "../../../support/StreamSteps.ts"
import { event, textStream, thinkingToolStream } from "./Fixtures.ts"

const decoder = AnthropicFormat.streamDecoder

Deno.test("streamDecoder reads the documented text stream, with cached input tokens", () => {
  const { parts, failure, complete } = runDecoder(decoder, textStream)
  strictEqual(failure, undefined)
  strictEqual(complete, true)
  deepStrictEqual(parts, [
    { _tag: "ResponseStart", id: "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", model: "claude-opus-4-6", created: 0 },
    {
      _tag: "UsageUpdate",
      usage: { inputTokens: 125, outputTokens: 1, cachedInputTokens: 100, cacheCreationInputTokens: 0 }
    },
    { _tag: "BlockStart", index: 0, block: { type: "text" } },
    { _tag: "TextDelta", index: 0, text: "Hello" },
    { _tag: "TextDelta", index: 0, text: "!" },
    { _tag: "BlockStop", index: 0 },
    {
      _tag: "UsageUpdate",
      usage: { inputTokens: 125, outputTokens: 15, cachedInputTokens: 100, cacheCreationInputTokens: 0 },
      final: true
    },
    {
      _tag: "Finish",
      reason: "stop",
      rawReason: "end_turn",
      usage: { inputTokens: 125, outputTokens: 15, cachedInputTokens: 100, cacheCreationInputTokens: 0 }
    }
  ])
})

Deno.test("streamDecoder reads thinking with signature and tool input; skips server tool blocks and renumbers", () => {
  const { parts, complete } = runDecoder(decoder, thinkingToolStream)
  strictEqual(complete, true)
  deepStrictEqual(parts.filter((part) => part._tag !== "UsageUpdate" && part._tag !== "ResponseStart"), [
    { _tag: "BlockStart", index: 0, block: { type: "reasoning" } },
    { _tag: "ReasoningDelta", index: 0, text: "Let me look up " },
    { _tag: "ReasoningDelta", index: 0, text: "the weather." },
    { _tag: "ReasoningSignature", index: 0, signature: "EqQBCgIYAhIM1gbcDa9G", origin: "anthropic" },
    { _tag: "BlockStop", index: 0 },
    {
      _tag: "BlockStart",
      index: 1,
      block: { type: "tool-call", callId: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", name: "get_weather" }
    },
    { _tag: "ToolInputDelta", index: 1, json: '{"location":' },
    { _tag: "ToolInputDelta", index: 1, json: ' "San Francisco, CA"}' },
    { _tag: "BlockStop", index: 1 },
    {
      _tag: "Finish",
      reason: "tool-calls",
      rawReason: "tool_use",
      usage: { inputTokens: 472, outputTokens: 89, cachedInputTokens: 0, reasoningTokens: 30 }
    }
  ])
})

Deno.test("streamDecoder reads redacted thinking, stop sequences and skips unknown events and deltas", () => {
  const { parts, complete } = runDecoder(decoder, [
    textStream[0],
    event({ type: "content_block_start", index: 0, content_block: { type: "redacted_thinking", data: "EmwKAhgB" } }),
    event({ type: "content_block_stop", index: 0 }),
    event({ type: "content_block_start", index: 1, content_block: { type: "text", text: "" } }),
    event({
      type: "content_block_delta",
      index: 1,
      delta: { type: "citations_delta", citation: { type: "char_location" } }
    }),
    event({ type: "content_block_delta", index: 1, delta: { type: "text_delta", text: "Done" } }),
    sse({ type: "future_event", detail: 1 }, "future_event"),
    event({ type: "content_block_stop", index: 1 }),
    event({
      type: "message_delta",
      delta: { stop_reason: "stop_sequence", stop_sequence: "###" },
      usage: { output_tokens: 3 }
    }),
    event({ type: "message_stop" })
  ])
  strictEqual(complete, true)
  deepStrictEqual(parts.filter((part) => part._tag !== "UsageUpdate" && part._tag !== "ResponseStart"), [
    { _tag: "BlockStart", index: 0, block: { type: "reasoning" } },
    { _tag: "RedactedReasoning", index: 0, data: "EmwKAhgB", origin: "anthropic" },
    { _tag: "BlockStop", index: 0 },
    { _tag: "BlockStart", index: 1, block: { type: "text" } },
    { _tag: "TextDelta", index: 1, text: "Done" },
    { _tag: "BlockStop", index: 1 },
    {
      _tag: "Finish",
      reason: "stop",
      rawReason: "stop_sequence",
      stopSequence: "###",
      usage: { inputTokens: 125, outputTokens: 3, cachedInputTokens: 100, cacheCreationInputTokens: 0 }
    }
  ])
})

Deno.test("streamDecoder turns an in-band error event into UpstreamFailed", () => {
  const kindOf = (type: string) => {
    const { failure } = runDecoder(decoder, [
      ...textStream.slice(0, 4),
      event({ type: "error", error: { type, message: "Overloaded" } })
    ])
    return failure?.kind
  }
  deepStrictEqual(
    ["overloaded_error", "api_error", "rate_limit_error", "invalid_request_error"].map(kindOf),
    ["server", "server", "throttled", "rejected"]
  )
  const { failure } = runDecoder(decoder, [
    event({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } })
  ])
  strictEqual(failure?.message, "Overloaded")
})

Deno.test("streamDecoder says a stream cut before message_stop is not complete", () => {
  const { complete, parts } = runDecoder(decoder, textStream.slice(0, 6))
  strictEqual(complete, false)
  strictEqual(parts.some((part) => part._tag === "Finish"), false)
})

Deno.test("streamDecoder fails with bad-body on a known event it cannot read", () => {
  const { failure } = runDecoder(decoder, [textStream[0], sse("{not json", "content_block_delta")])
  strictEqual(failure?.kind, "bad-body")
  const shapeless = runDecoder(decoder, [event({ type: "content_block_start", index: "zero", content_block: {} })])
  strictEqual(shapeless.failure?.kind, "bad-body")
})

Deno.test("streamDecoder reads frames without an event name by their data type", () => {
  const unnamed = textStream.map((frame) => ({ ...frame, event: "message" }))
  const { parts, complete } = runDecoder(decoder, unnamed)
  strictEqual(complete, true)
  strictEqual(parts.at(-1)?._tag, "Finish")
})
