/**
 * The per-channel idle timeout (`idle_timeout_ms`): an upstream stream that
 * goes silent mid-answer is cut after the idle time and the caller gets its
 * format's error event (never a normal end), billed only for what it
 * received; a slow but steady stream longer than several idle periods is not
 * cut.
 */
import { Result } from "effect"
import { ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { startEmulator } from "../../emulator/Emulator.ts"
import { startGateway } from "../support/Gateway.ts"

const KEY = "sk-test-alice-0001"
const IDLE_MS = 400

const config = (emulatorUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: { "gpt-test": { input: 2, output: 8 } },
      channels: [{
        name: "slow",
        type: "openai",
        base_url: emulatorUrl,
        keys: ["sk-test-upstream"],
        models: ["gpt-test"],
        settings: { idle_timeout_ms: IDLE_MS }
      }],
      users: [{ username: "alice", group: "default", quota: 50_000_000, tokens: [{ name: "main", key: KEY }] }],
      settings: { cooldown_failures: 1000 }
    }),
    "idle.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

Deno.test("idle timeout: a stalled stream is cut after idle_timeout_ms; a slow steady one is not", async (t) => {
  // 10 frames a second: a gap of 100 ms, well inside the 400 ms idle time, over a stream of about 2 s.
  const emulator = startEmulator({ tokensPerSecond: 10 })
  const gateway = await startGateway({ store: "postgres", emulator, config })
  const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
  const ask = () =>
    client.chat.completions.create({
      model: "gpt-test",
      messages: [{ role: "user", content: "one two three four five six seven eight nine ten eleven twelve" }],
      max_tokens: 64,
      stream: true,
      stream_options: { include_usage: true }
    })
  try {
    await t.step("a steady stream longer than several idle periods completes", async () => {
      const started = Date.now()
      let text = ""
      let finish: string | null = null
      for await (const chunk of await ask()) {
        text += chunk.choices[0]?.delta.content ?? ""
        finish = chunk.choices[0]?.finish_reason ?? finish
      }
      const elapsed = Date.now() - started
      ok(elapsed > 3 * IDLE_MS, `the stream took ${elapsed} ms`)
      strictEqual(finish, "stop")
      ok(text.startsWith("Echo: one two"), text)
    })

    await t.step("a stream that goes silent after 3 events ends with an error event, not a finish", async () => {
      emulator.reset()
      emulator.setFaults([{ match: { path: "/v1/chat/completions" }, stallAfterEvents: 3 }])
      const started = Date.now()
      let finish: string | null = null
      let received = ""
      const error = await (async () => {
        try {
          for await (const chunk of await ask()) {
            received += chunk.choices[0]?.delta.content ?? ""
            finish = chunk.choices[0]?.finish_reason ?? finish
          }
        } catch (error) {
          return error
        }
      })()
      const elapsed = Date.now() - started
      ok(error instanceof OpenAI.APIError, `the SDK raised ${String(error)}`)
      ok(/did not answer in time/.test(error.message), error.message)
      strictEqual(finish, null, "no finish reason after a cut")
      ok(received.length > 0, "the events before the stall arrived")
      ok(elapsed >= IDLE_MS && elapsed < IDLE_MS + 2_000, `cut after ${elapsed} ms`)
      // The gateway aborted the upstream request.
      for (let tries = 0; tries < 50 && emulator.requests[0]?.aborted !== true; tries += 1) {
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      strictEqual(emulator.requests[0]?.aborted, true)
    })

    await t.step("the cut stream is logged as a timeout and billed only for what was delivered", async () => {
      await gateway.stop()
      const rows = await gateway.query<{ status: number; error: string | null; cost: string; completion: number }>(
        `SELECT status, error, cost::text AS cost, completion_tokens AS completion FROM usage_logs ORDER BY id`
      )
      strictEqual(rows.length, 2)
      strictEqual(rows[0].status, 200)
      ok(rows[1].status >= 400, `status ${rows[1].status}`)
      ok(rows[1].error?.startsWith("timeout: The upstream went idle mid-answer"), String(rows[1].error))
      ok(BigInt(rows[1].cost) > 0n && BigInt(rows[1].cost) < BigInt(rows[0].cost), JSON.stringify(rows))
    })
  } finally {
    await gateway.close()
    await emulator.close()
  }
})
