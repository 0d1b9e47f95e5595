import { Result } from "effect"
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import type { Request } from "../../../../src/canonical/Request.ts"
import { OpenAiResponsesFormat } from "../../../../src/formats/openai/responses/Format.ts"

const decode = (body: unknown, context: { stream?: boolean } = {}) => OpenAiResponsesFormat.decodeRequest(body, context)

const ok = (body: unknown): Request => {
  const decoded = decode(body)
  if (Result.isFailure(decoded)) {
    throw new Error(`expected ok, got ${decoded.failure.message} (${decoded.failure.param})`)
  }
  return decoded.success
}

const rejected = (body: unknown): { message: string; param: string | undefined } => {
  const decoded = decode(body)
  if (Result.isSuccess(decoded)) throw new Error("expected an InvalidRequest")
  strictEqual(decoded.failure._tag, "InvalidRequest")
  return { message: decoded.failure.message, param: decoded.failure.param }
}

Deno.test("decodeRequest: a string input is one user message (API reference 'Text input' example)", () => {
  const request = ok({ model: "gpt-4.1", input: "Tell me a three sentence bedtime story about a unicorn." })
  deepStrictEqual(request, {
    model: "gpt-4.1",
    messages: [{
      role: "user",
      content: [{ type: "text", text: "Tell me a three sentence bedtime story about a unicorn." }]
    }],
    stream: false
  })
})

Deno.test("decodeRequest: instructions come first as a system message; developer role is kept", () => {
  const request = ok({
    model: "gpt-4.1",
    instructions: "Talk like a pirate.",
    input: [
      { role: "developer", content: "Answer in one line." },
      { role: "system", content: [{ type: "input_text", text: "Be kind." }] },
      { role: "user", content: "Are semicolons optional in JavaScript?" }
    ]
  })
  deepStrictEqual(request.messages, [
    { role: "system", content: [{ type: "text", text: "Talk like a pirate." }] },
    { role: "system", content: [{ type: "text", text: "Answer in one line." }], developer: true },
    { role: "system", content: [{ type: "text", text: "Be kind." }] },
    { role: "user", content: [{ type: "text", text: "Are semicolons optional in JavaScript?" }] }
  ])
})

Deno.test("decodeRequest: images by URL and data URI, with detail; files by data and URL; audio", () => {
  const request = ok({
    model: "gpt-4.1",
    input: [{
      type: "message",
      role: "user",
      content: [
        { type: "input_text", text: "what's in this image?" },
        { type: "input_image", image_url: "https://example.com/boardwalk.jpg", detail: "high" },
        { type: "input_image", image_url: "data:image/png;base64,iVBORw0KGgo=" },
        { type: "input_file", filename: "draconomicon.pdf", file_data: "data:application/pdf;base64,JVBERi0x" },
        { type: "input_file", filename: "notes.txt", file_data: "aGVsbG8=" },
        { type: "input_file", file_url: "https://example.com/letter.pdf" },
        { type: "input_audio", input_audio: { data: "UklGRg==", format: "wav" } }
      ]
    }]
  })
  deepStrictEqual(request.messages[0].content, [
    { type: "text", text: "what's in this image?" },
    { type: "image", source: { kind: "url", url: "https://example.com/boardwalk.jpg" }, detail: "high" },
    { type: "image", source: { kind: "base64", mediaType: "image/png", data: "iVBORw0KGgo=" } },
    {
      type: "file",
      source: { kind: "base64", mediaType: "application/pdf", data: "JVBERi0x" },
      filename: "draconomicon.pdf"
    },
    { type: "file", source: { kind: "base64", mediaType: "text/plain", data: "aGVsbG8=" }, filename: "notes.txt" },
    { type: "file", source: { kind: "url", url: "https://example.com/letter.pdf" } },
    { type: "audio", data: "UklGRg==", format: "wav" }
  ])
})

Deno.test("decodeRequest: multi-turn with parallel function calls, outputs paired by call_id, reasoning", () => {
  // Shape of the function-calling guide's second request: the model's output items fed back as input.
  const request = ok({
    model: "o4-mini",
    input: [
      { role: "user", content: "What's the weather like in Paris and Bogotá today?" },
      {
        type: "reasoning",
        id: "rs_1",
        summary: [{ type: "summary_text", text: "Two cities." }, { type: "summary_text", text: "Call twice." }],
        encrypted_content: "gAAAAB-opaque"
      },
      {
        type: "function_call",
        id: "fc_1",
        call_id: "call_12345xyz",
        name: "get_weather",
        arguments: '{"location":"Paris, France"}'
      },
      {
        type: "function_call",
        id: "fc_2",
        call_id: "call_67890abc",
        name: "get_weather",
        arguments: '{"location":"Bogotá, Colombia"}'
      },
      { type: "function_call_output", call_id: "call_12345xyz", output: "14°C" },
      {
        type: "function_call_output",
        call_id: "call_67890abc",
        output: [{ type: "input_text", text: "18°C" }, {
          type: "input_image",
          image_url: "https://example.com/sky.png"
        }]
      },
      {
        type: "message",
        id: "msg_1",
        status: "completed",
        role: "assistant",
        content: [{ type: "output_text", text: "Paris 14°C, Bogotá 18°C.", annotations: [] }]
      },
      { role: "assistant", content: [{ type: "refusal", refusal: "I can't help with that." }] }
    ]
  })
  deepStrictEqual(request.messages, [
    { role: "user", content: [{ type: "text", text: "What's the weather like in Paris and Bogotá today?" }] },
    {
      role: "assistant",
      content: [
        { type: "reasoning", text: "Two cities.\n\nCall twice.", signature: "gAAAAB-opaque", origin: "openai" },
        { type: "tool-call", callId: "call_12345xyz", name: "get_weather", arguments: '{"location":"Paris, France"}' },
        {
          type: "tool-call",
          callId: "call_67890abc",
          name: "get_weather",
          arguments: '{"location":"Bogotá, Colombia"}'
        }
      ]
    },
    {
      role: "tool",
      content: [
        {
          type: "tool-result",
          callId: "call_12345xyz",
          name: "get_weather",
          content: [{ type: "text", text: "14°C" }]
        },
        {
          type: "tool-result",
          callId: "call_67890abc",
          name: "get_weather",
          content: [
            { type: "text", text: "18°C" },
            { type: "image", source: { kind: "url", url: "https://example.com/sky.png" } }
          ]
        }
      ]
    },
    {
      role: "assistant",
      content: [{ type: "text", text: "Paris 14°C, Bogotá 18°C." }, { type: "text", text: "I can't help with that." }]
    }
  ])
})

Deno.test("decodeRequest: function and built-in tools, each tool_choice form", () => {
  const tools = [
    {
      type: "function",
      name: "get_weather",
      description: "Get current temperature for a given location.",
      parameters: { type: "object", properties: { location: { type: "string" } }, required: ["location"] },
      strict: true
    },
    { type: "web_search_preview" },
    { type: "file_search", vector_store_ids: ["vs_1234567890"] }
  ]
  const base = { model: "gpt-4.1", input: "hi", tools }
  const request = ok({ ...base, tool_choice: "auto", parallel_tool_calls: false })
  deepStrictEqual(request.tools, [
    {
      type: "function",
      name: "get_weather",
      description: "Get current temperature for a given location.",
      parameters: { type: "object", properties: { location: { type: "string" } }, required: ["location"] },
      strict: true
    },
    { type: "builtin", format: "openai-responses", definition: { type: "web_search_preview" } },
    {
      type: "builtin",
      format: "openai-responses",
      definition: { type: "file_search", vector_store_ids: ["vs_1234567890"] }
    }
  ])
  deepStrictEqual(request.toolChoice, { type: "auto" })
  strictEqual(request.parallelToolCalls, false)
  deepStrictEqual(ok({ ...base, tool_choice: "none" }).toolChoice, { type: "none" })
  deepStrictEqual(ok({ ...base, tool_choice: "required" }).toolChoice, { type: "required" })
  deepStrictEqual(ok({ ...base, tool_choice: { type: "function", name: "get_weather" } }).toolChoice, {
    type: "tool",
    name: "get_weather"
  })
  const allowed = ok({ ...base, tool_choice: { type: "allowed_tools", mode: "auto", tools: [] } })
  strictEqual(allowed.toolChoice, undefined)
  deepStrictEqual(allowed.untranslatable?.map((note) => note.param), ["tool_choice"])
  deepStrictEqual(ok({ ...base, tool_choice: { type: "web_search" } }).untranslatable?.map((note) => note.param), [
    "tool_choice"
  ])
  deepStrictEqual(ok({ ...base, tool_choice: "sometimes" }).untranslatable?.map((note) => note.param), ["tool_choice"])
})

Deno.test("decodeRequest: structured output, reasoning, sampling, limits, metadata, stream", () => {
  const request = ok({
    model: "o4-mini",
    input: "Extract the event.",
    text: {
      format: {
        type: "json_schema",
        name: "calendar_event",
        schema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
        strict: true
      },
      verbosity: "low"
    },
    reasoning: { effort: "high", summary: "auto" },
    max_output_tokens: 500,
    temperature: 0.2,
    top_p: 0.9,
    metadata: { session: "abc" },
    user: "user-1",
    store: false,
    previous_response_id: "resp_123",
    include: ["reasoning.encrypted_content"],
    stream: true
  })
  deepStrictEqual(request.responseFormat, {
    type: "json_schema",
    name: "calendar_event",
    schema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
    strict: true
  })
  deepStrictEqual(request.reasoning, { effort: "high", includeThoughts: true })
  strictEqual(request.maxOutputTokens, 500)
  strictEqual(request.temperature, 0.2)
  strictEqual(request.topP, 0.9)
  deepStrictEqual(request.metadata, { session: "abc" })
  strictEqual(request.user, "user-1")
  strictEqual(request.stream, true)
  deepStrictEqual(ok({ model: "m", input: "x", text: { format: { type: "json_object" } } }).responseFormat, {
    type: "json_object"
  })
  deepStrictEqual(ok({ model: "m", input: "x", reasoning: { effort: "max" } }).reasoning, { effort: "xhigh" })
  strictEqual(ok({ model: "m", input: "x" }).stream, false)
})

Deno.test("decodeRequest: context.stream applies when the body has no stream field", () => {
  const decoded = decode({ model: "m", input: "x" }, { stream: true })
  strictEqual(Result.isSuccess(decoded) && decoded.success.stream, true)
})

Deno.test("decodeRequest: wrong types give InvalidRequest with the param path", () => {
  strictEqual(rejected({ input: "hi" }).param, "model")
  strictEqual(rejected({ model: 5, input: "hi" }).param, "model")
  strictEqual(rejected("not an object").param, "")
  strictEqual(rejected({ model: "m", input: 5 }).param, "input")
  strictEqual(rejected({ model: "m", input: [{ role: "user", content: 5 }] }).param, "input[0].content")
  // A new role is set aside for a same-format channel (named for a translation); later items keep their index.
  deepStrictEqual(ok({ model: "m", input: [{ role: "robot", content: "x" }] }).untranslatable?.map((n) => n.param), [
    "input[0].role"
  ])
  strictEqual(
    rejected({ model: "m", input: [{ role: "robot", content: "x" }, { role: "user", content: 5 }] }).param,
    "input[1].content"
  )
  strictEqual(
    rejected({ model: "m", input: [{ role: "user", content: [{ type: "input_text", text: 1 }] }] }).param,
    "input[0].content[0].text"
  )
  strictEqual(
    rejected({ model: "m", input: [{ role: "user", content: [{ type: "output_text", text: "x" }] }] }).param,
    "input[0].content[0].type"
  )
  strictEqual(
    rejected({ model: "m", input: [{ type: "function_call", call_id: "c", name: "f" }] }).param,
    "input[0].arguments"
  )
  strictEqual(rejected({ model: "m", input: "x", max_output_tokens: "many" }).param, "max_output_tokens")
  strictEqual(rejected({ model: "m", input: "x", temperature: "hot" }).param, "temperature")
  deepStrictEqual(
    ok({ model: "m", input: "x", reasoning: { effort: "extreme" } }).untranslatable?.map((n) => n.param),
    [
      "reasoning.effort"
    ]
  )
  strictEqual(rejected({ model: "m", input: "x", tools: [{ type: "function" }] }).param, "tools[0].name")
  deepStrictEqual(
    ok({ model: "m", input: "x", text: { format: { type: "yaml" } } }).untranslatable?.map((n) => n.param),
    [
      "text.format.type"
    ]
  )
  strictEqual(rejected({ model: "m", input: "x", metadata: { a: 1 } }).param, "metadata.a")
  const message =
    rejected({ model: "m", input: [{ role: "user", content: [{ type: "input_text", text: 1 }] }] }).message
  strictEqual(message.startsWith("Invalid input[0].content[0].text:"), true)
})

Deno.test("decodeRequest: stored-object references and unknown items are left to a same-format channel", () => {
  const notes = (body: unknown) => ok(body).untranslatable?.map((note) => note.param)
  deepStrictEqual(notes({ model: "m", input: [{ type: "item_reference", id: "msg_1" }] }), ["input[0]"])
  deepStrictEqual(notes({ model: "m", input: [{ type: "computer_call_output", call_id: "c" }] }), ["input[0]"])
  deepStrictEqual(
    notes({ model: "m", input: [{ role: "user", content: [{ type: "input_image", file_id: "file-1" }] }] }),
    ["input[0].content[0].file_id"]
  )
  deepStrictEqual(
    notes({ model: "m", input: [{ role: "user", content: [{ type: "input_file", file_id: "file-1" }] }] }),
    ["input[0].content[0].file_id"]
  )
  deepStrictEqual(
    notes({
      model: "m",
      input: [{ type: "function_call_output", call_id: "c", output: [{ type: "input_file", file_url: "u" }] }]
    }),
    ["input[0].output[0]"]
  )
  // A replayed hosted call is a record of the earlier answer: a translation drops it.
  const replayed = ok({
    model: "m",
    input: [
      { role: "user", content: "news?" },
      { type: "web_search_call", id: "ws_1", status: "completed", action: { type: "search", query: "news" } },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "Here." }] }
    ]
  })
  strictEqual(replayed.untranslatable, undefined)
  deepStrictEqual(replayed.messages.map((message) => message.role), ["user", "assistant"])
  strictEqual(rejected({ model: "m", input: [{ role: "user", content: [{}] }] }).param, "input[0].content[0].type")
})
