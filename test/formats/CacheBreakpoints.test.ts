/**
 * Prompt-cache breakpoints across formats: the messages decoder reads `cache_control` in every position it may sit
 * (system text blocks, message blocks, blocks inside a tool result, custom tools) with its `ttl`; bad values are the
 * caller's 400 naming the field, new ones are set aside; the messages encoder writes them back (at most four, the
 * last ones); Converse gets a `cachePoint` after each marked block where the model takes one; the other encoders list
 * `cache` as dropped.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import type { Request } from "../../src/canonical/Request.ts"
import { AnthropicFormat } from "../../src/formats/anthropic/messages/Format.ts"
import { cachePointFields } from "../../src/formats/bedrock/converse/RequestEncoder.ts"
import { ConverseWire } from "../../src/formats/bedrock/converse/Wire.ts"
import { GeminiFormat } from "../../src/formats/gemini/generate-content/Format.ts"
import { CompletionsFormat } from "../../src/formats/openai/completions/Format.ts"
import { OpenAiChatFormat } from "../../src/formats/openai/chat/Format.ts"
import { OpenAiResponsesFormat } from "../../src/formats/openai/responses/Format.ts"
import { keptCacheBreakpoints, MAX_CACHE_BREAKPOINTS } from "../../src/formats/shared/CacheBreakpoints.ts"

const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
const CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
const ephemeral = { type: "ephemeral" }

/** A Claude Code-like body with a marker in every position the messages format allows one. */
const markedBody = {
  model: "claude-sonnet-4-5",
  max_tokens: 512,
  system: [
    { type: "text", text: "You are a coding agent." },
    { type: "text", text: "Project rules.", cache_control: { type: "ephemeral", ttl: "1h" } }
  ],
  tools: [
    { name: "read", description: "Reads a file", input_schema: { type: "object" } },
    { name: "write", input_schema: { type: "object" }, cache_control: ephemeral }
  ],
  messages: [
    {
      role: "user",
      content: [
        { type: "image", source: { type: "base64", media_type: "image/png", data: PNG }, cache_control: ephemeral },
        {
          type: "document",
          source: { type: "base64", media_type: "application/pdf", data: "JVBERi0=" },
          cache_control: { type: "ephemeral", ttl: "5m" }
        },
        { type: "text", text: "Read a.txt" }
      ]
    },
    {
      role: "assistant",
      content: [{ type: "tool_use", id: "toolu_1", name: "read", input: { path: "a.txt" }, cache_control: ephemeral }]
    },
    {
      role: "user",
      content: [
        {
          type: "tool_result",
          tool_use_id: "toolu_1",
          content: [{ type: "text", text: "hello", cache_control: ephemeral }],
          cache_control: ephemeral
        },
        { type: "text", text: "Now summarise", cache_control: ephemeral }
      ]
    }
  ]
}

const decoded = (body: unknown): Request => {
  const result = AnthropicFormat.decodeRequest(body, {})
  if (Result.isFailure(result)) throw new Error(`expected ok, got ${result.failure.message}`)
  return result.success
}

const failsAt = (body: unknown, param: string) => {
  const result = AnthropicFormat.decodeRequest(body, {})
  if (Result.isSuccess(result)) throw new Error(`expected an InvalidRequest at ${param}`)
  strictEqual(result.failure._tag, "InvalidRequest")
  strictEqual(result.failure.param, param)
}

const userText = (text: string, cache?: { readonly ttl?: "5m" | "1h" }) => ({
  role: "user" as const,
  content: [{ type: "text" as const, text, ...(cache === undefined ? {} : { cache }) }]
})

Deno.test("the messages decoder reads cache_control on system, tools, every block kind and inside a tool result", () => {
  const request = decoded(markedBody)
  deepStrictEqual(request.messages[0], {
    role: "system",
    content: [
      { type: "text", text: "You are a coding agent." },
      { type: "text", text: "Project rules.", cache: { ttl: "1h" } }
    ]
  })
  deepStrictEqual(request.tools?.map((tool) => tool.type === "function" ? tool.cache : "builtin"), [undefined, {}])
  const [user, assistant, tool, next] = request.messages.slice(1)
  deepStrictEqual(user.content.map((part) => "cache" in part ? part.cache : undefined), [{}, { ttl: "5m" }, undefined])
  deepStrictEqual(assistant.content[0], {
    type: "tool-call",
    callId: "toolu_1",
    name: "read",
    arguments: '{"path":"a.txt"}',
    cache: {}
  })
  deepStrictEqual(tool.content[0], {
    type: "tool-result",
    callId: "toolu_1",
    name: "read",
    content: [{ type: "text", text: "hello", cache: {} }],
    cache: {}
  })
  deepStrictEqual(next.content, [{ type: "text", text: "Now summarise", cache: {} }])
  strictEqual(request.untranslatable, undefined)
})

Deno.test("the messages decoder: a malformed cache_control is a 400 naming it, a new type or ttl is set aside", () => {
  const withUser = (block: Record<string, unknown>) => ({
    model: "m",
    messages: [{ role: "user", content: [block] }]
  })
  failsAt(withUser({ type: "text", text: "x", cache_control: "ephemeral" }), "messages[0].content[0].cache_control")
  failsAt(
    withUser({ type: "text", text: "x", cache_control: { ttl: "5m" } }),
    "messages[0].content[0].cache_control.type"
  )
  failsAt(
    withUser({ type: "text", text: "x", cache_control: { type: "ephemeral", ttl: 300 } }),
    "messages[0].content[0].cache_control.ttl"
  )
  failsAt(
    { model: "m", messages: [], system: [{ type: "text", text: "s", cache_control: { type: 1 } }] },
    "system[0].cache_control.type"
  )
  failsAt(
    { model: "m", messages: [], tools: [{ name: "f", input_schema: {}, cache_control: [] }] },
    "tools[0].cache_control"
  )
  // A string the decoder does not model (a later cache type or lifetime) reaches a same-format channel as sent and is
  // named for a translation; the rest of the body decodes.
  const body = {
    model: "m",
    system: [{ type: "text", text: "s", cache_control: { type: "persistent" } }],
    tools: [{ name: "f", input_schema: {}, cache_control: { type: "ephemeral", ttl: "24h" } }],
    messages: [{
      role: "user",
      content: [
        { type: "search_result" },
        {
          type: "tool_result",
          tool_use_id: "t",
          content: [{ type: "text", text: "r", cache_control: { type: "ephemeral", ttl: "2h" } }]
        },
        { type: "text", text: "hi", cache_control: ephemeral }
      ]
    }]
  }
  const request = decoded(body)
  deepStrictEqual(request.untranslatable?.map((note) => note.param), [
    "system[0].cache_control.type",
    "tools[0].cache_control.ttl",
    "messages[0].content[0]",
    "messages[0].content[1].content[0].cache_control.ttl"
  ])
  ok(request.untranslatable?.[0].message.includes('"persistent"'))
  deepStrictEqual(request.messages[0].content, [{ type: "text", text: "s" }])
  deepStrictEqual(request.messages.at(-1)?.content.at(-1), { type: "text", text: "hi", cache: {} })
  strictEqual(
    (body.system[0].cache_control as { type: string }).type,
    "persistent",
    "the caller's body is left as sent"
  )
})

Deno.test("the messages encoder writes the breakpoints back where the caller put them", () => {
  const { body, dropped } = AnthropicFormat.encodeRequest(decoded(markedBody))
  // Eight markers: the first four in prompt order (the tool, the system block, the image, the document) are left
  // out, the last four sent.
  deepStrictEqual(dropped, ["cache.overLimit"])
  deepStrictEqual(body.system, [{ type: "text", text: "You are a coding agent." }, {
    type: "text",
    text: "Project rules."
  }])
  deepStrictEqual(body.tools, [
    { name: "read", description: "Reads a file", input_schema: { type: "object" } },
    { name: "write", input_schema: { type: "object" } }
  ])
  const messages = body.messages as ReadonlyArray<{ content: ReadonlyArray<Record<string, unknown>> }>
  deepStrictEqual(messages[1].content[0].cache_control, ephemeral)
  deepStrictEqual(messages[2].content, [
    {
      type: "tool_result",
      tool_use_id: "toolu_1",
      content: [{ type: "text", text: "hello", cache_control: ephemeral }],
      cache_control: ephemeral
    },
    { type: "text", text: "Now summarise", cache_control: ephemeral }
  ])
  strictEqual(messages[0].content.some((block) => "cache_control" in block), false)
})

Deno.test("the messages encoder: a round trip of four breakpoints is the caller's body, ttl and all", () => {
  const body = {
    model: "claude-sonnet-4-5",
    max_tokens: 512,
    system: [{ type: "text", text: "Rules.", cache_control: { type: "ephemeral", ttl: "1h" } }],
    tools: [{ name: "read", input_schema: { type: "object" }, cache_control: ephemeral }],
    messages: [
      {
        role: "user",
        content: [
          { type: "image", source: { type: "base64", media_type: "image/png", data: PNG }, cache_control: ephemeral },
          { type: "text", text: "What is this?", cache_control: { type: "ephemeral", ttl: "5m" } }
        ]
      }
    ]
  }
  const encoded = AnthropicFormat.encodeRequest(decoded(body))
  deepStrictEqual(encoded.dropped, [])
  deepStrictEqual(encoded.body, body)
  // One system text with a breakpoint stays a block (a string has nowhere to put it); without one it is a string.
  const plain = AnthropicFormat.encodeRequest(decoded({ ...body, system: "Rules." }))
  strictEqual(plain.body.system, "Rules.")
})

Deno.test("the limit keeps the last four breakpoints in prompt order: tools, system, messages", () => {
  const request: Request = {
    model: "m",
    stream: false,
    tools: [{ type: "function", name: "f", parameters: { type: "object" }, cache: {} }],
    messages: [
      { role: "system", content: [{ type: "text", text: "s", cache: {} }] },
      userText("one", {}),
      userText("two", {}),
      userText("three", { ttl: "1h" }),
      userText("four", {})
    ]
  }
  const { kept, overLimit } = keptCacheBreakpoints(request)
  strictEqual(MAX_CACHE_BREAKPOINTS, 4)
  strictEqual(overLimit, 2)
  strictEqual(kept.has(request.tools![0]), false, "the earliest (a tool) is left out")
  strictEqual(kept.has(request.messages[0].content[0]), false)
  ok(request.messages.slice(1).every((message) => kept.has(message.content[0])))
  // A system message placed after the conversation still counts before it: the vendors read system first.
  const late: Request = { ...request, tools: undefined, messages: [...request.messages.slice(1), request.messages[0]] }
  strictEqual(keptCacheBreakpoints(late).kept.has(request.messages[0].content[0]), false)
})

Deno.test("Converse gets a cachePoint after each marked block in system, messages and tools", () => {
  const request: Request = {
    ...decoded({ ...markedBody, model: CLAUDE }),
    // Four markers: the system block, the write tool, the tool call and (added below) the last text.
    messages: decoded({ ...markedBody, model: CLAUDE }).messages.map((message, index) =>
      index === 1 || index >= 3
        ? {
          ...message,
          content: message.content.map((part) =>
            part.type === "tool-result"
              ? { ...part, cache: undefined, content: part.content.map((inner) => ({ ...inner, cache: undefined })) }
              : { ...part, cache: undefined }
          )
        }
        : message
    )
  }
  const withText: Request = {
    ...request,
    messages: [...request.messages, { role: "user", content: [{ type: "text", text: "More", cache: { ttl: "1h" } }] }]
  }
  const { body, dropped } = ConverseWire.encodeRequest(withText)
  deepStrictEqual(dropped, [])
  deepStrictEqual(body.system, [
    { text: "You are a coding agent." },
    { text: "Project rules." },
    { cachePoint: { type: "default", ttl: "1h" } }
  ])
  deepStrictEqual((body.toolConfig as { tools: unknown }).tools, [
    { toolSpec: { name: "read", description: "Reads a file", inputSchema: { json: { type: "object" } } } },
    { toolSpec: { name: "write", inputSchema: { json: { type: "object" } } } },
    { cachePoint: { type: "default" } }
  ])
  const messages = body.messages as ReadonlyArray<{ role: string; content: ReadonlyArray<Record<string, unknown>> }>
  deepStrictEqual(messages[1].content, [
    { toolUse: { toolUseId: "toolu_1", name: "read", input: { path: "a.txt" } } },
    { cachePoint: { type: "default" } }
  ])
  // The tool result and the two texts after it are one user turn: the point follows the last text.
  deepStrictEqual(messages[2].content, [
    { toolResult: { toolUseId: "toolu_1", content: [{ text: "hello" }] } },
    { text: "Now summarise" },
    { text: "More" },
    { cachePoint: { type: "default", ttl: "1h" } }
  ])
  strictEqual(messages[0].content.some((block) => "cachePoint" in block), false)
})

Deno.test("Converse: a tool result's inner marker, a dropped block's marker, the limit and models without caching", () => {
  const request: Request = {
    model: CLAUDE,
    stream: false,
    messages: [
      { role: "user", content: [{ type: "text", text: "Read it" }] },
      { role: "assistant", content: [{ type: "tool-call", callId: "t1", name: "read", arguments: "{}" }] },
      {
        role: "tool",
        content: [{ type: "tool-result", callId: "t1", content: [{ type: "text", text: "data", cache: {} }] }]
      },
      // A blank text is left out (Converse refuses it); its breakpoint still closes the prefix before it.
      { role: "user", content: [{ type: "text", text: "Go on" }, { type: "text", text: " ", cache: {} }] }
    ],
    tools: [{ type: "function", name: "read", parameters: { type: "object" } }]
  }
  const messages = ConverseWire.encodeRequest(request).body.messages as ReadonlyArray<
    { content: ReadonlyArray<Record<string, unknown>> }
  >
  deepStrictEqual(messages[2].content, [
    { toolResult: { toolUseId: "t1", content: [{ text: "data" }] } },
    { cachePoint: { type: "default" } },
    { text: "Go on" },
    { cachePoint: { type: "default" } }
  ])

  const many: Request = {
    model: CLAUDE,
    stream: false,
    messages: ["a", "b", "c", "d", "e"].flatMap((text, index) => [
      userText(text, {}),
      ...(index < 4 ? [{ role: "assistant" as const, content: [{ type: "text" as const, text: "ok" }] }] : [])
    ])
  }
  const encoded = ConverseWire.encodeRequest(many)
  deepStrictEqual(encoded.dropped, ["cache.overLimit"])
  const turns = encoded.body.messages as ReadonlyArray<{ content: ReadonlyArray<Record<string, unknown>> }>
  deepStrictEqual(turns.map((turn) => turn.content.filter((block) => "cachePoint" in block).length), [
    0,
    0,
    1,
    0,
    1,
    0,
    1,
    0,
    1
  ])

  // Llama takes no cache point (Bedrock refuses one outright); Nova takes them in system and messages, not tools.
  const marked: Request = {
    ...request,
    messages: [{ role: "system", content: [{ type: "text", text: "s", cache: {} }] }, userText("hi", {})],
    tools: [{ type: "function", name: "read", parameters: { type: "object" }, cache: {} }]
  }
  const llama = ConverseWire.encodeRequest({ ...marked, model: "meta.llama3-2-1b-instruct-v1:0" })
  deepStrictEqual(llama.dropped, ["cache"])
  strictEqual(JSON.stringify(llama.body).includes("cachePoint"), false)
  const nova = ConverseWire.encodeRequest({ ...marked, model: "us.amazon.nova-lite-v1:0" })
  deepStrictEqual(nova.dropped, ["cache.tools"])
  deepStrictEqual(nova.body.system, [{ text: "s" }, { cachePoint: { type: "default" } }])
  strictEqual(JSON.stringify(nova.body.toolConfig).includes("cachePoint"), false)
  deepStrictEqual(cachePointFields("anthropic.claude-3-haiku-20240307-v1:0"), { content: false, tools: false })
  deepStrictEqual(cachePointFields("anthropic.claude-3-5-haiku-20241022-v1:0"), { content: true, tools: true })
  deepStrictEqual(cachePointFields("us.anthropic.claude-3-7-sonnet-20250219-v1:0"), { content: true, tools: true })
})

Deno.test("chat, Responses, generate-content and legacy completions list breakpoints as dropped, and send none", () => {
  const request: Request = {
    model: "m",
    stream: false,
    messages: [{ role: "system", content: [{ type: "text", text: "s", cache: { ttl: "1h" } }] }, userText("hi", {})]
  }
  for (const format of [OpenAiChatFormat, OpenAiResponsesFormat, GeminiFormat, CompletionsFormat]) {
    const { body, dropped } = format.encodeRequest(request)
    ok(dropped.includes("cache"), `${format.name} lists cache as dropped`)
    strictEqual(/cache_?control|cachePoint|"ttl"/.test(JSON.stringify(body)), false, `${format.name} sends none`)
    strictEqual(format.encodeRequest({ ...request, messages: [userText("hi")] }).dropped.includes("cache"), false)
  }
})

Deno.test("the messages decoder reads the top-level cache_control as a breakpoint on the last cacheable block", () => {
  const auto = { type: "ephemeral", ttl: "1h" }
  // The last block of the conversation; a thinking block (which takes no marker) is passed over.
  const request = decoded({
    model: "m",
    cache_control: auto,
    system: "Rules.",
    tools: [{ name: "f", input_schema: { type: "object" } }],
    messages: [
      { role: "user", content: "Hi" },
      {
        role: "assistant",
        content: [{ type: "text", text: "Hello" }, { type: "thinking", thinking: "t", signature: "sig" }]
      }
    ]
  })
  deepStrictEqual(request.messages.at(-1)?.content, [
    { type: "text", text: "Hello", cache: { ttl: "1h" } },
    { type: "reasoning", text: "t", signature: "sig", origin: "anthropic" }
  ])
  deepStrictEqual(request.messages.slice(0, 2).map((message) => message.content), [
    [{ type: "text", text: "Rules." }],
    [{ type: "text", text: "Hi" }]
  ])
  strictEqual(request.tools?.[0].type === "function" && request.tools[0].cache, undefined)
  // A block with its own marker keeps it; with no messages, the system prompt, then the last custom tool.
  const own = decoded({
    model: "m",
    cache_control: auto,
    messages: [{ role: "user", content: [{ type: "text", text: "Hi", cache_control: ephemeral }] }]
  })
  deepStrictEqual(own.messages[0].content, [{ type: "text", text: "Hi", cache: {} }])
  deepStrictEqual(
    decoded({ model: "m", cache_control: ephemeral, system: "Rules.", messages: [] }).messages[0].content,
    [{ type: "text", text: "Rules.", cache: {} }]
  )
  const toolOnly = decoded({
    model: "m",
    cache_control: ephemeral,
    tools: [{ name: "f", input_schema: { type: "object" } }, { type: "web_search_20250305", name: "web_search" }],
    messages: []
  })
  deepStrictEqual(toolOnly.tools?.[0], { type: "function", name: "f", parameters: { type: "object" }, cache: {} })
  // Converse gets it as a cachePoint after that block; a bad or new top-level value is named like the others.
  const converse = ConverseWire.encodeRequest({
    ...decoded({ model: CLAUDE, cache_control: ephemeral, messages: [{ role: "user", content: "Hi" }] }),
    model: CLAUDE
  })
  deepStrictEqual((converse.body.messages as ReadonlyArray<{ content: unknown }>)[0].content, [
    { text: "Hi" },
    { cachePoint: { type: "default" } }
  ])
  failsAt({ model: "m", messages: [], cache_control: { type: "ephemeral", ttl: 5 } }, "cache_control.ttl")
  deepStrictEqual(
    decoded({
      model: "m",
      messages: [{ role: "user", content: "Hi" }],
      cache_control: { type: "ephemeral", ttl: "1d" }
    })
      .untranslatable?.map((note) => note.param),
    ["cache_control.ttl"]
  )
})
