import { deepStrictEqual, strictEqual } from "node:assert/strict"
import type { Request } from "../../../../src/canonical/Request.ts"
import {
  AnthropicFormat,
  DEFAULT_MAX_TOKENS,
  THINKING_BUDGET_BY_EFFORT
} from "../../../../src/formats/anthropic/messages/Format.ts"
import { PNG_BASE64 } from "./Fixtures.ts"

const base: Request = {
  model: "claude-sonnet-4-5",
  messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }],
  stream: false
}
const encode = (request: Partial<Request>) => AnthropicFormat.encodeRequest({ ...base, ...request })

Deno.test("encodeRequest writes a plain request with the default max_tokens", () => {
  const { body, dropped } = encode({})
  deepStrictEqual(body, {
    model: "claude-sonnet-4-5",
    max_tokens: DEFAULT_MAX_TOKENS,
    messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }]
  })
  deepStrictEqual(dropped, [])
  strictEqual(DEFAULT_MAX_TOKENS, 4096)
})

Deno.test("encodeRequest hoists system messages, merges turns and puts tool results first", () => {
  const { body } = encode({
    messages: [
      { role: "system", content: [{ type: "text", text: "Be brief." }] },
      { role: "user", content: [{ type: "text", text: "Weather in SF and NYC?" }] },
      {
        role: "assistant",
        content: [
          { type: "reasoning", text: "Two calls.", signature: "sig-1" },
          { type: "tool-call", callId: "toolu_1", name: "get_weather", arguments: '{"location":"SF"}' },
          { type: "tool-call", callId: "toolu_2", name: "get_weather", arguments: "{not json" }
        ]
      },
      { role: "user", content: [{ type: "text", text: "Hurry." }] },
      {
        role: "tool",
        content: [
          { type: "tool-result", callId: "toolu_1", name: "get_weather", content: [{ type: "text", text: "15C" }] },
          { type: "tool-result", callId: "toolu_2", content: [], isError: true }
        ]
      },
      { role: "system", content: [{ type: "text", text: "Use Celsius." }] }
    ]
  })
  deepStrictEqual(body.system, [{ type: "text", text: "Be brief." }, { type: "text", text: "Use Celsius." }])
  deepStrictEqual(body.messages, [
    { role: "user", content: [{ type: "text", text: "Weather in SF and NYC?" }] },
    {
      role: "assistant",
      content: [
        { type: "thinking", thinking: "Two calls.", signature: "sig-1" },
        { type: "tool_use", id: "toolu_1", name: "get_weather", input: { location: "SF" } },
        { type: "tool_use", id: "toolu_2", name: "get_weather", input: {} }
      ]
    },
    {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "15C" }] },
        { type: "tool_result", tool_use_id: "toolu_2", is_error: true },
        { type: "text", text: "Hurry." }
      ]
    }
  ])
  deepStrictEqual(encode({ messages: base.messages }).body.system, undefined)
  strictEqual(
    encode({ messages: [{ role: "system", content: [{ type: "text", text: "One." }] }, ...base.messages] }).body.system,
    "One."
  )
})

Deno.test("encodeRequest writes images and files, and lists what it cannot send", () => {
  const { body, dropped } = encode({
    messages: [{
      role: "user",
      content: [
        { type: "image", source: { kind: "url", url: "https://example.com/a.jpg" }, detail: "high" },
        { type: "image", source: { kind: "url", url: `data:image/png;base64,${PNG_BASE64}` } },
        { type: "image", source: { kind: "base64", mediaType: "image/webp", data: "UklGRg==" } },
        { type: "file", source: { kind: "base64", mediaType: "application/pdf", data: "JVBERi0=" }, filename: "a.pdf" },
        { type: "file", source: { kind: "url", url: "https://example.com/b.pdf" } },
        { type: "file", source: { kind: "base64", mediaType: "text/plain", data: "aMOpbGxv" } },
        { type: "file", source: { kind: "base64", mediaType: "application/zip", data: "UEsDBA==" } },
        { type: "audio", data: "UklGRg==", format: "wav" },
        { type: "reasoning", text: "unsigned thoughts" }
      ]
    }]
  })
  deepStrictEqual((body.messages as ReadonlyArray<{ content: unknown }>)[0].content, [
    { type: "image", source: { type: "url", url: "https://example.com/a.jpg" } },
    { type: "image", source: { type: "base64", media_type: "image/png", data: PNG_BASE64 } },
    { type: "image", source: { type: "base64", media_type: "image/webp", data: "UklGRg==" } },
    { type: "document", source: { type: "base64", media_type: "application/pdf", data: "JVBERi0=" }, title: "a.pdf" },
    { type: "document", source: { type: "url", url: "https://example.com/b.pdf" } },
    { type: "document", source: { type: "text", media_type: "text/plain", data: "héllo" } }
  ])
  deepStrictEqual(dropped, ["audio", "image.detail", "file.mediaType", "reasoning.unsigned"])
})

Deno.test("encodeRequest maps tools and every tool choice", () => {
  const tools: Request["tools"] = [
    {
      type: "function",
      name: "get_weather",
      description: "Weather",
      parameters: { type: "object", properties: {} },
      strict: true
    },
    { type: "function", name: "noop", parameters: {} },
    { type: "builtin", format: "anthropic", definition: { type: "web_search_20250305", name: "web_search" } },
    { type: "builtin", format: "openai-responses", definition: { type: "file_search" } }
  ]
  const { body, dropped } = encode({ tools, toolChoice: { type: "required" }, parallelToolCalls: false })
  deepStrictEqual(body.tools, [
    { name: "get_weather", description: "Weather", input_schema: { type: "object", properties: {} }, strict: true },
    { name: "noop", input_schema: { type: "object" } },
    { type: "web_search_20250305", name: "web_search" }
  ])
  deepStrictEqual(body.tool_choice, { type: "any", disable_parallel_tool_use: true })
  deepStrictEqual(dropped, ["tools.builtin"])
  deepStrictEqual(encode({ toolChoice: { type: "auto" } }).body.tool_choice, { type: "auto" })
  deepStrictEqual(encode({ toolChoice: { type: "none" } }).body.tool_choice, { type: "none" })
  deepStrictEqual(encode({ toolChoice: { type: "tool", name: "noop" } }).body.tool_choice, {
    type: "tool",
    name: "noop"
  })
  deepStrictEqual(encode({ parallelToolCalls: false }).body.tool_choice, {
    type: "auto",
    disable_parallel_tool_use: true
  })
})

Deno.test("encodeRequest maps reasoning settings and fits the budget under max_tokens, never raising it", () => {
  const withBudget = encode({
    reasoning: { budgetTokens: 10000 },
    maxOutputTokens: 16000,
    temperature: 0.7,
    topP: 0.9,
    topK: 5
  })
  deepStrictEqual(withBudget.body.thinking, { type: "enabled", budget_tokens: 10000 })
  strictEqual(withBudget.body.max_tokens, 16000)
  strictEqual(withBudget.body.temperature, undefined)
  deepStrictEqual(withBudget.dropped, ["temperature", "topP", "topK"])

  // The caller's cap is the ceiling: the budget shrinks, leaving the answer half the cap (at most 4096 tokens).
  const squeezed = encode({ reasoning: { budgetTokens: 10000 }, maxOutputTokens: 5000 })
  strictEqual(squeezed.body.max_tokens, 5000)
  deepStrictEqual(squeezed.body.thinking, { type: "enabled", budget_tokens: 2500 })
  const xhigh = encode({ reasoning: { effort: "xhigh" }, maxOutputTokens: 5000 })
  strictEqual(xhigh.body.max_tokens, 5000)
  deepStrictEqual(xhigh.body.thinking, { type: "enabled", budget_tokens: 2500 })
  const roomy = encode({ reasoning: { effort: "xhigh" }, maxOutputTokens: 40000 })
  deepStrictEqual([roomy.body.max_tokens, roomy.body.thinking], [40000, { type: "enabled", budget_tokens: 32768 }])
  // No cap named: the default cap bounds the budget too.
  const defaulted = encode({ reasoning: { budgetTokens: 10000 } })
  deepStrictEqual([defaulted.body.max_tokens, defaulted.body.thinking], [DEFAULT_MAX_TOKENS, {
    type: "enabled",
    // The answer keeps half the cap, at most 4096 tokens.
    budget_tokens: DEFAULT_MAX_TOKENS - Math.min(DEFAULT_MAX_TOKENS / 2, 4096)
  }])
  deepStrictEqual(encode({ reasoning: { budgetTokens: 100 } }).body.thinking, { type: "enabled", budget_tokens: 1024 })
  // A cap of 1024 or less leaves no room for the API's smallest budget: no thinking, said in `dropped`.
  const tiny = encode({ reasoning: { budgetTokens: 1024 }, maxOutputTokens: 100, temperature: 0.5 })
  deepStrictEqual([tiny.body.max_tokens, tiny.body.thinking, tiny.body.temperature], [100, { type: "disabled" }, 0.5])
  deepStrictEqual(tiny.dropped, ["reasoning.noRoomUnderCap"])

  const effortOnly = encode({ reasoning: { effort: "medium" }, maxOutputTokens: 16384 })
  deepStrictEqual(effortOnly.body.thinking, { type: "enabled", budget_tokens: THINKING_BUDGET_BY_EFFORT.medium })
  strictEqual(effortOnly.body.output_config, undefined)
  deepStrictEqual(THINKING_BUDGET_BY_EFFORT, { minimal: 1024, low: 2048, medium: 8192, high: 16384, xhigh: 32768 })

  const adaptive = encode({ reasoning: { enabled: true, effort: "high", includeThoughts: true } })
  deepStrictEqual(adaptive.body.thinking, { type: "adaptive", display: "summarized" })
  deepStrictEqual(adaptive.body.output_config, { effort: "high" })

  deepStrictEqual(encode({ reasoning: { enabled: false }, temperature: 1 }).body.thinking, { type: "disabled" })
  strictEqual(encode({ reasoning: { enabled: false }, temperature: 1 }).body.temperature, 1)
  deepStrictEqual(encode({ reasoning: { effort: "none" } }).body.thinking, { type: "disabled" })
  deepStrictEqual(encode({ reasoning: { budgetTokens: 2048, effort: "high" } }).dropped, ["reasoning.effort"])
})

Deno.test("encodeRequest writes structured output, stop sequences, user and stream; lists unsupported fields", () => {
  const schema = { type: "object", properties: { answer: { type: "number" } } }
  const { body, dropped } = encode({
    responseFormat: { type: "json_schema", name: "math", schema, description: "An answer" },
    stopSequences: ["END"],
    maxOutputTokens: 100,
    user: "user-42",
    metadata: { team: "a" },
    seed: 7,
    presencePenalty: 0.1,
    frequencyPenalty: 0.2,
    stream: true
  })
  deepStrictEqual(body.output_config, { format: { type: "json_schema", schema } })
  deepStrictEqual(
    [body.stop_sequences, body.max_tokens, body.metadata, body.stream],
    [["END"], 100, { user_id: "user-42" }, true]
  )
  deepStrictEqual(dropped, [
    "seed",
    "presencePenalty",
    "frequencyPenalty",
    "metadata",
    "responseFormat.name",
    "responseFormat.description"
  ])
  deepStrictEqual(encode({ responseFormat: { type: "json_object" } }).dropped, ["responseFormat.json_object"])
  strictEqual(encode({ responseFormat: { type: "json_object" } }).body.output_config, undefined)
})

Deno.test("encodeRequest sends redacted reasoning back and skips turns left empty", () => {
  const { body } = encode({
    messages: [
      { role: "user", content: [{ type: "text", text: "Q1" }] },
      { role: "assistant", content: [{ type: "reasoning", text: "hidden", signature: "" }] },
      { role: "user", content: [{ type: "text", text: "Q2" }] },
      { role: "assistant", content: [{ type: "reasoning", text: "", redacted: "EmwK" }, { type: "text", text: "A" }] }
    ]
  })
  deepStrictEqual(body.messages, [
    { role: "user", content: [{ type: "text", text: "Q1" }, { type: "text", text: "Q2" }] },
    { role: "assistant", content: [{ type: "redacted_thinking", data: "EmwK" }, { type: "text", text: "A" }] }
  ])
})

Deno.test("encodeRequest turns thinking off in a tool loop whose assistant turn has no Anthropic thinking block", () => {
  const loop = (first: ReadonlyArray<Request["messages"][number]["content"][number]>): Partial<Request> => ({
    reasoning: { budgetTokens: 2048 },
    maxOutputTokens: 4096,
    messages: [
      { role: "user", content: [{ type: "text", text: "Weather?" }] },
      {
        role: "assistant",
        content: [...first, { type: "tool-call", callId: "toolu_1", name: "weather", arguments: "{}" }]
      },
      {
        role: "tool",
        content: [{ type: "tool-result", callId: "toolu_1", content: [{ type: "text", text: "sunny" }] }]
      }
    ]
  })
  for (
    const first of [
      [],
      [{ type: "reasoning" as const, text: "Gemini thought.", signature: "c2ln", origin: "gemini" as const }],
      [{ type: "reasoning" as const, text: "Unsigned." }]
    ]
  ) {
    const { body, dropped } = encode(loop(first))
    deepStrictEqual(body.thinking, { type: "disabled" })
    strictEqual(dropped.includes("reasoning.thinkingInToolLoop"), true)
  }
  // A signed Anthropic thinking block first: thinking stays on.
  const signed = encode(loop([{ type: "reasoning", text: "Call it.", signature: "sig-1", origin: "anthropic" }]))
  deepStrictEqual(signed.body.thinking, { type: "enabled", budget_tokens: 2048 })
  strictEqual(signed.dropped.includes("reasoning.thinkingInToolLoop"), false)
  // No tool loop at the end: thinking stays on.
  deepStrictEqual(encode({ reasoning: { budgetTokens: 2048 }, maxOutputTokens: 4096 }).body.thinking, {
    type: "enabled",
    budget_tokens: 2048
  })
})
