/**
 * The Realtime API's second round, on PostgreSQL: ephemeral keys (`POST /v1/realtime/client_secrets`, through the
 * `openai` SDK's `realtime.clientSecrets.create`) that open a browser's session with the subprotocol key, bound to
 * their model and settings, billed to the key that made them and refused once expired or outside the Realtime
 * route; and Azure: `AzureOpenAI` + `OpenAIRealtimeWS.azure` at the gateway's Azure path, relayed to an `azure`
 * channel's Realtime socket with its `api-key`, billed what the emulator reported.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI, { AzureOpenAI } from "openai"
import { OpenAIRealtimeWS } from "openai/realtime/ws"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { startGateway, type TestGateway } from "../support/Gateway.ts"
import { testCertificate } from "../support/TestCert.ts"

const KEY = "sk-test-rtsecret-0001"
const UPSTREAM_KEY = "sk-test-upstream-rt2"
const AZURE_UPSTREAM_KEY = "sk-test-azure-rt-key"

const config = (emulatorUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: {
        "gpt-realtime-test": { input: 10, output: 10, audio_input: 10, audio_output: 10 },
        "gpt-realtime-azure": { input: 10, output: 10, audio_input: 10, audio_output: 10 },
        "gpt-realtime-noaudio": { input: 4, output: 16 }
      },
      channels: [
        {
          name: "emu-realtime",
          type: "openai",
          base_url: `${emulatorUrl}/v1`,
          keys: [UPSTREAM_KEY],
          models: ["gpt-realtime-test", "gpt-realtime-noaudio"]
        },
        {
          name: "emu-azure-realtime",
          type: "azure",
          base_url: `${emulatorUrl}/azure`,
          keys: [AZURE_UPSTREAM_KEY],
          models: ["gpt-realtime-azure"],
          model_mapping: { "gpt-realtime-azure": "my-realtime-deployment" },
          settings: { api_version: "v1" }
        }
      ],
      users: [{ username: "alice", group: "default", quota: 100_000_000, tokens: [{ name: "main", key: KEY }] }]
    }),
    "realtime-secrets.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

const withGateway = async (run: (gateway: TestGateway) => Promise<void>) => {
  const gateway = await startGateway({ config, store: "postgres", tls: await testCertificate() })
  try {
    await run(gateway)
  } finally {
    await gateway.close()
  }
}

/** A browser's socket: the key as the subprotocol beside `realtime`; its events, and its close code. */
const browserSocket = (gateway: TestGateway, key: string, model?: string) => {
  const query = model === undefined ? "" : `?model=${model}`
  const socket = new WebSocket(`${gateway.url.replace("http", "ws")}/v1/realtime${query}`, [
    "realtime",
    `openai-insecure-api-key.${key}`
  ])
  const events: Array<Record<string, unknown>> = []
  const waiters: Array<{ type: string; resolve: (event: Record<string, unknown>) => void }> = []
  socket.onmessage = (message) => {
    const event = JSON.parse(message.data)
    events.push(event)
    for (const waiter of waiters.splice(0)) {
      if (waiter.type === event.type) waiter.resolve(event)
      else waiters.push(waiter)
    }
  }
  const next = (type: string) =>
    new Promise<Record<string, unknown>>((resolve) => {
      const seen = events.find((event) => event.type === type && !taken.has(event))
      if (seen !== undefined) {
        taken.add(seen)
        return resolve(seen)
      }
      waiters.push({
        type,
        resolve: (event) => {
          taken.add(event)
          resolve(event)
        }
      })
    })
  const taken = new Set<Record<string, unknown>>()
  const closed = new Promise<number>((resolve) => socket.onclose = (event) => resolve(event.code))
  return { socket, events, next, closed }
}

const usageRows = (gateway: TestGateway) =>
  gateway.query<
    { request_id: string; cost: string; token_id: string; prompt_tokens: number; completion_tokens: number }
  >(
    `SELECT request_id, cost::text AS cost, token_id::text AS token_id, prompt_tokens, completion_tokens
     FROM usage_logs ORDER BY id`
  )

Deno.test("Realtime client secrets: an ephemeral key opens a browser session bound to its model and settings, billed to its key", () =>
  withGateway(async (gateway) => {
    const openai = new OpenAI({ apiKey: KEY, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
    const secret = await openai.realtime.clientSecrets.create({
      expires_after: { anchor: "created_at", seconds: 120 },
      session: { type: "realtime", model: "gpt-realtime-test", instructions: "Answer in one short sentence." }
    })
    ok(secret.value.startsWith("ek_") && secret.value.length > 40, secret.value)
    const now = Date.now() / 1000
    ok(Math.abs(secret.expires_at - (now + 120)) <= 5, `expires_at ${secret.expires_at}`)
    strictEqual(secret.session.type, "realtime")
    strictEqual((secret.session as { model?: string }).model, "gpt-realtime-test")
    strictEqual((secret.session as { instructions?: string }).instructions, "Answer in one short sentence.")
    // Never stored as given.
    const stored = await gateway.query<{ secret_hash: string }>("SELECT secret_hash FROM realtime_client_secrets")
    strictEqual(stored.length, 1)
    ok(!stored[0].secret_hash.includes(secret.value))

    // The browser's session: no model in the URL (the secret names it), the settings applied first.
    const browser = browserSocket(gateway, secret.value)
    await browser.next("session.created")
    const updated = await browser.next("session.updated")
    strictEqual((updated.session as { instructions?: string }).instructions, "Answer in one short sentence.")
    browser.socket.send(JSON.stringify({ type: "response.create", response: { output_modalities: ["text"] } }))
    const done = await browser.next("response.done")
    browser.socket.close(1000)
    await browser.closed
    // The upstream saw the channel's key, never the ephemeral one or the caller's.
    const handshake = gateway.emulator.requests.filter((request) => request.path === "/v1/realtime").at(-1)!
    strictEqual(handshake.key, UPSTREAM_KEY)
    ok(!JSON.stringify(handshake).includes(secret.value) && !JSON.stringify(handshake).includes(KEY))

    await gateway.settled()
    const record = gateway.emulator.realtime.find((entry) => entry.responseId === (done.response as { id: string }).id)!
    const [token] = await gateway.query<{ id: string }>("SELECT id::text AS id FROM tokens WHERE name = 'main'")
    const rows = await usageRows(gateway)
    strictEqual(rows.length, 1)
    strictEqual(rows[0].token_id, token.id, "billed to the key that made the secret")
    strictEqual(rows[0].prompt_tokens, record.usage.input_tokens)
    strictEqual(rows[0].completion_tokens, record.usage.output_tokens)
    strictEqual(
      BigInt(rows[0].cost),
      BigInt(Number(record.usage.input_tokens) + Number(record.usage.output_tokens)) * 10n,
      "billed what the emulator reported"
    )

    // Bound to its model: another one in the URL is refused at the handshake.
    const otherModel = await fetch(`${gateway.url}/v1/realtime?model=gpt-realtime-azure`, {
      headers: { authorization: `Bearer ${secret.value}`, upgrade: "websocket" }
    })
    strictEqual(otherModel.status, 400)
    strictEqual((await otherModel.json()).error.param, "model")
    // An ephemeral key is no key anywhere else.
    const chat = await openai.chat.completions.create({
      model: "gpt-realtime-test",
      messages: [{ role: "user", content: "hi" }]
    }, { headers: { authorization: `Bearer ${secret.value}` } }).catch((error) => error)
    ok(chat instanceof OpenAI.AuthenticationError, String(chat))
    // Expired: refused as an unknown key.
    await gateway.query("UPDATE realtime_client_secrets SET expires_at = 1")
    const expired = await fetch(`${gateway.url}/v1/realtime`, {
      headers: { authorization: `Bearer ${secret.value}`, upgrade: "websocket" }
    })
    strictEqual(expired.status, 401)
    strictEqual((await expired.json()).error.code, "invalid_api_key")
    strictEqual((await usageRows(gateway)).length, 1, "refusals charge nothing")
  }))

Deno.test("Realtime client secrets: bad bodies name their field; a model with no Realtime price or channel is refused", () =>
  withGateway(async (gateway) => {
    const openai = new OpenAI({ apiKey: KEY, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
    const refusal = (body: Record<string, unknown>) =>
      openai.realtime.clientSecrets.create(body as never).then(
        () => undefined,
        (error) => error as InstanceType<typeof OpenAI.APIError>
      )
    const cases: Array<[Record<string, unknown>, number, string]> = [
      [
        { session: { type: "realtime", model: "gpt-realtime-test" }, expires_after: { seconds: 5 } },
        400,
        "expires_after.seconds"
      ],
      [
        { session: { type: "realtime", model: "gpt-realtime-test" }, expires_after: { anchor: "now" } },
        400,
        "expires_after.anchor"
      ],
      [{ session: { type: "transcription", model: "gpt-realtime-test" } }, 400, "session.type"],
      [{ session: { type: "realtime" } }, 400, "session.model"],
      [{}, 400, "session"],
      [{ session: { type: "realtime", model: "gpt-realtime-test", instructions: "x".repeat(70_000) } }, 400, "session"]
    ]
    for (const [body, status, param] of cases) {
      const error = await refusal(body)
      strictEqual(error?.status, status, JSON.stringify(body).slice(0, 100))
      strictEqual(error?.param, param)
    }
    const unpriced = await refusal({ session: { type: "realtime", model: "gpt-realtime-noaudio" } })
    strictEqual(unpriced?.code, "model_price_not_set")
    const unknown = await refusal({ session: { type: "realtime", model: "no-such-model\u0000\ud800" } })
    strictEqual(unknown?.code, "model_not_found")
    const keyless = await new OpenAI({ apiKey: "sk-test-nobody", baseURL: `${gateway.url}/v1`, maxRetries: 0 })
      .realtime.clientSecrets.create({ session: { type: "realtime", model: "gpt-realtime-test" } }).catch((error) =>
        error
      )
    ok(keyless instanceof OpenAI.AuthenticationError)
    strictEqual((await gateway.query("SELECT 1 FROM realtime_client_secrets")).length, 0, "nothing was made")
  }))

Deno.test("Realtime on Azure: OpenAIRealtimeWS.azure at the gateway's Azure path, relayed to an azure channel, billed as reported", () =>
  withGateway(async (gateway) => {
    const { cert } = await testCertificate()
    const azure = new AzureOpenAI({ apiKey: KEY, endpoint: gateway.tlsUrl, apiVersion: "2025-04-01-preview" })
    const rt = await OpenAIRealtimeWS.azure(azure, { deploymentName: "gpt-realtime-azure", options: { ca: cert } })
    const errors: Array<unknown> = []
    rt.on("error", (error) => errors.push(error))
    const closed = new Promise<number>((resolve) => rt.socket.on("close", (code: number) => resolve(code)))
    const nextOf = <T>(type: string) =>
      new Promise<T>((resolve) => {
        const listener = (event: { type: string }) => {
          if (event.type !== type) return
          rt.off("event", listener)
          resolve(event as T)
        }
        rt.on("event", listener)
      })
    await nextOf("session.created")
    rt.send({
      type: "conversation.item.create",
      item: { type: "message", role: "user", content: [{ type: "input_text", text: "Hello over Azure." }] }
    })
    const done = nextOf<{ response: { id: string } }>("response.done")
    rt.send({ type: "response.create", response: { output_modalities: ["text"] } })
    const response = await done
    rt.close()
    strictEqual(await closed, 1000)
    deepStrictEqual(errors, [])

    const handshake = gateway.emulator.requests.filter((request) => request.path === "/azure/openai/v1/realtime")
    strictEqual(handshake.length, 1, "the azure channel's GA Realtime path")
    strictEqual(handshake[0].key, AZURE_UPSTREAM_KEY)
    strictEqual(handshake[0].query.model, "my-realtime-deployment", "the deployment the model maps to")
    await gateway.settled()
    const record = gateway.emulator.realtime.find((entry) => entry.responseId === response.response.id)!
    const rows = await usageRows(gateway)
    strictEqual(rows.length, 1)
    strictEqual(
      BigInt(rows[0].cost),
      BigInt(Number(record.usage.input_tokens) + Number(record.usage.output_tokens)) * 10n
    )
    const lines = gateway.logs.map((line) => JSON.parse(line)).filter((line) =>
      line.msg === "request" && line.route === "/openai/v1/realtime"
    )
    deepStrictEqual(lines.map((line) => line.status), [101])
  }))
