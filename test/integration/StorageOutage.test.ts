/**
 * Requests whose own store reads meet a PostgreSQL outage (`PostgresOutage.ts` closes every connection and refuses
 * new ones): the lookup of a key not yet cached (`/v1/chat/completions` through the `openai` SDK, `/v1/messages`
 * through `@anthropic-ai/sdk`), a video task read and a file list with a cached key (`GET /v1/videos/{id}`,
 * `GET /v1/files`), a batch list (`GET /v1/batches`) and the session lookup of
 * `/api/user/self` used to die (a 500 with a defect log); they now answer 503 `storage_unavailable` with
 * `Retry-After: 5` in their envelope (gateway, Messages, api), with no stack or driver text, each counted in
 * `sluice_storage_errors_total{operation}` and logged once as `Storage unavailable`; nothing reaches the vendor and
 * nothing is charged. Once the database is back the same requests succeed.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { startEmulator } from "../../emulator/Emulator.ts"
import { browser } from "../support/Browser.ts"
import { basicConfig, freshPostgres, ROOT_PASSWORD, startGateway } from "../support/Gateway.ts"
import { startPostgresOutage } from "../support/PostgresOutage.ts"
import type { Row } from "../support/Store.ts"

const WARM_KEY = "sk-test-alice-0001"
/** A key of alice never presented before the outage, so the gateway must read it from the database. */
const COLD_KEY = "sk-test-alice-0002"
const MESSAGE = "The gateway cannot reach its database; try again shortly."

const config = (emulatorUrl: string) =>
  basicConfig(emulatorUrl, {
    users: [{
      username: "alice",
      group: "default",
      quota: 10_000_000,
      tokens: [{ name: "main", key: WARM_KEY }, { name: "second", key: COLD_KEY }]
    }],
    settings: { key_cache_ttl_ms: 60_000 }
  })

/** The value of `name{labels}` on the gateway's `/metrics` (0 when the series is absent). */
const metric = async (url: string, name: string, labels: string): Promise<number> => {
  const text = await (await fetch(`${url}/metrics`)).text()
  const line = text.split("\n").find((entry) => entry.startsWith(`${name}{`) && entry.includes(labels))
  return line === undefined ? 0 : Number(line.trim().split(" ").at(-1))
}

const chat = (client: OpenAI, text: string) =>
  client.chat.completions.create({ model: "gpt-test", max_tokens: 16, messages: [{ role: "user", content: text }] })

Deno.test({
  name: "storage outage: a /v1 and an /api route answer 503 storage_unavailable with Retry-After, charging nothing",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const emulator = startEmulator({ tokensPerSecond: 1000 })
    const database = await freshPostgres()
    const outage = startPostgresOutage(database.url)
    try {
      const gateway = await startGateway({ config, databaseUrl: outage.url, emulator, ownsEmulator: true })
      try {
        const warm = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: WARM_KEY, maxRetries: 0 })
        const cold = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: COLD_KEY, maxRetries: 0 })
        const root = browser(gateway.url)
        await root.login("root", ROOT_PASSWORD)
        strictEqual((await root.call("GET", "/api/user/self")).status, 200)
        await chat(warm, "warm the ledger")
        const [before] = await gateway.query<Row>(
          `SELECT (SELECT count(*) FROM usage_logs)::text AS rows,
                  (SELECT used_quota FROM users WHERE username = 'alice')::text AS used`
        )
        const vendorCalls = gateway.emulator.requests.length

        outage.down()
        // The openai SDK's view: a typed 503 with the gateway's code and the Retry-After header.
        const failure = await chat(cold, "during the outage").then(() => undefined, (error: unknown) => error)
        ok(failure instanceof OpenAI.APIError, `the answer failed: ${failure}`)
        strictEqual(failure.status, 503)
        strictEqual(failure.code, "storage_unavailable")
        strictEqual(failure.type, "platform_api_error")
        strictEqual(failure.headers?.get("retry-after"), "5")
        // The raw answer: the gateway envelope and nothing of the cause.
        const raw = await fetch(`${gateway.url}/v1/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${COLD_KEY}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "gpt-test", messages: [{ role: "user", content: "raw" }] })
        })
        const text = await raw.text()
        strictEqual(raw.status, 503)
        strictEqual(raw.headers.get("retry-after"), "5")
        deepStrictEqual(JSON.parse(text), {
          error: { message: MESSAGE, type: "platform_api_error", param: "", code: "storage_unavailable" }
        })
        // A task read with a key already cached: the store behind the task, not the key, is out of reach.
        const video = await warm.videos.retrieve("video_0123456789abcdef").then(
          () => undefined,
          (error: unknown) => error
        )
        ok(video instanceof OpenAI.APIError, `the read failed: ${video}`)
        strictEqual(video.status, 503)
        strictEqual(video.code, "storage_unavailable")
        strictEqual(video.headers?.get("retry-after"), "5")
        // The Files API with a key already cached: the file store is out of reach.
        const listed = await warm.files.list().then(() => undefined, (error: unknown) => error)
        ok(listed instanceof OpenAI.APIError, `the list failed: ${listed}`)
        strictEqual(listed.status, 503)
        strictEqual(listed.code, "storage_unavailable")
        strictEqual(listed.headers?.get("retry-after"), "5")
        // And the batch store: a list of the key's batches.
        const batches = await warm.batches.list().then(() => undefined, (error: unknown) => error)
        ok(batches instanceof OpenAI.APIError, `the batch list failed: ${batches}`)
        strictEqual(batches.status, 503)
        strictEqual(batches.code, "storage_unavailable")
        // The Messages format's own envelope, through the Anthropic SDK.
        const messages = await new Anthropic({ baseURL: gateway.url, apiKey: COLD_KEY, maxRetries: 0 }).messages
          .create({ model: "gpt-test", max_tokens: 16, messages: [{ role: "user", content: "anthropic" }] })
          .then(() => undefined, (error: unknown) => error)
        ok(messages instanceof Anthropic.APIError, `the answer failed: ${messages}`)
        strictEqual(messages.status, 503)
        strictEqual(messages.headers?.get("retry-after"), "5")
        deepStrictEqual(messages.error, {
          type: "error",
          error: { type: "platform_api_error", message: MESSAGE, param: "", code: "storage_unavailable" }
        })
        // The api envelope, for a session read.
        const self = await root.call("GET", "/api/user/self")
        strictEqual(self.status, 503)
        strictEqual(self.success, false)
        strictEqual(self.message, MESSAGE)
        strictEqual(self.headers.get("retry-after"), "5")
        outage.up()

        strictEqual(await metric(gateway.url, "sluice_storage_errors_total", 'operation="auth.lookup"'), 3)
        strictEqual(await metric(gateway.url, "sluice_storage_errors_total", 'operation="sessions.resolve"'), 1)
        strictEqual(await metric(gateway.url, "sluice_storage_errors_total", 'operation="tasks.find"'), 1)
        strictEqual(await metric(gateway.url, "sluice_storage_errors_total", 'operation="files.list"'), 1)
        strictEqual(await metric(gateway.url, "sluice_storage_errors_total", 'operation="batches.list"'), 1)
        const warnings = gateway.logs.filter((line) => line.includes('"Storage unavailable"'))
        strictEqual(warnings.length, 7, warnings.join("\n"))
        ok(warnings.some((line) => line.includes("auth.lookup")) && warnings.some((line) => line.includes("sessions")))
        const defects = gateway.logs.filter((line) => line.includes("failed with a defect"))
        deepStrictEqual(defects, [], "no defect was logged")
        strictEqual(gateway.emulator.requests.length, vendorCalls, "nothing reached the vendor")

        // Back: the same key and session work, and the outage's requests charged nothing.
        await chat(cold, "after the outage")
        strictEqual((await root.call("GET", "/api/user/self")).status, 200)
        const [after] = await gateway.query<Row>(
          `SELECT (SELECT count(*) FROM usage_logs)::text AS rows,
                  (SELECT count(*) FROM usage_logs WHERE status = 503)::text AS refused,
                  (SELECT used_quota FROM users WHERE username = 'alice')::text AS used,
                  (SELECT cost FROM usage_logs ORDER BY id DESC LIMIT 1)::text AS last`
        )
        strictEqual(Number(after.rows), Number(before.rows) + 1, "one usage row more: the request after the outage")
        strictEqual(after.refused, "0", "no row for the refused requests")
        strictEqual(
          BigInt(String(after.used)) - BigInt(String(before.used)),
          BigInt(String(after.last)),
          "used_quota grew by the one request after the outage alone"
        )
      } finally {
        outage.up()
        await gateway.close()
      }
    } finally {
      await outage.close()
      await database.drop()
    }
  }
})
