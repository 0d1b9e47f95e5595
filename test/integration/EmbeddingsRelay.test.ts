/**
 * Embeddings through the relay's parts, on PostgreSQL: failover from a
 * failing gemini channel to an openai one (the failed attempt logged at cost
 * 0, the answer's row charged exactly), a split request one of whose calls
 * fails started over on the next candidate, an upstream's refusal of the request
 * passed back without failover and free, the quota hold covering the whole
 * batch (402 before any upstream call, nothing charged), hostile text (NUL,
 * lone surrogates) embedded like any other, and `used_quota` equal to the sum
 * of logged costs.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { embeddingVector } from "../../emulator/Embeddings.ts"
import { startGateway, type TestGateway } from "../support/Gateway.ts"

const KEY = "sk-test-embed-relay-01"
const POOR_KEY = "sk-test-embed-relay-02"

const config = (emulatorUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: { "embed-both": { input: 1000 }, "embed-ada": { input: 1000 }, "embed-split": { input: 1000 } },
      channels: [
        {
          name: "gemini-flaky",
          type: "gemini",
          base_url: emulatorUrl,
          keys: ["sk-test-flaky"],
          models: ["embed-split"],
          priority: 10,
          model_mapping: { "embed-split": "gemini-embedding-001" }
        },
        {
          name: "gemini-primary",
          type: "gemini",
          base_url: emulatorUrl,
          keys: ["sk-test-failing"],
          models: ["embed-both"],
          priority: 10,
          model_mapping: { "embed-both": "gemini-embedding-001" }
        },
        {
          name: "openai-secondary",
          type: "openai",
          base_url: emulatorUrl,
          keys: ["sk-test-healthy"],
          models: ["embed-both", "embed-ada", "embed-split"],
          priority: 0,
          model_mapping: {
            "embed-both": "text-embedding-3-small",
            "embed-ada": "text-embedding-ada-002",
            "embed-split": "text-embedding-3-small"
          }
        }
      ],
      users: [
        { username: "alice", group: "default", quota: 100_000_000, tokens: [{ name: "main", key: KEY }] },
        { username: "poor", group: "default", quota: 50_000, tokens: [{ name: "main", key: POOR_KEY }] }
      ],
      settings: { cooldown_failures: 1000 }
    }),
    "embeddings-relay.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

interface LogRow {
  readonly attempt: number
  readonly status: number
  readonly cost: string
  readonly prompt_tokens: number
  readonly upstream_model: string | null
  readonly error: string | null
}

/** The usage rows of the latest request for `model` (each model is asked once here), once the log flushed them. */
const latestRows = async (gateway: TestGateway, model: string, count: number): Promise<ReadonlyArray<LogRow>> => {
  for (let tries = 0; tries < 100; tries++) {
    const rows = await gateway.query<LogRow>(
      `SELECT attempt, status, cost::text AS cost, prompt_tokens, upstream_model, error FROM usage_logs
       WHERE model = '${model}' ORDER BY id`
    )
    if (rows.length >= count) return rows
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  throw new Error(`No ${count} usage rows for the latest request`)
}

Deno.test("embeddings relay: failover, refusals, the batch's hold, hostile text, rows and charges agree", async (t) => {
  const gateway = await startGateway({ config, store: "postgres" })
  const client = (apiKey: string) => new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey, maxRetries: 0 })
  try {
    gateway.emulator.setFaults([
      { match: { key: "sk-test-failing" }, status: 500 },
      // One of the split calls of the first request on the flaky channel fails.
      { match: { key: "sk-test-flaky" }, status: 503, times: 1 }
    ])

    await t.step("a failing gemini channel fails over to the openai one; the failed attempt costs 0", async () => {
      const texts = ["first \u0000 text", "lone \ud800 surrogate", "x".repeat(40)]
      const answer = await client(KEY).embeddings.create({ model: "embed-both", input: texts, dimensions: 6 })
      deepStrictEqual(
        answer.data.map((item) => item.embedding),
        texts.map((text) => embeddingVector("text-embedding-3-small", text, 6))
      )
      const rows = await latestRows(gateway, "embed-both", 2)
      strictEqual(rows.length, 2)
      strictEqual(rows[0].status, 500)
      strictEqual(rows[0].cost, "0")
      strictEqual(rows[0].upstream_model, "gemini-embedding-001")
      ok(rows[0].error?.startsWith("server"))
      strictEqual(rows[1].status, 200)
      strictEqual(rows[1].upstream_model, "text-embedding-3-small")
      strictEqual(rows[1].prompt_tokens, answer.usage.prompt_tokens)
      // 1,000 USD per 1M tokens: 1,000 quota units (micro-USD) a token.
      strictEqual(rows[1].cost, String(answer.usage.prompt_tokens * 1000))
      const calls = gateway.emulator.requests.slice(-2).map((request) => request.path)
      deepStrictEqual(calls, ["/v1beta/models/gemini-embedding-001:batchEmbedContents", "/v1/embeddings"])
    })

    await t.step("one failed call of a split request fails the attempt; the next candidate starts over", async () => {
      const before = gateway.emulator.requests.length
      const texts = Array.from({ length: 250 }, (_, index) => `split input ${index}`)
      const answer = await client(KEY).embeddings.create({ model: "embed-split", input: texts, dimensions: 3 })
      deepStrictEqual(
        answer.data.map((item) => item.embedding),
        texts.map((text) => embeddingVector("text-embedding-3-small", text, 3))
      )
      const calls = gateway.emulator.requests.slice(before)
      const gemini = calls.filter((call) => call.path.endsWith(":batchEmbedContents"))
      ok(gemini.length >= 1 && gemini.length <= 3, `gemini calls: ${gemini.length}`)
      deepStrictEqual(calls.filter((call) => call.path === "/v1/embeddings").length, 1)
      const rows = await latestRows(gateway, "embed-split", 2)
      deepStrictEqual(rows.map((row) => [row.attempt, row.status, row.cost]), [
        [1, 503, "0"],
        [2, 200, String(answer.usage.prompt_tokens * 1000)]
      ])
    })

    await t.step("an upstream's refusal of the request comes back as a 400, without failover, free", async () => {
      const before = gateway.emulator.requests.length
      const error = await client(KEY).embeddings.create({ model: "embed-ada", input: "x", dimensions: 8 }).then(
        () => undefined,
        (error: unknown) => error
      )
      ok(error instanceof OpenAI.BadRequestError)
      ok(error.message.includes("does not support specifying dimensions"), error.message)
      strictEqual(gateway.emulator.requests.length - before, 1)
      const rows = await latestRows(gateway, "embed-ada", 1)
      strictEqual(rows.length, 1)
      strictEqual(rows[0].status, 400)
      strictEqual(rows[0].cost, "0")
    })

    await t.step("the hold covers the whole batch: a batch beyond the balance is a 402 before any call", async () => {
      const before = gateway.emulator.requests.length
      const batch = Array.from({ length: 100 }, (_, index) => `a document of some forty characters #${index}`)
      const error = await client(POOR_KEY).embeddings.create({ model: "embed-ada", input: batch }).then(
        () => undefined,
        (error: unknown) => error
      )
      ok(error instanceof OpenAI.APIError)
      strictEqual(error.status, 402)
      strictEqual(error.code, "insufficient_user_quota")
      strictEqual(gateway.emulator.requests.length, before)
      const small = await client(POOR_KEY).embeddings.create({
        model: "embed-ada",
        input: "hi",
        encoding_format: "float"
      })
      deepStrictEqual(small.data[0].embedding, embeddingVector("text-embedding-ada-002", "hi", 1536))
    })

    await t.step("used quota equals the logged costs", async () => {
      await gateway.stop()
      const [row] = await gateway.query<{ used: string; logged: string }>(
        `SELECT (SELECT sum(used_quota)::text FROM users) AS used, (SELECT sum(cost)::text FROM usage_logs) AS logged`
      )
      strictEqual(row.used, row.logged)
      ok(Number(row.used) > 0)
    })
  } finally {
    await gateway.close()
  }
})
