import { Result } from "effect"
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import type { Request } from "../../../../src/canonical/Request.ts"
import type { Decoded } from "../../../../src/formats/Format.ts"
import { AnthropicFormat } from "../../../../src/formats/anthropic/messages/Format.ts"
import { PNG_BASE64, toolConversation } from "./Fixtures.ts"

const decode = (body: unknown, context = {}) => AnthropicFormat.decodeRequest(body, context)

const ok = (decoded: Decoded<Request>): Request => {
  if (Result.isFailure(decoded)) throw new Error(`expected ok, got ${decoded.failure.message}`)
  return decoded.success
}

const failsAt = (body: unknown, param: string) => {
  const decoded = decode(body)
  if (Result.isSuccess(decoded)) throw new Error(`expected an InvalidRequest at ${param}`)
  strictEqual(decoded.failure._tag, "InvalidRequest")
  strictEqual(decoded.failure.param, param)
}

Deno.test("decodeRequest reads a plain text request with a string system prompt", () => {
  const request = ok(decode({
    model: "claude-sonnet-4-5",
    max_tokens: 1024,
    system: "You are terse.",
    messages: [{ role: "user", content: "Hello, Claude" }]
  }))
  deepStrictEqual(request, {
    model: "claude-sonnet-4-5",
    messages: [
      { role: "system", content: [{ type: "text", text: "You are terse." }] },
      { role: "user", content: [{ type: "text", text: "Hello, Claude" }] }
    ],
    maxOutputTokens: 1024,
    stream: false
  })
})

Deno.test("decodeRequest splits tool results out of the user turn and pairs them with the calls", () => {
  const request = ok(decode(toolConversation))
  deepStrictEqual(request.messages[0], {
    role: "system",
    content: [{ type: "text", text: "You are a weather bot." }, { type: "text", text: "Answer briefly." }]
  })
  deepStrictEqual(request.messages[2], {
    role: "assistant",
    content: [
      {
        type: "reasoning",
        text: "I need two lookups.",
        signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds",
        origin: "anthropic"
      },
      { type: "text", text: "I'll check both cities." },
      {
        type: "tool-call",
        callId: "toolu_01A09q90qw90lq917835lq9",
        name: "get_weather",
        arguments: '{"location":"San Francisco, CA"}'
      },
      {
        type: "tool-call",
        callId: "toolu_01B09q90qw90lq917835lq9",
        name: "get_weather",
        arguments: '{"location":"New York, NY"}'
      }
    ]
  })
  deepStrictEqual(request.messages[3], {
    role: "tool",
    content: [
      {
        type: "tool-result",
        callId: "toolu_01A09q90qw90lq917835lq9",
        name: "get_weather",
        content: [{ type: "text", text: "15 degrees" }]
      },
      {
        type: "tool-result",
        callId: "toolu_01B09q90qw90lq917835lq9",
        name: "get_weather",
        content: [{ type: "text", text: "Service unavailable" }],
        isError: true
      }
    ]
  })
  deepStrictEqual(request.messages[4], { role: "user", content: [{ type: "text", text: "Also, what should I wear?" }] })
  strictEqual(request.messages.length, 5)
})

Deno.test("decodeRequest reads custom and server tools, tool choice and thinking", () => {
  const request = ok(decode(toolConversation))
  deepStrictEqual(request.tools, [
    {
      type: "function",
      name: "get_weather",
      description: "Get the current weather in a given location",
      parameters: toolConversation.tools[0].input_schema
    },
    {
      type: "builtin",
      format: "anthropic",
      definition: { type: "web_search_20250305", name: "web_search", max_uses: 5 }
    }
  ])
  deepStrictEqual(request.toolChoice, { type: "auto" })
  strictEqual(request.parallelToolCalls, undefined)
  deepStrictEqual(request.reasoning, { enabled: true, budgetTokens: 10000 })
})

Deno.test("decodeRequest maps every tool_choice", () => {
  const choice = (tool_choice: unknown) => ok(decode({ model: "m", messages: [], tool_choice }))
  deepStrictEqual(choice({ type: "auto" }).toolChoice, { type: "auto" })
  deepStrictEqual(choice({ type: "none" }).toolChoice, { type: "none" })
  const any = choice({ type: "any", disable_parallel_tool_use: true })
  deepStrictEqual([any.toolChoice, any.parallelToolCalls], [{ type: "required" }, false])
  deepStrictEqual(choice({ type: "tool", name: "get_weather" }).toolChoice, { type: "tool", name: "get_weather" })
  failsAt({ model: "m", messages: [], tool_choice: { type: "tool" } }, "tool_choice.name")
})

Deno.test("decodeRequest reads images by URL and Base64 and PDF documents", () => {
  const request = ok(decode({
    model: "m",
    messages: [{
      role: "user",
      content: [
        { type: "image", source: { type: "base64", media_type: "image/png", data: PNG_BASE64 } },
        { type: "image", source: { type: "url", url: "https://upload.wikimedia.org/ant.jpg" } },
        {
          type: "document",
          source: { type: "base64", media_type: "application/pdf", data: "JVBERi0xLjQK" },
          title: "report.pdf"
        },
        { type: "document", source: { type: "url", url: "https://example.com/paper.pdf" } },
        { type: "document", source: { type: "text", media_type: "text/plain", data: "héllo" } },
        { type: "text", text: "Describe these." }
      ]
    }]
  }))
  deepStrictEqual(request.messages[0].content, [
    { type: "image", source: { kind: "base64", mediaType: "image/png", data: PNG_BASE64 } },
    { type: "image", source: { kind: "url", url: "https://upload.wikimedia.org/ant.jpg" } },
    {
      type: "file",
      source: { kind: "base64", mediaType: "application/pdf", data: "JVBERi0xLjQK" },
      filename: "report.pdf"
    },
    { type: "file", source: { kind: "url", url: "https://example.com/paper.pdf" } },
    { type: "file", source: { kind: "base64", mediaType: "text/plain", data: "aMOpbGxv" } },
    { type: "text", text: "Describe these." }
  ])
})

Deno.test("decodeRequest reads redacted thinking, sampling, stop sequences, metadata and stream", () => {
  const request = ok(decode({
    model: "m",
    max_tokens: 256,
    temperature: 0.5,
    top_p: 0.9,
    top_k: 40,
    stop_sequences: ["\n\nHuman:"],
    metadata: { user_id: "13803d75-b4b5-4c3e-b2a2-6f21399b021b" },
    stream: true,
    messages: [
      { role: "user", content: "Hi" },
      { role: "assistant", content: [{ type: "redacted_thinking", data: "EmwKAhgB" }, { type: "text", text: "Hello" }] }
    ]
  }))
  deepStrictEqual(request.messages[1].content[0], {
    type: "reasoning",
    text: "",
    redacted: "EmwKAhgB",
    origin: "anthropic"
  })
  deepStrictEqual(
    [request.temperature, request.topP, request.topK, request.stopSequences, request.user, request.stream],
    [0.5, 0.9, 40, ["\n\nHuman:"], "13803d75-b4b5-4c3e-b2a2-6f21399b021b", true]
  )
  strictEqual(ok(decode({ model: "m", messages: [] }, { stream: true })).stream, true)
})

Deno.test("decodeRequest reads structured output and effort from output_config and the older fields", () => {
  const schema = { type: "object", properties: { answer: { type: "number" } }, required: ["answer"] }
  const current = ok(decode({
    model: "m",
    messages: [],
    thinking: { type: "adaptive", display: "omitted" },
    output_config: { effort: "high", format: { type: "json_schema", schema } }
  }))
  deepStrictEqual(current.responseFormat, { type: "json_schema", name: "response", schema })
  deepStrictEqual(current.reasoning, { enabled: true, effort: "high", includeThoughts: false })
  const older = ok(decode({ model: "m", messages: [], effort: "max", output_format: { type: "json_schema", schema } }))
  deepStrictEqual(older.responseFormat, { type: "json_schema", name: "response", schema })
  deepStrictEqual(older.reasoning, { effort: "xhigh" })
  deepStrictEqual(ok(decode({ model: "m", messages: [], thinking: { type: "disabled" } })).reasoning, {
    enabled: false
  })
})

Deno.test("decodeRequest names the bad field", () => {
  failsAt({ messages: [] }, "model")
  failsAt({ model: "m" }, "messages")
  failsAt({ model: "m", messages: {} }, "messages")
  // A role the decoder does not model is set aside (a same-format channel takes it); the next message keeps its index.
  failsAt(
    { model: "m", messages: [{ role: "critic", content: "x" }, { role: "user", content: 3 }] },
    "messages[1].content"
  )
  failsAt(
    { model: "m", messages: [{ role: "system", content: [{ type: "tool_use", id: "t", name: "f", input: {} }] }] },
    "messages[0].content[0].type"
  )
  failsAt({ model: "m", messages: [{ role: "user", content: 3 }] }, "messages[0].content")
  failsAt(
    { model: "m", messages: [{ role: "user", content: [{ type: "text", text: 1 }] }] },
    "messages[0].content[0].text"
  )
  failsAt({ model: "m", messages: [{ role: "user", content: [{ text: "x" }] }] }, "messages[0].content[0]")
  // A malformed block after one set aside is named at the caller's index.
  failsAt(
    { model: "m", messages: [{ role: "user", content: [{ type: "search_result" }, { type: "text", text: 1 }] }] },
    "messages[0].content[1].text"
  )
  failsAt(
    { model: "m", messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", data: "x" } }] }] },
    "messages[0].content[0].source.media_type"
  )
  failsAt(
    { model: "m", messages: [{ role: "assistant", content: [{ type: "tool_result", tool_use_id: "t" }] }] },
    "messages[0].content[0].type"
  )
  failsAt({ model: "m", messages: [], max_tokens: "1024" }, "max_tokens")
  failsAt({ model: "m", messages: [], tools: [{ name: "f" }] }, "tools[0].input_schema")
  failsAt({ model: "m", messages: [], thinking: { type: "enabled" } }, "thinking.budget_tokens")
  failsAt({ model: "m", messages: [], stop_sequences: ["a", 2] }, "stop_sequences[1]")
  const notObject = decode("hello")
  strictEqual(Result.isSuccess(notObject), false)
})

Deno.test("decodeRequest sets aside blocks and sources Sluice does not model, for a same-format channel", () => {
  const decoded = decode({
    model: "m",
    max_tokens: 10,
    messages: [{
      role: "user",
      content: [
        { type: "search_result", source: "https://example.com", title: "t", content: [] },
        { type: "text", text: "hi" },
        { type: "document", source: { type: "file", file_id: "file_011" } },
        { type: "image", source: { type: "url", url: "https://example.com/a.png" } }
      ]
    }]
  })
  if (Result.isFailure(decoded)) throw new Error(decoded.failure.message)
  deepStrictEqual(decoded.success.messages, [{
    role: "user",
    content: [
      { type: "text", text: "hi" },
      { type: "image", source: { kind: "url", url: "https://example.com/a.png" } }
    ]
  }])
  deepStrictEqual(decoded.success.untranslatable?.map((note) => note.param), [
    "messages[0].content[0]",
    "messages[0].content[2].source"
  ])
})

Deno.test("decodeRequest: a mid-conversation system message (Claude Code's environment block) stays in its place", () => {
  const request = ok(decode({
    model: "m",
    system: [{ type: "text", text: "You are Claude Code.", cache_control: { type: "ephemeral" } }],
    messages: [
      { role: "user", content: [{ type: "text", text: "read note.txt" }] },
      { role: "system", content: "# Environment\nPrimary working directory: /tmp" },
      { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "Bash", input: { command: "cat x" } }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "hello" }] }
    ],
    thinking: { type: "adaptive", display: "omitted" },
    output_config: { effort: "high" },
    context_management: { edits: [{ type: "clear_thinking_20251015", keep: "all" }] }
  }))
  deepStrictEqual(request.messages.map((message) => message.role), ["system", "user", "system", "assistant", "tool"])
  deepStrictEqual(request.messages[2].content, [{
    type: "text",
    text: "# Environment\nPrimary working directory: /tmp"
  }])
  deepStrictEqual(request.reasoning, { enabled: true, effort: "high", includeThoughts: false })
  strictEqual(request.untranslatable, undefined)
})

Deno.test("decodeRequest: new values of known fields are set aside and named, the rest decoded", () => {
  const request = ok(decode({
    model: "m",
    messages: [
      { role: "critic", content: "x" },
      { role: "user", content: "hi" }
    ],
    thinking: { type: "adaptive", display: "verbose" },
    output_config: { effort: "ludicrous" },
    tool_choice: { type: "sometimes" }
  }))
  deepStrictEqual(request.messages, [{ role: "user", content: [{ type: "text", text: "hi" }] }])
  deepStrictEqual(
    request.untranslatable?.map((note) => note.param),
    ["thinking.display", "output_config.effort", "tool_choice.type", "messages[0].role"]
  )
  strictEqual(request.reasoning?.enabled, true)
  strictEqual(request.toolChoice, undefined)
  const newThinking = ok(decode({ model: "m", messages: [], thinking: { type: "dreaming" } }))
  deepStrictEqual(newThinking.untranslatable?.map((note) => note.param), ["thinking.type"])
  strictEqual(newThinking.reasoning, undefined)
})
