/**
 * Chat completions requests: caller bodies (shaped after the examples of
 * platform.openai.com/docs/api-reference/chat/create and the function calling,
 * vision, audio, PDF, structured outputs and reasoning guides) → canonical,
 * and canonical → upstream bodies.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import type { Request } from "../../../../src/canonical/Request.ts"
import { InvalidRequest } from "../../../../src/errors/GatewayError.ts"
import type { Decoded } from "../../../../src/formats/Format.ts"
import {
  includeUsageRequested,
  makeOpenAiChatFormat,
  OpenAiChatFormat
} from "../../../../src/formats/openai/chat/Format.ts"

const decode = (body: unknown): Request => {
  const decoded = OpenAiChatFormat.decodeRequest(body, {})
  if (Result.isFailure(decoded)) throw new Error(`expected ok, got ${decoded.failure.message}`)
  return decoded.success
}

const rejection = (body: unknown): InvalidRequest => {
  const decoded: Decoded<Request> = OpenAiChatFormat.decodeRequest(body, {})
  if (Result.isSuccess(decoded)) throw new Error("expected an InvalidRequest")
  ok(decoded.failure instanceof InvalidRequest)
  return decoded.failure
}

Deno.test("decodeRequest: plain text with a developer and a system message", () => {
  const request = decode({
    model: "gpt-4.1",
    messages: [
      { role: "developer", content: "You are a helpful assistant." },
      { role: "system", content: [{ type: "text", text: "Answer briefly." }] },
      { role: "user", content: "Hello!" }
    ]
  })
  deepStrictEqual(request, {
    model: "gpt-4.1",
    messages: [
      { role: "system", content: [{ type: "text", text: "You are a helpful assistant." }], developer: true },
      { role: "system", content: [{ type: "text", text: "Answer briefly." }] },
      { role: "user", content: [{ type: "text", text: "Hello!" }] }
    ],
    stream: false
  })
})

Deno.test("decodeRequest: multi-turn with parallel tool calls and their results (ids paired, names recovered)", () => {
  const request = decode({
    model: "gpt-4.1",
    messages: [
      { role: "user", content: "What's the weather like in Paris and Bogotá today?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "call_12345xyz",
            type: "function",
            function: { name: "get_weather", arguments: '{"location":"Paris, France"}' }
          },
          {
            id: "call_67890abc",
            type: "function",
            function: { name: "get_weather", arguments: '{"location":"Bogotá, Colombia"}' }
          }
        ]
      },
      { role: "tool", tool_call_id: "call_12345xyz", content: "18°C" },
      { role: "tool", tool_call_id: "call_67890abc", content: [{ type: "text", text: "24°C" }] }
    ],
    tools: [{
      type: "function",
      function: {
        name: "get_weather",
        description: "Get current temperature for provided coordinates in celsius.",
        parameters: {
          type: "object",
          properties: { location: { type: "string" } },
          required: ["location"],
          additionalProperties: false
        },
        strict: true
      }
    }],
    tool_choice: "auto",
    parallel_tool_calls: true
  })
  deepStrictEqual(request.messages[1], {
    role: "assistant",
    content: [
      { type: "tool-call", callId: "call_12345xyz", name: "get_weather", arguments: '{"location":"Paris, France"}' },
      {
        type: "tool-call",
        callId: "call_67890abc",
        name: "get_weather",
        arguments: '{"location":"Bogotá, Colombia"}'
      }
    ]
  })
  deepStrictEqual(request.messages[2], {
    role: "tool",
    content: [{
      type: "tool-result",
      callId: "call_12345xyz",
      name: "get_weather",
      content: [{ type: "text", text: "18°C" }]
    }]
  })
  strictEqual(
    request.messages[3].content[0].type === "tool-result" && request.messages[3].content[0].callId,
    "call_67890abc"
  )
  deepStrictEqual(request.tools, [{
    type: "function",
    name: "get_weather",
    description: "Get current temperature for provided coordinates in celsius.",
    parameters: {
      type: "object",
      properties: { location: { type: "string" } },
      required: ["location"],
      additionalProperties: false
    },
    strict: true
  }])
  deepStrictEqual(request.toolChoice, { type: "auto" })
  strictEqual(request.parallelToolCalls, true)
})

Deno.test("decodeRequest: tool_choice none / required / named function", () => {
  const base = { model: "m", messages: [{ role: "user", content: "hi" }] }
  deepStrictEqual(decode({ ...base, tool_choice: "none" }).toolChoice, { type: "none" })
  deepStrictEqual(decode({ ...base, tool_choice: "required" }).toolChoice, { type: "required" })
  deepStrictEqual(
    decode({ ...base, tool_choice: { type: "function", function: { name: "get_weather" } } }).toolChoice,
    { type: "tool", name: "get_weather" }
  )
  // A new tool choice is set aside for a same-format channel, named for a translation.
  deepStrictEqual(decode({ ...base, tool_choice: "sometimes" }).untranslatable?.map((note) => note.param), [
    "tool_choice"
  ])
})

Deno.test("decodeRequest: images by URL and by data URI, audio and a PDF file", () => {
  const request = decode({
    model: "gpt-4.1",
    messages: [{
      role: "user",
      content: [
        { type: "text", text: "What's in this image?" },
        {
          type: "image_url",
          image_url: { url: "https://upload.wikimedia.org/wikipedia/commons/a/a7/Camponotus_flavomarginatus_ant.jpg" }
        },
        { type: "image_url", image_url: { url: "data:image/jpeg;base64,/9j/4AAQSkZJRg==", detail: "high" } },
        { type: "input_audio", input_audio: { data: "UklGRiQAAABXQVZF", format: "wav" } },
        { type: "file", file: { filename: "draconomicon.pdf", file_data: "data:application/pdf;base64,JVBERi0xLjQ=" } }
      ]
    }]
  })
  deepStrictEqual(request.messages[0].content, [
    { type: "text", text: "What's in this image?" },
    {
      type: "image",
      source: {
        kind: "url",
        url: "https://upload.wikimedia.org/wikipedia/commons/a/a7/Camponotus_flavomarginatus_ant.jpg"
      }
    },
    { type: "image", source: { kind: "base64", mediaType: "image/jpeg", data: "/9j/4AAQSkZJRg==" }, detail: "high" },
    { type: "audio", data: "UklGRiQAAABXQVZF", format: "wav" },
    {
      type: "file",
      source: { kind: "base64", mediaType: "application/pdf", data: "JVBERi0xLjQ=" },
      filename: "draconomicon.pdf"
    }
  ])
})

Deno.test("decodeRequest: structured output, reasoning effort, stop, max tokens and sampling", () => {
  const request = decode({
    model: "o4-mini",
    messages: [{ role: "user", content: "Extract the event." }],
    response_format: {
      type: "json_schema",
      json_schema: {
        name: "calendar_event",
        strict: true,
        schema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] }
      }
    },
    reasoning_effort: "high",
    stop: "\n\n",
    max_tokens: 100,
    max_completion_tokens: 2000,
    temperature: 0.2,
    top_p: 0.9,
    seed: 42,
    presence_penalty: 0.5,
    frequency_penalty: -0.5,
    user: "user-1234",
    metadata: { project: "demo" },
    stream: true,
    stream_options: { include_usage: true }
  })
  deepStrictEqual(request.responseFormat, {
    type: "json_schema",
    name: "calendar_event",
    schema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
    strict: true
  })
  deepStrictEqual(request.reasoning, { effort: "high" })
  deepStrictEqual(request.stopSequences, ["\n\n"])
  strictEqual(request.maxOutputTokens, 2000)
  strictEqual(request.temperature, 0.2)
  strictEqual(request.topP, 0.9)
  strictEqual(request.seed, 42)
  strictEqual(request.presencePenalty, 0.5)
  strictEqual(request.frequencyPenalty, -0.5)
  strictEqual(request.user, "user-1234")
  deepStrictEqual(request.metadata, { project: "demo" })
  strictEqual(request.stream, true)
  strictEqual(decode({ model: "m", messages: [{ role: "user", content: "x" }], max_tokens: 7 }).maxOutputTokens, 7)
  deepStrictEqual(
    decode({ model: "m", messages: [{ role: "user", content: "x" }], response_format: { type: "json_object" } })
      .responseFormat,
    { type: "json_object" }
  )
  strictEqual(includeUsageRequested({ stream_options: { include_usage: true } }), true)
  strictEqual(includeUsageRequested({ stream: true }), false)
})

Deno.test("decodeRequest: assistant reasoning_content (DeepSeek) and reasoning become a reasoning part", () => {
  const request = decode({
    model: "deepseek-reasoner",
    messages: [
      { role: "user", content: "9.11 and 9.8, which is greater?" },
      { role: "assistant", reasoning_content: "Compare the decimals…", content: "9.8 is greater." },
      { role: "assistant", reasoning: "Thinking again…", content: [{ type: "refusal", refusal: "I can't." }] },
      { role: "user", content: "Thanks" }
    ]
  })
  deepStrictEqual(request.messages[1].content, [
    { type: "reasoning", text: "Compare the decimals…" },
    { type: "text", text: "9.8 is greater." }
  ])
  deepStrictEqual(request.messages[2].content, [
    { type: "reasoning", text: "Thinking again…" },
    { type: "text", text: "I can't." }
  ])
})

Deno.test("decodeRequest: legacy function messages pair with the assistant function_call", () => {
  const request = decode({
    model: "gpt-3.5-turbo",
    messages: [
      { role: "user", content: "Weather in Boston?" },
      { role: "assistant", content: null, function_call: { name: "get_weather", arguments: '{"city":"Boston"}' } },
      { role: "function", name: "get_weather", content: "22°C" }
    ],
    functions: [{ name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } }],
    function_call: { name: "get_weather" }
  })
  const call = request.messages[1].content[0]
  const result = request.messages[2].content[0]
  ok(call.type === "tool-call" && result.type === "tool-result")
  strictEqual(result.callId, call.callId)
  strictEqual(result.name, "get_weather")
  deepStrictEqual(request.toolChoice, { type: "tool", name: "get_weather" })
  strictEqual(request.tools?.length, 1)
})

Deno.test("decodeRequest: a custom tool is kept as a builtin tool of openai-chat", () => {
  const tool = { type: "custom", custom: { name: "code_exec", description: "Runs code", format: { type: "text" } } }
  const request = decode({ model: "gpt-5", messages: [{ role: "user", content: "x" }], tools: [tool] })
  deepStrictEqual(request.tools, [{ type: "builtin", format: "openai-chat", definition: tool }])
  deepStrictEqual(OpenAiChatFormat.encodeRequest(request).body.tools, [tool])
})

Deno.test("decodeRequest: missing or malformed fields give InvalidRequest with the field's path", () => {
  strictEqual(rejection({ messages: [{ role: "user", content: "x" }] }).param, "model")
  strictEqual(rejection({ model: "m" }).param, "messages")
  strictEqual(rejection({ model: "m", messages: [] }).param, "messages")
  strictEqual(rejection({ model: "m", messages: "hello" }).param, "messages")
  strictEqual(rejection({ model: "m", messages: [{ role: "user", content: 5 }] }).param, "messages[0].content")
  strictEqual(
    rejection({ model: "m", messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: 1 } }] }] })
      .param,
    "messages[0].content[0].image_url.url"
  )
  strictEqual(rejection({ model: "m", messages: [{ role: "tool", content: "x" }] }).param, "messages[0].tool_call_id")
  const base = { model: "m", messages: [{ role: "user", content: "x" }] }
  strictEqual(rejection({ ...base, temperature: "hot" }).param, "temperature")
  strictEqual(rejection({ ...base, max_tokens: 1.5 }).param, "max_tokens")
  strictEqual(rejection({ ...base, stop: 3 }).param, "stop")
  strictEqual(rejection({ ...base, n: 0 }).param, "n")
  const twoChoices = decode({ ...base, n: 2 })
  strictEqual(twoChoices.choices, 2)
  deepStrictEqual(twoChoices.untranslatable?.map((note) => note.param), ["n"])
  deepStrictEqual(decode({ ...base, reasoning_effort: "extreme" }).untranslatable?.map((note) => note.param), [
    "reasoning_effort"
  ])
  strictEqual(
    rejection({ model: "m", messages: [{ role: "user", content: [{ type: "file", file: {} }] }] }).param,
    "messages[0].content[0].file"
  )
  strictEqual(
    rejection({ model: "m", messages: [{ role: "user", content: [{ text: "x" }] }] }).param,
    "messages[0].content[0].type"
  )
  strictEqual(rejection(null).param, "")
  // Unknown fields are ignored; nulls mean absent.
  strictEqual(decode({ ...base, logit_bias: { "50256": -100 }, max_tokens: null, stop: null }).stopSequences, undefined)
})

Deno.test("encodeRequest: a full request becomes a chat body; stream asks for usage", () => {
  const request: Request = {
    model: "gpt-4.1",
    messages: [
      { role: "system", content: [{ type: "text", text: "Be brief." }], developer: true },
      {
        role: "user",
        content: [
          { type: "text", text: "Describe" },
          { type: "image", source: { kind: "base64", mediaType: "image/png", data: "iVBORw0KGgo=" }, detail: "low" }
        ]
      },
      {
        role: "assistant",
        content: [{ type: "tool-call", callId: "call_1", name: "lookup", arguments: '{"q":"x"}' }]
      },
      { role: "tool", content: [{ type: "tool-result", callId: "call_1", content: [{ type: "text", text: "42" }] }] }
    ],
    tools: [{ type: "function", name: "lookup", parameters: { type: "object", properties: {} } }],
    toolChoice: { type: "tool", name: "lookup" },
    maxOutputTokens: 512,
    stopSequences: ["END"],
    responseFormat: { type: "json_schema", name: "answer", schema: { type: "object" }, strict: true },
    reasoning: { effort: "low" },
    stream: true
  }
  const encoded = OpenAiChatFormat.encodeRequest(request)
  deepStrictEqual(encoded.dropped, [])
  deepStrictEqual(encoded.body, {
    model: "gpt-4.1",
    messages: [
      { role: "developer", content: "Be brief." },
      {
        role: "user",
        content: [
          { type: "text", text: "Describe" },
          { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=", detail: "low" } }
        ]
      },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_1", type: "function", function: { name: "lookup", arguments: '{"q":"x"}' } }]
      },
      { role: "tool", tool_call_id: "call_1", content: "42" }
    ],
    tools: [{ type: "function", function: { name: "lookup", parameters: { type: "object", properties: {} } } }],
    tool_choice: { type: "function", function: { name: "lookup" } },
    max_completion_tokens: 512,
    stop: ["END"],
    response_format: {
      type: "json_schema",
      json_schema: { name: "answer", schema: { type: "object" }, strict: true }
    },
    reasoning_effort: "low",
    stream: true,
    stream_options: { include_usage: true }
  })
})

Deno.test("encodeRequest: what chat cannot express is dropped and listed", () => {
  const request: Request = {
    model: "m",
    messages: [
      { role: "user", content: [{ type: "text", text: "hi" }] },
      {
        role: "assistant",
        content: [
          { type: "reasoning", text: "thinking", signature: "sig-abc" },
          { type: "reasoning", text: "", redacted: "opaque" },
          { type: "text", text: "calling" },
          { type: "tool-call", callId: "t1", name: "f", arguments: "{}" }
        ]
      },
      {
        role: "tool",
        content: [{
          type: "tool-result",
          callId: "t1",
          isError: true,
          content: [{ type: "text", text: "boom" }, {
            type: "image",
            source: { kind: "url", url: "https://example.com/x.png" }
          }]
        }]
      }
    ],
    tools: [{ type: "builtin", format: "anthropic", definition: { type: "web_search_20250305", name: "web_search" } }],
    topK: 40,
    reasoning: { budgetTokens: 4000, includeThoughts: true },
    stream: false
  }
  const encoded = OpenAiChatFormat.encodeRequest(request)
  deepStrictEqual(encoded.dropped.toSorted(), [
    "messages.reasoning",
    "messages.reasoning.redacted",
    "messages.reasoning.signature",
    "messages.tool-result.image",
    "messages.tool-result.isError",
    "reasoning.budgetTokens",
    "reasoning.includeThoughts",
    "tools.builtin",
    "topK"
  ])
  strictEqual(encoded.body.reasoning_effort, "medium")
  strictEqual(encoded.body.tools, undefined)
  strictEqual(encoded.body.top_k, undefined)
  deepStrictEqual((encoded.body.messages as ReadonlyArray<unknown>)[1], {
    role: "assistant",
    content: "calling",
    tool_calls: [{ id: "t1", type: "function", function: { name: "f", arguments: "{}" } }]
  })
  deepStrictEqual((encoded.body.messages as ReadonlyArray<unknown>)[2], {
    role: "tool",
    tool_call_id: "t1",
    content: "boom"
  })
})

Deno.test("encodeRequest: budget-only reasoning maps to the nearest effort; enabled:false sends no effort", () => {
  const base: Request = {
    model: "m",
    messages: [{ role: "user", content: [{ type: "text", text: "x" }] }],
    stream: false
  }
  const effort = (reasoning: Request["reasoning"]) =>
    OpenAiChatFormat.encodeRequest({ ...base, reasoning }).body.reasoning_effort
  strictEqual(effort({ budgetTokens: 1024 }), "low")
  strictEqual(effort({ budgetTokens: 8192 }), "medium")
  strictEqual(effort({ budgetTokens: 8193 }), "high")
  strictEqual(effort({ enabled: false }), undefined)
  deepStrictEqual(OpenAiChatFormat.encodeRequest({ ...base, reasoning: { enabled: false } }).dropped, [
    "reasoning.enabled"
  ])
  strictEqual(effort({ enabled: false, effort: "none" }), "none")
})

Deno.test("encodeRequest: reasoning history kept as reasoning_content when the channel asks for it", () => {
  const format = makeOpenAiChatFormat({ reasoningHistory: "reasoning_content" })
  const encoded = format.encodeRequest({
    model: "deepseek-reasoner",
    messages: [
      { role: "user", content: [{ type: "text", text: "weather?" }] },
      {
        role: "assistant",
        content: [
          { type: "reasoning", text: "I should call the tool." },
          { type: "tool-call", callId: "c1", name: "w", arguments: "{}" }
        ]
      }
    ],
    stream: false
  })
  deepStrictEqual(encoded.dropped, [])
  deepStrictEqual((encoded.body.messages as ReadonlyArray<unknown>)[1], {
    role: "assistant",
    content: null,
    reasoning_content: "I should call the tool.",
    tool_calls: [{ id: "c1", type: "function", function: { name: "w", arguments: "{}" } }]
  })
})

Deno.test("decodeRequest: video_url parts, file_id files and unknown parts are left to a same-format channel", () => {
  const request = decode({
    model: "m",
    messages: [{
      role: "user",
      content: [
        { type: "text", text: "Look" },
        { type: "video_url", video_url: { url: "https://example.com/clip.mp4" } },
        { type: "file", file: { file_id: "file-abc" } },
        { type: "future_part", future_part: {} }
      ]
    }]
  })
  deepStrictEqual(request.messages, [{ role: "user", content: [{ type: "text", text: "Look" }] }])
  deepStrictEqual(request.untranslatable?.map((note) => note.param), [
    "messages[0].content[1]",
    "messages[0].content[2].file.file_id",
    "messages[0].content[3]"
  ])
  ok(request.untranslatable?.[0].message.includes("video_url"))
  strictEqual(decode({ model: "m", messages: [{ role: "user", content: "x" }] }).untranslatable, undefined)
})

Deno.test("decodeRequest: a hostile part type is named in a bounded, clean message", () => {
  const type = "\u0000\ud800" + "x".repeat(1_000_000)
  const request = decode({ model: "m", messages: [{ role: "user", content: [{ type }] }] })
  const message = request.untranslatable?.[0].message ?? ""
  ok(message.length < 400, `${message.length} characters`)
  ok(!message.includes("\u0000") && message.isWellFormed())
})

Deno.test("decodeRequest: allowed_tools, custom calls in history and reasoning_effort max", () => {
  const tools = [{ type: "function", function: { name: "f", parameters: { type: "object" } } }]
  const allowed = decode({
    model: "m",
    messages: [{ role: "user", content: "x" }],
    tools,
    tool_choice: {
      type: "allowed_tools",
      allowed_tools: { mode: "auto", tools: [{ type: "function", function: { name: "f" } }] }
    }
  })
  strictEqual(allowed.toolChoice, undefined)
  deepStrictEqual(allowed.untranslatable?.map((note) => note.param), ["tool_choice"])
  const custom = decode({
    model: "m",
    messages: [
      { role: "user", content: "run it" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_1", type: "custom", custom: { name: "code_exec", input: "print(1)" } }]
      },
      { role: "tool", tool_call_id: "call_1", content: "1" }
    ]
  })
  deepStrictEqual(custom.untranslatable?.map((note) => note.param), ["messages[1].tool_calls[0]"])
  deepStrictEqual(custom.messages[2], {
    role: "tool",
    content: [{ type: "tool-result", callId: "call_1", name: "code_exec", content: [{ type: "text", text: "1" }] }]
  })
  deepStrictEqual(
    decode({ model: "m", messages: [{ role: "user", content: "x" }], reasoning_effort: "max" }).reasoning,
    { effort: "xhigh" }
  )
})
