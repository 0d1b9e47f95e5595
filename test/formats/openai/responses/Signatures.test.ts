import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import type { Request } from "../../../../src/canonical/Request.ts"
import type { Response } from "../../../../src/canonical/Response.ts"
import type { StreamPart } from "../../../../src/canonical/StreamPart.ts"
import { OpenAiResponsesFormat } from "../../../../src/formats/openai/responses/Format.ts"
import { runDecoder, runEncoder, sse } from "../../../support/StreamSteps.ts"

type Json = Record<string, unknown>

const meta = { id: "resp_gw", model: "gpt-alias", created: 1 }
const usage = { inputTokens: 10, outputTokens: 5 }
const reasoningItem = {
  type: "reasoning",
  id: "rs_1",
  summary: [{ type: "summary_text", text: "Two cities." }],
  encrypted_content: "gAAAAB-opaque"
}

Deno.test("signatures: an upstream answer and stream give origin openai to encrypted_content", () => {
  const answer = OpenAiResponsesFormat.decodeResponse({
    id: "resp_1",
    object: "response",
    created_at: 1,
    status: "completed",
    model: "gpt-x",
    output: [reasoningItem],
    usage: { input_tokens: 1, output_tokens: 2, total_tokens: 3 }
  }) as Response
  deepStrictEqual(answer.content, [
    { type: "reasoning", text: "Two cities.", signature: "gAAAAB-opaque", origin: "openai" }
  ])
  const { parts } = runDecoder(OpenAiResponsesFormat.streamDecoder, [
    sse({ type: "response.created", response: { id: "resp_1", model: "gpt-x", created_at: 1 } }),
    sse({ type: "response.output_item.added", output_index: 0, item: { ...reasoningItem, summary: [] } }),
    sse({ type: "response.output_item.done", output_index: 0, item: reasoningItem })
  ])
  deepStrictEqual(parts.find((part) => part._tag === "ReasoningSignature"), {
    _tag: "ReasoningSignature",
    index: 0,
    signature: "gAAAAB-opaque",
    origin: "openai"
  })
})

Deno.test("signatures: encodeResponse writes another vendor's signature wrapped, OpenAI's as is", () => {
  const body = OpenAiResponsesFormat.encodeResponse({
    id: "up",
    model: "x",
    created: 0,
    content: [
      { type: "reasoning", text: "Gemini thinks.", signature: "VGhvdWdodA==", origin: "gemini" },
      { type: "reasoning", text: "Mine.", signature: "gAAAAB-opaque", origin: "openai" }
    ],
    finishReason: "stop",
    usage
  }, meta) as { output: ReadonlyArray<Json> }
  deepStrictEqual(body.output.map((item) => item.encrypted_content), [
    "sluice.gemini.VGhvdWdodA==",
    "gAAAAB-opaque"
  ])
})

Deno.test("signatures: the stream encoder writes a foreign signature wrapped in the reasoning item", () => {
  const parts: ReadonlyArray<StreamPart> = [
    { _tag: "ResponseStart", id: "up", model: "x", created: 0 },
    { _tag: "BlockStart", index: 0, block: { type: "reasoning" } },
    { _tag: "ReasoningDelta", index: 0, text: "Claude thinks." },
    { _tag: "ReasoningSignature", index: 0, signature: "EqQBCgIYAh", origin: "anthropic" },
    { _tag: "BlockStop", index: 0 },
    { _tag: "Finish", reason: "stop", usage }
  ]
  const events = runEncoder(OpenAiResponsesFormat.streamEncoder, meta, parts).map((event) =>
    JSON.parse(event.data) as Json
  )
  const done = events.find((event) => event.type === "response.output_item.done") as { item: Json }
  strictEqual(done.item.encrypted_content, "sluice.anthropic.EqQBCgIYAh")
  const completed = events.find((event) => event.type === "response.completed") as {
    response: { output: ReadonlyArray<Json> }
  }
  strictEqual(completed.response.output[0].encrypted_content, "sluice.anthropic.EqQBCgIYAh")
})

const decode = (input: ReadonlyArray<unknown>): Request => {
  const decoded = OpenAiResponsesFormat.decodeRequest({ model: "gpt-alias", input }, {})
  if (Result.isFailure(decoded)) throw decoded.failure
  return decoded.success
}

Deno.test("signatures: decodeRequest unwraps a wrapped encrypted_content and reads a plain one as OpenAI's", () => {
  const request = decode([
    { role: "user", content: "Hi" },
    { ...reasoningItem, encrypted_content: "sluice.gemini.VGhvdWdodA==" },
    reasoningItem
  ])
  deepStrictEqual(request.messages[1].content, [
    { type: "reasoning", text: "Two cities.", signature: "VGhvdWdodA==", origin: "gemini" },
    { type: "reasoning", text: "Two cities.", signature: "gAAAAB-opaque", origin: "openai" }
  ])
})

Deno.test("signatures: encodeRequest carries OpenAI's encrypted_content byte for byte, leaves foreign reasoning out", () => {
  const { body, dropped } = OpenAiResponsesFormat.encodeRequest({
    model: "gpt-x",
    stream: false,
    messages: [
      { role: "user", content: [{ type: "text", text: "Hi" }] },
      {
        role: "assistant",
        content: [
          { type: "reasoning", text: "Gemini thinks.", signature: "VGhvdWdodA==", origin: "gemini" },
          { type: "reasoning", text: "Mine.", signature: "gAAAAB-opaque_/+=", origin: "openai" },
          { type: "text", text: "Hello" }
        ]
      }
    ]
  })
  const items = (body.input as ReadonlyArray<Json>).filter((item) => item.type === "reasoning")
  deepStrictEqual(items, [
    { type: "reasoning", summary: [{ type: "summary_text", text: "Mine." }], encrypted_content: "gAAAAB-opaque_/+=" }
  ])
  ok(dropped.includes("messages.content.reasoning.foreignSignature"))
})
