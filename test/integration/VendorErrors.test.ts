/**
 * Upstream errors through the official SDKs: an upstream error whose message
 * merely quotes "credit balance", "API key not valid" or "limit: 0" (as a
 * vendor echoing a caller's field would) leaves the upstream key enabled; a
 * 401 disables it, and the caller's answer holds neither the vendor's words
 * nor anything key-like.
 */
import { Result } from "effect"
import { ok, strictEqual } from "node:assert/strict"
import Anthropic from "@anthropic-ai/sdk"
import { GoogleGenAI } from "@google/genai"
import OpenAI from "openai"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { quotaExhausted } from "../../emulator/Faults.ts"
import { startGateway, type TestGateway } from "../support/Gateway.ts"

const KEY = "sk-test-dana-0001"
const UP = {
  openai: "sk-test-up-openai-0001",
  openaiStream: "sk-test-up-openai-0002",
  anthropic: "sk-test-up-anthropic-0001",
  gemini: "sk-test-up-gemini-0001"
}

const config = (emulatorUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: {
        "m-openai": { input: 1, output: 2 },
        "m-openai-2": { input: 1, output: 2 },
        "m-claude": { input: 1, output: 2 },
        "m-gemini": { input: 1, output: 2 }
      },
      channels: [
        { name: "oa", type: "openai", base_url: emulatorUrl, keys: [UP.openai], models: ["m-openai"] },
        { name: "oa2", type: "openai", base_url: emulatorUrl, keys: [UP.openaiStream], models: ["m-openai-2"] },
        { name: "an", type: "anthropic", base_url: emulatorUrl, keys: [UP.anthropic], models: ["m-claude"] },
        { name: "ge", type: "gemini", base_url: emulatorUrl, keys: [UP.gemini], models: ["m-gemini"] }
      ],
      users: [{ username: "dana", group: "default", quota: 50_000_000, tokens: [{ name: "main", key: KEY }] }],
      settings: { cooldown_failures: 1000, retry_times: 0 }
    }),
    "vendor-errors.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

const keyEnabled = async (gateway: TestGateway, key: string): Promise<boolean> => {
  const rows = await gateway.query<{ enabled: boolean }>(`SELECT enabled FROM channel_keys WHERE key = '${key}'`)
  strictEqual(rows.length, 1)
  return rows[0].enabled
}

const failureOf = async (call: () => Promise<unknown>): Promise<unknown> => {
  try {
    await call()
  } catch (error) {
    return error
  }
  throw new Error("the call succeeded")
}

Deno.test("vendor errors: quoted key and credit words never disable a key; a 401 does, and says nothing of the vendor", async (t) => {
  const gateway = await startGateway({ store: "postgres", config })
  const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: KEY, maxRetries: 0 })
  const genai = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: gateway.url, apiVersion: "v1beta" } })
  const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
  const hi = [{ role: "user" as const, content: "hi" }]
  try {
    await t.step("anthropic 400 that says the credit balance is too low: a request error, the key stays", async () => {
      const fault = quotaExhausted("anthropic")
      gateway.emulator.setFaults([{ match: { key: UP.anthropic }, status: fault.status, body: fault.body }])
      const error = await failureOf(() =>
        anthropic.messages.create({ model: "m-claude", max_tokens: 20, messages: hi })
      )
      ok(error instanceof Anthropic.BadRequestError, String(error))
      strictEqual(await keyEnabled(gateway, UP.anthropic), true)
    })

    await t.step("anthropic in-band stream error quoting the credit balance: the key stays", async () => {
      gateway.emulator.reset()
      gateway.emulator.setFaults([{
        match: { key: UP.anthropic },
        status: 400,
        message: 'Unknown field "x": Your credit balance is too low to access the Anthropic API.',
        breakAfterEvents: 2
      }])
      const error = await failureOf(async () => {
        const stream = await anthropic.messages.create({
          model: "m-claude",
          max_tokens: 20,
          messages: hi,
          stream: true
        })
        for await (const _event of stream) { /* drain */ }
      })
      ok(error instanceof Anthropic.APIError, String(error))
      strictEqual(await keyEnabled(gateway, UP.anthropic), true)
    })

    await t.step(
      "gemini 400 'API key not valid' and 429 'limit: 0' without a structured detail: the key stays",
      async () => {
        for (
          const [status, message] of [
            [400, 'Invalid JSON payload: unknown name "x": API key not valid. Please pass a valid API key.'],
            [429, "Quota exceeded for metric: generate_content_free_tier_requests, limit: 0"]
          ] as const
        ) {
          gateway.emulator.reset()
          gateway.emulator.setFaults([{ match: { key: UP.gemini }, status, message }])
          const error = await failureOf(() => genai.models.generateContent({ model: "m-gemini", contents: "hi" }))
          ok(error instanceof Error, String(error))
          strictEqual(await keyEnabled(gateway, UP.gemini), true, `${status} ${message}`)
        }
      }
    )

    await t.step(
      "openai 401 quoting the upstream key: the key is disabled, the caller sees no vendor text",
      async () => {
        gateway.emulator.reset()
        const vendorText =
          `Incorrect API key provided: ${UP.openai}. You can find your API key at AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q.`
        gateway.emulator.setFaults([{ match: { key: UP.openai }, status: 401, message: vendorText, times: 1 }])
        const response = await fetch(`${gateway.url}/v1/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "m-openai", messages: hi })
        })
        const text = await response.text()
        strictEqual(response.status, 502)
        for (const leaked of [UP.openai, "Incorrect API key", "AIzaSy", "sk-test-up"]) {
          strictEqual(text.includes(leaked), false, `${leaked} in ${text}`)
        }
        strictEqual(JSON.parse(text).error.code, "upstream_error")
        strictEqual(await keyEnabled(gateway, UP.openai), false)
        // the operator's record keeps the vendor's reason, masked
        const [row] = await gateway.query<{ reason: string }>(
          `SELECT disabled_reason AS reason FROM channel_keys WHERE key = '${UP.openai}'`
        )
        // The channel's own key is masked by value, whole (not only its key-like tail).
        ok(row.reason.startsWith("unauthorized: Incorrect API key provided: [redacted]"), row.reason)
        ok(!row.reason.includes(UP.openai), row.reason)
      }
    )

    await t.step(
      "through the SDK, a stream request refused with 401 names neither the key nor the vendor",
      async () => {
        gateway.emulator.reset()
        gateway.emulator.setFaults([{
          match: { key: UP.openaiStream },
          status: 401,
          message: `Bad key ${UP.openaiStream}`
        }])
        const error = await failureOf(async () => {
          const stream = await openai.chat.completions.create({ model: "m-openai-2", messages: hi, stream: true })
          for await (const _chunk of stream) { /* drain */ }
        })
        ok(error instanceof OpenAI.APIError, String(error))
        const seen = JSON.stringify({ message: error.message, body: error.error })
        strictEqual(gateway.emulator.requests.length, 1)
        strictEqual(seen.includes(UP.openaiStream), false, seen)
        strictEqual(seen.includes("Bad key"), false, seen)
        strictEqual(await keyEnabled(gateway, UP.openaiStream), false)
      }
    )
  } finally {
    await gateway.close()
  }
})
