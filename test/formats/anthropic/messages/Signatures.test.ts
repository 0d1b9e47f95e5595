import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import Anthropic from "@anthropic-ai/sdk"
import { Sse } from "effect/encoding"
import type { Request } from "../../../../src/canonical/Request.ts"
import type { Response } from "../../../../src/canonical/Response.ts"
import type { StreamPart } from "../../../../src/canonical/StreamPart.ts"
import { AnthropicFormat } from "../../../../src/formats/anthropic/messages/Format.ts"
import { OpenAiResponsesFormat } from "../../../../src/formats/openai/responses/Format.ts"
import { runDecoder, runEncoder, sse } from "../../../support/StreamSteps.ts"

const meta = { id: "msg_gw", model: "claude-alias", created: 1_700_000_000 }
const usage = { inputTokens: 10, outputTokens: 5 }

Deno.test("signatures: an upstream answer and stream give origin anthropic to signatures and redacted data", () => {
  const answer = AnthropicFormat.decodeResponse({
    id: "msg_1",
    type: "message",
    role: "assistant",
    model: "claude-x",
    content: [
      { type: "thinking", thinking: "Hm.", signature: "EqQBCgIYAh" },
      { type: "redacted_thinking", data: "EmwKAhgB" },
      { type: "text", text: "Hi" }
    ],
    stop_reason: "end_turn",
    stop_sequence: null,
    usage: { input_tokens: 3, output_tokens: 4 }
  }) as Response
  deepStrictEqual(answer.content.slice(0, 2), [
    { type: "reasoning", text: "Hm.", signature: "EqQBCgIYAh", origin: "anthropic" },
    { type: "reasoning", text: "", redacted: "EmwKAhgB", origin: "anthropic" }
  ])
  const event = (data: Record<string, unknown>) => sse(data, data.type as string)
  const { parts } = runDecoder(AnthropicFormat.streamDecoder, [
    event({ type: "message_start", message: { id: "msg_1", model: "claude-x", usage: { input_tokens: 3 } } }),
    event({ type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } }),
    event({ type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "EqQBCgIYAh" } }),
    event({ type: "content_block_stop", index: 0 }),
    event({ type: "message_stop" })
  ])
  deepStrictEqual(parts.find((part) => part._tag === "ReasoningSignature"), {
    _tag: "ReasoningSignature",
    index: 0,
    signature: "EqQBCgIYAh",
    origin: "anthropic"
  })
})

const foreignAnswer: Response = {
  id: "up",
  model: "gemini-x",
  created: 0,
  content: [
    { type: "reasoning", text: "Thinking.", signature: "VGhvdWdodA==", origin: "gemini" },
    { type: "reasoning", text: "Mine.", signature: "EqQBCgIYAh", origin: "anthropic" },
    { type: "reasoning", text: "Old.", signature: "legacy" },
    { type: "text", text: "Hello" }
  ],
  finishReason: "stop",
  usage
}

Deno.test("signatures: encodeResponse wraps another vendor's signature, keeps Anthropic's and unknown ones", () => {
  const body = AnthropicFormat.encodeResponse(foreignAnswer, meta) as { content: ReadonlyArray<unknown> }
  deepStrictEqual(body.content.slice(0, 3), [
    { type: "thinking", thinking: "Thinking.", signature: "sluice.gemini.VGhvdWdodA==" },
    { type: "thinking", thinking: "Mine.", signature: "EqQBCgIYAh" },
    { type: "thinking", thinking: "Old.", signature: "legacy" }
  ])
})

Deno.test("signatures: the stream encoder wraps a foreign signature; the SDK keeps it as the block's signature", async () => {
  const parts: ReadonlyArray<StreamPart> = [
    { _tag: "ResponseStart", id: "up", model: "gemini-x", created: 0 },
    { _tag: "BlockStart", index: 0, block: { type: "reasoning" } },
    { _tag: "ReasoningDelta", index: 0, text: "Thinking." },
    { _tag: "ReasoningSignature", index: 0, signature: "VGhvdWdodA==", origin: "gemini" },
    { _tag: "BlockStop", index: 0 },
    { _tag: "BlockStart", index: 1, block: { type: "text" } },
    { _tag: "TextDelta", index: 1, text: "Hello" },
    { _tag: "BlockStop", index: 1 },
    { _tag: "Finish", reason: "stop", usage }
  ]
  const text = runEncoder(AnthropicFormat.streamEncoder, meta, parts).map((event) => Sse.encoder.write(event)).join("")
  const client = new Anthropic({
    apiKey: "test",
    fetch: () => Promise.resolve(new Response(text, { headers: { "content-type": "text/event-stream" } }))
  })
  const message = await client.messages.stream({ model: "claude-alias", max_tokens: 10, messages: [] }).finalMessage()
  const thinking = message.content[0]
  ok(thinking.type === "thinking")
  strictEqual(thinking.signature, "sluice.gemini.VGhvdWdodA==")
})

const decode = (messages: ReadonlyArray<unknown>): Request => {
  const decoded = AnthropicFormat.decodeRequest({ model: "claude-alias", max_tokens: 100, messages }, {})
  if (Result.isFailure(decoded)) throw decoded.failure
  return decoded.success
}

Deno.test("signatures: decodeRequest unwraps a wrapped signature and reads a plain one as Anthropic's", () => {
  const request = decode([
    { role: "user", content: "Hi" },
    {
      role: "assistant",
      content: [
        { type: "thinking", thinking: "Thinking.", signature: "sluice.gemini.VGhvdWdodA==" },
        { type: "thinking", thinking: "Mine.", signature: "EqQBCgIYAh" },
        { type: "thinking", thinking: "Unsigned.", signature: "" },
        { type: "redacted_thinking", data: "EmwKAhgB" },
        { type: "text", text: "Hello" }
      ]
    }
  ])
  deepStrictEqual(request.messages[1].content.slice(0, 4), [
    { type: "reasoning", text: "Thinking.", signature: "VGhvdWdodA==", origin: "gemini" },
    { type: "reasoning", text: "Mine.", signature: "EqQBCgIYAh", origin: "anthropic" },
    { type: "reasoning", text: "Unsigned." },
    { type: "reasoning", text: "", redacted: "EmwKAhgB", origin: "anthropic" }
  ])
})

Deno.test("signatures: encodeRequest carries Anthropic's signature byte for byte and leaves foreign thinking out", () => {
  const { body, dropped } = AnthropicFormat.encodeRequest({
    model: "claude-x",
    stream: false,
    messages: [
      { role: "user", content: [{ type: "text", text: "Hi" }] },
      {
        role: "assistant",
        content: [
          { type: "reasoning", text: "Gemini's.", signature: "VGhvdWdodA==", origin: "gemini" },
          { type: "reasoning", text: "OpenAI's.", signature: "gAAAAB-opaque", origin: "openai" },
          { type: "reasoning", text: "Mine.", signature: "EqQBCgIYAh+/=", origin: "anthropic" },
          { type: "reasoning", text: "", redacted: "EmwKAhgB", origin: "anthropic" },
          { type: "text", text: "Hello" }
        ]
      },
      { role: "user", content: [{ type: "text", text: "Again" }] }
    ]
  })
  deepStrictEqual((body.messages as ReadonlyArray<unknown>)[1], {
    role: "assistant",
    content: [
      { type: "thinking", thinking: "Mine.", signature: "EqQBCgIYAh+/=" },
      { type: "redacted_thinking", data: "EmwKAhgB" },
      { type: "text", text: "Hello" }
    ]
  })
  ok(dropped.includes("reasoning.foreignSignature"))
  strictEqual(dropped.includes("reasoning.unsigned"), false)
})

Deno.test("signatures: a wrapped signature sent back by a messages client round-trips to its own vendor only", () => {
  const request = decode([
    { role: "user", content: "Hi" },
    {
      role: "assistant",
      content: [{ type: "thinking", thinking: "Summary.", signature: "sluice.openai.gAAAAB-opaque" }]
    },
    { role: "user", content: "Again" }
  ])
  const anthropic = AnthropicFormat.encodeRequest(request)
  strictEqual(JSON.stringify(anthropic.body).includes("gAAAAB-opaque"), false, "not sent to Anthropic")
  ok(anthropic.dropped.includes("reasoning.foreignSignature"))
  const openai = OpenAiResponsesFormat.encodeRequest(request)
  deepStrictEqual((openai.body.input as ReadonlyArray<unknown>)[1], {
    type: "reasoning",
    summary: [{ type: "summary_text", text: "Summary." }],
    encrypted_content: "gAAAAB-opaque"
  })
})
