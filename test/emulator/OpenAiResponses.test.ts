import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { pixelPng, readSse, weatherSchema, withEmulator } from "./Support.ts"

const client = (url: string) => new OpenAI({ baseURL: url + "/v1", apiKey: "sk-test", maxRetries: 0 })

const weatherTool = { type: "function" as const, name: "get_weather", parameters: weatherSchema, strict: true }

Deno.test("responses: non-stream message output with usage", async () => {
  await withEmulator({}, async (emulator) => {
    const response = await client(emulator.url).responses.create({
      model: "gpt-5",
      instructions: "Be brief.",
      input: "Hello responses"
    })
    strictEqual(response.object, "response")
    strictEqual(response.status, "completed")
    strictEqual(response.output_text, "Echo: Hello responses")
    const item = response.output[0]
    if (item.type !== "message") throw new Error("expected a message item")
    strictEqual(item.content[0].type, "output_text")
    strictEqual(response.usage?.output_tokens, 3)
    strictEqual(response.usage?.input_tokens_details.cached_tokens, 0)
  })
})

Deno.test("responses: stream has the full event sequence with sequence numbers", async () => {
  await withEmulator({}, async (emulator) => {
    const response = await fetch(emulator.url + "/v1/responses", {
      method: "POST",
      headers: { authorization: "Bearer sk-test" },
      body: JSON.stringify({
        model: "gpt-5",
        input: "a b",
        stream: true,
        reasoning: { effort: "low", summary: "auto" }
      })
    })
    const frames = await readSse(response)
    frames.forEach((frame, index) => {
      const data = frame.data as { type: string; sequence_number: number }
      strictEqual(frame.event, data.type)
      strictEqual(data.sequence_number, index)
    })
    deepStrictEqual(frames.map((frame) => frame.event), [
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.reasoning_summary_part.added",
      "response.reasoning_summary_text.delta",
      "response.reasoning_summary_text.delta",
      "response.reasoning_summary_text.delta",
      "response.reasoning_summary_text.delta",
      "response.reasoning_summary_text.done",
      "response.reasoning_summary_part.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed"
    ])
    const completed = frames[frames.length - 1].data as {
      response: { usage: { output_tokens_details: { reasoning_tokens: number } }; output: Array<{ type: string }> }
    }
    strictEqual(completed.response.usage.output_tokens_details.reasoning_tokens, 4)
    const reasoning = completed.response.output[0] as { type: string; encrypted_content?: string }
    strictEqual(reasoning.type, "reasoning")
    ok((reasoning.encrypted_content ?? "").length > 0)
  })
})

Deno.test("responses: SDK stream of function calls, then function_call_output", async () => {
  await withEmulator({}, async (emulator) => {
    const openai = client(emulator.url)
    const stream = openai.responses.stream({ model: "gpt-5", input: "parallel weather", tools: [weatherTool] })
    const final = await stream.finalResponse()
    const calls = final.output.filter((item) => item.type === "function_call")
    strictEqual(calls.length, 2)
    ok(calls[0].call_id !== calls[1].call_id)
    deepStrictEqual(JSON.parse(calls[0].arguments), { location: "sample", unit: "celsius" })
    const next = await openai.responses.create({
      model: "gpt-5",
      tools: [weatherTool],
      input: [
        { role: "user", content: "parallel weather" },
        ...calls,
        ...calls.map((call) => ({ type: "function_call_output" as const, call_id: call.call_id, output: "dry" }))
      ]
    })
    strictEqual(next.output_text, "Tool result: dry | dry")
  })
})

Deno.test("responses: images, structured output and max_output_tokens", async () => {
  await withEmulator({}, async (emulator) => {
    const openai = client(emulator.url)
    const image = await openai.responses.create({
      model: "gpt-5",
      input: [{
        role: "user",
        content: [
          { type: "input_text", text: "look" },
          { type: "input_image", image_url: `data:image/png;base64,${pixelPng}`, detail: "auto" }
        ]
      }]
    })
    strictEqual(image.output_text, "I see 1 image(s) [image/png] Echo: look")
    const structured = await openai.responses.create({
      model: "gpt-5",
      input: "json",
      text: { format: { type: "json_schema", name: "weather", schema: weatherSchema } }
    })
    deepStrictEqual(JSON.parse(structured.output_text), { location: "sample", unit: "celsius" })
    const cut = await openai.responses.create({ model: "gpt-5", input: "one two three", max_output_tokens: 2 })
    strictEqual(cut.status, "incomplete")
    strictEqual(cut.incomplete_details?.reason, "max_output_tokens")
    strictEqual(cut.output_text, "Echo: one")
  })
})

Deno.test("responses: compact returns user messages and one compaction item", async () => {
  await withEmulator({}, async (emulator) => {
    const compacted = await client(emulator.url).responses.compact({
      model: "gpt-5",
      input: [{ role: "user", content: "first" }, { role: "assistant", content: "reply" }, {
        role: "user",
        content: "second"
      }]
    })
    strictEqual(compacted.object, "response.compaction")
    deepStrictEqual(compacted.output.map((item) => item.type), ["message", "message", "compaction"])
    ok(compacted.usage.total_tokens > 0)
  })
})
