import { Result } from "effect"
import { ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { startEmulator } from "../../emulator/Emulator.ts"
import { startGateway } from "../support/Gateway.ts"

const KEY = "sk-test-limited-0001"

const limited = (emulatorUrl: string, limits: Record<string, number>) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: { "gpt-test": { input: 1, output: 1 } },
      channels: [{ name: "emu", type: "openai", base_url: emulatorUrl, keys: ["sk-test-up"], models: ["gpt-test"] }],
      users: [{
        username: `limited-${crypto.randomUUID()}`,
        group: "default",
        quota: 50_000_000,
        tokens: [{ name: "main", key: KEY, limits }]
      }]
    }),
    "limits.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

const call = (base: string) =>
  fetch(`${base}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt-test", messages: [{ role: "user", content: "hi" }], max_tokens: 5 })
  })

Deno.test("rate limits in memory: the N+1-th request in the window gets 429 with Retry-After", async () => {
  const gateway = await startGateway({ config: (url) => limited(url, { rpm: 3 }) })
  try {
    for (let index = 0; index < 3; index++) {
      const response = await call(gateway.url)
      strictEqual(response.status, 200)
      await response.body?.cancel()
    }
    const refused = await call(gateway.url)
    strictEqual(refused.status, 429)
    ok(Number(refused.headers.get("retry-after")) >= 1)
    const body = await refused.json()
    strictEqual(body.error.code, "too_many_requests")
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
    const error = await client.chat.completions.create({
      model: "gpt-test",
      messages: [{ role: "user", content: "x" }]
    })
      .catch((failure) => failure)
    ok(error instanceof OpenAI.RateLimitError)
  } finally {
    await gateway.close()
  }
})

Deno.test("rate limits through Redis: two gateway instances share one window", async () => {
  const emulator = startEmulator()
  const database = await import("../support/Gateway.ts").then((module) => module.freshPostgres())
  const redisUrl = "redis://127.0.0.1:6379"
  // Token and user ids restart at 1 in every fresh database: a prefix of this run's own keeps an earlier run's
  // counts (still inside their 60 s window) out of this one.
  const redisPrefix = `sluice-test-${crypto.randomUUID().slice(0, 8)}:ratelimit:`
  const first = await startGateway({
    emulator,
    databaseUrl: database.url,
    redisUrl,
    redisPrefix,
    config: (url) => limited(url, { rpm: 4 })
  })
  const second = await startGateway({
    emulator,
    databaseUrl: database.url,
    redisUrl,
    redisPrefix,
    config: (url) => limited(url, { rpm: 4 })
  })
  try {
    const statuses: Array<number> = []
    for (const base of [first.url, second.url, first.url, second.url, first.url, second.url]) {
      const response = await call(base)
      statuses.push(response.status)
      await response.body?.cancel()
    }
    strictEqual(statuses.slice(0, 4).join(","), "200,200,200,200")
    strictEqual(statuses.slice(4).join(","), "429,429")
  } finally {
    await first.close()
    await second.close()
    await emulator.close()
    await database.drop()
  }
})
