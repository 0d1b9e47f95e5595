/**
 * The Responses API's WebSocket mode, through the official SDK's socket
 * client (`openai` 7.57.0, `openai/resources/responses/ws`), on PostgreSQL:
 * the handshake is authenticated as HTTP is; each `response.create` is a
 * request of its own through the billed pipeline, on openai, anthropic and
 * gemini channels, billed exactly the usage the emulator reported; a tool
 * loop continues over `previous_response_id` with `store: false`; lanes
 * (`stream_id`) run at once; a client gone mid-response is billed as a
 * disconnect over HTTP is; hostile frames are answered with `error` events
 * that charge nothing and leave the socket usable.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { ResponsesWS } from "openai/resources/responses/ws"
import type { ResponsesServerEvent } from "openai/resources/responses/responses"
import { startEmulator } from "../../emulator/Emulator.ts"
import { basicConfig, startGateway, type TestGateway } from "../support/Gateway.ts"

const KEY = "sk-test-alice-0001"
const POOR_KEY = "sk-test-bob-00001"
const LIMITED_KEY = "sk-test-alice-0002"

const config = (emulatorUrl: string) =>
  basicConfig(emulatorUrl, {
    models: {
      "gpt-test": { input: 2, output: 8 },
      "claude-test": { input: 3, output: 15 },
      "gemini-test": { input: 1, output: 4 },
      "gpt-free": { free: true }
    },
    channels: [
      {
        name: "emu-openai",
        type: "openai",
        base_url: emulatorUrl,
        keys: ["sk-test-up-1"],
        models: ["gpt-test", "gpt-free"],
        settings: { responses_api: true }
      },
      {
        name: "emu-anthropic",
        type: "anthropic",
        base_url: emulatorUrl,
        keys: ["sk-test-up-2"],
        models: ["claude-test"]
      },
      { name: "emu-gemini", type: "gemini", base_url: emulatorUrl, keys: ["sk-test-up-3"], models: ["gemini-test"] }
    ],
    users: [
      {
        username: "alice",
        group: "default",
        quota: 100_000_000,
        tokens: [{ name: "main", key: KEY }, { name: "limited", key: LIMITED_KEY, models: ["gpt-test"] }]
      },
      { username: "bob", group: "default", quota: 0, tokens: [{ name: "poor", key: POOR_KEY }] }
    ]
  })

/** A server event as the tests read it (the SDK's `ResponsesServerEvent`, the fields used here). */
interface Event {
  readonly type: ResponsesServerEvent["type"]
  readonly stream_id?: string
  readonly status?: number
  readonly error?: { readonly type: string; readonly code: string | null; readonly param: string | null }
  readonly response?: { readonly id: string; readonly output: ReadonlyArray<Record<string, unknown>> }
  readonly delta?: string
}

/** A socket opened with the SDK, its events collected in order. */
const connect = (gateway: TestGateway, key = KEY) => {
  const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key, maxRetries: 0 })
  const socket = new ResponsesWS(client)
  const events: Array<Event> = []
  const errors: Array<Error> = []
  let closed: { code: number; reason: string } | undefined
  socket.on("event", (event) => events.push(event as unknown as Event))
  socket.on("error", (error) => errors.push(error))
  socket.on("close", (code, reason) => closed = { code, reason })
  /** Waits for the first event from index `from` on that `matches`; fails after 10 s. */
  const next = async (matches: (event: Event) => boolean, from = 0): Promise<Event> => {
    for (let tries = 0; tries < 1000; tries++) {
      const found = events.slice(from).find(matches)
      if (found !== undefined) return found
      if (closed !== undefined) throw new Error(`the socket closed (${closed.code}) before the event`)
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    throw new Error(`no such event among ${JSON.stringify(events.map((event) => event.type))}`)
  }
  const terminal = (event: Event) =>
    event.type === "response.completed" || event.type === "response.failed" || event.type === "response.incomplete" ||
    event.type === "error"
  /** Sends `event` and waits for its terminal event (completed, failed, incomplete or error). */
  const run = async (event: Record<string, unknown>): Promise<Event> => {
    const from = events.length
    socket.send({ type: "response.create", ...event } as never)
    return await next(terminal, from)
  }
  /** Sends raw text and waits for the `error` event it gets. */
  const refused = async (data: string | Uint8Array): Promise<Event> => {
    const from = events.length
    socket.sendRaw(data as never)
    return await next((event) => event.type === "error", from)
  }
  const close = async () => {
    socket.close({ code: 1000, reason: "done" })
    for (let tries = 0; tries < 200 && closed === undefined; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  }
  return { socket, events, errors, next, run, refused, close, closed: () => closed }
}

/** The usage rows, oldest first. */
const rows = (gateway: TestGateway) =>
  gateway.query<{ model: string; prompt_tokens: number; completion_tokens: number; cost: string; status: number }>(
    "SELECT model, prompt_tokens, completion_tokens, cost::text AS cost, status FROM usage_logs ORDER BY id"
  )

/** The usage the emulator reported for each answer it gave, in order. */
const reported = (gateway: TestGateway) =>
  gateway.emulator.requests.filter((request) => request.usage !== undefined).map((request) => ({
    prompt: request.usage!.input + (request.path.includes("/messages") ? request.usage!.cacheRead : 0),
    completion: request.usage!.output
  }))

const PRICES: Record<string, { input: number; output: number }> = {
  "gpt-test": { input: 2, output: 8 },
  "claude-test": { input: 3, output: 15 },
  "gemini-test": { input: 1, output: 4 }
}

const outputOf = (event: Event): ReadonlyArray<Record<string, unknown>> => event.response?.output ?? []

const WEATHER = {
  type: "function",
  name: "get_weather",
  description: "The weather in a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  strict: false
}

Deno.test("responses over a WebSocket: the SDK's client, billed per response", async (t) => {
  const gateway = await startGateway({ config, store: "postgres" })
  try {
    await t.step("a refused handshake is an HTTP 401 the SDK reports, nothing charged", async () => {
      const socket = connect(gateway, "sk-test-not-a-key")
      for (let tries = 0; tries < 300 && socket.errors.length === 0; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      ok(socket.errors.some((error) => error.message.includes("401")), socket.errors.map((e) => e.message).join())
      await socket.close()
      const refused = await fetch(`${gateway.url}/v1/responses`, {
        headers: { upgrade: "websocket", authorization: "Bearer sk-test-not-a-key" }
      })
      strictEqual(refused.status, 401)
      const body = await refused.json()
      strictEqual(body.error?.code, "invalid_api_key", "OpenAI's envelope")
    })

    for (const model of ["gpt-test", "claude-test", "gemini-test"]) {
      await t.step(`a tool loop over one socket on ${model}, store: false`, async () => {
        const socket = connect(gateway)
        const calls = gateway.emulator.requests.length
        try {
          const first = await socket.run({
            model,
            input: "What is the weather in Paris?",
            tools: [WEATHER],
            store: false
          })
          strictEqual(first.type, "response.completed", JSON.stringify(first))
          const call = outputOf(first).find((item) => item.type === "function_call")
          ok(call !== undefined, `a function call: ${JSON.stringify(outputOf(first))}`)
          strictEqual(call.name, "get_weather")
          const firstId = first.response!.id

          const second = await socket.run({
            model,
            previous_response_id: firstId,
            input: [{ type: "function_call_output", call_id: call.call_id, output: "sunny and 21 C" }],
            tools: [WEATHER],
            store: false
          })
          strictEqual(second.type, "response.completed", JSON.stringify(second))
          const text = JSON.stringify(outputOf(second))
          // Gemini's functionResponse carries an object: the emulator echoes it as JSON.
          ok(text.includes("Tool result: ") && text.includes("sunny and 21 C"), text)
          const secondId = second.response!.id

          const third = await socket.run({ model, previous_response_id: secondId, input: "thanks", store: false })
          strictEqual(third.type, "response.completed", JSON.stringify(third))
          ok(JSON.stringify(outputOf(third)).includes("Echo: thanks"))
          const upstream = JSON.stringify(gateway.emulator.requests.at(-1)!.body)
          ok(upstream.includes("What is the weather in Paris?"), "the first turn reached the upstream")
          ok(upstream.includes("sunny and 21 C"), "the tool result reached the upstream")
          strictEqual(gateway.emulator.requests.length, calls + 3, "one upstream call per response")

          // Not stored: over HTTP the id is unknown.
          const http = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
          const error = await http.responses.create({ model, input: "x", previous_response_id: secondId })
            .catch((failure) => failure)
          ok(error instanceof OpenAI.BadRequestError, "store: false kept nothing beyond the socket")
        } finally {
          await socket.close()
        }
      })
    }

    await t.step("each response is billed exactly the usage the emulator reported", async () => {
      const billed = await rows(gateway)
      const vendor = reported(gateway)
      deepStrictEqual(
        billed.map((row) => ({ prompt: row.prompt_tokens, completion: row.completion_tokens })),
        vendor,
        "one row per response, the vendor's tokens"
      )
      for (const row of billed) {
        const price = PRICES[row.model]!
        strictEqual(
          BigInt(row.cost),
          BigInt(Math.ceil(row.prompt_tokens * price.input + row.completion_tokens * price.output)),
          `priced at ${row.model}'s`
        )
      }
    })

    await t.step("stored responses continue across sockets and over HTTP", async () => {
      const socket = connect(gateway)
      try {
        const first = await socket.run({ model: "claude-test", input: "remember the word heron" })
        strictEqual(first.type, "response.completed")
        const id = first.response!.id
        const http = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
        const next = await http.responses.create({ model: "gpt-test", input: "and now?", previous_response_id: id })
        strictEqual(next.output_text, "Echo: and now?")
        ok(JSON.stringify(gateway.emulator.requests.at(-1)!.body).includes("remember the word heron"))
      } finally {
        await socket.close()
      }
    })

    await t.step("two lanes run at once, their events tagged with their stream_id", async () => {
      const slow = startEmulator({ tokensPerSecond: 40 })
      const paced = await startGateway({ config, store: "postgres", emulator: slow, ownsEmulator: true })
      const socket = connect(paced)
      try {
        const from = socket.events.length
        const words = "one two three four five six seven eight nine ten eleven twelve"
        socket.socket.send({ type: "response.create", model: "gpt-test", input: `a ${words}`, stream_id: "a" } as never)
        socket.socket.send(
          { type: "response.create", model: "claude-test", input: `b ${words}`, stream_id: "b" } as never
        )
        const done = (lane: string) => (event: Event) => event.type === "response.completed" && event.stream_id === lane
        await socket.next(done("a"), from)
        await socket.next(done("b"), from)
        const lanes = socket.events.slice(from).map((event) => event.stream_id)
        ok(lanes.every((lane) => lane === "a" || lane === "b"), "every event names its lane")
        const firstDone = lanes.findIndex((_, index) => socket.events[from + index].type === "response.completed")
        ok(lanes.slice(0, firstDone).includes("a") && lanes.slice(0, firstDone).includes("b"), "interleaved")
        const created = socket.events.slice(from).filter((event) => event.type === "response.created")
        strictEqual(created.length, 2)
        const billed = await rows(paced)
        deepStrictEqual(
          billed.map((row) => ({ prompt: row.prompt_tokens, completion: row.completion_tokens })).toSorted((x, y) =>
            x.prompt - y.prompt || x.completion - y.completion
          ),
          reported(paced).toSorted((x, y) => x.prompt - y.prompt || x.completion - y.completion),
          "each billed alone, the vendor's tokens"
        )
      } finally {
        await socket.close()
        await paced.close()
      }
    })

    await t.step("a client gone mid-response is billed for what was delivered, as over HTTP", async () => {
      const slow = startEmulator({ tokensPerSecond: 20 })
      const paced = await startGateway({ config, store: "postgres", emulator: slow, ownsEmulator: true })
      const socket = connect(paced)
      try {
        const story = Array.from({ length: 60 }, (_, index) => `word${index}`).join(" ")
        const from = socket.events.length
        socket.socket.send(
          { type: "response.create", model: "claude-test", input: story, max_output_tokens: 200 } as never
        )
        for (let tries = 0; tries < 500; tries++) {
          if (socket.events.slice(from).filter((event) => event.type === "response.output_text.delta").length >= 5) {
            break
          }
          await new Promise((resolve) => setTimeout(resolve, 10))
        }
        await socket.close()
        for (let tries = 0; tries < 300 && !slow.requests.at(-1)?.aborted; tries++) {
          await new Promise((resolve) => setTimeout(resolve, 10))
        }
        ok(slow.requests.at(-1)!.aborted, "the upstream call was interrupted")
        let billed: Awaited<ReturnType<typeof rows>> = []
        for (let tries = 0; tries < 300 && billed.length === 0; tries++) {
          billed = await rows(paced)
          if (billed.length === 0) await new Promise((resolve) => setTimeout(resolve, 10))
        }
        strictEqual(billed.length, 1, "the cut response has its row")
        const delivered = socket.events.slice(from).filter((event) => event.type === "response.output_text.delta")
          .map((event) => event.delta).join("")
        strictEqual(
          billed[0].prompt_tokens,
          slow.requests.at(-1)!.usage?.input,
          "the input tokens the upstream reported"
        )
        ok(billed[0].completion_tokens >= Math.ceil(delivered.length / 4), "at least what reached the client")
        ok(billed[0].completion_tokens < 60, "not the whole answer")
        ok(BigInt(billed[0].cost) > 0n)
      } finally {
        await socket.close()
        await paced.close()
      }
    })

    await t.step("hostile frames and refused requests: error events, nothing charged, the socket usable", async () => {
      const before = await rows(gateway)
      const upstreamCalls = gateway.emulator.requests.length
      const socket = connect(gateway)
      try {
        const notJson = await socket.refused("{not json")
        strictEqual(notJson.error?.code, "invalid_json")
        const unknown = await socket.refused(JSON.stringify({ type: "response.teleport" }))
        strictEqual(unknown.error?.code, "unknown_event_type")
        strictEqual(unknown.error?.param, "type")
        const noType = await socket.refused(JSON.stringify([1, 2]))
        strictEqual(noType.error?.param, "type")
        const binary = await socket.refused(new Uint8Array([1, 2, 3]))
        strictEqual(binary.error?.code, "invalid_frame")
        const huge = await socket.refused(
          JSON.stringify({ type: "response.create", input: "x".repeat(17 * 1024 * 1024) })
        )
        strictEqual(huge.error?.code, "frame_too_large")
        strictEqual(huge.status, 413)
        const nul = await socket.run({ model: "gpt-test\u0000\ud800", input: "hi" })
        strictEqual(nul.type, "error")
        const background = await socket.run({ model: "gpt-test", input: "hi", background: true })
        strictEqual(background.type, "error")
        strictEqual(background.error?.param, "background")
        const unknownModel = await socket.run({ model: "no-such-model", input: "hi" })
        strictEqual(unknownModel.type, "error")
        strictEqual(unknownModel.error?.code, "model_not_found")
        const badInput = await socket.run({ model: "gpt-test", input: 42 })
        strictEqual(badInput.error?.param, "input")
        const badLane = await socket.run({ model: "gpt-test", input: "hi", stream_id: 7 })
        strictEqual(badLane.error?.param, "stream_id")
        const steer = await socket.refused(
          JSON.stringify({ type: "response.steer", previous_response_id: "x", input: "y" })
        )
        strictEqual(steer.error?.code, "unsupported_event")
        strictEqual(gateway.emulator.requests.length, upstreamCalls, "nothing reached the upstream")
        const still = await socket.run({ model: "gpt-test", input: "still here" })
        strictEqual(still.type, "response.completed", JSON.stringify(still))
      } finally {
        await socket.close()
      }
      const after = await rows(gateway)
      strictEqual(after.length, before.length + 1, "only the answered response is billed")
    })

    await t.step("a key's rules hold per response: the model allow-list, a missing quota", async () => {
      const limited = connect(gateway, LIMITED_KEY)
      const poor = connect(gateway, POOR_KEY)
      const before = await rows(gateway)
      try {
        const outside = await limited.run({ model: "claude-test", input: "hi" })
        strictEqual(outside.type, "error")
        const inside = await limited.run({ model: "gpt-test", input: "hi" })
        strictEqual(inside.type, "response.completed")
        const broke = await poor.run({ model: "gpt-test", input: "hi" })
        strictEqual(broke.type, "error")
        strictEqual(broke.status, 402)
        strictEqual(broke.error?.code, "insufficient_user_quota")
        const again = await poor.run({ model: "gpt-free", input: "free" })
        strictEqual(again.type, "response.completed", JSON.stringify(again))
      } finally {
        await limited.close()
        await poor.close()
      }
      const after = await rows(gateway)
      strictEqual(after.length, before.length + 2, "the refused responses charge nothing")
      strictEqual(after.at(-1)!.cost, "0")
    })

    await t.step("the socket's end has its access-log line and the metrics count its frames", async () => {
      const metrics = await (await fetch(`${gateway.url}/metrics`)).text()
      ok(/sluice_websocket_open\{route="\/v1\/responses"\} 0/.test(metrics), "no socket open")
      const framesIn = metrics.split("\n").find((line) =>
        line.startsWith("sluice_websocket_frames_total") && line.includes('direction="in"')
      )
      ok(framesIn !== undefined && Number(framesIn.split(" ").at(-1)) > 10, String(framesIn))
      const lines = gateway.logs.filter((line) => line.includes('"msg":"socket"')).map((line) => JSON.parse(line))
      ok(lines.length >= 5, `${lines.length} socket lines`)
      ok(lines.every((line) => line.socket_id.startsWith("ws_") && line.route === "/v1/responses"))
      const ids = new Set(lines.map((line) => line.socket_id))
      const responseLines = gateway.logs.map((line) => JSON.parse(line)).filter((line) =>
        line.msg === "request" && line.route === "/v1/responses" && typeof line.request_id === "string" &&
        ids.has(line.request_id.split(".")[0])
      )
      ok(responseLines.length > 0, "each response's line carries its socket's id")
      // The handshake's own line says what the caller got: the 101, not the router's placeholder.
      const handshakeLines = gateway.logs.map((line) => JSON.parse(line)).filter((line) =>
        line.msg === "request" && line.method === "GET" && line.route === "/v1/responses"
      )
      ok(handshakeLines.length >= 5, `${handshakeLines.length} handshake lines`)
      ok(handshakeLines.every((line) => line.status === 101 || line.status >= 400), JSON.stringify(handshakeLines))
      ok(handshakeLines.some((line) => line.status === 101))
    })
  } finally {
    await gateway.close()
  }
})

Deno.test("responses over a WebSocket: the socket's limits, the key's rpm per response, the graceful drain", async (t) => {
  const emulator = startEmulator({ tokensPerSecond: 30 })
  const gateway = await startGateway({
    emulator,
    ownsEmulator: true,
    config: (url) => {
      const file = config(url)
      return {
        ...file,
        settings: { ...file.settings, websocket_max_events_per_second: 3, websocket_idle_seconds: 1 },
        users: [{
          username: "carol",
          group: "default",
          quota: 100_000_000,
          tokens: [{ name: "rpm", key: KEY, limits: { rpm: 2 } }]
        }]
      }
    }
  })
  try {
    await t.step("frames past the rate get an error event; the socket stays open", async () => {
      const socket = connect(gateway)
      try {
        const from = socket.events.length
        for (let index = 0; index < 5; index++) socket.socket.sendRaw(JSON.stringify({ type: "nothing" }))
        await socket.next((event) => event.error?.code === "rate_limit_exceeded", from)
        const codes = socket.events.slice(from).map((event) => event.error?.code)
        strictEqual(codes.filter((code) => code === "unknown_event_type").length, 3, "three taken within the second")
        strictEqual(socket.closed(), undefined)
      } finally {
        await socket.close()
      }
    })

    await t.step("each response counts against the key's rpm as a request does", async () => {
      await new Promise((resolve) => setTimeout(resolve, 1100))
      const socket = connect(gateway)
      try {
        strictEqual((await socket.run({ model: "gpt-test", input: "one" })).type, "response.completed")
        strictEqual((await socket.run({ model: "gpt-test", input: "two" })).type, "response.completed")
        const third = await socket.run({ model: "gpt-test", input: "three" })
        strictEqual(third.type, "error")
        strictEqual(third.status, 429)
      } finally {
        await socket.close()
      }
    })

    await t.step("an idle socket is closed", async () => {
      const socket = connect(gateway)
      for (let tries = 0; tries < 400 && socket.closed() === undefined; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      strictEqual(socket.closed()?.code, 1000)
      strictEqual(socket.closed()?.reason, "idle timeout")
    })
  } finally {
    await gateway.close()
  }
})

Deno.test("responses over a WebSocket: shutdown lets the response in flight finish, then closes with 1001", async () => {
  const emulator = startEmulator({ tokensPerSecond: 30 })
  const gateway = await startGateway({ emulator, ownsEmulator: true, config })
  try {
    const socket = connect(gateway)
    const from = socket.events.length
    socket.socket.send({ type: "response.create", model: "gpt-test", input: "a b c d e f g h i j k l" } as never)
    await socket.next((event) => event.type === "response.output_text.delta", from)
    const drained = gateway.drainSockets(Date.now() + 10_000)
    socket.socket.send({ type: "response.create", model: "gpt-test", input: "too late" } as never)
    await drained
    // Frames sent before the close frame arrive before it.
    for (let tries = 0; tries < 300 && socket.closed() === undefined; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    strictEqual(socket.closed()?.code, 1001)
    const types = socket.events.slice(from).map((event) => event.type)
    ok(types.includes("response.completed"), "the response in flight finished")
    const refused = socket.events.slice(from).find((event) => event.type === "error")
    strictEqual(refused?.error?.code, "server_shutting_down")
    strictEqual(emulator.requests.length, 1, "the refused create never reached the upstream")
  } finally {
    await gateway.close()
  }
})

Deno.test("responses over a WebSocket: a response still running when the grace ends is cut, billed, then 1001", async () => {
  const emulator = startEmulator({ tokensPerSecond: 10 })
  const gateway = await startGateway({ emulator, ownsEmulator: true, config, store: "postgres" })
  try {
    const socket = connect(gateway)
    const story = Array.from({ length: 80 }, (_, index) => `word${index}`).join(" ")
    socket.socket.send({ type: "response.create", model: "claude-test", input: story } as never)
    await socket.next((event) => event.type === "response.output_text.delta")
    await gateway.drainSockets(Date.now() + 300)
    ok(!socket.events.some((event) => event.type === "response.completed"), "the response did not finish in time")
    // The charge is made before the socket closes; its usage row follows with the usage log's next flush.
    let billed = await rows(gateway)
    for (let tries = 0; tries < 300 && billed.length === 0; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 10))
      billed = await rows(gateway)
    }
    strictEqual(billed.length, 1, "the cut response was billed")
    strictEqual(billed[0].prompt_tokens, emulator.requests[0].usage?.input)
    ok(BigInt(billed[0].cost) > 0n)
    for (let tries = 0; tries < 300 && socket.closed() === undefined; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    strictEqual(socket.closed()?.code, 1001)
  } finally {
    await gateway.close()
  }
})

Deno.test("responses over a WebSocket: an open socket counts among its address's open requests", async () => {
  const gateway = await startGateway({ config, maxOpenRequestsPerAddress: 1 })
  try {
    const first = connect(gateway)
    strictEqual((await first.run({ model: "gpt-test", input: "hi" })).type, "response.completed")
    const second = connect(gateway)
    for (let tries = 0; tries < 300 && second.errors.length === 0; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    ok(second.errors.some((error) => error.message.includes("429")), second.errors.map((e) => e.message).join())
    await second.close()
    await first.close()
    let third = connect(gateway)
    // The first socket's count ends with it.
    for (let tries = 0; tries < 20; tries++) {
      const answer = await third.run({ model: "gpt-test", input: "again" }).catch(() => undefined)
      if (answer?.type === "response.completed") break
      await third.close()
      await new Promise((resolve) => setTimeout(resolve, 50))
      third = connect(gateway)
    }
    strictEqual(third.events.at(-1)?.type, "response.completed")
    await third.close()
  } finally {
    await gateway.close()
  }
})

Deno.test("responses over a WebSocket: a client gone before the answer began interrupts the upstream call", async () => {
  const emulator = startEmulator({ latencyMs: 1_500 })
  const gateway = await startGateway({ emulator, ownsEmulator: true, config, store: "postgres" })
  try {
    const socket = connect(gateway)
    socket.socket.send({ type: "response.create", model: "gpt-test", input: "slow to start" } as never)
    for (let tries = 0; tries < 300 && emulator.requests.length === 0; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    strictEqual(emulator.requests.length, 1, "the upstream call began")
    await socket.close()
    for (let tries = 0; tries < 300 && !emulator.requests[0].aborted; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    ok(emulator.requests[0].aborted, "the upstream call was interrupted before its answer")
    const billed = await rows(gateway)
    strictEqual(billed.reduce((sum, row) => sum + BigInt(row.cost), 0n), 0n, "nothing was reported, nothing charged")
  } finally {
    await gateway.close()
  }
})
