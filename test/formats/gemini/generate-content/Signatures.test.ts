import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import type { Request } from "../../../../src/canonical/Request.ts"
import type { Response } from "../../../../src/canonical/Response.ts"
import type { StreamPart } from "../../../../src/canonical/StreamPart.ts"
import { GeminiFormat } from "../../../../src/formats/gemini/generate-content/Format.ts"
import { runDecoder, runEncoder, sse } from "../../../support/StreamSteps.ts"
import { signedAnswer } from "./SignedAnswer.ts"

type Json = Record<string, unknown>

const meta = { id: "resp_gw", model: "gemini-alias", created: 1 }
const usage = { inputTokens: 10, outputTokens: 5 }

Deno.test("signatures: an upstream answer and stream give origin gemini to thought signatures", () => {
  const answer = GeminiFormat.decodeResponse(signedAnswer) as Response
  deepStrictEqual(answer.content.slice(0, 2), [
    { type: "reasoning", text: "Need the weather.", signature: "VGhvdWdodA==", origin: "gemini" },
    { type: "reasoning", text: "", signature: "Q2FsbA==", origin: "gemini" }
  ])
  const { parts } = runDecoder(GeminiFormat.streamDecoder, [sse(signedAnswer)])
  deepStrictEqual(parts.filter((part) => part._tag === "ReasoningSignature"), [
    { _tag: "ReasoningSignature", index: 0, signature: "VGhvdWdodA==", origin: "gemini" },
    { _tag: "ReasoningSignature", index: 1, signature: "Q2FsbA==", origin: "gemini" }
  ])
})

Deno.test("signatures: encodeResponse wraps another vendor's signature on its part, keeps Gemini's", () => {
  const body = GeminiFormat.encodeResponse({
    id: "up",
    model: "claude-x",
    created: 0,
    content: [
      { type: "reasoning", text: "Claude thinks.", signature: "EqQBCgIYAh", origin: "anthropic" },
      { type: "reasoning", text: "", signature: "Q2FsbA==", origin: "gemini" },
      { type: "tool-call", callId: "toolu_1", name: "get_weather", arguments: '{"city":"Paris"}' }
    ],
    finishReason: "tool-calls",
    usage
  }, meta) as { candidates: ReadonlyArray<{ content: { parts: ReadonlyArray<Json> } }> }
  deepStrictEqual(body.candidates[0].content.parts, [
    { text: "Claude thinks.", thought: true, thoughtSignature: "sluice.anthropic.EqQBCgIYAh" },
    {
      functionCall: { name: "get_weather", args: { city: "Paris" }, id: "toolu_1" },
      thoughtSignature: "Q2FsbA=="
    }
  ])
})

Deno.test("signatures: the stream encoder wraps a foreign signature, on a thought part and on the next call", () => {
  const parts: ReadonlyArray<StreamPart> = [
    { _tag: "ResponseStart", id: "up", model: "x", created: 0 },
    { _tag: "BlockStart", index: 0, block: { type: "reasoning" } },
    { _tag: "ReasoningDelta", index: 0, text: "Summary." },
    { _tag: "ReasoningSignature", index: 0, signature: "gAAAAB-opaque", origin: "openai" },
    { _tag: "BlockStop", index: 0 },
    { _tag: "BlockStart", index: 1, block: { type: "reasoning" } },
    { _tag: "ReasoningSignature", index: 1, signature: "EqQBCgIYAh", origin: "anthropic" },
    { _tag: "BlockStop", index: 1 },
    { _tag: "BlockStart", index: 2, block: { type: "tool-call", callId: "c1", name: "f" } },
    { _tag: "ToolInputDelta", index: 2, json: "{}" },
    { _tag: "BlockStop", index: 2 },
    { _tag: "Finish", reason: "tool-calls", usage }
  ]
  const written = runEncoder(GeminiFormat.streamEncoder, meta, parts)
    .flatMap((event) =>
      (JSON.parse(event.data) as { candidates: ReadonlyArray<{ content: { parts: ReadonlyArray<Json> } }> })
        .candidates[0].content.parts
    )
    .filter((part) => part.thoughtSignature !== undefined)
  deepStrictEqual(written, [
    { text: "", thought: true, thoughtSignature: "sluice.openai.gAAAAB-opaque" },
    { functionCall: { name: "f", args: {}, id: "c1" }, thoughtSignature: "sluice.anthropic.EqQBCgIYAh" }
  ])
})

const decode = (contents: ReadonlyArray<unknown>): Request => {
  const decoded = GeminiFormat.decodeRequest({ contents }, { model: "gemini-alias" })
  if (Result.isFailure(decoded)) throw decoded.failure
  return decoded.success
}

Deno.test("signatures: decodeRequest unwraps wrapped signatures and reads plain ones as Gemini's", () => {
  const request = decode([
    { role: "user", parts: [{ text: "Weather?" }] },
    {
      role: "model",
      parts: [
        { text: "Claude thinks.", thought: true, thoughtSignature: "sluice.anthropic.EqQBCgIYAh" },
        { functionCall: { name: "get_weather", args: {}, id: "c1" }, thought_signature: "Q2FsbA==" }
      ]
    }
  ])
  deepStrictEqual(request.messages[1].content.slice(0, 2), [
    { type: "reasoning", text: "Claude thinks.", signature: "EqQBCgIYAh", origin: "anthropic" },
    { type: "reasoning", text: "", signature: "Q2FsbA==", origin: "gemini" }
  ])
})

Deno.test("signatures: encodeRequest carries Gemini's signatures byte for byte, sends foreign thoughts unsigned", () => {
  const { body, dropped } = GeminiFormat.encodeRequest({
    model: "gemini-2.5-flash",
    stream: false,
    messages: [
      { role: "user", content: [{ type: "text", text: "Weather?" }] },
      {
        role: "assistant",
        content: [
          { type: "reasoning", text: "Claude thinks.", signature: "EqQBCgIYAh", origin: "anthropic" },
          { type: "reasoning", text: "", signature: "gAAAAB-opaque", origin: "openai" },
          { type: "text", text: "Checking." },
          { type: "reasoning", text: "Mine.", signature: "VGhvdWdodA+/=", origin: "gemini" },
          { type: "reasoning", text: "", signature: "Q2FsbA==", origin: "gemini" },
          { type: "tool-call", callId: "c1", name: "get_weather", arguments: "{}" }
        ]
      }
    ]
  })
  deepStrictEqual((body.contents as ReadonlyArray<{ parts: ReadonlyArray<Json> }>)[1].parts, [
    { text: "Claude thinks.", thought: true },
    { text: "Checking." },
    { text: "Mine.", thought: true, thoughtSignature: "VGhvdWdodA+/=" },
    { functionCall: { name: "get_weather", args: {}, id: "c1" }, thoughtSignature: "Q2FsbA==" }
  ])
  ok(dropped.includes("messages.content.foreignSignature"))
  const clean = GeminiFormat.encodeRequest({
    model: "gemini-2.5-flash",
    stream: false,
    messages: [{ role: "assistant", content: [{ type: "reasoning", text: "t", signature: "s", origin: "gemini" }] }]
  })
  strictEqual(clean.dropped.includes("messages.content.foreignSignature"), false)
})
