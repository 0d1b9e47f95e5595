import { Result } from "effect"
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import type { Request } from "../../../../src/canonical/Request.ts"
import type { Decoded } from "../../../../src/formats/Format.ts"
import { GeminiFormat, thinkingBudgetForEffort } from "../../../../src/formats/gemini/generate-content/Format.ts"

const decode = (body: unknown, context: { model?: string; stream?: boolean } = { model: "gemini-2.5-flash" }) =>
  GeminiFormat.decodeRequest(body, context)

const ok = (decoded: Decoded<Request>): Request => {
  if (Result.isFailure(decoded)) throw new Error(`expected ok, got ${decoded.failure.message}`)
  return decoded.success
}

const failure = (decoded: Decoded<Request>) => {
  if (Result.isSuccess(decoded)) throw new Error("expected an InvalidRequest")
  return decoded.failure
}

Deno.test("decodeRequest: plain text (quickstart example), model from the path, stream from the route", () => {
  const request = ok(decode({ contents: [{ parts: [{ text: "Explain how AI works in a few words" }] }] }, {
    model: "gemini-2.5-flash",
    stream: true
  }))
  deepStrictEqual(request, {
    model: "gemini-2.5-flash",
    messages: [{ role: "user", content: [{ type: "text", text: "Explain how AI works in a few words" }] }],
    stream: true
  })
})

Deno.test("decodeRequest: model falls back to body.model; missing model is InvalidRequest(model)", () => {
  strictEqual(ok(decode({ model: "m1", contents: [] }, {})).model, "m1")
  const error = failure(decode({ contents: [] }, {}))
  strictEqual(error._tag, "InvalidRequest")
  strictEqual(error.param, "model")
})

Deno.test("decodeRequest: missing contents, bad role and bad field types name the field", () => {
  strictEqual(failure(decode({})).param, "contents")
  // A role the decoder does not model is set aside for a same-format channel, named for a translation.
  deepStrictEqual(
    ok(decode({ contents: [{ role: "system", parts: [{ text: "x" }] }] })).untranslatable?.map((note) => note.param),
    ["contents[0].role"]
  )
  strictEqual(
    failure(decode({ contents: [{ role: "critic", parts: [] }, { parts: [{ text: 42 }] }] })).param,
    "contents[1].parts[0].text"
  )
  strictEqual(failure(decode({ contents: [{ parts: [{ text: 42 }] }] })).param, "contents[0].parts[0].text")
  strictEqual(
    failure(decode({ contents: [], generationConfig: { maxOutputTokens: "ten" } })).param,
    "generationConfig.maxOutputTokens"
  )
  strictEqual(failure(decode("not an object")).param, "")
})

Deno.test("decodeRequest: system_instruction (snake_case, system-instructions example) → system message", () => {
  const request = ok(decode({
    system_instruction: { parts: [{ text: "You are a cat. Your name is Neko." }] },
    contents: [{ parts: [{ text: "Hello there" }] }]
  }))
  deepStrictEqual(request.messages, [
    { role: "system", content: [{ type: "text", text: "You are a cat. Your name is Neko." }] },
    { role: "user", content: [{ type: "text", text: "Hello there" }] }
  ])
})

Deno.test("decodeRequest: multi-turn chat with model role", () => {
  const request = ok(decode({
    contents: [
      { role: "user", parts: [{ text: "Hello" }] },
      { role: "model", parts: [{ text: "Great to meet you. What would you like to know?" }] },
      { role: "user", parts: [{ text: "I have two dogs in my house. How many paws are in my house?" }] }
    ]
  }))
  deepStrictEqual(request.messages.map((message) => message.role), ["user", "assistant", "user"])
})

// function-calling docs: parallel calls (power_disco_ball, start_music, dim_lights) answered in one turn
const parallelCallsBody = {
  contents: [
    { role: "user", parts: [{ text: "Turn this place into a party!" }] },
    {
      role: "model",
      parts: [
        { functionCall: { name: "power_disco_ball", args: { power: true } }, thoughtSignature: "c2lnLTE=" },
        { functionCall: { name: "start_music", args: { energetic: true, loud: true } } },
        { functionCall: { name: "dim_lights", args: { brightness: 0.5 } } }
      ]
    },
    {
      role: "user",
      parts: [
        { functionResponse: { name: "power_disco_ball", response: { result: "ok" } } },
        { functionResponse: { name: "start_music", response: { result: "ok" } } },
        { functionResponse: { name: "dim_lights", response: { result: "ok" } } }
      ]
    }
  ]
}

Deno.test("decodeRequest: parallel function calls without ids get deterministic ids paired with their responses", () => {
  const request = ok(decode(parallelCallsBody))
  deepStrictEqual(request.messages[1], {
    role: "assistant",
    content: [
      { type: "reasoning", text: "", signature: "c2lnLTE=", origin: "gemini" },
      { type: "tool-call", callId: "call_power_disco_ball_0", name: "power_disco_ball", arguments: '{"power":true}' },
      {
        type: "tool-call",
        callId: "call_start_music_1",
        name: "start_music",
        arguments: '{"energetic":true,"loud":true}'
      },
      { type: "tool-call", callId: "call_dim_lights_2", name: "dim_lights", arguments: '{"brightness":0.5}' }
    ]
  })
  deepStrictEqual(request.messages[2], {
    role: "tool",
    content: ["power_disco_ball_0", "start_music_1", "dim_lights_2"].map((suffix) => ({
      type: "tool-result",
      callId: `call_${suffix}`,
      name: suffix.replace(/_\d$/, ""),
      content: [{ type: "text", text: '{"result":"ok"}' }]
    }))
  })
})

Deno.test("decodeRequest: same-name parallel calls pair in order; ids are used when present; function role tolerated", () => {
  const request = ok(decode({
    contents: [
      { role: "user", parts: [{ text: "Weather in Paris and Rome?" }] },
      {
        role: "model",
        parts: [
          { functionCall: { name: "get_weather", args: { city: "Paris" } } },
          { functionCall: { name: "get_weather", args: { city: "Rome" } } },
          { functionCall: { id: "abc", name: "get_time", args: {} } }
        ]
      },
      {
        role: "function",
        parts: [
          { functionResponse: { name: "get_weather", response: { temperature: 21 } } },
          { functionResponse: { name: "get_weather", response: { temperature: 25 } } },
          { functionResponse: { id: "abc", name: "get_time", response: { error: "unavailable" } } }
        ]
      },
      { role: "user", parts: [{ text: "Thanks" }] }
    ]
  }))
  const results = request.messages[2].content
  deepStrictEqual(results.map((part) => part.type === "tool-result" ? part.callId : ""), [
    "call_get_weather_0",
    "call_get_weather_1",
    "abc"
  ])
  strictEqual(results[2].type === "tool-result" && results[2].isError, true)
  strictEqual(request.messages[3].role, "user")
})

Deno.test("decodeRequest: a user turn mixing function responses and text splits into tool + user messages", () => {
  const request = ok(decode({
    contents: [
      { role: "model", parts: [{ functionCall: { id: "c1", name: "f", args: {} } }] },
      { role: "user", parts: [{ functionResponse: { id: "c1", name: "f", response: {} } }, { text: "and now?" }] }
    ]
  }))
  deepStrictEqual(request.messages.map((message) => message.role), ["assistant", "tool", "user"])
})

Deno.test("decodeRequest: images, audio and files (inline_data snake_case, fileData)", () => {
  const request = ok(decode({
    contents: [{
      parts: [
        { text: "Caption this image." },
        { inline_data: { mime_type: "image/jpeg", data: "/9j/4AAQ" } },
        { inlineData: { mimeType: "audio/mpeg", data: "SUQz" } },
        { inlineData: { mimeType: "application/pdf", data: "JVBERi0=" } },
        { file_data: { mime_type: "image/png", file_uri: "https://example.com/cat.png" } },
        { fileData: { mimeType: "application/pdf", fileUri: "https://example.com/a.pdf" } }
      ]
    }]
  }))
  deepStrictEqual(request.messages[0].content, [
    { type: "text", text: "Caption this image." },
    { type: "image", source: { kind: "base64", mediaType: "image/jpeg", data: "/9j/4AAQ" } },
    { type: "audio", data: "SUQz", format: "mp3" },
    { type: "file", source: { kind: "base64", mediaType: "application/pdf", data: "JVBERi0=" } },
    { type: "image", source: { kind: "url", url: "https://example.com/cat.png" } },
    { type: "file", source: { kind: "url", url: "https://example.com/a.pdf" } }
  ])
})

Deno.test("decodeRequest: function declarations (OpenAPI parameters and parametersJsonSchema) and built-in tools", () => {
  const request = ok(decode({
    contents: [{ parts: [{ text: "hi" }] }],
    tools: [
      {
        functionDeclarations: [
          {
            name: "schedule_meeting",
            description: "Schedules a meeting with specified attendees at a given time and date.",
            parameters: {
              type: "OBJECT",
              properties: {
                attendees: { type: "ARRAY", items: { type: "STRING" }, description: "List of people attending." },
                date: { type: "STRING", description: "Date of the meeting (e.g., '2024-07-29')", nullable: true }
              },
              required: ["attendees"]
            }
          },
          { name: "ping", parametersJsonSchema: { type: "object", properties: { n: { type: "integer" } } } },
          { name: "noop" }
        ]
      },
      { googleSearch: {} },
      { code_execution: {} }
    ]
  }))
  deepStrictEqual(request.tools, [
    {
      type: "function",
      name: "schedule_meeting",
      description: "Schedules a meeting with specified attendees at a given time and date.",
      parameters: {
        type: "object",
        properties: {
          attendees: { type: "array", items: { type: "string" }, description: "List of people attending." },
          date: { type: ["string", "null"], description: "Date of the meeting (e.g., '2024-07-29')" }
        },
        required: ["attendees"]
      }
    },
    { type: "function", name: "ping", parameters: { type: "object", properties: { n: { type: "integer" } } } },
    { type: "function", name: "noop", parameters: { type: "object", properties: {} } },
    { type: "builtin", format: "gemini", definition: { googleSearch: {} } },
    { type: "builtin", format: "gemini", definition: { codeExecution: {} } }
  ])
  strictEqual(
    failure(decode({ contents: [], tools: [{ functionDeclarations: [{ description: "x" }] }] })).param,
    "tools[0].functionDeclarations[0].name"
  )
})

Deno.test("decodeRequest: functionCallingConfig modes → tool choice", () => {
  const choice = (functionCallingConfig: unknown) =>
    ok(decode({ contents: [], toolConfig: { functionCallingConfig } })).toolChoice
  deepStrictEqual(choice({ mode: "AUTO" }), { type: "auto" })
  deepStrictEqual(choice({ mode: "NONE" }), { type: "none" })
  deepStrictEqual(choice({ mode: "ANY" }), { type: "required" })
  deepStrictEqual(choice({ mode: "ANY", allowedFunctionNames: ["a", "b"] }), { type: "required" })
  deepStrictEqual(choice({ mode: "ANY", allowed_function_names: ["get_weather"] }), {
    type: "tool",
    name: "get_weather"
  })
  deepStrictEqual(choice({ mode: "VALIDATED" }), { type: "auto" })
})

Deno.test("decodeRequest: generation config (sampling, stop sequences, max tokens)", () => {
  const request = ok(decode({
    contents: [{ parts: [{ text: "Explain how AI works" }] }],
    generationConfig: {
      stopSequences: ["Title"],
      temperature: 1.0,
      topP: 0.8,
      topK: 10,
      maxOutputTokens: 800,
      seed: 7,
      presencePenalty: 0.5,
      frequency_penalty: 0.25
    }
  }))
  deepStrictEqual(
    {
      stop: request.stopSequences,
      temperature: request.temperature,
      topP: request.topP,
      topK: request.topK,
      max: request.maxOutputTokens,
      seed: request.seed,
      presence: request.presencePenalty,
      frequency: request.frequencyPenalty
    },
    { stop: ["Title"], temperature: 1, topP: 0.8, topK: 10, max: 800, seed: 7, presence: 0.5, frequency: 0.25 }
  )
})

Deno.test("decodeRequest: structured output (responseSchema, responseJsonSchema, JSON mode)", () => {
  const format = (generationConfig: unknown) => ok(decode({ contents: [], generationConfig })).responseFormat
  deepStrictEqual(
    format({
      responseMimeType: "application/json",
      responseSchema: {
        type: "ARRAY",
        items: {
          type: "OBJECT",
          properties: {
            recipeName: { type: "STRING" },
            ingredients: { type: "ARRAY", items: { type: "STRING" }, minItems: "1" }
          },
          propertyOrdering: ["recipeName", "ingredients"]
        }
      }
    }),
    {
      type: "json_schema",
      name: "response",
      schema: {
        type: "array",
        items: {
          type: "object",
          properties: {
            recipeName: { type: "string" },
            ingredients: { type: "array", items: { type: "string" }, minItems: 1 }
          },
          propertyOrdering: ["recipeName", "ingredients"]
        }
      }
    }
  )
  const schema = { type: "object", properties: { a: { type: "string" } }, additionalProperties: false }
  deepStrictEqual(format({ responseMimeType: "application/json", responseJsonSchema: schema }), {
    type: "json_schema",
    name: "response",
    schema
  })
  deepStrictEqual(format({ response_mime_type: "application/json" }), { type: "json_object" })
  deepStrictEqual(format({ responseMimeType: "text/plain" }), { type: "text" })
})

Deno.test("decodeRequest: thinkingConfig → reasoning (0 off, -1 dynamic, budget, level, includeThoughts)", () => {
  const reasoning = (thinkingConfig: unknown) =>
    ok(decode({ contents: [], generationConfig: { thinkingConfig } })).reasoning
  deepStrictEqual(reasoning({ thinkingBudget: 0 }), { enabled: false })
  deepStrictEqual(reasoning({ thinkingBudget: -1, includeThoughts: true }), { enabled: true, includeThoughts: true })
  deepStrictEqual(reasoning({ thinking_budget: 1024 }), { enabled: true, budgetTokens: 1024 })
  deepStrictEqual(reasoning({ thinkingLevel: "low" }), { effort: "low" })
  deepStrictEqual(reasoning({ thinkingLevel: "HIGH", include_thoughts: true }), {
    effort: "high",
    includeThoughts: true
  })
})

Deno.test("decodeRequest: thought parts, merged thought chunks and signatures", () => {
  const request = ok(decode({
    contents: [
      { role: "user", parts: [{ text: "What is 2+2?" }] },
      {
        role: "model",
        parts: [
          { text: "**Adding** ", thought: true },
          { text: "two and two", thought: true },
          { text: "", thought: true, thoughtSignature: "U0lH" },
          { text: "4", thoughtSignature: "VEVYVA==" }
        ]
      }
    ]
  }))
  deepStrictEqual(request.messages[1].content, [
    { type: "reasoning", text: "**Adding** two and two", signature: "U0lH", origin: "gemini" },
    { type: "reasoning", text: "", signature: "VEVYVA==", origin: "gemini" },
    { type: "text", text: "4" }
  ])
})

Deno.test("decodeRequest: safetySettings and cachedContent are accepted and ignored", () => {
  const request = ok(decode({
    contents: [{ parts: [{ text: "hi" }] }],
    safetySettings: [{ category: "HARM_CATEGORY_HARASSMENT", threshold: "BLOCK_ONLY_HIGH" }],
    cachedContent: "cachedContents/abc"
  }))
  strictEqual(request.messages.length, 1)
})

// ---------------------------------------------------------------------------
// encodeRequest

const baseRequest: Request = { model: "gemini-2.5-flash", messages: [], stream: false }

Deno.test("encodeRequest: system, assistant → model, no model in the body", () => {
  const { body, dropped } = GeminiFormat.encodeRequest({
    ...baseRequest,
    messages: [
      { role: "system", content: [{ type: "text", text: "Be brief." }] },
      { role: "user", content: [{ type: "text", text: "Hello" }] },
      { role: "assistant", content: [{ type: "text", text: "Hi!" }] },
      { role: "system", content: [{ type: "text", text: "Answer in French." }], developer: true }
    ]
  })
  deepStrictEqual(body, {
    contents: [{ role: "user", parts: [{ text: "Hello" }] }, { role: "model", parts: [{ text: "Hi!" }] }],
    systemInstruction: { parts: [{ text: "Be brief." }, { text: "Answer in French." }] }
  })
  deepStrictEqual(dropped, ["messages.developer"])
})

Deno.test("encodeRequest: tool calls and results (one result message per call) → one functionResponse turn", () => {
  const { body } = GeminiFormat.encodeRequest({
    ...baseRequest,
    messages: [
      { role: "user", content: [{ type: "text", text: "Weather?" }] },
      {
        role: "assistant",
        content: [
          { type: "reasoning", text: "", signature: "c2ln" },
          { type: "tool-call", callId: "call_1", name: "get_weather", arguments: '{"city":"Paris"}' },
          { type: "tool-call", callId: "call_2", name: "get_weather", arguments: "not json" }
        ]
      },
      {
        role: "tool",
        content: [{ type: "tool-result", callId: "call_1", content: [{ type: "text", text: '{"temp":21}' }] }]
      },
      {
        role: "tool",
        content: [{
          type: "tool-result",
          callId: "call_2",
          name: "get_weather",
          content: [{ type: "text", text: "sunny" }, {
            type: "image",
            source: { kind: "base64", mediaType: "image/png", data: "iVBOR" }
          }]
        }]
      },
      {
        role: "tool",
        content: [{ type: "tool-result", callId: "call_9", content: [{ type: "text", text: "boom" }], isError: true }]
      }
    ]
  })
  deepStrictEqual(body.contents, [
    { role: "user", parts: [{ text: "Weather?" }] },
    {
      role: "model",
      parts: [
        { functionCall: { name: "get_weather", args: { city: "Paris" }, id: "call_1" }, thoughtSignature: "c2ln" },
        { functionCall: { name: "get_weather", args: {}, id: "call_2" } }
      ]
    },
    {
      role: "user",
      parts: [
        { functionResponse: { name: "get_weather", response: { temp: 21 }, id: "call_1" } },
        {
          functionResponse: {
            name: "get_weather",
            response: { result: "sunny" },
            id: "call_2",
            parts: [{ inlineData: { mimeType: "image/png", data: "iVBOR" } }]
          }
        },
        { functionResponse: { name: "", response: { error: "boom" }, id: "call_9" } }
      ]
    }
  ])
})

Deno.test("encodeRequest: images by URL, data URI and Base64; audio; reasoning with signature", () => {
  const { body, dropped } = GeminiFormat.encodeRequest({
    ...baseRequest,
    messages: [
      {
        role: "user",
        content: [
          { type: "image", source: { kind: "url", url: "https://example.com/photo.webp?size=2" } },
          { type: "image", source: { kind: "url", url: "https://example.com/photo" }, detail: "high" },
          { type: "image", source: { kind: "url", url: "data:image/png;base64,iVBORw0KGgo=" } },
          { type: "image", source: { kind: "base64", mediaType: "image/gif", data: "R0lG" } },
          { type: "audio", data: "UklGR", format: "wav" },
          { type: "file", source: { kind: "url", url: "https://example.com/doc.pdf" }, filename: "doc.pdf" }
        ]
      },
      { role: "assistant", content: [{ type: "reasoning", text: "Thinking...", signature: "c2ln" }] },
      { role: "assistant", content: [{ type: "reasoning", text: "", redacted: "ZW5j" }, { type: "text", text: "ok" }] }
    ]
  })
  deepStrictEqual(body.contents, [
    {
      role: "user",
      parts: [
        { fileData: { mimeType: "image/webp", fileUri: "https://example.com/photo.webp?size=2" } },
        { fileData: { mimeType: "image/jpeg", fileUri: "https://example.com/photo" } },
        { inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } },
        { inlineData: { mimeType: "image/gif", data: "R0lG" } },
        { inlineData: { mimeType: "audio/wav", data: "UklGR" } },
        { fileData: { mimeType: "application/pdf", fileUri: "https://example.com/doc.pdf" } }
      ]
    },
    { role: "model", parts: [{ text: "Thinking...", thought: true, thoughtSignature: "c2ln" }, { text: "ok" }] }
  ])
  deepStrictEqual(dropped, ["messages.content.redacted", "messages.content.detail", "messages.content.filename"])
})

Deno.test("encodeRequest: tools, tool choice, structured output and sampling", () => {
  const parameters = { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
  const { body, dropped } = GeminiFormat.encodeRequest({
    ...baseRequest,
    tools: [
      { type: "function", name: "get_weather", description: "Weather", parameters, strict: true },
      { type: "builtin", format: "gemini", definition: { googleSearch: {} } },
      { type: "builtin", format: "openai-responses", definition: { type: "web_search" } }
    ],
    toolChoice: { type: "tool", name: "get_weather" },
    parallelToolCalls: false,
    responseFormat: { type: "json_schema", name: "weather", schema: parameters, strict: true },
    temperature: 0.2,
    topP: 0.9,
    topK: 40,
    maxOutputTokens: 256,
    stopSequences: ["END"],
    seed: 1,
    presencePenalty: 0.1,
    frequencyPenalty: 0.2,
    user: "u-1",
    metadata: { a: "b" }
  })
  deepStrictEqual(body.tools, [
    { functionDeclarations: [{ name: "get_weather", description: "Weather", parametersJsonSchema: parameters }] },
    { googleSearch: {} }
  ])
  deepStrictEqual(body.toolConfig, { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["get_weather"] } })
  deepStrictEqual(body.generationConfig, {
    temperature: 0.2,
    topP: 0.9,
    topK: 40,
    maxOutputTokens: 256,
    stopSequences: ["END"],
    seed: 1,
    presencePenalty: 0.1,
    frequencyPenalty: 0.2,
    responseMimeType: "application/json",
    responseJsonSchema: parameters
  })
  deepStrictEqual(dropped, [
    "parallelToolCalls",
    "user",
    "metadata",
    "tools.strict",
    "tools.builtin",
    "responseFormat.name",
    "responseFormat.strict"
  ])
  const choice = (toolChoice: Request["toolChoice"]) =>
    GeminiFormat.encodeRequest({ ...baseRequest, toolChoice }).body.toolConfig
  deepStrictEqual(choice({ type: "auto" }), { functionCallingConfig: { mode: "AUTO" } })
  deepStrictEqual(choice({ type: "none" }), { functionCallingConfig: { mode: "NONE" } })
  deepStrictEqual(choice({ type: "required" }), { functionCallingConfig: { mode: "ANY" } })
  deepStrictEqual(
    GeminiFormat.encodeRequest({ ...baseRequest, responseFormat: { type: "json_object" } }).body.generationConfig,
    { responseMimeType: "application/json" }
  )
})

Deno.test("encodeRequest: reasoning settings → thinkingConfig", () => {
  const thinking = (reasoning: Request["reasoning"]) =>
    (GeminiFormat.encodeRequest({ ...baseRequest, reasoning }).body.generationConfig as Record<string, unknown>)
      ?.thinkingConfig
  deepStrictEqual(thinking({ budgetTokens: 2048 }), { thinkingBudget: 2048, includeThoughts: true })
  deepStrictEqual(thinking({ effort: "low" }), { thinkingBudget: thinkingBudgetForEffort.low, includeThoughts: true })
  deepStrictEqual(thinking({ effort: "high" }), { thinkingBudget: 24576, includeThoughts: true })
  deepStrictEqual(thinking({ effort: "xhigh" }), { thinkingBudget: 32768, includeThoughts: true })
  deepStrictEqual(thinking({ effort: "none" }), { thinkingBudget: 0 })
  deepStrictEqual(thinking({ enabled: false, budgetTokens: 4096 }), { thinkingBudget: 0 })
  deepStrictEqual(thinking({ enabled: true }), { thinkingBudget: -1, includeThoughts: true })
  deepStrictEqual(thinking({ includeThoughts: true }), { includeThoughts: true })
})

Deno.test("decodeRequest: a bad function declaration's message names the field once", () => {
  const error = failure(decode({ contents: [], tools: { functionDeclarations: [{ name: 3 }] } }))
  strictEqual(error.param, "tools.functionDeclarations[0].name")
  strictEqual(error.message.startsWith("Invalid tools.functionDeclarations[0].name: "), true)
  strictEqual(error.message.includes("Invalid name"), false)
})
