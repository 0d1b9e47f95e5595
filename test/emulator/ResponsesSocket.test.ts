/**
 * The emulator's Responses WebSocket mode through the official SDK's socket client (`openai` 7.57.0,
 * `openai/resources/responses/ws`): the HTTP stream's events one frame each, `previous_response_id` with
 * `store: false` kept per socket, OpenAI's error event shape, the usage recorded as over HTTP and marked as having
 * come over the socket, and a cut stream closing the socket.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { ResponsesWS } from "openai/resources/responses/ws"
import { readSse, withEmulator } from "./Support.ts"

/** A server event as the test reads it. */
interface Event {
  readonly type: string
  readonly sequence_number?: number
  readonly status?: number
  readonly error?: {
    readonly type: string
    readonly code: string | null
    readonly message: string
    readonly param: string | null
  }
  readonly response?: {
    readonly id: string
    readonly usage: { readonly input_tokens: number; readonly output_tokens: number } | null
    readonly output: ReadonlyArray<Record<string, unknown>>
  }
}

const TERMINAL = new Set(["response.completed", "response.incomplete", "response.failed", "error"])

const connect = (url: string, key = "sk-test-emu-1") => {
  const socket = new ResponsesWS(new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0 }))
  const events: Array<Event> = []
  const errors: Array<Error> = []
  let closed: { code: number } | undefined
  socket.on("event", (event) => events.push(event as unknown as Event))
  socket.on("error", (error) => errors.push(error))
  socket.on("close", (code) => closed = { code })
  const until = async (done: () => boolean, what: string) => {
    for (let tries = 0; tries < 500 && !done(); tries++) await new Promise((resolve) => setTimeout(resolve, 10))
    if (!done()) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(events.map((e) => e.type))}`)
  }
  /** Sends a create and answers every event it got, up to its terminal one. */
  const run = async (event: Record<string, unknown>): Promise<ReadonlyArray<Event>> => {
    const from = events.length
    socket.send({ type: "response.create", ...event } as never)
    await until(() => events.slice(from).some((e) => TERMINAL.has(e.type)) || closed !== undefined, "a terminal event")
    return events.slice(from)
  }
  const close = async () => {
    socket.close({ code: 1000, reason: "done" })
    await until(() => closed !== undefined, "the close")
  }
  return { socket, events, errors, run, close, until, closed: () => closed }
}

const WEATHER = {
  type: "function",
  name: "get_weather",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  strict: false
}

Deno.test("emulator responses socket: the HTTP stream's events, frame by frame, usage recorded", async () => {
  await withEmulator({}, async (emulator) => {
    const over = await fetch(`${emulator.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: "Bearer sk-test-emu-1" },
      body: JSON.stringify({ model: "gpt-5", input: "Hello socket", stream: true })
    })
    const http = (await readSse(over)).map((frame) => (frame.data as Event).type)
    const socket = connect(emulator.url)
    try {
      const events = await socket.run({ model: "gpt-5", input: "Hello socket" })
      deepStrictEqual(events.map((event) => event.type), http, "the same events as the HTTP stream, in order")
      deepStrictEqual(events.map((event) => event.sequence_number), events.map((_, index) => index))
      const done = events.at(-1)!
      strictEqual(done.type, "response.completed")
      strictEqual(JSON.stringify(done.response!.output).includes("Echo: Hello socket"), true)
      const recorded = emulator.requests.filter((request) => request.path === "/v1/responses")
      strictEqual(recorded.length, 3, "the HTTP call, the handshake and the create")
      deepStrictEqual(recorded.map((request) => request.transport), ["http", "websocket", "websocket"])
      strictEqual(recorded[1].method, "GET", "the handshake")
      strictEqual(recorded[2].key, "sk-test-emu-1", "the create carries the handshake's key")
      deepStrictEqual(recorded[2].usage && { input: recorded[2].usage.input, output: recorded[2].usage.output }, {
        input: done.response!.usage!.input_tokens,
        output: done.response!.usage!.output_tokens
      }, "the usage recorded is the usage sent")
    } finally {
      await socket.close()
    }
  })
})

Deno.test("emulator responses socket: a tool loop over previous_response_id with store: false", async () => {
  await withEmulator({}, async (emulator) => {
    const socket = connect(emulator.url)
    try {
      const first = (await socket.run({ model: "gpt-5", input: "weather in Oslo?", tools: [WEATHER], store: false }))
        .at(-1)!
      strictEqual(first.type, "response.completed", JSON.stringify(first))
      const call = first.response!.output.find((item) => item.type === "function_call")
      ok(call !== undefined, JSON.stringify(first.response!.output))
      const second = (await socket.run({
        model: "gpt-5",
        previous_response_id: first.response!.id,
        input: [{ type: "function_call_output", call_id: call.call_id, output: "cold, 3 C" }],
        tools: [WEATHER],
        store: false
      })).at(-1)!
      strictEqual(second.type, "response.completed", JSON.stringify(second))
      ok(JSON.stringify(second.response!.output).includes("Tool result: cold, 3 C"))
      const upstream = JSON.stringify(emulator.requests.at(-1)!.body)
      ok(upstream.includes("weather in Oslo?") && upstream.includes("function_call"), "the earlier turn is the input")
      ok(
        second.response!.usage!.input_tokens > first.response!.usage!.input_tokens,
        "the continued input counts the earlier turn"
      )

      const unknown = (await socket.run({ model: "gpt-5", previous_response_id: "resp_nope", input: "x" })).at(-1)!
      strictEqual(unknown.type, "error")
      strictEqual(unknown.status, 400)
      strictEqual(unknown.error?.code, "previous_response_not_found")
      strictEqual(unknown.error?.param, "previous_response_id")
    } finally {
      await socket.close()
    }
    // Another socket does not know the first one's responses.
    const other = connect(emulator.url)
    try {
      const earlier = socket.events.find((event) => event.type === "response.completed")!.response!.id
      const refused = (await other.run({ model: "gpt-5", previous_response_id: earlier, input: "x" })).at(-1)!
      strictEqual(refused.error?.code, "previous_response_not_found")
    } finally {
      await other.close()
    }
  })
})

Deno.test("emulator responses socket: errors in OpenAI's socket shape, the socket usable after them", async () => {
  await withEmulator({ validKeys: ["sk-test-emu-1"] }, async (emulator) => {
    const refusedKey = connect(emulator.url, "sk-test-wrong")
    await refusedKey.until(() => refusedKey.errors.length > 0 || refusedKey.closed() !== undefined, "a refusal")
    ok(refusedKey.errors.some((error) => error.message.includes("401")), refusedKey.errors.map((e) => e.message).join())
    await refusedKey.close().catch(() => {})

    const socket = connect(emulator.url)
    try {
      const missing = (await socket.run({ input: "no model" })).at(-1)!
      deepStrictEqual(
        { type: missing.type, status: missing.status, code: missing.error?.code, param: missing.error?.param },
        { type: "error", status: 400, code: "missing_required_parameter", param: "model" }
      )
      emulator.setFaults([{ match: { path: "/v1/responses" }, status: 429, times: 1 }])
      const limited = (await socket.run({ model: "gpt-5", input: "hi" })).at(-1)!
      strictEqual(limited.type, "error")
      strictEqual(limited.status, 429)
      strictEqual(limited.error?.type, "requests")
      const fine = (await socket.run({ model: "gpt-5", input: "again" })).at(-1)!
      strictEqual(fine.type, "response.completed")
    } finally {
      await socket.close()
    }
  })
})

Deno.test("emulator responses socket: a stream cut mid-response closes the socket with 1011", async () => {
  await withEmulator({}, async (emulator) => {
    emulator.setFaults([{ match: { path: "/v1/responses" }, breakAfterEvents: 4, times: 1 }])
    const socket = connect(emulator.url)
    const events = await socket.run({ model: "gpt-5", input: "one two three four five six" })
    ok(events.length >= 1 && !events.some((event) => event.type === "response.completed"), "no completion")
    await socket.until(() => socket.closed() !== undefined, "the close")
    strictEqual(socket.closed()?.code, 1011)
    const cut = emulator.requests.at(-1)!
    strictEqual(cut.transport, "websocket")
    strictEqual(cut.usage, undefined, "Responses report usage at the end only: the cut one reported none")
    const after = connect(emulator.url)
    try {
      strictEqual((await after.run({ model: "gpt-5", input: "again" })).at(-1)?.type, "response.completed")
    } finally {
      await after.close()
    }
  })
})
