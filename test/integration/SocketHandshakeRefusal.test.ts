/**
 * An upstream socket's handshake the vendor refuses with an HTTP error is that error, read as it is over HTTP: the
 * emulator answers a key it does not hold with OpenAI's 401 `invalid_api_key` on its Realtime and Responses
 * sockets, so the refused key is disabled (the channel's `auto_disable`) and the next channel serves the socket;
 * the session goes on, billed as the emulator reported.
 */
import { ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { ResponsesWS } from "openai/resources/responses/ws"
import { startEmulator } from "../../emulator/Emulator.ts"
import { basicConfig, startGateway, type TestGateway } from "../support/Gateway.ts"

const KEY = "sk-test-alice-0001"
const GOOD_UPSTREAM = "sk-test-up-good-1"
const REFUSED_UPSTREAM = "sk-test-up-revoked-1"

const config = (emulatorUrl: string) =>
  basicConfig(emulatorUrl, {
    models: {
      "gpt-rt": { input: 4, output: 16, audio_input: 32, audio_output: 64 },
      "gpt-ws": { input: 2, output: 8 }
    },
    channels: [
      {
        name: "emu-revoked",
        type: "openai",
        base_url: `${emulatorUrl}/v1`,
        keys: [REFUSED_UPSTREAM],
        models: ["gpt-rt", "gpt-ws"],
        priority: 10,
        settings: { responses_api: true, responses_websocket: true, auto_disable: true }
      },
      {
        name: "emu-good",
        type: "openai",
        base_url: `${emulatorUrl}/v1`,
        keys: [GOOD_UPSTREAM],
        models: ["gpt-rt", "gpt-ws"],
        settings: { responses_api: true, responses_websocket: true }
      }
    ],
    users: [{ username: "alice", group: "default", quota: 100_000_000, tokens: [{ name: "main", key: KEY }] }]
  })

/** Whether the key of channel `name` is enabled. */
const keyEnabled = async (gateway: TestGateway, name: string): Promise<boolean> =>
  (await gateway.query<{ readonly enabled: boolean }>(
    `SELECT k.enabled FROM channel_keys k JOIN channels c ON c.id = k.channel_id WHERE c.name = '${name}'`
  ))[0].enabled

/** Waits until `done` holds (a health write lands after the answer), at most 5 s. */
const until = async (done: () => boolean | Promise<boolean>, what: string) => {
  for (let tries = 0; tries < 100; tries++) {
    if (await done()) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`timed out waiting for ${what}`)
}

/** The usage rows' costs and the emulator's handshakes with their keys, for `path`. */
const handshakes = (gateway: TestGateway, path: string) =>
  gateway.emulator.requests.filter((request) => request.path === path && request.transport === "websocket")

Deno.test("a refused upstream socket handshake disables the refused key and fails over: Realtime", async () => {
  const emulator = startEmulator({ validKeys: [GOOD_UPSTREAM] })
  const gateway = await startGateway({ config, emulator, ownsEmulator: true, store: "postgres" })
  try {
    const socket = new WebSocket(`${gateway.url.replace(/^http/, "ws")}/v1/realtime?model=gpt-rt`, [
      "realtime",
      `openai-insecure-api-key.${KEY}`
    ])
    const events: Array<{ readonly type: string; readonly response?: { readonly usage?: unknown } }> = []
    socket.onmessage = (message) => events.push(JSON.parse(message.data))
    await new Promise((resolve, reject) => {
      socket.onopen = resolve
      socket.onerror = reject
    })
    await until(() => events.some((event) => event.type === "session.created"), "session.created")
    socket.send(JSON.stringify({ type: "response.create", response: { output_modalities: ["text"] } }))
    await until(() => events.some((event) => event.type === "response.done"), "response.done")
    socket.close(1000)
    const keys = handshakes(gateway, "/v1/realtime").map((request) => request.key)
    strictEqual(keys[0], REFUSED_UPSTREAM, "the refused channel was tried first")
    strictEqual(keys.at(-1), GOOD_UPSTREAM, "the next channel served the session")
    await until(async () => !(await keyEnabled(gateway, "emu-revoked")), "the refused key's disable")
    ok(await keyEnabled(gateway, "emu-good"))
    // The session's response is billed as the emulator reported it.
    const reported = gateway.emulator.realtime.at(-1)
    ok(reported !== undefined, "the emulator recorded the response")
    await until(async () => (await gateway.query("SELECT 1 FROM usage_logs WHERE status = 200")).length === 1, "row")
    const [row] = await gateway.query<{ readonly prompt_tokens: number; readonly completion_tokens: number }>(
      "SELECT prompt_tokens, completion_tokens FROM usage_logs WHERE status = 200"
    )
    strictEqual(row.prompt_tokens, reported.usage.input_tokens)
    strictEqual(row.completion_tokens, reported.usage.output_tokens)
  } finally {
    await gateway.close()
  }
})

Deno.test("a refused upstream socket handshake disables the refused key and fails over: Responses socket", async () => {
  const emulator = startEmulator({ validKeys: [GOOD_UPSTREAM] })
  const gateway = await startGateway({ config, emulator, ownsEmulator: true, store: "postgres" })
  try {
    const socket = new ResponsesWS(new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 }))
    const events: Array<{ readonly type: string }> = []
    socket.on("event", (event) => events.push(event))
    socket.on("error", () => {})
    socket.send({ type: "response.create", model: "gpt-ws", input: "hello there", store: false } as never)
    await until(() => events.some((event) => event.type === "response.completed"), "response.completed")
    socket.close({ code: 1000, reason: "done" })
    const keys = handshakes(gateway, "/v1/responses").map((request) => request.key)
    strictEqual(keys[0], REFUSED_UPSTREAM, "the refused channel was tried first")
    ok(keys.includes(GOOD_UPSTREAM), "the next channel served the turn")
    await until(async () => !(await keyEnabled(gateway, "emu-revoked")), "the refused key's disable")
    ok(await keyEnabled(gateway, "emu-good"))
  } finally {
    await gateway.close()
  }
})
