/**
 * The Converse wire (`src/formats/bedrock/converse/`) with plain values: the request encoder's fields, the answer and
 * stream decoders (cache usage, tool use, reasoning with its signature, exception events), and Bedrock's error
 * classification by structured type.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import type { Sse } from "effect/encoding"
import type { Request } from "../../../src/canonical/Request.ts"
import type { StreamPart } from "../../../src/canonical/StreamPart.ts"
import { UpstreamFailed } from "../../../src/errors/GatewayError.ts"
import { classifyBedrockError } from "../../../src/formats/bedrock/ErrorBody.ts"
import { EMPTY_TOOL_RESULT } from "../../../src/formats/bedrock/converse/RequestEncoder.ts"
import { ConverseWire } from "../../../src/formats/bedrock/converse/Wire.ts"

const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

const base: Request = {
  model: "meta.llama3-2-1b-instruct-v1:0",
  stream: false,
  messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }]
}

Deno.test("Converse request: system, merged turns, images and documents as bytes, tool use and results", () => {
  const { body, dropped } = ConverseWire.encodeRequest({
    ...base,
    maxOutputTokens: 300,
    temperature: 0.5,
    topP: 0.9,
    stopSequences: ["END"],
    metadata: { trace: "t-1" },
    messages: [
      { role: "system", content: [{ type: "text", text: "Be brief." }] },
      {
        role: "user",
        content: [
          { type: "text", text: "What is this?" },
          { type: "image", source: { kind: "base64", mediaType: "image/png", data: PNG } },
          {
            type: "file",
            filename: "q3 report.pdf",
            source: { kind: "base64", mediaType: "application/pdf", data: "JVBERi0=" }
          }
        ]
      },
      { role: "user", content: [{ type: "text", text: "And the weather?" }] },
      {
        role: "assistant",
        content: [{ type: "tool-call", callId: "tooluse_1", name: "weather", arguments: '{"city":"Oslo"}' }]
      },
      {
        role: "tool",
        content: [{ type: "tool-result", callId: "tooluse_1", content: [{ type: "text", text: "4°C" }], isError: true }]
      }
    ],
    tools: [{ type: "function", name: "weather", description: "Weather by city", parameters: { type: "object" } }],
    toolChoice: { type: "tool", name: "weather" }
  })
  deepStrictEqual(body, {
    messages: [
      {
        role: "user",
        content: [
          { text: "What is this?" },
          { image: { format: "png", source: { bytes: PNG } } },
          { document: { format: "pdf", name: "q3 report", source: { bytes: "JVBERi0=" } } },
          { text: "And the weather?" }
        ]
      },
      {
        role: "assistant",
        content: [{ toolUse: { toolUseId: "tooluse_1", name: "weather", input: { city: "Oslo" } } }]
      },
      {
        role: "user",
        content: [{ toolResult: { toolUseId: "tooluse_1", content: [{ text: "4°C" }], status: "error" } }]
      }
    ],
    system: [{ text: "Be brief." }],
    inferenceConfig: { maxTokens: 300, temperature: 0.5, topP: 0.9, stopSequences: ["END"] },
    toolConfig: {
      tools: [{
        toolSpec: { name: "weather", description: "Weather by city", inputSchema: { json: { type: "object" } } }
      }],
      toolChoice: { tool: { name: "weather" } }
    },
    requestMetadata: { trace: "t-1" }
  })
  deepStrictEqual(dropped, [])
})

Deno.test("Converse request: tool choices, the JSON schema format, and what cannot cross", () => {
  const tools = [{ type: "function" as const, name: "f", parameters: { type: "object" } }]
  const choice = (toolChoice: Request["toolChoice"]) =>
    (ConverseWire.encodeRequest({ ...base, tools, toolChoice }).body.toolConfig as Record<string, unknown>).toolChoice
  deepStrictEqual(choice({ type: "auto" }), { auto: {} })
  deepStrictEqual(choice({ type: "required" }), { any: {} })
  strictEqual(choice({ type: "none" }), undefined)
  const { body, dropped } = ConverseWire.encodeRequest({
    ...base,
    seed: 7,
    topK: 40,
    metadata: { team: "search", session: '{"id":"not allowed"}' },
    reasoning: { effort: "high" },
    responseFormat: { type: "json_schema", name: "answer", schema: { type: "object" } },
    messages: [{
      role: "user",
      content: [
        { type: "image", source: { kind: "url", url: "https://example.test/cat.png" } },
        { type: "audio", data: "AAAA", format: "wav" }
      ]
    }]
  })
  deepStrictEqual(body.outputConfig, {
    textFormat: { type: "json_schema", structure: { jsonSchema: { schema: '{"type":"object"}', name: "answer" } } }
  })
  strictEqual(body.additionalModelRequestFields, undefined, "no Anthropic fields for a Llama model")
  deepStrictEqual(body.requestMetadata, { team: "search" }, "an entry Bedrock refuses is left out")
  deepStrictEqual(dropped, ["image.url", "audio", "seed", "topK", "reasoning", "metadata"])
})

Deno.test("Converse request: Claude's thinking in additionalModelRequestFields, only Anthropic reasoning sent back", () => {
  const { body, dropped } = ConverseWire.encodeRequest({
    ...base,
    model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    maxOutputTokens: 8000,
    temperature: 1,
    reasoning: { budgetTokens: 2048 },
    messages: [
      { role: "user", content: [{ type: "text", text: "Think." }] },
      {
        role: "assistant",
        content: [
          { type: "reasoning", text: "Mine.", signature: "c2lnLWFudGhyb3BpYw==", origin: "anthropic" },
          { type: "reasoning", text: "", redacted: "cmVkYWN0ZWQ=", origin: "anthropic" },
          { type: "reasoning", text: "Theirs.", signature: "Z2VtaW5p", origin: "gemini" },
          { type: "text", text: "Done." }
        ]
      },
      { role: "user", content: [{ type: "text", text: "Again." }] }
    ]
  })
  deepStrictEqual(body.additionalModelRequestFields, { thinking: { type: "enabled", budget_tokens: 2048 } })
  deepStrictEqual(body.inferenceConfig, { maxTokens: 8000 }, "temperature is left out with thinking on")
  deepStrictEqual((body.messages as Array<{ content: unknown }>)[1].content, [
    { reasoningContent: { reasoningText: { text: "Mine.", signature: "c2lnLWFudGhyb3BpYw==" } } },
    { reasoningContent: { redactedContent: "cmVkYWN0ZWQ=" } },
    { text: "Done." }
  ])
  deepStrictEqual(dropped, ["reasoning.foreignSignature"])
})

Deno.test("Converse answer: content blocks, stop reason, and cache reads and writes in the canonical usage", () => {
  const decoded = ConverseWire.decodeResponse({
    output: {
      message: {
        role: "assistant",
        content: [
          { reasoningContent: { reasoningText: { text: "Hmm.", signature: "c2ln" } } },
          { text: "Calling." },
          { toolUse: { toolUseId: "tooluse_2", name: "weather", input: { city: "Oslo" } } }
        ]
      }
    },
    stopReason: "tool_use",
    usage: {
      inputTokens: 12,
      outputTokens: 30,
      totalTokens: 1042,
      cacheReadInputTokens: 900,
      cacheWriteInputTokens: 100
    },
    metrics: { latencyMs: 120 }
  })
  if (decoded instanceof UpstreamFailed) throw decoded
  deepStrictEqual(decoded.content, [
    { type: "reasoning", text: "Hmm.", signature: "c2ln", origin: "anthropic" },
    { type: "text", text: "Calling." },
    { type: "tool-call", callId: "tooluse_2", name: "weather", arguments: '{"city":"Oslo"}' }
  ])
  strictEqual(decoded.finishReason, "tool-calls")
  strictEqual(decoded.rawFinishReason, "tool_use")
  deepStrictEqual(decoded.usage, {
    inputTokens: 1012,
    outputTokens: 30,
    cachedInputTokens: 900,
    cacheCreationInputTokens: 100
  })
  const bad = ConverseWire.decodeResponse({ output: { message: { content: "nope" } } })
  strictEqual(bad instanceof UpstreamFailed && bad.kind, "bad-body")
  const noUsage = ConverseWire.decodeResponse({ output: { message: { content: [] } } })
  strictEqual(noUsage instanceof UpstreamFailed && noUsage.kind, "bad-body")
})

const event = (name: string, payload: unknown): Sse.Event => ({
  _tag: "Event",
  event: name,
  id: undefined,
  data: JSON.stringify(payload)
})

/** The parts of `events` decoded in order, with the flush, or the failure of the first event that fails. */
const decodeAll = (
  events: ReadonlyArray<Sse.Event>
): { parts: Array<StreamPart>; complete: boolean } | UpstreamFailed => {
  const decoder = ConverseWire.streamDecoder
  let state = decoder.initial()
  const parts: Array<StreamPart> = []
  for (const item of events) {
    const step = decoder.step(state, item)
    if (step instanceof UpstreamFailed) return step
    state = step[0]
    parts.push(...step[1])
  }
  return { parts: [...parts, ...decoder.flush(state)], complete: decoder.complete(state) }
}

Deno.test("ConverseStream: reasoning, text and a tool use renumbered in order, usage at metadata, stop reason", () => {
  const result = decodeAll([
    event("messageStart", { role: "assistant", p: "abc" }),
    event("contentBlockDelta", { contentBlockIndex: 0, delta: { reasoningContent: { text: "Let me" } } }),
    event("contentBlockDelta", { contentBlockIndex: 0, delta: { reasoningContent: { signature: "c2ln" } } }),
    event("contentBlockStop", { contentBlockIndex: 0 }),
    event("contentBlockDelta", { contentBlockIndex: 1, delta: { text: "Sure" } }),
    event("contentBlockStop", { contentBlockIndex: 1 }),
    event("contentBlockStart", { contentBlockIndex: 2, start: { toolUse: { toolUseId: "tooluse_3", name: "f" } } }),
    event("contentBlockDelta", { contentBlockIndex: 2, delta: { toolUse: { input: '{"a":' } } }),
    event("contentBlockDelta", { contentBlockIndex: 2, delta: { toolUse: { input: "1}" } } }),
    event("contentBlockStop", { contentBlockIndex: 2 }),
    event("messageStop", { stopReason: "tool_use" }),
    event("metadata", {
      usage: { inputTokens: 5, outputTokens: 9, totalTokens: 64, cacheReadInputTokens: 40, cacheWriteInputTokens: 10 },
      metrics: { latencyMs: 50 }
    })
  ])
  if (result instanceof UpstreamFailed) throw result
  const usage = { inputTokens: 55, outputTokens: 9, cachedInputTokens: 40, cacheCreationInputTokens: 10 }
  deepStrictEqual(result.parts, [
    { _tag: "ResponseStart", id: "", model: "", created: 0 },
    { _tag: "BlockStart", index: 0, block: { type: "reasoning" } },
    { _tag: "ReasoningDelta", index: 0, text: "Let me" },
    { _tag: "ReasoningSignature", index: 0, signature: "c2ln", origin: "anthropic" },
    { _tag: "BlockStop", index: 0 },
    { _tag: "BlockStart", index: 1, block: { type: "text" } },
    { _tag: "TextDelta", index: 1, text: "Sure" },
    { _tag: "BlockStop", index: 1 },
    { _tag: "BlockStart", index: 2, block: { type: "tool-call", callId: "tooluse_3", name: "f" } },
    { _tag: "ToolInputDelta", index: 2, json: '{"a":' },
    { _tag: "ToolInputDelta", index: 2, json: "1}" },
    { _tag: "BlockStop", index: 2 },
    { _tag: "UsageUpdate", usage, final: true },
    { _tag: "Finish", reason: "tool-calls", rawReason: "tool_use", usage }
  ])
  strictEqual(result.complete, true)
})

Deno.test("ConverseStream: a stream without metadata is not complete; exception events fail by their type", () => {
  const cut = decodeAll([
    event("messageStart", { role: "assistant" }),
    event("messageStop", { stopReason: "end_turn" })
  ])
  strictEqual(!(cut instanceof UpstreamFailed) && cut.complete, false)
  const cases: ReadonlyArray<readonly [string, string]> = [
    ["throttlingException", "throttled"],
    ["validationException", "rejected"],
    ["modelStreamErrorException", "server"],
    ["internalServerException", "server"],
    ["serviceUnavailableException", "server"]
  ]
  for (const [name, kind] of cases) {
    const failed = decodeAll([event("messageStart", { role: "assistant" }), event(name, { message: "Nope" })])
    strictEqual(failed instanceof UpstreamFailed && failed.kind, kind, name)
    strictEqual((failed as UpstreamFailed).message, "Nope")
  }
  const unreadable = decodeAll([event("contentBlockDelta", { delta: { text: "x" } })])
  strictEqual(unreadable instanceof UpstreamFailed && unreadable.kind, "bad-body")
  const unknown = decodeAll([event("messageStart", { role: "assistant" }), event("somethingNew", {})])
  strictEqual(unknown instanceof UpstreamFailed, false, "an unknown event is skipped")
})

Deno.test("Bedrock errors: the x-amzn-ErrorType header or __type decides, never the message; else the status", () => {
  const kind = (status: number, body: string, header?: string) => classifyBedrockError(status, body, header).kind
  strictEqual(
    kind(400, '{"message":"Too many tokens"}', "ValidationException:http://internal.amazon.com/coral/"),
    "rejected"
  )
  strictEqual(kind(403, '{"message":"x"}', "AccessDeniedException"), "unauthorized")
  strictEqual(
    kind(403, '{"__type":"com.amazon.coral.service#UnrecognizedClientException","message":"x"}'),
    "unauthorized"
  )
  strictEqual(kind(400, '{"message":"x"}', "ServiceQuotaExceededException"), "throttled")
  strictEqual(kind(429, '{"message":"x"}', "ThrottlingException"), "throttled")
  strictEqual(kind(429, '{"message":"x"}', "ModelNotReadyException"), "server")
  strictEqual(kind(408, '{"message":"x"}', "ModelTimeoutException"), "timeout")
  strictEqual(kind(424, '{"message":"x"}', "ModelErrorException"), "server")
  strictEqual(kind(500, "{}", "InternalServerException"), "server")
  strictEqual(kind(503, "{}", "ServiceUnavailableException"), "server")
  strictEqual(kind(404, "{}", "ResourceNotFoundException"), "rejected")
  // A message that names another error changes nothing: the type decides.
  strictEqual(kind(400, '{"message":"ThrottlingException: access denied"}', "ValidationException"), "rejected")
  strictEqual(kind(429, "<html>busy</html>"), "throttled")
  strictEqual(kind(502, ""), "server")
  deepStrictEqual(classifyBedrockError(400, '{"Message":"Bad input"}', "ValidationException"), {
    kind: "rejected",
    message: "Bad input"
  })
  strictEqual(classifyBedrockError(500, "not json").message, "Upstream answered HTTP 500")
})

Deno.test("Converse request: with Claude's thinking on and no cap named, the cap its budget fits under is sent", () => {
  const { body } = ConverseWire.encodeRequest({
    ...base,
    model: "anthropic.claude-sonnet-4-5-20250929-v1:0",
    reasoning: { effort: "low" }
  })
  const thinking = (body.additionalModelRequestFields as { thinking: { type: string; budget_tokens: number } }).thinking
  const cap = (body.inferenceConfig as { maxTokens: number }).maxTokens
  strictEqual(thinking.type, "enabled")
  strictEqual(cap > thinking.budget_tokens, true, `maxTokens ${cap} above budget_tokens ${thinking.budget_tokens}`)
})

Deno.test("Converse request: blank text is left out, and a tool result with nothing in it says so", () => {
  const { body } = ConverseWire.encodeRequest({
    ...base,
    tools: [{ type: "function", name: "f", parameters: { type: "object" } }],
    messages: [
      { role: "user", content: [{ type: "text", text: "Run f" }, { type: "text", text: "  " }] },
      { role: "assistant", content: [{ type: "tool-call", callId: "t1", name: "f", arguments: "" }] },
      { role: "tool", content: [{ type: "tool-result", callId: "t1", content: [{ type: "text", text: "" }] }] }
    ]
  })
  deepStrictEqual(body.messages, [
    { role: "user", content: [{ text: "Run f" }] },
    { role: "assistant", content: [{ toolUse: { toolUseId: "t1", name: "f", input: {} } }] },
    { role: "user", content: [{ toolResult: { toolUseId: "t1", content: [{ text: EMPTY_TOOL_RESULT }] } }] }
  ])
})
