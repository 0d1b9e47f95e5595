import { ok, rejects, strictEqual } from "node:assert/strict"
import Anthropic from "@anthropic-ai/sdk"
import { GoogleGenAI } from "@google/genai"
import OpenAI from "openai"
import { readSse, withEmulator } from "./Support.ts"

const fault = { status: 529, message: "Overloaded", breakAfterEvents: 2 }

Deno.test("in-band: OpenAI chat stream carries data: {error} after N chunks", async () => {
  await withEmulator({}, async (emulator) => {
    emulator.setFaults([{ ...fault, status: 500, message: "Upstream exploded" }])
    const stream = await new OpenAI({ baseURL: emulator.url + "/v1", apiKey: "k", maxRetries: 0 }).chat.completions
      .create({ model: "gpt-4o", stream: true, messages: [{ role: "user", content: "a b c" }] })
    let chunks = 0
    await rejects(
      async () => {
        for await (const _ of stream) chunks++
      },
      (error: unknown) => error instanceof OpenAI.APIError && error.message.includes("Upstream exploded")
    )
    strictEqual(chunks, 2)
  })
})

Deno.test("in-band: Anthropic stream ends with event: error", async () => {
  await withEmulator({}, async (emulator) => {
    emulator.setFaults([fault])
    const response = await fetch(emulator.url + "/v1/messages", {
      method: "POST",
      headers: { "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "m", max_tokens: 50, stream: true, messages: [{ role: "user", content: "hi" }] })
    })
    const frames = await readSse(response)
    strictEqual(frames.length, 3)
    strictEqual(frames[2].event, "error")
    const data = frames[2].data as { type: string; error: { type: string; message: string } }
    strictEqual(data.type, "error")
    strictEqual(data.error.type, "overloaded_error")
    emulator.setFaults([fault])
    await rejects(
      new Anthropic({ baseURL: emulator.url, apiKey: "k", maxRetries: 0 }).messages.stream({
        model: "claude-sonnet-4-6",
        max_tokens: 50,
        messages: [{ role: "user", content: "hi" }]
      }).finalMessage(),
      (error: unknown) => error instanceof Anthropic.APIError
    )
  })
})

Deno.test("in-band: Responses stream emits an error event with its sequence number", async () => {
  await withEmulator({}, async (emulator) => {
    emulator.setFaults([{ ...fault, status: 500 }])
    const response = await fetch(emulator.url + "/v1/responses", {
      method: "POST",
      body: JSON.stringify({ model: "gpt-5", input: "hi", stream: true })
    })
    const frames = await readSse(response)
    strictEqual(frames.length, 3)
    const error = frames[2].data as { type: string; sequence_number: number; code: string }
    strictEqual(frames[2].event, "error")
    strictEqual(error.type, "error")
    strictEqual(error.sequence_number, 2)
    strictEqual(error.code, "server_error")
  })
})

Deno.test("in-band: Gemini SSE error chunk makes the SDK throw", async () => {
  await withEmulator({}, async (emulator) => {
    emulator.setFaults([{ ...fault, status: 503 }])
    const stream = await new GoogleGenAI({ apiKey: "k", httpOptions: { baseUrl: emulator.url } }).models
      .generateContentStream({ model: "gemini-2.5-flash", contents: "a b c" })
    let chunks = 0
    await rejects(async () => {
      for await (const _ of stream) chunks++
    })
    ok(chunks <= 2)
    emulator.setFaults([{ ...fault, status: 503 }])
    const array = await fetch(emulator.url + "/v1beta/models/g:streamGenerateContent", {
      method: "POST",
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "a b c" }] }] })
    })
    const elements = await array.json() as Array<{ error?: { status: string } }>
    strictEqual(elements.length, 3)
    strictEqual(elements[2].error?.status, "UNAVAILABLE")
  })
})
