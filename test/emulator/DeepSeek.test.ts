/**
 * The emulator's DeepSeek API under `/deepseek` (`emulator/DeepSeek.ts`), through the `openai` SDK pointed
 * at it as DeepSeek's docs point it (`base_url` the API root, with or without `/v1`): DeepSeek's usage fields
 * (cache hits and misses, no `prompt_tokens_details`), the context cache of repeated message prefixes,
 * `reasoning_content` in answers and deltas, and DeepSeek's 400s (a tool turn without its `reasoning_content` in
 * thinking mode, a `developer` role, an image part); the FIM completion under `/beta`; what the emulator
 * records as reported usage.
 */
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { readSse, weatherSchema, withEmulator } from "./Support.ts"

const deepseek = (url: string, suffix = "") =>
  new OpenAI({ baseURL: `${url}/deepseek${suffix}`, apiKey: "sk-test-deepseek", maxRetries: 0 })

type Usage = Record<string, unknown>

Deno.test("deepseek: an answer reports prompt_cache_hit_tokens and prompt_cache_miss_tokens, no prompt_tokens_details", async () => {
  await withEmulator({}, async (emulator) => {
    for (const suffix of ["", "/v1"]) {
      const completion = await deepseek(emulator.url, suffix).chat.completions.create({
        model: "deepseek-chat",
        messages: [{ role: "user", content: `this is cached text${suffix}` }]
      })
      strictEqual(completion.choices[0].message.content, `Echo: this is cached text${suffix}`)
      const usage = completion.usage as unknown as Usage
      const prompt = usage.prompt_tokens as number
      strictEqual(usage.prompt_cache_hit_tokens, Math.floor(prompt / 2))
      strictEqual(usage.prompt_cache_miss_tokens, prompt - Math.floor(prompt / 2))
      strictEqual("prompt_tokens_details" in usage, false)
      deepStrictEqual(usage.completion_tokens_details, { reasoning_tokens: 0 })
    }
    deepStrictEqual(emulator.requests.map((request) => request.path), [
      "/deepseek/chat/completions",
      "/deepseek/v1/chat/completions"
    ])
    const reported = emulator.requests[0].usage!
    strictEqual(reported.cacheRead, Math.floor(reported.input / 2), "the recorded usage reads DeepSeek's hits")
  })
})

Deno.test("deepseek: the context cache hits the repeated first messages of an earlier request", async () => {
  await withEmulator({}, async (emulator) => {
    const client = deepseek(emulator.url)
    const first = [{ role: "system" as const, content: "Be brief." }, { role: "user" as const, content: "hello" }]
    const one = await client.chat.completions.create({ model: "deepseek-chat", messages: first })
    strictEqual((one.usage as unknown as Usage).prompt_cache_hit_tokens, 0)
    const two = await client.chat.completions.create({
      model: "deepseek-chat",
      messages: [...first, { role: "assistant", content: "Echo: hello" }, { role: "user", content: "again" }]
    })
    // The first two messages' tokens: "Be brief." + "hello" = 14 characters → 4, + 2 × 3.
    strictEqual((two.usage as unknown as Usage).prompt_cache_hit_tokens, 10)
    strictEqual(
      (two.usage as unknown as Usage).prompt_cache_miss_tokens,
      (two.usage!.prompt_tokens as number) - 10
    )
    // Another model has its own cache.
    const other = await client.chat.completions.create({ model: "deepseek-reasoner", messages: first })
    strictEqual((other.usage as unknown as Usage).prompt_cache_hit_tokens, 0)
    emulator.reset()
    const afterReset = await client.chat.completions.create({ model: "deepseek-chat", messages: first })
    strictEqual((afterReset.usage as unknown as Usage).prompt_cache_hit_tokens, 0)
  })
})

Deno.test("deepseek: thinking mode answers with reasoning_content on the message and on deltas", async () => {
  await withEmulator({}, async (emulator) => {
    const completion = await deepseek(emulator.url).chat.completions.create({
      model: "deepseek-reasoner",
      messages: [{ role: "user", content: "why" }]
    })
    const message = completion.choices[0].message as unknown as Record<string, unknown>
    strictEqual(message.reasoning_content, "Thinking about: why")
    strictEqual(message.content, "Echo: why")
    strictEqual((completion.usage as unknown as Usage).completion_tokens_details !== undefined, true)
    ok(((completion.usage!.completion_tokens_details?.reasoning_tokens) ?? 0) > 0)

    const response = await fetch(`${emulator.url}/deepseek/chat/completions`, {
      method: "POST",
      headers: { authorization: "Bearer sk-test-deepseek", "content-type": "application/json" },
      body: JSON.stringify({
        model: "deepseek-chat",
        thinking: { type: "enabled" },
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: "user", content: "why" }]
      })
    })
    const frames = await readSse(response)
    const deltas = frames.slice(0, -1).flatMap((frame) => {
      const chunk = frame.data as { choices: Array<{ delta: Record<string, unknown> }> }
      return chunk.choices.map((choice) => choice.delta)
    })
    deepStrictEqual(deltas[0], { role: "assistant", content: null, reasoning_content: "" })
    deepStrictEqual(deltas[1], { content: null, reasoning_content: "Thinking " })
    ok(deltas.some((delta) => delta.content === "Echo: " && delta.reasoning_content === null))
    const last = frames.at(-2)!.data as { choices: []; usage: Usage }
    deepStrictEqual(last.choices, [])
    strictEqual(typeof last.usage.prompt_cache_miss_tokens, "number")
    strictEqual(frames.at(-1)!.data, "[DONE]")

    // thinking disabled wins over the model's default.
    const plain = await deepseek(emulator.url).chat.completions.create({
      model: "deepseek-reasoner",
      messages: [{ role: "user", content: "why" }],
      // @ts-expect-error: DeepSeek's own field, not in the openai SDK's types.
      thinking: { type: "disabled" }
    })
    strictEqual((plain.choices[0].message as unknown as Record<string, unknown>).reasoning_content, undefined)
  })
})

Deno.test("deepseek: in thinking mode a tool turn must carry its reasoning_content back (DeepSeek's 400)", async () => {
  await withEmulator({}, async (emulator) => {
    const client = deepseek(emulator.url)
    const tools = [{ type: "function" as const, function: { name: "get_weather", parameters: weatherSchema } }]
    const first = await client.chat.completions.create({
      model: "deepseek-reasoner",
      messages: [{ role: "user", content: "weather?" }],
      tools
    })
    const call = first.choices[0].message.tool_calls![0]
    ok(call.type === "function")
    const assistant = first.choices[0].message as unknown as Record<string, unknown>
    strictEqual(typeof assistant.reasoning_content, "string")
    const toolTurn = (reasoning: Record<string, unknown>) =>
      [
        { role: "user", content: "weather?" },
        { role: "assistant", content: "", tool_calls: [call], ...reasoning },
        { role: "tool", tool_call_id: call.id, content: "21 C" }
      ] as Array<OpenAI.ChatCompletionMessageParam>
    await rejects(
      client.chat.completions.create({ model: "deepseek-reasoner", messages: toolTurn({}), tools }),
      (error: unknown) => {
        ok(error instanceof OpenAI.APIError)
        strictEqual(error.status, 400)
        ok(error.message.includes("Missing `reasoning_content` field in the assistant message at message index 1"))
        return true
      }
    )
    const passed = await client.chat.completions.create({
      model: "deepseek-reasoner",
      messages: toolTurn({ reasoning_content: assistant.reasoning_content }),
      tools
    })
    strictEqual(passed.choices[0].message.content, "Tool result: 21 C")
    // Outside thinking mode nothing is asked back.
    const chat = await client.chat.completions.create({ model: "deepseek-chat", messages: toolTurn({}), tools })
    strictEqual(chat.choices[0].message.content, "Tool result: 21 C")
  })
})

Deno.test("deepseek: a developer role and an image part are DeepSeek's 400s", async () => {
  await withEmulator({}, async (emulator) => {
    const client = deepseek(emulator.url)
    await rejects(
      client.chat.completions.create({
        model: "deepseek-chat",
        messages: [{ role: "developer", content: "Be brief." }, { role: "user", content: "hi" }]
      }),
      (error: unknown) =>
        error instanceof OpenAI.APIError && error.status === 400 &&
        error.message.includes("messages[0].role: unknown variant `developer`")
    )
    await rejects(
      client.chat.completions.create({
        model: "deepseek-chat",
        messages: [{
          role: "user",
          content: [{ type: "text", text: "look" }, {
            type: "image_url",
            image_url: { url: "https://example.com/a.png" }
          }]
        }]
      }),
      (error: unknown) =>
        error instanceof OpenAI.APIError && error.status === 400 &&
        error.message.includes("messages[0]: unknown variant `image_url`, expected `text`")
    )
    // Text parts are taken.
    const parts = await client.chat.completions.create({
      model: "deepseek-chat",
      messages: [{ role: "user", content: [{ type: "text", text: "a" }, { type: "text", text: "b" }] }]
    })
    strictEqual(parts.choices[0].message.content, "Echo: a b")
  })
})

Deno.test("deepseek: the FIM completion under /beta reports DeepSeek's usage", async () => {
  await withEmulator({}, async (emulator) => {
    const completion = await deepseek(emulator.url, "/beta").completions.create({
      model: "deepseek-chat",
      prompt: "def fib(a):",
      suffix: "    return fib(a-1) + fib(a-2)",
      max_tokens: 64
    })
    strictEqual(completion.choices[0].text, "Echo: def fib(a):")
    const usage = completion.usage as unknown as Usage
    strictEqual(usage.prompt_cache_miss_tokens, usage.prompt_tokens)
    strictEqual(emulator.requests[0].path, "/deepseek/beta/completions")
  })
})
