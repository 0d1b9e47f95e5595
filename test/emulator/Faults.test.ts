import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict"
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { quotaExhausted } from "../../emulator/Faults.ts"
import { withEmulator } from "./Support.ts"

const openai = (url: string, apiKey = "sk-test") => new OpenAI({ baseURL: url + "/v1", apiKey, maxRetries: 0 })
const chat = { model: "gpt-4o", messages: [{ role: "user" as const, content: "one two three four five" }] }

const eventually = async (check: () => boolean): Promise<void> => {
  for (let attempt = 0; attempt < 100 && !check(); attempt++) await new Promise((resolve) => setTimeout(resolve, 10))
  ok(check())
}

Deno.test("faults: status in each vendor's shape, with times and message", async () => {
  await withEmulator({}, async (emulator) => {
    emulator.setFaults([{ status: 429, times: 1, message: "Slow down" }])
    await rejects(
      openai(emulator.url).chat.completions.create(chat),
      (error: unknown) => error instanceof OpenAI.RateLimitError && error.message.includes("Slow down")
    )
    // `times: 1` is spent: the next request succeeds.
    strictEqual((await openai(emulator.url).chat.completions.create(chat)).choices[0].finish_reason, "stop")
    emulator.setFaults([{ status: 529, match: { path: "/v1/messages" } }])
    await rejects(
      new Anthropic({ baseURL: emulator.url, apiKey: "k", maxRetries: 0 }).messages.create({
        model: "claude-sonnet-4-6",
        max_tokens: 10,
        messages: [{ role: "user", content: "x" }]
      }),
      (error: unknown) => error instanceof Anthropic.APIError && error.status === 529
    )
    const raw = await fetch(emulator.url + "/v1/messages", {
      method: "POST",
      headers: { "anthropic-version": "2023-06-01" },
      body: "{}"
    })
    strictEqual(raw.status, 529)
    strictEqual((await raw.json()).error.type, "overloaded_error")
  })
})

Deno.test("faults: body override, match by model and key, quota helper", async () => {
  await withEmulator({}, async (emulator) => {
    const quota = quotaExhausted("openai")
    emulator.setFaults([
      { match: { model: "gpt-x" }, status: 404 },
      { match: { key: "sk-poor" }, status: quota.status, body: quota.body }
    ])
    const poor = await fetch(emulator.url + "/v1/chat/completions", {
      method: "POST",
      headers: { authorization: "Bearer sk-poor" },
      body: JSON.stringify(chat)
    })
    strictEqual(poor.status, 429)
    strictEqual((await poor.json()).error.code, "insufficient_quota")
    await rejects(
      openai(emulator.url).chat.completions.create({ ...chat, model: "gpt-x" }),
      (error: unknown) => error instanceof OpenAI.NotFoundError
    )
    strictEqual((await openai(emulator.url).chat.completions.create(chat)).object, "chat.completion")
  })
})

Deno.test("faults: delayMs and latencyMs delay the first byte", async () => {
  await withEmulator({ latencyMs: 30 }, async (emulator) => {
    emulator.setFaults([{ delayMs: 50 }])
    const started = performance.now()
    await openai(emulator.url).chat.completions.create(chat)
    ok(performance.now() - started >= 75)
  })
})

Deno.test("faults: hang until the client aborts; the abort is counted", async () => {
  await withEmulator({}, async (emulator) => {
    emulator.setFaults([{ hang: true }])
    const controller = new AbortController()
    const pending = fetch(emulator.url + "/v1/chat/completions", {
      method: "POST",
      body: JSON.stringify(chat),
      signal: controller.signal
    })
    await eventually(() => emulator.requests.length === 1)
    controller.abort()
    await rejects(pending)
    await eventually(() => emulator.aborts() === 1)
    strictEqual(emulator.requests[0].aborted, true)
    strictEqual(emulator.requests[0].completed, false)
  })
})

Deno.test("faults: a hanging request is released when the emulator closes", async () => {
  let pending: Promise<Response> | undefined
  await withEmulator({}, async (emulator) => {
    emulator.setFaults([{ hang: true }])
    pending = fetch(emulator.url + "/v1/chat/completions", { method: "POST", body: JSON.stringify(chat) })
    await eventually(() => emulator.requests.length === 1)
  })
  const response = await pending!
  strictEqual(response.status, 503)
  await response.body?.cancel()
})

Deno.test("faults: breakAfterEvents truncates the stream without an end marker", async () => {
  await withEmulator({}, async (emulator) => {
    emulator.setFaults([{ breakAfterEvents: 2 }])
    const stream = await openai(emulator.url).chat.completions.create({ ...chat, stream: true })
    const seen: Array<string> = []
    await rejects(async () => {
      for await (const chunk of stream) seen.push(chunk.choices[0]?.delta.content ?? "")
    })
    deepStrictEqual(seen, ["", "Echo: "])
    emulator.setFaults([{ breakAfterEvents: 3, match: { path: "/v1/messages" } }])
    const response = await fetch(emulator.url + "/v1/messages", {
      method: "POST",
      headers: { "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "m", max_tokens: 50, stream: true, messages: [{ role: "user", content: "hi" }] })
    })
    const text = await response.text().catch((error: unknown) => `failed: ${error}`)
    ok(text.startsWith("failed:"))
  })
})

Deno.test("faults: malformed bodies for JSON and streams", async () => {
  await withEmulator({}, async (emulator) => {
    emulator.setFaults([{ malformed: true }])
    const response = await fetch(emulator.url + "/v1/chat/completions", { method: "POST", body: JSON.stringify(chat) })
    strictEqual(response.status, 200)
    await rejects(response.json())
    await rejects(async () => {
      const stream = await openai(emulator.url).chat.completions.create({ ...chat, stream: true })
      for await (const _ of stream) {
        // The first frame is not JSON.
      }
    })
  })
})

Deno.test("abort: a client leaving a paced stream midway is counted", async () => {
  await withEmulator({ tokensPerSecond: 50 }, async (emulator) => {
    const response = await fetch(emulator.url + "/v1/chat/completions", {
      method: "POST",
      body: JSON.stringify({ ...chat, stream: true })
    })
    const reader = response.body!.getReader()
    await reader.read()
    await reader.cancel()
    await eventually(() => emulator.aborts() === 1)
    strictEqual(emulator.requests[0].aborted, true)
    const full = await fetch(emulator.url + "/v1/chat/completions", {
      method: "POST",
      body: JSON.stringify({ ...chat, stream: true })
    })
    ok((await full.text()).endsWith("data: [DONE]\n\n"))
    strictEqual(emulator.aborts(), 1)
    strictEqual(emulator.requests[1].completed, true)
  })
})

Deno.test("control: HTTP routes for faults, keys, requests, stats, reset, healthz", async () => {
  await withEmulator({ record: true }, async (emulator) => {
    const control = (method: string, path: string, body?: unknown) =>
      fetch(emulator.url + path, { method, body: body === undefined ? undefined : JSON.stringify(body) })
    strictEqual(await (await control("GET", "/healthz")).text(), "ok")
    strictEqual((await control("POST", "/_emulator/faults", [{ status: 500, times: 1 }])).status, 204)
    const failed = await control("POST", "/v1/chat/completions", chat)
    strictEqual(failed.status, 500)
    strictEqual((await failed.json()).error.type, "server_error")
    strictEqual((await control("PUT", "/_emulator/keys", ["sk-only"])).status, 204)
    const denied = await control("POST", "/v1/chat/completions", chat)
    strictEqual(denied.status, 401)
    await denied.body?.cancel()
    strictEqual((await control("PUT", "/_emulator/keys", null)).status, 204)
    const allowed = await control("POST", "/v1/chat/completions", chat)
    strictEqual(allowed.status, 200)
    await allowed.body?.cancel()
    deepStrictEqual(await (await control("GET", "/_emulator/stats")).json(), { requests: 3, aborts: 0 })
    const recorded = await (await control("GET", "/_emulator/requests")).json() as Array<{ path: string }>
    strictEqual(recorded.length, 3)
    strictEqual(recorded[0].path, "/v1/chat/completions")
    strictEqual((await control("DELETE", "/_emulator/faults")).status, 204)
    strictEqual((await control("POST", "/_emulator/reset")).status, 204)
    strictEqual(emulator.requests.length, 0)
    const models = await (await fetch(emulator.url + "/v1/models", { headers: { authorization: "Bearer k" } })).json()
    strictEqual(models.object, "list")
    const anthropicModels = await (await fetch(emulator.url + "/v1/models", {
      headers: { "x-api-key": "k", "anthropic-version": "2023-06-01" }
    })).json()
    strictEqual(anthropicModels.data[0].type, "model")
  })
})

Deno.test("record: false keeps no requests but still counts them", async () => {
  await withEmulator({ record: false }, async (emulator) => {
    await openai(emulator.url).chat.completions.create(chat)
    strictEqual(emulator.requests.length, 0)
    const stats = await (await fetch(emulator.url + "/_emulator/stats")).json()
    strictEqual(stats.requests, 1)
  })
})

Deno.test("faults: echo quotes the caller's text, field name or key as sent, NUL and lone surrogates included", async () => {
  await withEmulator({}, async (emulator) => {
    const hostile = "say \u0000 and \ud800 please"
    emulator.setFaults([
      { match: { model: "gpt-text" }, status: 400, echo: "text", message: "Invalid value: '{echo}'." },
      { match: { model: "gpt-field" }, status: 400, echo: "field" },
      { match: { model: "gpt-key" }, status: 401, echo: "key", message: "Incorrect API key provided: {echo}." }
    ])
    const post = (model: string, extra: Record<string, unknown> = {}) =>
      fetch(emulator.url + "/v1/chat/completions", {
        method: "POST",
        headers: { authorization: "Bearer sk-test-echoed-key-0001" },
        body: JSON.stringify({ model, messages: [{ role: "user", content: hostile }], ...extra })
      }).then(async (response) => ({ status: response.status, body: await response.json() }))
    const text = await post("gpt-text")
    strictEqual(text.status, 400)
    strictEqual(text.body.error.message, `Invalid value: '${hostile}'.`)
    const field = await post("gpt-field", { "bad\u0000field": 1 })
    strictEqual(field.body.error.message, "The request is invalid. bad\u0000field")
    const key = await post("gpt-key")
    strictEqual(key.status, 401)
    strictEqual(key.body.error.message, "Incorrect API key provided: sk-test-echoed-key-0001.")
  })
})

Deno.test("faults: endAfterEvents ends a stream cleanly without its end marker; paceMs spaces the events", async () => {
  await withEmulator({}, async (emulator) => {
    emulator.setFaults([{ times: 1, endAfterEvents: 2 }, { times: 1, paceMs: 40 }])
    const request = () =>
      fetch(emulator.url + "/v1/chat/completions", {
        method: "POST",
        body: JSON.stringify({ ...chat, stream: true })
      })
    const cut = await (await request()).text()
    strictEqual(cut.split("\n\n").filter((frame) => frame.startsWith("data: ")).length, 2)
    ok(!cut.includes("[DONE]"))
    const started = Date.now()
    const paced = await (await request()).text()
    ok(paced.includes("[DONE]"))
    const frames = paced.split("\n\n").filter((frame) => frame.startsWith("data: ")).length
    ok(Date.now() - started >= (frames - 1) * 40 * 0.8, `paced over ${frames} frames`)
  })
})
