/**
 * An openai channel with `settings.responses_websocket`: the responses of a client's Responses socket (the official
 * SDK's `ResponsesWS`, `openai` 7.57.0) reach the upstream over one upstream socket per client socket, opened on
 * first use and reused, through the same billed pipeline as over HTTP: each response billed exactly the usage the
 * emulator recorded, the emulator's record showing the turns came over its socket; an upstream socket lost
 * mid-response is billed by the cut-stream rule (the same charge as the same cut over HTTP), the client gets an
 * error event and its socket stays usable; an upstream refusal is an error event that charges nothing, or fails
 * over to the next channel; lanes open a connection each and reuse them; the upstream sockets close with the
 * client's, and a client gone mid-response closes the one it was using.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { ResponsesWS } from "openai/resources/responses/ws"
import { basicConfig, startGateway, type TestGateway } from "../support/Gateway.ts"

const KEY = "sk-test-alice-0001"
const UPSTREAM_KEY = "sk-test-up-ws-1"

const config = (emulatorUrl: string) =>
  basicConfig(emulatorUrl, {
    models: {
      "gpt-ws": { input: 2, output: 8 },
      "gpt-http": { input: 2, output: 8 },
      "gpt-fo": { input: 2, output: 8 }
    },
    channels: [
      {
        name: "emu-openai-socket",
        type: "openai",
        base_url: `${emulatorUrl}/v1`,
        keys: [UPSTREAM_KEY],
        models: ["gpt-ws", "gpt-fo"],
        priority: 10,
        settings: { responses_api: true, responses_websocket: true }
      },
      {
        name: "emu-openai-http",
        type: "openai",
        base_url: emulatorUrl,
        keys: ["sk-test-up-http-1"],
        models: ["gpt-http", "gpt-fo"],
        settings: { responses_api: true }
      }
    ],
    users: [{ username: "alice", group: "default", quota: 100_000_000, tokens: [{ name: "main", key: KEY }] }]
  })

/** A server event as the tests read it. */
interface Event {
  readonly type: string
  readonly status?: number
  readonly error?: { readonly code: string | null; readonly message: string }
  readonly response?: {
    readonly id: string
    readonly output: ReadonlyArray<Record<string, unknown>>
    readonly usage: { readonly input_tokens: number; readonly output_tokens: number } | null
  }
  readonly delta?: string
}

const TERMINAL = new Set(["response.completed", "response.incomplete", "response.failed", "error"])

const connect = (gateway: TestGateway) => {
  const socket = new ResponsesWS(new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 }))
  const events: Array<Event> = []
  let closed: number | undefined
  socket.on("event", (event) => events.push(event as unknown as Event))
  socket.on("error", () => {})
  socket.on("close", (code) => closed = code)
  const until = async (done: () => boolean, what: string) => {
    for (let tries = 0; tries < 1000 && !done(); tries++) await new Promise((resolve) => setTimeout(resolve, 10))
    if (!done()) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(events.map((e) => e.type))}`)
  }
  /** Sends a create and answers the events it got, up to its terminal one. */
  const run = async (event: Record<string, unknown>): Promise<ReadonlyArray<Event>> => {
    const from = events.length
    socket.send({ type: "response.create", ...event } as never)
    await until(() => events.slice(from).some((e) => TERMINAL.has(e.type)), "a terminal event")
    return events.slice(from)
  }
  const close = async () => {
    socket.close({ code: 1000, reason: "done" })
    await until(() => closed !== undefined, "the close")
  }
  return { run, close, closed: () => closed, events: () => events }
}

/** The usage rows, oldest first. */
const rows = (gateway: TestGateway) =>
  gateway.query<{ model: string; prompt_tokens: number; completion_tokens: number; cost: string }>(
    "SELECT model, prompt_tokens, completion_tokens, cost::text AS cost FROM usage_logs ORDER BY id"
  )

/** The emulator's `/v1/responses` records (handshakes and creates). */
const responsesCalls = (gateway: TestGateway) =>
  gateway.emulator.requests.filter((request) => request.path === "/v1/responses")

const WEATHER = {
  type: "function",
  name: "get_weather",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  strict: false
}

const cost = (prompt: number, completion: number) => BigInt(Math.ceil(prompt * 2 + completion * 8))

Deno.test("responses socket to an openai channel over its own upstream socket", async (t) => {
  const gateway = await startGateway({ config, store: "postgres" })
  try {
    await t.step(
      "a tool loop with store: false: one upstream socket, every turn over it, billed as recorded",
      async () => {
        const socket = connect(gateway)
        try {
          const first = (await socket.run({
            model: "gpt-ws",
            input: "What is the weather in Lisbon?",
            tools: [WEATHER],
            store: false
          })).at(-1)!
          strictEqual(first.type, "response.completed", JSON.stringify(first))
          const call = first.response!.output.find((item) => item.type === "function_call")
          ok(call !== undefined, JSON.stringify(first.response!.output))
          const second = (await socket.run({
            model: "gpt-ws",
            previous_response_id: first.response!.id,
            input: [{ type: "function_call_output", call_id: call.call_id, output: "warm, 24 C" }],
            tools: [WEATHER],
            store: false
          })).at(-1)!
          strictEqual(second.type, "response.completed", JSON.stringify(second))
          ok(JSON.stringify(second.response!.output).includes("Tool result: warm, 24 C"))
          const third = (await socket.run({
            model: "gpt-ws",
            previous_response_id: second.response!.id,
            input: "thanks",
            store: false
          })).at(-1)!
          strictEqual(third.type, "response.completed", JSON.stringify(third))
          ok(JSON.stringify(third.response!.output).includes("Echo: thanks"))

          const calls = responsesCalls(gateway)
          deepStrictEqual(
            calls.map((request) => [request.method, request.transport]),
            [["GET", "websocket"], ["POST", "websocket"], ["POST", "websocket"], ["POST", "websocket"]],
            "one upstream handshake, then every turn over that socket; nothing over HTTP"
          )
          strictEqual(calls[0].key, UPSTREAM_KEY, "the handshake carries the channel's key")
          ok(!JSON.stringify(calls).includes(KEY), "the caller's key never reaches the upstream")
          const previous = calls.map((request) =>
            (request.body as { previous_response_id?: string })?.previous_response_id
          )
          deepStrictEqual(
            previous.slice(1),
            [undefined, first.response!.id, second.response!.id],
            "later turns send only their new input, continuing the upstream socket's last response"
          )
          const last = JSON.stringify(calls[3].body)
          ok(last.includes("What is the weather in Lisbon?") && last.includes("warm, 24 C"), "the turns' history")

          const billed = await rows(gateway)
          const recorded = calls.filter((request) => request.usage !== undefined)
          strictEqual(recorded.length, 3)
          deepStrictEqual(
            billed.map((row) => [row.prompt_tokens, row.completion_tokens]),
            recorded.map((request) => [request.usage!.input, request.usage!.output]),
            "each response billed exactly what the emulator recorded"
          )
          for (const row of billed) strictEqual(BigInt(row.cost), cost(row.prompt_tokens, row.completion_tokens))
        } finally {
          await socket.close()
        }
      }
    )

    await t.step("another client socket opens its own upstream socket; HTTP callers still use HTTP", async () => {
      const before = responsesCalls(gateway).length
      const socket = connect(gateway)
      try {
        strictEqual((await socket.run({ model: "gpt-ws", input: "hello" })).at(-1)?.type, "response.completed")
        strictEqual((await socket.run({ model: "gpt-ws", input: "again" })).at(-1)?.type, "response.completed")
      } finally {
        await socket.close()
      }
      const http = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
      const answer = await http.responses.create({ model: "gpt-ws", input: "over http" })
      strictEqual(answer.output_text, "Echo: over http")
      deepStrictEqual(
        responsesCalls(gateway).slice(before).map((request) => [request.method, request.transport]),
        [["GET", "websocket"], ["POST", "websocket"], ["POST", "websocket"], ["POST", "http"]]
      )
    })

    await t.step("an upstream refusal is an error event, charges nothing, the socket stays usable", async () => {
      const charged = async () => (await rows(gateway)).reduce((sum, row) => sum + BigInt(row.cost), 0n)
      const before = await charged()
      gateway.emulator.setFaults([{ match: { path: "/v1/responses" }, status: 400, message: "Bad thing.", times: 1 }])
      const socket = connect(gateway)
      try {
        const refused = (await socket.run({ model: "gpt-ws", input: "refuse me" })).at(-1)!
        strictEqual(refused.type, "error", JSON.stringify(refused))
        strictEqual(refused.status, 400)
        strictEqual(await charged(), before, "nothing charged")
        strictEqual((await socket.run({ model: "gpt-ws", input: "fine" })).at(-1)?.type, "response.completed")
      } finally {
        gateway.emulator.clearFaults()
        await socket.close()
      }
    })

    await t.step(
      "the upstream socket lost mid-response: the cut-stream rule, an error event, the socket usable",
      async () => {
        const story = Array.from({ length: 30 }, (_, index) => `word${index}`).join(" ")
        const cutAfter = (model: string) => {
          gateway.emulator.setFaults([{ match: { path: "/v1/responses", model }, breakAfterEvents: 9, times: 1 }])
        }
        const socket = connect(gateway)
        try {
          const handshakes = () => responsesCalls(gateway).filter((request) => request.method === "GET").length
          const before = handshakes()
          const billedBefore = (await rows(gateway)).length
          cutAfter("gpt-ws")
          const events = await socket.run({ model: "gpt-ws", input: story })
          const end = events.at(-1)!
          deepStrictEqual(
            { type: end.type, status: end.status, code: end.error?.code },
            { type: "error", status: 502, code: "upstream_error" },
            "OpenAI's socket error event"
          )
          ok(!events.some((event) => event.type === "response.completed"))
          const delivered = events.filter((event) => event.type === "response.output_text.delta")
          ok(delivered.length > 0, "some of the answer reached the client")
          strictEqual(responsesCalls(gateway).at(-1)?.transport, "websocket")

          // The same cut over HTTP (the same request on an HTTP channel) is billed the same.
          cutAfter("gpt-http")
          const overHttp = await socket.run({ model: "gpt-http", input: story })
          ok(!overHttp.some((event) => event.type === "response.completed"))
          strictEqual(responsesCalls(gateway).at(-1)?.transport, "http")
          // A cut response's usage row follows with the usage log's next flush.
          let billed = (await rows(gateway)).slice(billedBefore)
          for (let tries = 0; tries < 300 && billed.length < 2; tries++) {
            await new Promise((resolve) => setTimeout(resolve, 10))
            billed = (await rows(gateway)).slice(billedBefore)
          }
          strictEqual(billed.length, 2, "both cut responses have their row")
          const [socketCut, httpCut] = billed
          ok(socketCut.completion_tokens > 0 && socketCut.completion_tokens < 30, JSON.stringify(socketCut))
          deepStrictEqual(
            [socketCut.prompt_tokens, socketCut.completion_tokens, socketCut.cost],
            [httpCut.prompt_tokens, httpCut.completion_tokens, httpCut.cost],
            "billed as the same cut over HTTP is"
          )
          strictEqual(BigInt(socketCut.cost), cost(socketCut.prompt_tokens, socketCut.completion_tokens))

          const after = (await socket.run({ model: "gpt-ws", input: "still there?" })).at(-1)!
          strictEqual(after.type, "response.completed", JSON.stringify(after))
          strictEqual(handshakes(), before + 2, "a new upstream socket replaced the lost one")
          strictEqual(socket.closed(), undefined, "the client's socket stayed open")
        } finally {
          gateway.emulator.clearFaults()
          await socket.close()
        }
      }
    )

    await t.step("an upstream socket's refusal fails over to the next channel, billed once", async () => {
      const before = (await rows(gateway)).length
      gateway.emulator.setFaults([{ match: { path: "/v1/responses", model: "gpt-fo" }, status: 500, times: 1 }])
      const socket = connect(gateway)
      try {
        const from = responsesCalls(gateway).length
        const answer = (await socket.run({ model: "gpt-fo", input: "fail over" })).at(-1)!
        strictEqual(answer.type, "response.completed", JSON.stringify(answer))
        const calls = responsesCalls(gateway).slice(from).filter((request) => request.method === "POST")
        deepStrictEqual(calls.map((request) => [request.key, request.transport]), [
          [UPSTREAM_KEY, "websocket"],
          ["sk-test-up-http-1", "http"]
        ], "the socket channel refused, the HTTP channel answered")
        const billed = (await rows(gateway)).slice(before).filter((row) => BigInt(row.cost) > 0n)
        deepStrictEqual(
          billed.map((row) => [row.prompt_tokens, row.completion_tokens]),
          [[calls[1].usage!.input, calls[1].usage!.output]],
          "billed once, what the answering channel reported"
        )
      } finally {
        gateway.emulator.clearFaults()
        await socket.close()
      }
    })

    await t.step("two lanes open a connection each, reused by later turns; all close with the client's", async () => {
      const handshakes = () => responsesCalls(gateway).filter((request) => request.method === "GET").length
      const before = handshakes()
      const socket = connect(gateway)
      try {
        const words = "alpha beta gamma delta epsilon zeta eta theta"
        const lanes = ["a", "b"]
        for (let round = 0; round < 2; round++) {
          const runs = lanes.map((lane) => socket.run({ model: "gpt-ws", input: `${lane} ${words}`, stream_id: lane }))
          const ends = await Promise.all(runs)
          for (const events of ends) ok(events.some((event) => event.type === "response.completed"))
        }
        ok(handshakes() - before <= 2, `at most one upstream socket per lane (${handshakes() - before})`)
        ok(gateway.emulator.openResponsesSockets() >= 1)
      } finally {
        await socket.close()
      }
      for (let tries = 0; tries < 300 && gateway.emulator.openResponsesSockets() > 0; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      strictEqual(gateway.emulator.openResponsesSockets(), 0, "the upstream sockets closed with the client's")
    })

    await t.step(
      "a client gone mid-response closes its upstream socket and is billed for what was delivered",
      async () => {
        const before = (await rows(gateway)).length
        gateway.emulator.setFaults([{ match: { path: "/v1/responses", model: "gpt-ws" }, paceMs: 40, times: 1 }])
        const socket = connect(gateway)
        const story = Array.from({ length: 40 }, (_, index) => `word${index}`).join(" ")
        try {
          const pending = socket.run({ model: "gpt-ws", input: story })
          pending.catch(() => {})
          for (let tries = 0; tries < 300; tries++) {
            if (socket.events().filter((event) => event.type === "response.output_text.delta").length >= 3) break
            await new Promise((resolve) => setTimeout(resolve, 10))
          }
        } finally {
          await socket.close()
        }
        const cut = gateway.emulator.requests.at(-1)!
        strictEqual(cut.transport, "websocket")
        for (let tries = 0; tries < 300 && gateway.emulator.openResponsesSockets() > 0; tries++) {
          await new Promise((resolve) => setTimeout(resolve, 10))
        }
        strictEqual(gateway.emulator.openResponsesSockets(), 0, "the upstream socket was closed")
        ok(cut.aborted, "the upstream response was interrupted")
        let billed = (await rows(gateway)).slice(before)
        for (let tries = 0; tries < 300 && billed.length === 0; tries++) {
          await new Promise((resolve) => setTimeout(resolve, 10))
          billed = (await rows(gateway)).slice(before)
        }
        strictEqual(billed.length, 1, "the cut response has its row")
        ok(billed[0].completion_tokens >= 3 && billed[0].completion_tokens < 40, JSON.stringify(billed[0]))
        strictEqual(BigInt(billed[0].cost), cost(billed[0].prompt_tokens, billed[0].completion_tokens))
      }
    )
  } finally {
    await gateway.close()
  }
})
