import { deepStrictEqual, strictEqual } from "node:assert/strict"
import type { StreamPart } from "../../../../src/canonical/StreamPart.ts"
import { GeminiFormat } from "../../../../src/formats/gemini/generate-content/Format.ts"
import { runDecoder, runEncoder, sse } from "../../../support/StreamSteps.ts"

const decoder = GeminiFormat.streamDecoder
const encoder = GeminiFormat.streamEncoder

// streamGenerateContent?alt=sse, text-generation docs example shape
const textStream = [
  {
    candidates: [{ content: { parts: [{ text: "The" }], role: "model" }, index: 0 }],
    usageMetadata: { promptTokenCount: 9, totalTokenCount: 9 },
    modelVersion: "gemini-2.5-flash",
    responseId: "abc"
  },
  {
    candidates: [{ content: { parts: [{ text: " opposite of hot is cold." }], role: "model" }, index: 0 }],
    usageMetadata: { promptTokenCount: 9, totalTokenCount: 9 },
    modelVersion: "gemini-2.5-flash",
    responseId: "abc"
  },
  {
    candidates: [{ content: { parts: [{ text: "" }], role: "model" }, finishReason: "STOP", index: 0 }],
    usageMetadata: { promptTokenCount: 9, candidatesTokenCount: 8, totalTokenCount: 17 },
    modelVersion: "gemini-2.5-flash",
    responseId: "abc"
  }
]

/** The parts without the usage updates (the usage is checked in `Finish`, the final update on its own). */
const withoutUsageUpdates = (parts: ReadonlyArray<StreamPart>) => parts.filter((part) => part._tag !== "UsageUpdate")

Deno.test("streamDecoder: every chunk's usageMetadata is a usage update; the finishing chunk's is final", () => {
  const result = runDecoder(decoder, textStream.map((chunk) => sse(chunk)))
  const updates = result.parts.filter((part) => part._tag === "UsageUpdate")
  deepStrictEqual(updates.at(-1), { _tag: "UsageUpdate", usage: { inputTokens: 9, outputTokens: 8 }, final: true })
  strictEqual(updates.slice(0, -1).every((part) => part._tag === "UsageUpdate" && part.final === undefined), true)
})

Deno.test("streamDecoder: text chunks → one text block, Finish with the last usage", () => {
  const result = runDecoder(decoder, textStream.map((chunk) => sse(chunk)))
  strictEqual(result.complete, true)
  deepStrictEqual(withoutUsageUpdates(result.parts), [
    { _tag: "ResponseStart", id: "abc", model: "gemini-2.5-flash", created: 0 },
    { _tag: "BlockStart", index: 0, block: { type: "text" } },
    { _tag: "TextDelta", index: 0, text: "The" },
    { _tag: "TextDelta", index: 0, text: " opposite of hot is cold." },
    { _tag: "BlockStop", index: 0 },
    { _tag: "Finish", reason: "stop", rawReason: "STOP", usage: { inputTokens: 9, outputTokens: 8 } }
  ])
})

Deno.test("streamDecoder: thoughts, signatures and parallel function calls", () => {
  const result = runDecoder(decoder, [
    sse({ candidates: [{ content: { role: "model", parts: [{ text: "**Planning** ", thought: true }] } }] }),
    sse({ candidates: [{ content: { role: "model", parts: [{ text: "the party", thought: true }] } }] }),
    sse({
      candidates: [{
        content: {
          role: "model",
          parts: [
            { functionCall: { name: "power_disco_ball", args: { power: true } }, thoughtSignature: "c2ln" },
            { functionCall: { name: "start_music", args: { energetic: true } } }
          ]
        },
        finishReason: "STOP"
      }],
      usageMetadata: {
        promptTokenCount: 50,
        candidatesTokenCount: 20,
        thoughtsTokenCount: 100,
        cachedContentTokenCount: 10
      }
    })
  ])
  deepStrictEqual(withoutUsageUpdates(result.parts), [
    { _tag: "ResponseStart", id: "", model: "", created: 0 },
    { _tag: "BlockStart", index: 0, block: { type: "reasoning" } },
    { _tag: "ReasoningDelta", index: 0, text: "**Planning** " },
    { _tag: "ReasoningDelta", index: 0, text: "the party" },
    { _tag: "BlockStop", index: 0 },
    { _tag: "BlockStart", index: 1, block: { type: "reasoning" } },
    { _tag: "ReasoningSignature", index: 1, signature: "c2ln", origin: "gemini" },
    { _tag: "BlockStop", index: 1 },
    {
      _tag: "BlockStart",
      index: 2,
      block: { type: "tool-call", callId: "call_power_disco_ball_0", name: "power_disco_ball" }
    },
    { _tag: "ToolInputDelta", index: 2, json: '{"power":true}' },
    { _tag: "BlockStop", index: 2 },
    { _tag: "BlockStart", index: 3, block: { type: "tool-call", callId: "call_start_music_1", name: "start_music" } },
    { _tag: "ToolInputDelta", index: 3, json: '{"energetic":true}' },
    { _tag: "BlockStop", index: 3 },
    {
      _tag: "Finish",
      reason: "tool-calls",
      rawReason: "STOP",
      usage: { inputTokens: 50, outputTokens: 120, cachedInputTokens: 10, reasoningTokens: 100 }
    }
  ])
})

Deno.test("streamDecoder: a signed thought part ends its reasoning block", () => {
  const result = runDecoder(decoder, [
    sse({ candidates: [{ content: { parts: [{ text: "hmm", thought: true }] } }] }),
    sse({ candidates: [{ content: { parts: [{ text: "", thought: true, thoughtSignature: "U0lH" }] } }] }),
    sse({ candidates: [{ content: { parts: [{ text: "Answer" }] }, finishReason: "MAX_TOKENS" }] })
  ])
  deepStrictEqual(result.parts.slice(1), [
    { _tag: "BlockStart", index: 0, block: { type: "reasoning" } },
    { _tag: "ReasoningDelta", index: 0, text: "hmm" },
    { _tag: "ReasoningSignature", index: 0, signature: "U0lH", origin: "gemini" },
    { _tag: "BlockStop", index: 0 },
    { _tag: "BlockStart", index: 1, block: { type: "text" } },
    { _tag: "TextDelta", index: 1, text: "Answer" },
    { _tag: "BlockStop", index: 1 },
    { _tag: "Finish", reason: "length", rawReason: "MAX_TOKENS", usage: { inputTokens: 0, outputTokens: 0 } }
  ])
})

Deno.test("streamDecoder: an in-band error chunk is UpstreamFailed, classified", () => {
  const result = runDecoder(decoder, [
    sse(textStream[0]),
    sse({ error: { code: 503, message: "The model is overloaded. Please try again later.", status: "UNAVAILABLE" } })
  ])
  strictEqual(result.failure?._tag, "UpstreamFailed")
  strictEqual(result.failure?.kind, "server")
  strictEqual(result.failure?.status, 503)
  strictEqual(result.failure?.message, "The model is overloaded. Please try again later.")
  const throttled = runDecoder(decoder, [
    sse({ error: { code: 429, message: "slow down", status: "RESOURCE_EXHAUSTED" } })
  ])
  strictEqual(throttled.failure?.kind, "throttled")
  strictEqual(runDecoder(decoder, [sse("{not json")]).failure?.kind, "bad-body")
})

Deno.test("streamDecoder: a stream that stops before a finishReason is not complete", () => {
  const result = runDecoder(decoder, textStream.slice(0, 2).map((chunk) => sse(chunk)))
  strictEqual(result.complete, false)
  strictEqual(result.parts.some((part) => part._tag === "Finish"), false)
})

Deno.test("streamDecoder: a blocked prompt ends the stream with content-filter", () => {
  const result = runDecoder(decoder, [sse({ promptFeedback: { blockReason: "PROHIBITED_CONTENT" } })])
  strictEqual(result.complete, true)
  deepStrictEqual(result.parts.at(-1), {
    _tag: "Finish",
    reason: "content-filter",
    rawReason: "PROHIBITED_CONTENT",
    usage: { inputTokens: 0, outputTokens: 0 }
  })
})

// ---------------------------------------------------------------------------
// encoder

const meta = { id: "resp_1", model: "gemini-2.5-flash", created: 1_700_000_000 }
const usage = { inputTokens: 12, outputTokens: 30, reasoningTokens: 10 }

const canonicalStream: ReadonlyArray<StreamPart> = [
  { _tag: "ResponseStart", id: "up", model: "claude-x", created: 1 },
  { _tag: "BlockStart", index: 0, block: { type: "reasoning" } },
  { _tag: "ReasoningDelta", index: 0, text: "Let me see" },
  { _tag: "ReasoningSignature", index: 0, signature: "c2ln", origin: "gemini" },
  { _tag: "BlockStop", index: 0 },
  { _tag: "BlockStart", index: 1, block: { type: "text" } },
  { _tag: "TextDelta", index: 1, text: "Checking" },
  { _tag: "TextDelta", index: 1, text: " now." },
  { _tag: "BlockStop", index: 1 },
  { _tag: "BlockStart", index: 2, block: { type: "reasoning" } },
  { _tag: "ReasoningSignature", index: 2, signature: "dG9vbA==", origin: "gemini" },
  { _tag: "BlockStop", index: 2 },
  { _tag: "BlockStart", index: 3, block: { type: "tool-call", callId: "toolu_1", name: "get_weather" } },
  { _tag: "ToolInputDelta", index: 3, json: '{"city":' },
  { _tag: "ToolInputDelta", index: 3, json: '"Paris"}' },
  { _tag: "BlockStop", index: 3 },
  { _tag: "UsageUpdate", usage },
  { _tag: "Finish", reason: "tool-calls", rawReason: "tool_use", usage }
]

const partsOf = (data: string) =>
  (JSON.parse(data) as { candidates: ReadonlyArray<{ content: { parts: unknown } }> }).candidates[0].content.parts

Deno.test("streamEncoder: one chunk per delta, whole function calls, signatures, final chunk, no end marker", () => {
  const events = runEncoder(encoder, meta, canonicalStream)
  deepStrictEqual(events.map((event) => partsOf(event.data)), [
    [{ text: "Let me see", thought: true }],
    [{ text: "", thought: true, thoughtSignature: "c2ln" }],
    [{ text: "Checking" }],
    [{ text: " now." }],
    [{ functionCall: { name: "get_weather", args: { city: "Paris" }, id: "toolu_1" }, thoughtSignature: "dG9vbA==" }],
    [{ text: "" }]
  ])
  const first = JSON.parse(events[0].data)
  strictEqual(first.modelVersion, "gemini-2.5-flash")
  strictEqual(first.responseId, "resp_1")
  strictEqual(first.candidates[0].finishReason, undefined)
  const last = JSON.parse(events.at(-1)!.data)
  strictEqual(last.candidates[0].finishReason, "STOP")
  strictEqual(last.candidates[0].safetyRatings.length, 4)
  deepStrictEqual(last.usageMetadata, {
    promptTokenCount: 12,
    candidatesTokenCount: 20,
    thoughtsTokenCount: 10,
    totalTokenCount: 42
  })
  strictEqual(events.every((event) => event.event === "message"), true)
})

Deno.test("streamEncoder: fail writes an in-band error with the HTTP code and RPC status", () => {
  const events = runEncoder(encoder, meta, canonicalStream.slice(0, 3), {
    status: 429,
    type: "platform_api_error",
    code: "too_many_requests",
    message: "Upstream is busy",
    param: ""
  })
  deepStrictEqual(JSON.parse(events.at(-1)!.data), {
    error: {
      code: 429,
      message: "Upstream is busy",
      status: "RESOURCE_EXHAUSTED",
      details: [{
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        reason: "TOO_MANY_REQUESTS",
        domain: "sluice",
        metadata: { code: "too_many_requests", type: "platform_api_error" }
      }]
    }
  })
})

Deno.test("streamDecoder ∘ streamEncoder gives back the canonical stream (Gemini ids and model)", () => {
  const events = runEncoder(encoder, meta, canonicalStream)
  const result = runDecoder(decoder, events)
  const expected = canonicalStream
    .filter((part) => part._tag !== "UsageUpdate")
    .map((part): StreamPart =>
      part._tag === "ResponseStart"
        ? { ...part, id: "resp_1", model: "gemini-2.5-flash", created: 0 }
        : part._tag === "ToolInputDelta"
        ? { ...part, json: '{"city":"Paris"}' }
        : part._tag === "Finish"
        ? { ...part, rawReason: "STOP" }
        : part
    )
    .filter((part, index, all) => !(part._tag === "ToolInputDelta" && all[index - 1]?._tag === "ToolInputDelta"))
  deepStrictEqual(withoutUsageUpdates(result.parts), expected)
})
