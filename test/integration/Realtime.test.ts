/**
 * The Realtime relay end to end: the `openai` package's `OpenAIRealtimeWS` (`openai/realtime/ws`, which only speaks
 * `wss://`, so the gateway gets a TLS listener with a self-signed certificate) and a raw `WebSocket` with the
 * browser subprotocol key, through the gateway to the emulator's Realtime socket. Every response is billed exactly
 * the usage the emulator reported for it (`emulator.realtime`), priced here by hand (text at `input` / `output` /
 * `cached_input`, audio at `audio_input` / `audio_output` / `cached_audio_input`): a text response, an audio
 * response and one started by server turn detection. A user whose balance covers about two responses is closed
 * with 1008 and an `error` event, charged no more than it had; a model without audio prices is refused at the
 * handshake; bad frames are answered with `error` events, never forwarded, never charged.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { OpenAIRealtimeWS } from "openai/realtime/ws"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { startEmulator } from "../../emulator/Emulator.ts"
import type { RealtimeRecord } from "../../emulator/Realtime.ts"
import { browser } from "../support/Browser.ts"
import { ROOT_PASSWORD, startGateway, type TestGateway } from "../support/Gateway.ts"
import { testCertificate } from "../support/TestCert.ts"

const KEY = "sk-test-realtime-0001"
const POOR_KEY = "sk-test-realtime-poor"
const UPSTREAM_KEY = "sk-test-upstream-rt"
const POOR_QUOTA = 700n
const LIMITED_KEY = "sk-test-realtime-limited"

/** Prices in tenths of a USD per 1M tokens (so every product below is an integer number of tenths of a unit). */
const TENTHS = { input: 40n, cachedInput: 4n, output: 160n, audioInput: 320n, cachedAudioInput: 4n, audioOutput: 640n }

const config = (emulatorUrl: string, settings: Record<string, number> = {}) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: {
        "gpt-realtime-test": {
          input: 4,
          cached_input: 0.4,
          output: 16,
          audio_input: 32,
          cached_audio_input: 0.4,
          audio_output: 64
        },
        "gpt-realtime-flat": { input: 10, output: 10, audio_input: 10, audio_output: 10 },
        "gpt-realtime-noaudio": { input: 4, output: 16 }
      },
      channels: [{
        name: "emu-realtime",
        type: "openai",
        base_url: `${emulatorUrl}/v1`,
        keys: [UPSTREAM_KEY],
        models: ["gpt-realtime-test", "gpt-realtime-flat", "gpt-realtime-noaudio"],
        model_mapping: { "gpt-realtime-test": "gpt-realtime-2025-08-28" }
      }],
      users: [
        { username: "alice", group: "default", quota: 100_000_000, tokens: [{ name: "main", key: KEY }] },
        { username: "bob", group: "default", quota: Number(POOR_QUOTA), tokens: [{ name: "main", key: POOR_KEY }] },
        {
          username: "carol",
          group: "default",
          quota: 100_000_000,
          tokens: [{ name: "main", key: LIMITED_KEY, limits: { rpm: 3, concurrency: 1 } }]
        }
      ],
      settings: {
        realtime_float_input_tokens: 20,
        realtime_float_output_tokens: 10,
        websocket_max_frame_bytes: 1_048_576,
        ...settings
      }
    }),
    "realtime.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

/** The cost of one reported usage at the test prices, by hand: ⌈Σ tokens × tenths / 10⌉ quota units. */
const expectedCost = (usage: RealtimeRecord["usage"], flat = false): bigint => {
  const n = (value: unknown) => BigInt(typeof value === "number" ? value : 0)
  const input = usage.input_token_details as Record<string, unknown>
  const cached = input.cached_tokens_details as Record<string, unknown>
  const output = usage.output_token_details as Record<string, unknown>
  if (flat) return (n(usage.input_tokens) + n(usage.output_tokens)) * 10n
  const tenths = (n(input.text_tokens) - n(cached.text_tokens)) * TENTHS.input +
    n(cached.text_tokens) * TENTHS.cachedInput +
    (n(input.audio_tokens) - n(cached.audio_tokens)) * TENTHS.audioInput +
    n(cached.audio_tokens) * TENTHS.cachedAudioInput +
    n(output.text_tokens) * TENTHS.output + n(output.audio_tokens) * TENTHS.audioOutput
  return (tenths + 9n) / 10n
}

/** The next server event of `type` on `rt`. */
const next = <T = Record<string, unknown>>(rt: OpenAIRealtimeWS, type: string): Promise<T> =>
  new Promise((resolve) => {
    const listener = (event: { type: string }) => {
      if (event.type !== type) return
      rt.off("event", listener)
      resolve(event as T)
    }
    rt.on("event", listener)
  })

const connect = async (gateway: TestGateway, key: string, model: string) => {
  const { cert } = await testCertificate()
  const client = new OpenAI({ apiKey: key, baseURL: `${gateway.tlsUrl}/v1` })
  const rt = new OpenAIRealtimeWS({ model, options: { ca: cert } }, client)
  const errors: Array<Record<string, unknown>> = []
  rt.on("error", (error) => errors.push({ ...(error.error ?? { message: error.message }) }))
  const closed = new Promise<number>((resolve) => rt.socket.on("close", (code: number) => resolve(code)))
  const created = next<{ session: { model: string } }>(rt, "session.created")
  return { rt, errors, closed, created }
}

const base64Audio = (bytes: number): string => {
  const samples = new Uint8Array(bytes)
  for (let index = 0; index < bytes; index++) samples[index] = (index * 7) % 251
  let binary = ""
  for (const byte of samples) binary += String.fromCharCode(byte)
  return btoa(binary)
}

interface UsageRow {
  readonly request_id: string
  readonly cost: string
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly cached_tokens: number
  readonly audio_input_tokens: number
  readonly audio_output_tokens: number
  readonly status: number
}

const usageRows = (gateway: TestGateway, username: string) =>
  gateway.query<UsageRow>(`
    SELECT l.request_id, l.cost::text AS cost, l.prompt_tokens, l.completion_tokens, l.cached_tokens,
      l.audio_input_tokens, l.audio_output_tokens, l.status
    FROM usage_logs l JOIN users u ON u.id = l.user_id WHERE u.username = '${username}' ORDER BY l.id`)

const withGateway = async (run: (gateway: TestGateway) => Promise<void>) => {
  const gateway = await startGateway({ config, store: "postgres", tls: await testCertificate() })
  try {
    await run(gateway)
  } finally {
    await gateway.close()
  }
}

Deno.test("Realtime: text, audio and server-VAD responses through OpenAIRealtimeWS, each billed as reported", () =>
  withGateway(async (gateway) => {
    const { rt, errors, closed, created } = await connect(gateway, KEY, "gpt-realtime-test")
    const session = await created
    strictEqual(session.session.model, "gpt-realtime-2025-08-28")

    rt.send({ type: "session.update", session: { type: "realtime", output_modalities: ["text"] } })
    await next(rt, "session.updated")
    rt.send({
      type: "conversation.item.create",
      item: { type: "message", role: "user", content: [{ type: "input_text", text: "Say hello to the gateway." }] }
    })
    await next(rt, "conversation.item.done")

    // A text response.
    const deltas: Array<string> = []
    const onText = (event: { delta: string }) => deltas.push(event.delta)
    rt.on("response.output_text.delta", onText)
    const textDone = next<{ response: { id: string } }>(rt, "response.done")
    rt.send({ type: "response.create" })
    const text = await textDone
    rt.off("response.output_text.delta", onText)
    strictEqual(deltas.join(""), "Hello from the realtime emulator.")

    // An audio response: base64 PCM deltas and their transcript.
    let audioBytes = 0
    const transcript: Array<string> = []
    const onAudio = (event: { delta: string }) => audioBytes += atob(event.delta).length
    const onTranscript = (event: { delta: string }) => transcript.push(event.delta)
    rt.on("response.output_audio.delta", onAudio)
    rt.on("response.output_audio_transcript.delta", onTranscript)
    const audioDone = next<{ response: { id: string } }>(rt, "response.done")
    rt.send({ type: "response.create", response: { output_modalities: ["audio"] } })
    const audio = await audioDone
    ok(audioBytes > 0, "audio deltas arrived")
    strictEqual(transcript.join(""), "Hello from the realtime emulator.")

    // Server turn detection: a committed buffer starts a response with no response.create.
    rt.send({
      type: "session.update",
      session: { type: "realtime", audio: { input: { turn_detection: { type: "server_vad" } } } }
    })
    await next(rt, "session.updated")
    const vadDone = next<{ response: { id: string } }>(rt, "response.done")
    rt.send({ type: "input_audio_buffer.append", audio: base64Audio(16_000) })
    rt.send({ type: "input_audio_buffer.commit" })
    const vad = await vadDone
    rt.close()
    strictEqual(await closed, 1000)
    deepStrictEqual(errors, [])

    const records = gateway.emulator.realtime
    deepStrictEqual(records.map((record) => record.trigger), ["client", "client", "vad"])
    deepStrictEqual(records.map((record) => record.responseId), [text.response.id, audio.response.id, vad.response.id])
    ok(
      records.some((record) => Number((record.usage.output_token_details as { audio_tokens: number }).audio_tokens) > 0)
    )
    ok(
      records.some((record) => Number((record.usage.input_token_details as { audio_tokens: number }).audio_tokens) > 0)
    )
    ok(
      records.some((record) =>
        Number((record.usage.input_token_details as { cached_tokens: number }).cached_tokens) > 0
      )
    )
    const rows = await usageRows(gateway, "alice")
    strictEqual(rows.length, 3)
    for (const [index, row] of rows.entries()) {
      const record = records[index]
      ok(row.request_id.startsWith("rtsock_") && row.request_id.endsWith(`/${record.responseId}`), row.request_id)
      strictEqual(BigInt(row.cost), expectedCost(record.usage), `response ${index} billed as reported`)
      strictEqual(row.prompt_tokens, record.usage.input_tokens)
      strictEqual(row.completion_tokens, record.usage.output_tokens)
      const details = (name: string) => (record.usage[name] as { audio_tokens?: number } | undefined)?.audio_tokens ?? 0
      strictEqual(row.audio_input_tokens, details("input_token_details"), "the audio input the vendor reported")
      strictEqual(row.audio_output_tokens, details("output_token_details"), "the audio output the vendor reported")
      strictEqual(row.status, 200)
    }
    const [user] = await gateway.query<{ quota: string }>(
      `SELECT quota::text AS quota FROM users WHERE username = 'alice'`
    )
    strictEqual(BigInt(user.quota), 100_000_000n - rows.reduce((sum, row) => sum + BigInt(row.cost), 0n))

    // The upstream handshake: the channel's key as a Bearer header, the mapped model, no caller key anywhere.
    const handshakes = gateway.emulator.requests.filter((request) => request.path === "/v1/realtime")
    strictEqual(handshakes.length, 1)
    strictEqual(handshakes[0].key, UPSTREAM_KEY)
    strictEqual(handshakes[0].query.model, "gpt-realtime-2025-08-28")
    ok(!JSON.stringify(handshakes[0]).includes(KEY))

    // Metrics: frames and bytes each way, no socket left open; one log line per response and one for the end.
    const metrics = await (await fetch(`${gateway.url}/metrics`)).text()
    for (const direction of ["in", "out"]) {
      ok(
        new RegExp(`sluice_websocket_frames_total\\{[^}]*direction="${direction}"[^}]*\\} [1-9]`).test(metrics),
        direction
      )
      ok(new RegExp(`sluice_websocket_bytes_total\\{[^}]*direction="${direction}"[^}]*\\} [1-9]`).test(metrics))
    }
    ok(/sluice_websocket_open\{[^}]*\} 0/.test(metrics))
    strictEqual(gateway.logs.filter((line) => line.includes("Realtime response billed")).length, 3)
    strictEqual(gateway.logs.filter((line) => line.includes("Realtime socket ended")).length, 1)
    const handshakeLines = gateway.logs.filter((line) => line.includes('"route":"/v1/realtime"'))
      .map((line) => JSON.parse(line)).filter((line) => line.msg === "request")
    deepStrictEqual(handshakeLines.map((line) => line.status), [101], "the handshake's access line is its 101")
  }))

Deno.test("Realtime: a balance for about two responses ends the session with 1008, never charged beyond it", () =>
  withGateway(async (gateway) => {
    const { rt, errors, closed, created } = await connect(gateway, POOR_KEY, "gpt-realtime-flat")
    await created
    rt.send({ type: "session.update", session: { type: "realtime", output_modalities: ["text"] } })
    await next(rt, "session.updated")
    let code: number | undefined
    void closed.then((value) => code = value)
    let done = 0
    // Ask for a response after each one, until the gateway closes the socket.
    for (let turn = 0; turn < 10 && code === undefined; turn++) {
      const finished = Promise.race([next(rt, "response.done").then(() => true), closed.then(() => false)])
      rt.send({ type: "response.create" })
      if (await finished) done++
    }
    strictEqual(await closed, 1008)
    ok(done >= 2, `${done} responses ran`)
    ok(errors.some((error) => error.code === "insufficient_user_quota"), JSON.stringify(errors))

    const records = gateway.emulator.realtime
    strictEqual(records.length, done)
    const rows = await usageRows(gateway, "bob")
    strictEqual(rows.length, records.length)
    const charged = rows.reduce((sum, row) => sum + BigInt(row.cost), 0n)
    strictEqual(charged, records.reduce((sum, record) => sum + expectedCost(record.usage, true), 0n))
    ok(charged <= POOR_QUOTA)
    const [user] = await gateway.query<{ quota: string }>(
      `SELECT quota::text AS quota FROM users WHERE username = 'bob'`
    )
    strictEqual(BigInt(user.quota), POOR_QUOTA - charged)
  }))

Deno.test("Realtime: no audio price is model_price_not_set at the handshake; a bad key is 401", () =>
  withGateway(async (gateway) => {
    const handshake = (model: string, key: string) =>
      gateway.handler(
        new Request(`http://gateway/v1/realtime?model=${model}`, {
          headers: {
            authorization: `Bearer ${key}`,
            upgrade: "websocket",
            connection: "Upgrade",
            "sec-websocket-version": "13",
            "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ=="
          }
        })
      )
    const unpriced = await handshake("gpt-realtime-noaudio", KEY)
    strictEqual(unpriced.status, 400)
    const body = await unpriced.json()
    strictEqual(body.error.code, "model_price_not_set")
    strictEqual(body.error.param, "model")
    const refused = await handshake("gpt-realtime-test", "sk-not-a-key")
    strictEqual(refused.status, 401)
    strictEqual((await refused.json()).error.code, "invalid_api_key")
    strictEqual(gateway.emulator.requests.filter((request) => request.path === "/v1/realtime").length, 0)
    const rows = await usageRows(gateway, "alice")
    strictEqual(rows.length, 0)

    // The admin pricing API takes the audio prices, shows them back, and the model is served from then on.
    const root = browser(gateway.url)
    await root.login("root", ROOT_PASSWORD)
    const audioPrices = { audio_input: 32, audio_output: 64, cached_audio_input: 0.4 }
    const put = await root.call("PUT", "/api/pricing", {
      model: "gpt-realtime-noaudio",
      input: 4,
      output: 16,
      ...audioPrices
    })
    strictEqual(put.success, true, put.message)
    const listed = await root.call<Array<Record<string, unknown>>>("GET", "/api/pricing")
    deepStrictEqual(
      listed.data.find((row) => row.model === "gpt-realtime-noaudio"),
      { model: "gpt-realtime-noaudio", input: 4, output: 16, ...audioPrices, free: false }
    )
    let served = await handshake("gpt-realtime-noaudio", KEY)
    for (let tries = 0; tries < 50 && served.status === 400; tries++) {
      await served.body?.cancel()
      await new Promise((resolve) => setTimeout(resolve, 100))
      served = await handshake("gpt-realtime-noaudio", KEY)
    }
    // Past the price check: the upstream socket opened and the handshake was answered with its 101.
    strictEqual(served.status, 101)
    strictEqual(gateway.emulator.requests.filter((request) => request.path === "/v1/realtime").length, 1)
  }))

Deno.test("Realtime: the browser subprotocol key, and bad frames answered with error events, charged nothing", () =>
  withGateway(async (gateway) => {
    const socket = new WebSocket(`${gateway.url.replace("http", "ws")}/v1/realtime?model=gpt-realtime-test`, [
      "realtime",
      `openai-insecure-api-key.${KEY}`
    ])
    const events: Array<Record<string, unknown>> = []
    const waiters: Array<() => void> = []
    socket.onmessage = (message) => {
      events.push(JSON.parse(message.data))
      for (const wake of waiters.splice(0)) wake()
    }
    const closed = new Promise<number>((resolve) => socket.onclose = (event) => resolve(event.code))
    await new Promise((resolve, reject) => {
      socket.onopen = resolve
      socket.onerror = reject
    })
    strictEqual(socket.protocol, "realtime")
    const waitFor = async (predicate: (event: Record<string, unknown>) => boolean) => {
      while (!events.some(predicate)) await new Promise<void>((resolve) => waiters.push(resolve))
      const index = events.findIndex(predicate)
      return events.splice(index, 1)[0]
    }
    await waitFor((event) => event.type === "session.created")

    const refusals: Array<[string | Uint8Array, string]> = [
      ["not json at all", "invalid_json"],
      [new Uint8Array([1, 2, 3]), "invalid_frame"],
      ["x".repeat(10 * 1024 * 1024), "frame_too_large"],
      [JSON.stringify({ no: "type" }), "missing_required_parameter"],
      ['{"type":"conversation.item.create","text":"\\ud800"}', "invalid_json"],
      ["[1,2]", "invalid_event"]
    ]
    for (const [frame, code] of refusals) {
      socket.send(frame)
      const error = await waitFor((event) => event.type === "error")
      strictEqual((error.error as { code: string }).code, code, `frame answered with ${code}`)
    }
    strictEqual(gateway.emulator.realtime.length, 0)

    // Still usable: a response after the refusals is relayed and billed.
    socket.send(JSON.stringify({ type: "response.create", response: { output_modalities: ["text"] } }))
    await waitFor((event) => event.type === "response.done")
    socket.close(1000)
    strictEqual(await closed, 1000)
    const rows = await usageRows(gateway, "alice")
    strictEqual(rows.length, 1)
    strictEqual(BigInt(rows[0].cost), expectedCost(gateway.emulator.realtime[0].usage))
  }))

Deno.test("Realtime: the gateway's shutdown closes an open session with 1001 and releases its float", async () => {
  const gateway = await startGateway({ config, store: "postgres" })
  try {
    const socket = new WebSocket(`${gateway.url.replace("http", "ws")}/v1/realtime?model=gpt-realtime-test`, [
      "realtime",
      `openai-insecure-api-key.${KEY}`
    ])
    const created = new Promise((resolve) => socket.onmessage = resolve)
    const closed = new Promise<number>((resolve) => socket.onclose = (event) => resolve(event.code))
    await created
    await gateway.stop()
    strictEqual(await closed, 1001)
    const [user] = await gateway.query<{ quota: string }>(
      `SELECT quota::text AS quota FROM users WHERE username = 'alice'`
    )
    strictEqual(BigInt(user.quota), 100_000_000n, "the float was released whole")
  } finally {
    await gateway.close()
  }
})

Deno.test("Realtime: events beyond the rate are refused with error events; an idle socket is closed", async () => {
  const gateway = await startGateway({
    config: (url) => config(url, { realtime_max_events_per_second: 5, websocket_idle_seconds: 1 }),
    store: "postgres"
  })
  try {
    const socket = new WebSocket(`${gateway.url.replace("http", "ws")}/v1/realtime?model=gpt-realtime-test`, [
      "realtime",
      `openai-insecure-api-key.${KEY}`
    ])
    const events: Array<Record<string, unknown>> = []
    const closed = new Promise<{ code: number; at: number }>((resolve) =>
      socket.onclose = (event) => resolve({ code: event.code, at: Date.now() })
    )
    const created = new Promise((resolve) =>
      socket.onmessage = (message) => {
        events.push(JSON.parse(message.data))
        resolve(undefined)
      }
    )
    await created
    for (let index = 0; index < 12; index++) socket.send(JSON.stringify({ type: "input_audio_buffer.clear" }))
    await new Promise((resolve) => setTimeout(resolve, 300))
    const limited = events.filter((event) =>
      event.type === "error" && (event.error as { code: string }).code === "rate_limit_exceeded"
    )
    strictEqual(limited.length, 7, "12 events in a burst, 5 a second admitted")
    strictEqual(events.filter((event) => event.type === "input_audio_buffer.cleared").length, 5)
    const quiet = Date.now()
    const { code, at } = await closed
    strictEqual(code, 1000)
    ok(at - quiet >= 500 && at - quiet < 5_000, `closed ${at - quiet} ms after the last frame`)
    strictEqual((await usageRows(gateway, "alice")).length, 0)
  } finally {
    await gateway.close()
  }
})

Deno.test("Realtime: a response cut by the caller's close is billed from the deltas it had sent, within its float", async () => {
  // Five deltas a second: the caller hangs up after the first, long before the response is done.
  const gateway = await startGateway({
    config,
    store: "postgres",
    emulator: startEmulator({ tokensPerSecond: 5 }),
    ownsEmulator: true
  })
  try {
    const socket = new WebSocket(`${gateway.url.replace("http", "ws")}/v1/realtime?model=gpt-realtime-test`, [
      "realtime",
      `openai-insecure-api-key.${KEY}`
    ])
    const closed = new Promise<number>((resolve) => socket.onclose = (event) => resolve(event.code))
    let deltas = ""
    socket.onmessage = (message) => {
      const event = JSON.parse(message.data)
      if (event.type === "session.created") {
        socket.send(JSON.stringify({ type: "response.create", response: { output_modalities: ["text"] } }))
      }
      if (event.type === "response.output_text.delta") {
        deltas += event.delta
        socket.close(1000)
      }
    }
    strictEqual(await closed, 1000)
    strictEqual(deltas, "Hello")
    // The emulator finishes its response into a closed socket: no response.done reached anyone.
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    strictEqual(gateway.emulator.realtime.length, 0)
    const rows = await usageRows(gateway, "alice")
    strictEqual(rows.length, 1)
    strictEqual(rows[0].status, 499)
    strictEqual(rows[0].prompt_tokens, 0)
    strictEqual(rows[0].completion_tokens, 2, "⌈5 characters / 4⌉ output text tokens")
    strictEqual(BigInt(rows[0].cost), 2n * 16n)
  } finally {
    await gateway.close()
  }
})

Deno.test("Realtime: at shutdown a response in flight finishes and is billed as reported, then 1001", async () => {
  const gateway = await startGateway({
    config,
    store: "postgres",
    emulator: startEmulator({ tokensPerSecond: 5 }),
    ownsEmulator: true
  })
  try {
    const socket = new WebSocket(`${gateway.url.replace("http", "ws")}/v1/realtime?model=gpt-realtime-test`, [
      "realtime",
      `openai-insecure-api-key.${KEY}`
    ])
    const types: Array<string> = []
    const closed = new Promise<number>((resolve) => socket.onclose = (event) => resolve(event.code))
    const started = new Promise<void>((resolve) =>
      socket.onmessage = (message) => {
        const event = JSON.parse(message.data)
        types.push(event.type)
        if (event.type === "session.created") {
          socket.send(JSON.stringify({ type: "response.create", response: { output_modalities: ["text"] } }))
        }
        if (event.type === "response.output_text.delta" && types.filter((type) => type === event.type).length === 1) {
          resolve()
        }
      }
    )
    await started
    await gateway.stop()
    strictEqual(await closed, 1001)
    strictEqual(types.at(-1), "response.done", "the response finished before the close")
    strictEqual(gateway.emulator.realtime.length, 1)
    const rows = await usageRows(gateway, "alice")
    strictEqual(rows.length, 1)
    strictEqual(rows[0].status, 200)
    strictEqual(BigInt(rows[0].cost), expectedCost(gateway.emulator.realtime[0].usage))
  } finally {
    await gateway.close()
  }
})

Deno.test("Realtime: a socket holds a concurrency slot while open; each response.create counts against the rpm", () =>
  withGateway(async (gateway) => {
    const url = `${gateway.url.replace("http", "ws")}/v1/realtime?model=gpt-realtime-test`
    const socket = new WebSocket(url, ["realtime", `openai-insecure-api-key.${LIMITED_KEY}`])
    const events: Array<Record<string, unknown>> = []
    const waiters: Array<() => void> = []
    socket.onmessage = (message) => {
      events.push(JSON.parse(message.data))
      for (const wake of waiters.splice(0)) wake()
    }
    const closed = new Promise<number>((resolve) => socket.onclose = (event) => resolve(event.code))
    const waitFor = async (predicate: (event: Record<string, unknown>) => boolean) => {
      while (!events.some(predicate)) await new Promise<void>((resolve) => waiters.push(resolve))
      return events.splice(events.findIndex(predicate), 1)[0]
    }
    await waitFor((event) => event.type === "session.created")

    // The one slot is taken: a second socket of the key is refused at the handshake.
    const second = await fetch(url.replace("ws", "http"), {
      headers: { authorization: `Bearer ${LIMITED_KEY}` }
    })
    strictEqual(second.status, 400, "a plain GET is not a handshake")
    await second.body?.cancel()
    const refused = new WebSocket(url, ["realtime", `openai-insecure-api-key.${LIMITED_KEY}`])
    const refusedClose = await new Promise<number>((resolve) => refused.onclose = (event) => resolve(event.code))
    ok(refusedClose !== 1000, `the handshake failed (${refusedClose})`)
    strictEqual(gateway.logs.filter((line) => line.includes("Realtime socket opened")).length, 1)

    // rpm 3: the handshake and two responses; the third response.create is refused, not forwarded.
    for (let turn = 0; turn < 2; turn++) {
      socket.send(JSON.stringify({ type: "response.create", response: { output_modalities: ["text"] } }))
      await waitFor((event) => event.type === "response.done")
    }
    socket.send(JSON.stringify({ type: "response.create", event_id: "third" }))
    const error = await waitFor((event) => event.type === "error")
    deepStrictEqual(
      { code: (error.error as { code: string }).code, event_id: (error.error as { event_id: string }).event_id },
      { code: "rate_limit_exceeded", event_id: "third" }
    )
    socket.close(1000)
    strictEqual(await closed, 1000)
    strictEqual(gateway.emulator.realtime.length, 2)
    strictEqual((await usageRows(gateway, "carol")).length, 2)
  }))
