import { deepStrictEqual, strictEqual } from "node:assert/strict"
import type { Response } from "../../../../src/canonical/Response.ts"
import { UpstreamFailed } from "../../../../src/errors/GatewayError.ts"
import { GeminiFormat } from "../../../../src/formats/gemini/generate-content/Format.ts"

const decoded = (body: unknown): Response => {
  const result = GeminiFormat.decodeResponse(body)
  if (result instanceof UpstreamFailed) throw new Error(`unexpected failure: ${result.message}`)
  return result
}

// generateContent reference example answer, with thinking usage
const textAnswer = {
  candidates: [{
    content: { parts: [{ text: "AI learns patterns from data to make predictions." }], role: "model" },
    finishReason: "STOP",
    index: 0,
    safetyRatings: [{ category: "HARM_CATEGORY_HARASSMENT", probability: "NEGLIGIBLE" }]
  }],
  usageMetadata: {
    promptTokenCount: 8,
    candidatesTokenCount: 10,
    totalTokenCount: 1042,
    thoughtsTokenCount: 1024,
    cachedContentTokenCount: 4,
    promptTokensDetails: [{ modality: "TEXT", tokenCount: 8 }]
  },
  modelVersion: "gemini-2.5-flash",
  responseId: "mKhYaOC8Ko-Hz7IPq4_dwA0"
}

Deno.test("decodeResponse: text answer with usage incl. cached and thought tokens", () => {
  deepStrictEqual(decoded(textAnswer), {
    id: "mKhYaOC8Ko-Hz7IPq4_dwA0",
    model: "gemini-2.5-flash",
    created: 0,
    usage: { inputTokens: 8, outputTokens: 1034, cachedInputTokens: 4, reasoningTokens: 1024 },
    content: [{ type: "text", text: "AI learns patterns from data to make predictions." }],
    finishReason: "stop",
    rawFinishReason: "STOP"
  })
})

Deno.test("decodeResponse: thought summary, signature on the function call, STOP → tool-calls", () => {
  const response = decoded({
    candidates: [{
      content: {
        role: "model",
        parts: [
          { text: "**Checking the weather**", thought: true },
          { functionCall: { name: "get_weather", args: { location: "London" } }, thoughtSignature: "Q2lj" },
          { functionCall: { id: "fc2", name: "get_time", args: {} } }
        ]
      },
      finishReason: "STOP",
      index: 0
    }],
    usageMetadata: { promptTokenCount: 30, candidatesTokenCount: 12, totalTokenCount: 42 },
    modelVersion: "gemini-3-pro-preview",
    responseId: "r1"
  })
  deepStrictEqual(response.content, [
    { type: "reasoning", text: "**Checking the weather**" },
    { type: "reasoning", text: "", signature: "Q2lj", origin: "gemini" },
    { type: "tool-call", callId: "call_get_weather_0", name: "get_weather", arguments: '{"location":"London"}' },
    { type: "tool-call", callId: "fc2", name: "get_time", arguments: "{}" }
  ])
  strictEqual(response.finishReason, "tool-calls")
  deepStrictEqual(response.usage, { inputTokens: 30, outputTokens: 12 })
})

Deno.test("decodeResponse: finish reasons", () => {
  const reason = (finishReason: string, parts: ReadonlyArray<unknown> = [{ text: "x" }]) =>
    decoded({ candidates: [{ content: { role: "model", parts }, finishReason }] }).finishReason
  strictEqual(reason("MAX_TOKENS"), "length")
  strictEqual(reason("SAFETY"), "content-filter")
  strictEqual(reason("RECITATION"), "content-filter")
  strictEqual(reason("BLOCKLIST"), "content-filter")
  strictEqual(reason("PROHIBITED_CONTENT"), "content-filter")
  strictEqual(reason("SPII"), "content-filter")
  strictEqual(reason("MALFORMED_FUNCTION_CALL"), "other")
  strictEqual(reason("OTHER"), "other")
  // MAX_TOKENS answers may come without parts
  strictEqual(decoded({ candidates: [{ content: { role: "model" }, finishReason: "MAX_TOKENS" }] }).content.length, 0)
})

Deno.test("decodeResponse: a blocked prompt (promptFeedback, no candidates) → content-filter, empty content", () => {
  const response = decoded({
    promptFeedback: { blockReason: "SAFETY", safetyRatings: [] },
    usageMetadata: { promptTokenCount: 7, totalTokenCount: 7 },
    modelVersion: "gemini-2.5-flash"
  })
  strictEqual(response.finishReason, "content-filter")
  strictEqual(response.rawFinishReason, "SAFETY")
  deepStrictEqual(response.content, [])
  strictEqual(response.usage.inputTokens, 7)
})

Deno.test("decodeResponse: a body that is no answer is bad-body", () => {
  for (const body of [{}, "text", null, { candidates: "x" }]) {
    const result = GeminiFormat.decodeResponse(body)
    strictEqual(result instanceof UpstreamFailed && result.kind, "bad-body")
  }
})

const meta = { id: "resp_123", model: "gemini-2.5-flash", created: 1_700_000_000 }

Deno.test("encodeResponse: candidate, safety ratings, usage, model version and id", () => {
  const body = GeminiFormat.encodeResponse({
    id: "up",
    model: "claude-x",
    created: 1,
    content: [
      { type: "reasoning", text: "Let me think", signature: "c2ln" },
      { type: "text", text: "Hello" },
      { type: "reasoning", text: "", signature: "dG9vbA==" },
      { type: "tool-call", callId: "toolu_1", name: "lookup", arguments: '{"q":"x"}' }
    ],
    finishReason: "tool-calls",
    rawFinishReason: "tool_use",
    usage: { inputTokens: 10, outputTokens: 30, cachedInputTokens: 2, reasoningTokens: 20 }
  }, meta)
  deepStrictEqual(body, {
    candidates: [{
      content: {
        role: "model",
        parts: [
          { text: "Let me think", thought: true, thoughtSignature: "c2ln" },
          { text: "Hello" },
          { functionCall: { name: "lookup", args: { q: "x" }, id: "toolu_1" }, thoughtSignature: "dG9vbA==" }
        ]
      },
      finishReason: "STOP",
      index: 0,
      safetyRatings: [
        { category: "HARM_CATEGORY_HARASSMENT", probability: "NEGLIGIBLE" },
        { category: "HARM_CATEGORY_HATE_SPEECH", probability: "NEGLIGIBLE" },
        { category: "HARM_CATEGORY_SEXUALLY_EXPLICIT", probability: "NEGLIGIBLE" },
        { category: "HARM_CATEGORY_DANGEROUS_CONTENT", probability: "NEGLIGIBLE" }
      ]
    }],
    usageMetadata: {
      promptTokenCount: 10,
      candidatesTokenCount: 10,
      thoughtsTokenCount: 20,
      cachedContentTokenCount: 2,
      totalTokenCount: 40
    },
    modelVersion: "gemini-2.5-flash",
    responseId: "resp_123"
  })
})

Deno.test("encodeResponse: finish reasons (raw Gemini reason restored when it agrees)", () => {
  const finish = (finishReason: Response["finishReason"], rawFinishReason?: string) => {
    const body = GeminiFormat.encodeResponse({
      id: "x",
      model: "m",
      created: 0,
      content: [],
      finishReason,
      rawFinishReason,
      usage: { inputTokens: 0, outputTokens: 0 }
    }, meta) as { candidates: ReadonlyArray<{ finishReason: string }> }
    return body.candidates[0].finishReason
  }
  strictEqual(finish("stop", "end_turn"), "STOP")
  strictEqual(finish("length"), "MAX_TOKENS")
  strictEqual(finish("content-filter"), "SAFETY")
  strictEqual(finish("content-filter", "RECITATION"), "RECITATION")
  strictEqual(finish("content-filter", "MAX_TOKENS"), "SAFETY")
  strictEqual(finish("other"), "OTHER")
  strictEqual(finish("error"), "OTHER")
})

Deno.test("decodeResponse ∘ encodeResponse keeps content, finish and usage", () => {
  const original = decoded(textAnswer)
  const again = decoded(GeminiFormat.encodeResponse(original, { id: original.id, model: original.model, created: 0 }))
  deepStrictEqual(again, original)
})
