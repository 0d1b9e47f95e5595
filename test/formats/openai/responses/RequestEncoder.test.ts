import { deepStrictEqual, strictEqual } from "node:assert/strict"
import type { Request } from "../../../../src/canonical/Request.ts"
import { OpenAiResponsesFormat } from "../../../../src/formats/openai/responses/Format.ts"

const encode = (request: Request) => OpenAiResponsesFormat.encodeRequest(request)

Deno.test("encodeRequest: leading system messages become instructions; text becomes input_text", () => {
  const { body, dropped } = encode({
    model: "gpt-4.1",
    messages: [
      { role: "system", content: [{ type: "text", text: "Talk like a pirate." }] },
      { role: "system", content: [{ type: "text", text: "Be brief." }] },
      { role: "user", content: [{ type: "text", text: "Are semicolons optional in JavaScript?" }] }
    ],
    stream: false
  })
  deepStrictEqual(body, {
    model: "gpt-4.1",
    instructions: "Talk like a pirate.\n\nBe brief.",
    input: [{
      type: "message",
      role: "user",
      content: [{ type: "input_text", text: "Are semicolons optional in JavaScript?" }]
    }]
  })
  deepStrictEqual(dropped, [])
})

Deno.test("encodeRequest: system messages stay in place when one comes later or is a developer message", () => {
  const { body } = encode({
    model: "m",
    messages: [
      { role: "system", content: [{ type: "text", text: "A" }], developer: true },
      { role: "user", content: [{ type: "text", text: "B" }] },
      { role: "system", content: [{ type: "text", text: "C" }] }
    ],
    stream: true
  })
  deepStrictEqual(body.instructions, undefined)
  deepStrictEqual(body.input, [
    { type: "message", role: "developer", content: [{ type: "input_text", text: "A" }] },
    { type: "message", role: "user", content: [{ type: "input_text", text: "B" }] },
    { type: "message", role: "system", content: [{ type: "input_text", text: "C" }] }
  ])
  strictEqual(body.stream, true)
})

Deno.test("encodeRequest: images and files as URL or data URI", () => {
  const { body } = encode({
    model: "m",
    messages: [{
      role: "user",
      content: [
        { type: "image", source: { kind: "url", url: "https://example.com/a.jpg" }, detail: "low" },
        { type: "image", source: { kind: "base64", mediaType: "image/png", data: "iVBO" } },
        { type: "file", source: { kind: "base64", mediaType: "application/pdf", data: "JVBE" }, filename: "a.pdf" },
        { type: "file", source: { kind: "url", url: "https://example.com/b.pdf" } }
      ]
    }],
    stream: false
  })
  deepStrictEqual(body.input, [{
    type: "message",
    role: "user",
    content: [
      { type: "input_image", image_url: "https://example.com/a.jpg", detail: "low" },
      { type: "input_image", image_url: "data:image/png;base64,iVBO", detail: "auto" },
      { type: "input_file", file_data: "data:application/pdf;base64,JVBE", filename: "a.pdf" },
      { type: "input_file", file_url: "https://example.com/b.pdf" }
    ]
  }])
})

Deno.test("encodeRequest: assistant turn with reasoning, text and parallel tool calls; tool results", () => {
  const { body, dropped } = encode({
    model: "o4-mini",
    messages: [
      { role: "user", content: [{ type: "text", text: "Weather in Paris and Bogotá?" }] },
      {
        role: "assistant",
        content: [
          { type: "reasoning", text: "Two calls.", signature: "gAAAA-opaque" },
          { type: "reasoning", text: "Unsigned thoughts." },
          { type: "text", text: "Checking." },
          { type: "tool-call", callId: "call_1", name: "get_weather", arguments: '{"location":"Paris"}' },
          { type: "tool-call", callId: "call_2", name: "get_weather", arguments: '{"location":"Bogotá"}' }
        ]
      },
      {
        role: "tool",
        content: [
          { type: "tool-result", callId: "call_1", name: "get_weather", content: [{ type: "text", text: "14°C" }] },
          {
            type: "tool-result",
            callId: "call_2",
            content: [
              { type: "text", text: "18°C" },
              { type: "image", source: { kind: "url", url: "https://example.com/sky.png" } }
            ],
            isError: false
          }
        ]
      }
    ],
    stream: false
  })
  deepStrictEqual(body.input, [
    { type: "message", role: "user", content: [{ type: "input_text", text: "Weather in Paris and Bogotá?" }] },
    {
      type: "reasoning",
      summary: [{ type: "summary_text", text: "Two calls." }],
      encrypted_content: "gAAAA-opaque"
    },
    { type: "message", role: "assistant", content: [{ type: "output_text", text: "Checking.", annotations: [] }] },
    { type: "function_call", call_id: "call_1", name: "get_weather", arguments: '{"location":"Paris"}' },
    { type: "function_call", call_id: "call_2", name: "get_weather", arguments: '{"location":"Bogotá"}' },
    { type: "function_call_output", call_id: "call_1", output: "14°C" },
    {
      type: "function_call_output",
      call_id: "call_2",
      output: [
        { type: "input_text", text: "18°C" },
        { type: "input_image", image_url: "https://example.com/sky.png", detail: "auto" }
      ]
    }
  ])
  deepStrictEqual(dropped, ["messages.content.reasoning", "messages.content.tool-result.isError"])
})

Deno.test("encodeRequest: tools, tool_choice forms, structured output, sampling and limits", () => {
  const base: Request = {
    model: "m",
    messages: [{ role: "user", content: [{ type: "text", text: "x" }] }],
    stream: false
  }
  const { body, dropped } = encode({
    ...base,
    tools: [
      { type: "function", name: "get_weather", parameters: { type: "object" }, description: "Weather.", strict: true },
      { type: "builtin", format: "openai-responses", definition: { type: "web_search_preview" } },
      { type: "builtin", format: "anthropic", definition: { type: "bash_20250124", name: "bash" } }
    ],
    toolChoice: { type: "tool", name: "get_weather" },
    parallelToolCalls: false,
    maxOutputTokens: 256,
    temperature: 0.5,
    topP: 0.8,
    responseFormat: { type: "json_schema", name: "out", schema: { type: "object" }, strict: true },
    user: "u-1",
    metadata: { k: "v" }
  })
  deepStrictEqual(body.tools, [
    { type: "function", name: "get_weather", description: "Weather.", parameters: { type: "object" }, strict: true },
    { type: "web_search_preview" }
  ])
  deepStrictEqual(body.tool_choice, { type: "function", name: "get_weather" })
  strictEqual(body.parallel_tool_calls, false)
  strictEqual(body.max_output_tokens, 256)
  strictEqual(body.temperature, 0.5)
  strictEqual(body.top_p, 0.8)
  deepStrictEqual(body.text, { format: { type: "json_schema", name: "out", schema: { type: "object" }, strict: true } })
  strictEqual(body.user, "u-1")
  deepStrictEqual(body.metadata, { k: "v" })
  strictEqual("store" in body, false)
  deepStrictEqual(dropped, ["tools.builtin"])
  for (const type of ["auto", "none", "required"] as const) {
    strictEqual(encode({ ...base, toolChoice: { type } }).body.tool_choice, type)
  }
  deepStrictEqual(encode({ ...base, responseFormat: { type: "json_object" } }).body.text, {
    format: { type: "json_object" }
  })
})

Deno.test("encodeRequest: reasoning effort, budget → nearest effort, includeThoughts → summary auto", () => {
  const base: Request = { model: "m", messages: [], stream: false }
  deepStrictEqual(encode({ ...base, reasoning: { effort: "minimal" } }).body.reasoning, { effort: "minimal" })
  deepStrictEqual(encode({ ...base, reasoning: { budgetTokens: 1024 } }).body.reasoning, { effort: "low" })
  deepStrictEqual(encode({ ...base, reasoning: { budgetTokens: 8192 } }).body.reasoning, { effort: "medium" })
  deepStrictEqual(encode({ ...base, reasoning: { budgetTokens: 8193, includeThoughts: true } }).body.reasoning, {
    effort: "high",
    summary: "auto"
  })
  deepStrictEqual(encode({ ...base, reasoning: { enabled: false } }).body.reasoning, { effort: "none" })
  const both = encode({ ...base, reasoning: { effort: "low", budgetTokens: 20000 } })
  deepStrictEqual(both.body.reasoning, { effort: "low" })
  deepStrictEqual(both.dropped, ["reasoning.budgetTokens"])
})

Deno.test("encodeRequest: stop sequences, top_k, seed, penalties, audio are dropped and listed", () => {
  const { body, dropped } = encode({
    model: "m",
    messages: [{ role: "user", content: [{ type: "audio", data: "UklG", format: "wav" }] }],
    stopSequences: ["\n\n"],
    topK: 40,
    seed: 7,
    presencePenalty: 0.1,
    frequencyPenalty: 0.2,
    stream: false
  })
  deepStrictEqual(body.input, [{ type: "message", role: "user", content: [] }])
  for (const key of ["stop", "top_k", "seed", "presence_penalty", "frequency_penalty"]) strictEqual(key in body, false)
  deepStrictEqual(dropped, [
    "stopSequences",
    "topK",
    "seed",
    "presencePenalty",
    "frequencyPenalty",
    "messages.content.audio"
  ])
})
