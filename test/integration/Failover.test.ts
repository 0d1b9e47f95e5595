import { Result } from "effect"
import { ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { startGateway } from "../support/Gateway.ts"

const KEY = "sk-test-alice-0001"
/** The operator's secret for the per-channel detail of `GET /api/status`. */
const STATUS_TOKEN = "sk-test-status-0001"

/** Two openai channels on one emulator, told apart by their upstream keys. */
const twoChannels = (
  emulatorUrl: string,
  extra: Record<string, unknown> = {},
  primary: Record<string, unknown> = {}
) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: { "gpt-test": { input: 2, output: 8 } },
      channels: [
        {
          name: "primary",
          type: "openai",
          base_url: emulatorUrl,
          keys: ["sk-test-primary"],
          models: ["gpt-test"],
          priority: 10,
          ...primary
        },
        { name: "secondary", type: "openai", base_url: emulatorUrl, keys: ["sk-test-second"], models: ["gpt-test"] }
      ],
      users: [{ username: "alice", group: "default", quota: 50_000_000, tokens: [{ name: "main", key: KEY }] }],
      ...extra
    }),
    "failover.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

const ask = (client: OpenAI) =>
  client.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "hi" }], max_tokens: 20 })

Deno.test("failover: 500, 429 and a hang on the primary are answered by the secondary", async (t) => {
  const gateway = await startGateway({
    store: "postgres",
    config: (url) =>
      twoChannels(url, { settings: { cooldown_failures: 1000, retry_times: 2 } }, {
        settings: { first_byte_timeout_ms: 500 }
      })
  })
  const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
  try {
    for (const [name, fault] of [["500", { status: 500 }], ["429", { status: 429 }]] as const) {
      await t.step(`primary answers ${name}`, async () => {
        gateway.emulator.reset()
        gateway.emulator.setFaults([{ match: { key: "sk-test-primary" }, ...fault }])
        const completion = await ask(client)
        strictEqual(completion.choices[0].message.content, "Echo: hi")
        const keys = gateway.emulator.requests.map((request) => request.key)
        strictEqual(keys.join(","), "sk-test-primary,sk-test-second")
      })
    }

    await t.step("primary hangs past its first-byte timeout", async () => {
      gateway.emulator.reset()
      gateway.emulator.setFaults([{ match: { key: "sk-test-primary" }, hang: true }])
      const started = Date.now()
      const completion = await ask(client)
      const elapsed = Date.now() - started
      strictEqual(completion.choices[0].message.content, "Echo: hi")
      ok(elapsed < 1500, `answered after ${elapsed} ms`)
    })

    await t.step("each attempt is in the usage log", async () => {
      await gateway.stop()
      const rows = await gateway.query<{ attempt: number; status: number; channel: string }>(
        `SELECT l.attempt, l.status, c.name AS channel FROM usage_logs l JOIN channels c ON c.id = l.channel_id
         ORDER BY l.id`
      )
      strictEqual(rows.length, 6)
      strictEqual(rows.filter((row) => row.channel === "primary" && row.attempt === 1).length, 3)
      strictEqual(
        rows.filter((row) => row.channel === "secondary" && row.attempt === 2 && row.status === 200).length,
        3
      )
    })
  } finally {
    await gateway.close()
  }
})

Deno.test("failover: 4xx rejections are not retried; all candidates failing gives one clean error", async () => {
  const gateway = await startGateway({ config: (url) => twoChannels(url, { settings: { cooldown_failures: 1000 } }) })
  const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
  try {
    gateway.emulator.setFaults([{ match: { key: "sk-test-primary" }, status: 400, message: "temperature is invalid" }])
    const rejected = await ask(client).catch((error) => error)
    ok(rejected instanceof OpenAI.BadRequestError)
    strictEqual(rejected.message.includes("temperature is invalid"), true)
    strictEqual(gateway.emulator.requests.length, 1)

    gateway.emulator.reset()
    gateway.emulator.setFaults([{ status: 503 }])
    const failed = await ask(client).catch((error) => error)
    ok(failed instanceof OpenAI.APIError)
    strictEqual(failed.status, 503)
    strictEqual((failed.error as { code: string }).code, "upstream_error")
    strictEqual(JSON.stringify(failed.error).includes("sk-test-"), false)
  } finally {
    await gateway.close()
  }
})

Deno.test("health: a refused key is disabled, the next key serves, the prober re-enables it", async () => {
  const gateway = await startGateway({
    store: "postgres",
    config: (url) =>
      twoChannels(url, { settings: { probe_interval_seconds: 1, status_token: STATUS_TOKEN } }, {
        keys: ["sk-test-revoked", "sk-test-primary"]
      })
  })
  const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
  try {
    gateway.emulator.setValidKeys(["sk-test-primary", "sk-test-second"])
    // Round-robin may start at either key: ask until the revoked one has been tried.
    for (let index = 0; index < 3; index++) {
      const completion = await ask(client)
      strictEqual(completion.choices[0].message.content, "Echo: hi")
    }
    ok(gateway.emulator.requests.some((request) => request.key === "sk-test-revoked"))
    const disabled = await gateway.query<{ enabled: boolean; reason: string | null }>(
      `SELECT enabled, disabled_reason AS reason FROM channel_keys WHERE key = 'sk-test-revoked'`
    )
    strictEqual(disabled[0].enabled, false)
    ok(disabled[0].reason?.startsWith("unauthorized"))
    const status = await (await fetch(`${gateway.url}/api/status`, {
      headers: { authorization: `Bearer ${STATUS_TOKEN}` }
    })).json()
    const primary = status.data.channels.find((channel: { name: string }) => channel.name === "primary")
    strictEqual(primary.keys[0].enabled, false)

    gateway.emulator.setValidKeys(undefined)
    const deadline = Date.now() + 5000
    let enabled = false
    while (!enabled && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250))
      const rows = await gateway.query<{ enabled: boolean }>(
        `SELECT enabled FROM channel_keys WHERE key = 'sk-test-revoked'`
      )
      enabled = rows[0].enabled
    }
    ok(enabled, "the prober re-enabled the key")
  } finally {
    await gateway.close()
  }
})

Deno.test("streams: a mid-stream break gives an error event and partial billing; a caller that leaves aborts the upstream", async (t) => {
  const gateway = await startGateway({ config: (url) => twoChannels(url, { settings: { cooldown_failures: 1000 } }) })
  const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
  const used = async () =>
    (await (await fetch(`${gateway.url}/api/usage/token`, { headers: { authorization: `Bearer ${KEY}` } })).json())
      .data.total_used as number
  try {
    await t.step("break after three events", async () => {
      gateway.emulator.setFaults([{ breakAfterEvents: 3 }])
      const before = await used()
      const response = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
        body: JSON.stringify({
          model: "gpt-test",
          stream: true,
          messages: [{ role: "user", content: "one two three four five six seven eight" }]
        })
      })
      strictEqual(response.status, 200)
      const text = await response.text()
      ok(!text.includes("[DONE]"), "no end marker after a break")
      ok(!text.includes(`"finish_reason":"stop"`), "no stop finish reason after a break")
      ok(text.includes(`"error"`), "an error event")
      await new Promise((resolve) => setTimeout(resolve, 200))
      const after = await used()
      ok(after > before, "billed for what was delivered")
    })

    await t.step("the SDK surfaces the break as an error", async () => {
      gateway.emulator.setFaults([{ breakAfterEvents: 3 }])
      const stream = await client.chat.completions.create({
        model: "gpt-test",
        stream: true,
        messages: [{ role: "user", content: "one two three four five six" }]
      })
      const failure = await (async () => {
        for await (const _ of stream) { /* drain */ }
      })().catch((error) => error)
      ok(failure instanceof Error)
    })
  } finally {
    await gateway.close()
  }
})

Deno.test("streams: a caller that disconnects aborts the upstream request", async () => {
  const { startEmulator } = await import("../../emulator/Emulator.ts")
  const emulator = startEmulator({ tokensPerSecond: 20 })
  const gateway = await startGateway({ emulator, config: (url) => twoChannels(url) })
  try {
    const controller = new AbortController()
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      signal: controller.signal,
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "gpt-test",
        stream: true,
        messages: [{ role: "user", content: "a b c d e f g h i j k l m n o p q r s t u v w x y z" }]
      })
    })
    const reader = response.body!.getReader()
    await reader.read()
    controller.abort()
    await reader.cancel().catch(() => undefined)
    const deadline = Date.now() + 3000
    while (emulator.aborts() === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
    strictEqual(emulator.aborts(), 1)
  } finally {
    await gateway.close()
    await emulator.close()
  }
})

Deno.test("limits: a body over the configured size gets 413 in the gateway envelope", async () => {
  const gateway = await startGateway({ config: (url) => twoChannels(url, { settings: { max_body_bytes: 1000 } }) })
  try {
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-test", messages: [{ role: "user", content: "x".repeat(5000) }] })
    })
    strictEqual(response.status, 413)
    const body = await response.json()
    strictEqual(body.error.code, "request_too_large")
  } finally {
    await gateway.close()
  }
})
