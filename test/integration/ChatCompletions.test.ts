import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { basicConfig, startGateway } from "../support/Gateway.ts"

const KEY = "sk-test-alice-0001"

Deno.test("chat completions through the openai SDK: non-stream, stream, usage, tools, models", async (t) => {
  const gateway = await startGateway({ config: (url) => basicConfig(url) })
  const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
  try {
    await t.step("non-stream answer with usage", async () => {
      const completion = await client.chat.completions.create({
        model: "gpt-test",
        messages: [{ role: "user", content: "hello there" }],
        max_tokens: 50
      })
      strictEqual(completion.object, "chat.completion")
      strictEqual(completion.choices[0].message.content, "Echo: hello there")
      strictEqual(completion.choices[0].finish_reason, "stop")
      ok(completion.usage !== undefined && completion.usage.prompt_tokens > 0)
      const upstream = gateway.emulator.requests.at(-1)!
      strictEqual((upstream.body as { model: string }).model, "gpt-test")
      strictEqual(upstream.key, "sk-test-upstream-1")
    })

    await t.step("unknown fields reach the upstream intact", async () => {
      await client.chat.completions.create({
        model: "gpt-test",
        messages: [{ role: "user", content: "x" }],
        // deno-lint-ignore no-explicit-any
        ...({ vendor_extension: { keep: true } } as any)
      })
      deepStrictEqual((gateway.emulator.requests.at(-1)!.body as Record<string, unknown>).vendor_extension, {
        keep: true
      })
    })

    await t.step("stream without include_usage: no usage chunk, but billed", async () => {
      const stream = await client.chat.completions.create({
        model: "gpt-test",
        messages: [{ role: "user", content: "one two three" }],
        stream: true
      })
      let text = ""
      let sawUsage = false
      let finish: string | null = null
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta?.content ?? ""
        if (chunk.usage) sawUsage = true
        finish = chunk.choices[0]?.finish_reason ?? finish
      }
      strictEqual(text, "Echo: one two three")
      strictEqual(sawUsage, false)
      strictEqual(finish, "stop")
      const upstream = gateway.emulator.requests.at(-1)!.body as { stream_options?: { include_usage?: boolean } }
      strictEqual(upstream.stream_options?.include_usage, true)
    })

    await t.step("stream with include_usage: usage on the last chunk", async () => {
      const stream = await client.chat.completions.create({
        model: "gpt-test",
        messages: [{ role: "user", content: "count me" }],
        stream: true,
        stream_options: { include_usage: true }
      })
      let usage: OpenAI.CompletionUsage | undefined | null
      for await (const chunk of stream) if (chunk.usage) usage = chunk.usage
      ok(usage !== undefined && usage !== null && usage.completion_tokens > 0)
    })

    await t.step("tool calls", async () => {
      const completion = await client.chat.completions.create({
        model: "gpt-test",
        messages: [{ role: "user", content: "weather?" }],
        tools: [{
          type: "function",
          function: {
            name: "get_weather",
            parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
          }
        }]
      })
      const call = completion.choices[0].message.tool_calls?.[0]
      ok(call !== undefined && call.type === "function")
      strictEqual(call.function.name, "get_weather")
      deepStrictEqual(JSON.parse(call.function.arguments), { city: "sample" })
      strictEqual(completion.choices[0].finish_reason, "tool_calls")
    })

    await t.step("models list", async () => {
      const models = []
      for await (const model of client.models.list()) models.push(model.id)
      deepStrictEqual(models, ["gpt-free", "gpt-test"])
    })

    await t.step("usage route reflects what was billed", async () => {
      const response = await fetch(`${gateway.url}/api/usage/token`, { headers: { authorization: `Bearer ${KEY}` } })
      const body = await response.json()
      strictEqual(body.success, true)
      strictEqual(body.data.object, "token_usage")
      ok(body.data.total_used > 0)
      strictEqual(body.data.unlimited_quota, true)
    })
  } finally {
    await gateway.close()
  }
})
