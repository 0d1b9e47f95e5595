import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict"
import Anthropic from "@anthropic-ai/sdk"
import { pixelPng, readSse, weatherSchema, withEmulator } from "./Support.ts"

const client = (url: string, apiKey = "sk-ant-test") => new Anthropic({ baseURL: url, apiKey, maxRetries: 0 })

const weatherTool = { name: "get_weather", description: "Weather for a city", input_schema: weatherSchema }

Deno.test("anthropic: non-stream text message with usage", async () => {
  await withEmulator({}, async (emulator) => {
    const message = await client(emulator.url).messages.create({
      model: "claude-sonnet-4-6",
      max_tokens: 100,
      system: "Be brief.",
      messages: [{ role: "user", content: "Hello Claude" }]
    })
    strictEqual(message.type, "message")
    strictEqual(message.role, "assistant")
    deepStrictEqual(message.content, [{ type: "text", text: "Echo: Hello Claude" }])
    strictEqual(message.stop_reason, "end_turn")
    strictEqual(message.stop_sequence, null)
    strictEqual(message.usage.output_tokens, 3)
    strictEqual(message.usage.cache_read_input_tokens, 0)
    strictEqual(emulator.requests[0].key, "sk-ant-test")
    ok(emulator.requests[0].headers["anthropic-version"] !== undefined)
  })
})

Deno.test("anthropic: stream event sequence with thinking, signature and text", async () => {
  await withEmulator({}, async (emulator) => {
    const response = await fetch(emulator.url + "/v1/messages", {
      method: "POST",
      headers: { "x-api-key": "k", "anthropic-version": "2023-06-01", "content-type": "application/json" },
      body: JSON.stringify({
        model: "claude-sonnet-4-6",
        max_tokens: 2048,
        stream: true,
        thinking: { type: "enabled", budget_tokens: 1024 },
        messages: [{ role: "user", content: "hi there" }]
      })
    })
    const frames = await readSse(response)
    for (const frame of frames) strictEqual(frame.event, (frame.data as { type: string }).type)
    deepStrictEqual(frames.map((frame) => frame.event), [
      "message_start",
      "ping",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
      "content_block_delta",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop"
    ])
    const signature = frames[7].data as { delta: { type: string; signature: string } }
    strictEqual(signature.delta.type, "signature_delta")
    ok(signature.delta.signature.startsWith("sig-"))
    const messageDelta = frames[14].data as { delta: { stop_reason: string }; usage: { output_tokens: number } }
    strictEqual(messageDelta.delta.stop_reason, "end_turn")
    strictEqual(messageDelta.usage.output_tokens, 4 + 3)
  })
})

Deno.test("anthropic: SDK stream accumulates thinking (with signature) and text", async () => {
  await withEmulator({}, async (emulator) => {
    const stream = client(emulator.url).messages.stream({
      model: "claude-sonnet-4-6",
      max_tokens: 2048,
      thinking: { type: "enabled", budget_tokens: 1024 },
      messages: [{ role: "user", content: "deep question" }]
    })
    const message = await stream.finalMessage()
    const [thinking, text] = message.content
    if (thinking.type !== "thinking" || text.type !== "text") throw new Error("unexpected blocks")
    strictEqual(thinking.thinking, "Thinking about: deep question")
    ok(thinking.signature.startsWith("sig-"))
    strictEqual(text.text, "Echo: deep question")
  })
})

Deno.test("anthropic: tool_use blocks, parallel calls, then tool_result", async () => {
  await withEmulator({}, async (emulator) => {
    const anthropic = client(emulator.url)
    const first = await anthropic.messages.create({
      model: "claude-sonnet-4-6",
      max_tokens: 100,
      tools: [weatherTool],
      messages: [{ role: "user", content: "parallel weather" }]
    })
    strictEqual(first.stop_reason, "tool_use")
    const uses = first.content.filter((block) => block.type === "tool_use")
    strictEqual(uses.length, 2)
    ok(uses[0].id !== uses[1].id)
    deepStrictEqual(uses[0].input, { location: "sample", unit: "celsius" })
    const second = await anthropic.messages.create({
      model: "claude-sonnet-4-6",
      max_tokens: 100,
      tools: [weatherTool],
      messages: [
        { role: "user", content: "parallel weather" },
        { role: "assistant", content: first.content },
        {
          role: "user",
          content: uses.map((use) => ({ type: "tool_result" as const, tool_use_id: use.id, content: "sunny" }))
        }
      ]
    })
    deepStrictEqual(second.content, [{ type: "text", text: "Tool result: sunny | sunny" }])
  })
})

Deno.test("anthropic: streamed tool input via input_json_delta", async () => {
  await withEmulator({}, async (emulator) => {
    const message = await client(emulator.url).messages.stream({
      model: "claude-sonnet-4-6",
      max_tokens: 100,
      tools: [weatherTool],
      tool_choice: { type: "tool", name: "get_weather" },
      messages: [{ role: "user", content: "weather" }]
    }).finalMessage()
    const use = message.content[0]
    if (use.type !== "tool_use") throw new Error("expected tool_use")
    deepStrictEqual(use.input, { location: "sample", unit: "celsius" })
    strictEqual(message.stop_reason, "tool_use")
  })
})

Deno.test("anthropic: images, stop sequences, max tokens, cache reads", async () => {
  await withEmulator({}, async (emulator) => {
    const anthropic = client(emulator.url)
    const image = await anthropic.messages.create({
      model: "claude-sonnet-4-6",
      max_tokens: 100,
      messages: [{
        role: "user",
        content: [
          { type: "image", source: { type: "base64", media_type: "image/png", data: pixelPng } },
          { type: "image", source: { type: "url", url: "https://example.com/a.jpg" } },
          { type: "text", text: "describe" }
        ]
      }]
    })
    deepStrictEqual(image.content, [{
      type: "text",
      text: "I see 2 image(s) [image/png, https://example.com/a.jpg] Echo: describe"
    }])
    const stopped = await anthropic.messages.create({
      model: "claude-sonnet-4-6",
      max_tokens: 100,
      stop_sequences: ["STOP"],
      messages: [{ role: "user", content: "go STOP now" }]
    })
    strictEqual(stopped.stop_reason, "stop_sequence")
    strictEqual(stopped.stop_sequence, "STOP")
    deepStrictEqual(stopped.content, [{ type: "text", text: "Echo: go " }])
    const cut = await anthropic.messages.create({
      model: "claude-sonnet-4-6",
      max_tokens: 2,
      messages: [{ role: "user", content: "a cached prompt that is long" }]
    })
    strictEqual(cut.stop_reason, "max_tokens")
    strictEqual(cut.usage.output_tokens, 2)
    ok((cut.usage.cache_read_input_tokens ?? 0) > 0)
  })
})

Deno.test("anthropic: structured output through output_config.format", async () => {
  await withEmulator({}, async (emulator) => {
    const response = await fetch(emulator.url + "/v1/messages", {
      method: "POST",
      headers: { "x-api-key": "k", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({
        model: "claude-sonnet-4-6",
        max_tokens: 100,
        output_config: { format: { type: "json_schema", schema: weatherSchema } },
        messages: [{ role: "user", content: "json please" }]
      })
    })
    const message = await response.json() as { content: Array<{ text: string }> }
    deepStrictEqual(JSON.parse(message.content[0].text), { location: "sample", unit: "celsius" })
  })
})

Deno.test("anthropic: validation errors in Anthropic's shape", async () => {
  await withEmulator({ validKeys: ["good"] }, async (emulator) => {
    const post = (body: unknown, headers: Record<string, string> = {}) =>
      fetch(emulator.url + "/v1/messages", {
        method: "POST",
        headers: { "x-api-key": "good", "anthropic-version": "2023-06-01", ...headers },
        body: JSON.stringify(body)
      }).then(async (response) => ({ status: response.status, body: await response.json() }))
    const messages = [{ role: "user", content: "x" }]
    const noVersion = await fetch(emulator.url + "/v1/messages", {
      method: "POST",
      headers: { "x-api-key": "good" },
      body: JSON.stringify({ model: "m", max_tokens: 5, messages })
    })
    strictEqual(noVersion.status, 400)
    strictEqual((await noVersion.json()).error.message, "anthropic-version: header is required")
    const noMax = await post({ model: "m", messages })
    strictEqual(noMax.status, 400)
    strictEqual(noMax.body.type, "error")
    strictEqual(noMax.body.error.type, "invalid_request_error")
    ok(noMax.body.error.message.includes("max_tokens"))
    strictEqual((await post({ model: "m", max_tokens: 5, messages: [{ role: "critic", content: "x" }] })).status, 400)
    // A mid-conversation system message is taken (Claude Code sends one).
    strictEqual(
      (await post({
        model: "m",
        max_tokens: 5,
        messages: [{ role: "user", content: "a" }, { role: "system", content: "x" }]
      }))
        .status,
      200
    )
    const budget = await post({
      model: "m",
      max_tokens: 1024,
      thinking: { type: "enabled", budget_tokens: 1024 },
      messages
    })
    ok(budget.body.error.message.includes("budget_tokens"))
    const temperature = await post({
      model: "m",
      max_tokens: 2048,
      temperature: 0.5,
      thinking: { type: "enabled", budget_tokens: 1024 },
      messages
    })
    strictEqual(temperature.status, 400)
    // Thinking on, and the assistant turn of the tool loop does not start with a thinking block.
    const toolLoop = [
      { role: "user", content: "Weather?" },
      { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "weather", input: {} }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "sunny" }] }
    ]
    const unthought = await post({
      model: "m",
      max_tokens: 2048,
      thinking: { type: "enabled", budget_tokens: 1024 },
      messages: toolLoop
    })
    strictEqual(unthought.status, 400)
    ok(unthought.body.error.message.startsWith("messages.1.content.0.type: Expected `thinking`"))
    strictEqual((await post({ model: "m", max_tokens: 2048, messages: toolLoop })).status, 200)
    await rejects(
      client(emulator.url, "bad").messages.create({
        model: "m",
        max_tokens: 5,
        messages: [{ role: "user", content: "x" }]
      }),
      (error: unknown) => error instanceof Anthropic.AuthenticationError
    )
  })
})

Deno.test("anthropic: count_tokens answers the prompt tokens /v1/messages would report, and validates as it does", async () => {
  await withEmulator({}, async (emulator) => {
    const anthropic = client(emulator.url)
    const request = {
      model: "m",
      system: "Be brief.",
      messages: [
        { role: "user" as const, content: "Hello there, how are you" },
        { role: "system" as const, content: "Environment: linux" }
      ]
    } as unknown as Anthropic.MessageCountTokensParams
    const counted = await anthropic.messages.countTokens(request)
    const answered = await anthropic.messages.create(
      { ...request, max_tokens: 50 } as Anthropic.MessageCreateParamsNonStreaming
    )
    strictEqual(counted.input_tokens, answered.usage.input_tokens)
    await rejects(
      anthropic.messages.countTokens({ model: "m", messages: [{ role: "critic", content: "x" }] } as never),
      (error: unknown) => error instanceof Anthropic.BadRequestError
    )
  })
})
