import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { pixelPng, readSse, weatherSchema, withEmulator } from "./Support.ts"

const client = (url: string, apiKey = "sk-test") => new OpenAI({ baseURL: url + "/v1", apiKey, maxRetries: 0 })

const weatherTool = {
  type: "function" as const,
  function: { name: "get_weather", description: "Weather for a city", parameters: weatherSchema }
}

Deno.test("chat: non-stream echoes the last user message with usage", async () => {
  await withEmulator({}, async (emulator) => {
    const completion = await client(emulator.url).chat.completions.create({
      model: "gpt-4o",
      messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Hello there world" }]
    })
    strictEqual(completion.object, "chat.completion")
    strictEqual(completion.model, "gpt-4o")
    strictEqual(completion.choices[0].message.content, "Echo: Hello there world")
    strictEqual(completion.choices[0].finish_reason, "stop")
    strictEqual(completion.usage?.completion_tokens, 4)
    // "Be brief." (9) + "Hello there world" (17) = 26 chars → 7, + 2 messages × 3.
    strictEqual(completion.usage?.prompt_tokens, 13)
    strictEqual(completion.usage?.prompt_tokens_details?.cached_tokens, 0)
    strictEqual(emulator.requests.length, 1)
    strictEqual(emulator.requests[0].key, "sk-test")
    strictEqual(emulator.requests[0].completed, true)
  })
})

Deno.test("chat: stream sends role chunk, word deltas, finish chunk, usage chunk, [DONE]", async () => {
  await withEmulator({}, async (emulator) => {
    const response = await fetch(emulator.url + "/v1/chat/completions", {
      method: "POST",
      headers: { authorization: "Bearer sk-test", "content-type": "application/json" },
      body: JSON.stringify({
        model: "gpt-4o",
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: "user", content: "one two" }]
      })
    })
    strictEqual(response.headers.get("content-type"), "text/event-stream; charset=utf-8")
    const frames = await readSse(response)
    const chunks = frames.slice(0, -1).map((frame) => frame.data as Record<string, never>)
    deepStrictEqual(chunks[0].choices, [{
      index: 0,
      delta: { role: "assistant", content: "" },
      logprobs: null,
      finish_reason: null
    }])
    deepStrictEqual(chunks.slice(1, 4).map((chunk) => chunk.choices[0]["delta"]), [
      { content: "Echo: " },
      { content: "one " },
      { content: "two" }
    ])
    strictEqual(chunks[4].choices[0]["finish_reason"], "stop")
    deepStrictEqual(chunks[5].choices, [])
    strictEqual(chunks[5].usage["completion_tokens"], 3)
    strictEqual(chunks[0].usage, null)
    strictEqual(frames[frames.length - 1].data, "[DONE]")
  })
})

Deno.test("chat: stream without include_usage has no usage chunk; SDK assembles the text", async () => {
  await withEmulator({}, async (emulator) => {
    const stream = await client(emulator.url).chat.completions.create({
      model: "gpt-4o",
      stream: true,
      messages: [{ role: "user", content: "stream me" }]
    })
    let text = ""
    let finish: string | null = null
    let usageSeen = false
    for await (const chunk of stream) {
      if (chunk.usage) usageSeen = true
      text += chunk.choices[0]?.delta.content ?? ""
      finish = chunk.choices[0]?.finish_reason ?? finish
    }
    strictEqual(text, "Echo: stream me")
    strictEqual(finish, "stop")
    strictEqual(usageSeen, false)
  })
})

Deno.test("chat: tool call with arguments from the schema, then tool result text", async () => {
  await withEmulator({}, async (emulator) => {
    const openai = client(emulator.url)
    const first = await openai.chat.completions.create({
      model: "gpt-4o",
      messages: [{ role: "user", content: "Weather in Paris?" }],
      tools: [weatherTool]
    })
    const message = first.choices[0].message
    strictEqual(first.choices[0].finish_reason, "tool_calls")
    strictEqual(message.content, null)
    strictEqual(message.tool_calls?.length, 1)
    const call = message.tool_calls![0]
    if (call.type !== "function") throw new Error("expected a function call")
    strictEqual(call.function.name, "get_weather")
    deepStrictEqual(JSON.parse(call.function.arguments), { location: "sample", unit: "celsius" })
    const second = await openai.chat.completions.create({
      model: "gpt-4o",
      messages: [
        { role: "user", content: "Weather in Paris?" },
        message,
        { role: "tool", tool_call_id: call.id, content: "18C and sunny" }
      ],
      tools: [weatherTool]
    })
    strictEqual(second.choices[0].message.content, "Tool result: 18C and sunny")
    strictEqual(second.choices[0].finish_reason, "stop")
  })
})

Deno.test("chat: parallel tool calls stream with distinct ids and argument fragments", async () => {
  await withEmulator({}, async (emulator) => {
    const stream = await client(emulator.url).chat.completions.create({
      model: "gpt-4o",
      stream: true,
      messages: [{ role: "user", content: "parallel please" }],
      tools: [weatherTool, { type: "function", function: { name: "get_time", parameters: { type: "object" } } }]
    })
    const calls = new Map<number, { id: string; name: string; args: string }>()
    let finish: string | null = null
    for await (const chunk of stream) {
      for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) {
        const current = calls.get(delta.index) ?? { id: "", name: "", args: "" }
        calls.set(delta.index, {
          id: delta.id ?? current.id,
          name: delta.function?.name ?? current.name,
          args: current.args + (delta.function?.arguments ?? "")
        })
      }
      finish = chunk.choices[0]?.finish_reason ?? finish
    }
    strictEqual(finish, "tool_calls")
    strictEqual(calls.size, 2)
    ok(calls.get(0)!.id !== calls.get(1)!.id)
    strictEqual(calls.get(0)!.name, "get_weather")
    strictEqual(calls.get(1)!.name, "get_time")
    deepStrictEqual(JSON.parse(calls.get(0)!.args), { location: "sample", unit: "celsius" })
    deepStrictEqual(JSON.parse(calls.get(1)!.args), {})
  })
})

Deno.test("chat: tool_choice none answers text; named tool choice calls that tool", async () => {
  await withEmulator({}, async (emulator) => {
    const openai = client(emulator.url)
    const none = await openai.chat.completions.create({
      model: "gpt-4o",
      messages: [{ role: "user", content: "hi" }],
      tools: [weatherTool],
      tool_choice: "none"
    })
    strictEqual(none.choices[0].message.content, "Echo: hi")
    const named = await openai.chat.completions.create({
      model: "gpt-4o",
      messages: [{ role: "user", content: "hi" }],
      tools: [weatherTool, { type: "function", function: { name: "get_time", parameters: { type: "object" } } }],
      tool_choice: { type: "function", function: { name: "get_time" } }
    })
    const call = named.choices[0].message.tool_calls![0]
    strictEqual(call.type === "function" ? call.function.name : "", "get_time")
  })
})

Deno.test("chat: reasoning_content and reasoning tokens when reasoning_effort is set", async () => {
  await withEmulator({}, async (emulator) => {
    const completion = await client(emulator.url).chat.completions.create({
      model: "o4-mini",
      reasoning_effort: "low",
      messages: [{ role: "user", content: "why sky blue" }]
    })
    const message = completion.choices[0].message as unknown as Record<string, unknown>
    strictEqual(message.reasoning_content, "Thinking about: why sky blue")
    strictEqual(completion.usage?.completion_tokens_details?.reasoning_tokens, 5)
    strictEqual(completion.usage?.completion_tokens, 5 + 4)
  })
})

Deno.test("chat: images by URL and data URI are acknowledged", async () => {
  await withEmulator({}, async (emulator) => {
    const completion = await client(emulator.url).chat.completions.create({
      model: "gpt-4o",
      messages: [{
        role: "user",
        content: [
          { type: "text", text: "What is this?" },
          { type: "image_url", image_url: { url: "https://example.com/cat.png" } },
          { type: "image_url", image_url: { url: `data:image/png;base64,${pixelPng}` } }
        ]
      }]
    })
    strictEqual(
      completion.choices[0].message.content,
      "I see 2 image(s) [https://example.com/cat.png, image/png] Echo: What is this?"
    )
  })
})

Deno.test("chat: structured output, stop sequences, max tokens and cached tokens", async () => {
  await withEmulator({}, async (emulator) => {
    const openai = client(emulator.url)
    const structured = await openai.chat.completions.create({
      model: "gpt-4o",
      messages: [{ role: "user", content: "give json" }],
      response_format: { type: "json_schema", json_schema: { name: "weather", schema: weatherSchema } }
    })
    deepStrictEqual(JSON.parse(structured.choices[0].message.content!), { location: "sample", unit: "celsius" })
    const stopped = await openai.chat.completions.create({
      model: "gpt-4o",
      messages: [{ role: "user", content: "alpha beta gamma" }],
      stop: ["gamma"]
    })
    strictEqual(stopped.choices[0].message.content, "Echo: alpha beta ")
    strictEqual(stopped.choices[0].finish_reason, "stop")
    const cut = await openai.chat.completions.create({
      model: "gpt-4o",
      messages: [{ role: "user", content: "this is cached text with many words" }],
      max_completion_tokens: 3
    })
    strictEqual(cut.choices[0].message.content, "Echo: this is")
    strictEqual(cut.choices[0].finish_reason, "length")
    strictEqual(cut.usage?.completion_tokens, 3)
    strictEqual(cut.usage?.prompt_tokens_details?.cached_tokens, Math.floor(cut.usage!.prompt_tokens / 2))
  })
})

Deno.test("chat: invalid requests and bad keys get OpenAI-shaped errors", async () => {
  await withEmulator({ validKeys: ["sk-good"] }, async (emulator) => {
    await rejects(
      client(emulator.url, "sk-bad").chat.completions.create({
        model: "gpt-4o",
        messages: [{ role: "user", content: "x" }]
      }),
      (error: unknown) => error instanceof OpenAI.AuthenticationError && error.code === "invalid_api_key"
    )
    const response = await fetch(emulator.url + "/v1/chat/completions", {
      method: "POST",
      headers: { authorization: "Bearer sk-good" },
      body: JSON.stringify({ model: "gpt-4o", messages: [] })
    })
    strictEqual(response.status, 400)
    deepStrictEqual(await response.json(), {
      error: {
        message: "Invalid 'messages': empty array. Expected an array with minimum length 1.",
        type: "invalid_request_error",
        param: "messages",
        code: null
      }
    })
    const broken = await fetch(emulator.url + "/v1/chat/completions", { method: "POST", body: "{nope" })
    strictEqual(broken.status, 400)
    strictEqual(((await broken.json()) as { error: { type: string } }).error.type, "invalid_request_error")
  })
})
