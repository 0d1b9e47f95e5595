/**
 * Errors that a retry cannot fix carry `x-should-retry: false`, so the
 * official `openai` and `@anthropic-ai/sdk` clients (default `maxRetries`, 2)
 * send such a request once; a 429 or 5xx still gets retried. Requests are
 * counted in front of the gateway. Generate-content errors are Google's own
 * shape (numeric `code`, RPC `status`). With `unknown_model_status: 404`, an
 * unknown model answers 404 (OpenAI's `model_not_found`), which no client
 * retries.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { APICallError, generateText } from "ai"
import { createOpenAI } from "@ai-sdk/openai"
import { countingFrontDoor } from "../support/CountingFrontDoor.ts"
import { basicConfig, startGateway } from "../support/Gateway.ts"

const KEY = "sk-test-alice-0001"
const POOR_KEY = "sk-test-bob-0001"

const config = (emulatorUrl: string) =>
  basicConfig(emulatorUrl, {
    models: { "gpt-test": { input: 2, output: 8 }, "claude-test": { input: 2, output: 8 } },
    channels: [
      { name: "emu-openai", type: "openai", base_url: emulatorUrl, keys: ["sk-test-up-o"], models: ["gpt-test"] },
      {
        name: "emu-anthropic",
        type: "anthropic",
        base_url: emulatorUrl,
        keys: ["sk-test-up-a"],
        models: ["claude-test"]
      },
      { name: "emu-gemini", type: "gemini", base_url: emulatorUrl, keys: ["sk-test-up-g"], models: ["gemini-test"] }
    ],
    users: [
      { username: "alice", group: "default", quota: 10_000_000, tokens: [{ name: "main", key: KEY }] },
      { username: "bob", group: "default", quota: 1, tokens: [{ name: "main", key: POOR_KEY }] }
    ],
    settings: { retry_times: 0, max_body_bytes: 100_000 }
  })

const failure = async (call: () => Promise<unknown>): Promise<{ status?: number; headers?: Headers }> => {
  try {
    await call()
  } catch (error) {
    return error as { status?: number; headers?: Headers }
  }
  throw new Error("expected the call to fail")
}

Deno.test("clients: errors a retry cannot fix are sent once; 429 and 5xx are still retried", async (t) => {
  const gateway = await startGateway({ config })
  const front = countingFrontDoor(gateway)
  const openai = (apiKey = KEY) => new OpenAI({ baseURL: `${front.url}/v1`, apiKey })
  const anthropic = (apiKey = KEY) => new Anthropic({ baseURL: front.url, apiKey })
  const chat = (model: string, apiKey = KEY) =>
    openai(apiKey).chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], max_tokens: 20 })
  const message = (model: string, apiKey = KEY) =>
    anthropic(apiKey).messages.create({ model, max_tokens: 20, messages: [{ role: "user", content: "hi" }] })
  const once = async (name: string, call: () => Promise<unknown>, status: number) => {
    front.paths.length = 0
    const error = await failure(call)
    strictEqual(error.status, status, name)
    strictEqual(error.headers?.get("x-should-retry"), "false", name)
    strictEqual(front.paths.length, 1, `${name}: ${front.paths.length} requests`)
  }
  try {
    await t.step("unknown model: 503 model_not_found, one request (openai, anthropic)", async () => {
      await once("openai", () => chat("no-such-model"), 503)
      await once("anthropic", () => message("no-such-model"), 503)
    })
    await t.step("bad key 401, quota 402, bad request 400, body too large 413, no route 404: one request", async () => {
      await once("401 openai", () => chat("gpt-test", "sk-test-nobody"), 401)
      await once("401 anthropic", () => message("claude-test", "sk-test-nobody"), 401)
      await once("402 openai", () => chat("gpt-test", POOR_KEY), 402)
      await once("402 anthropic", () => message("claude-test", POOR_KEY), 402)
      await once(
        "400 openai",
        () => openai().chat.completions.create({ model: "gpt-test", messages: "nope" as never }),
        400
      )
      await once("404 openai", () => openai().get("/no-such-route"), 404)
      await once("413 anthropic", () => message("claude-test".padEnd(200_000, " ")), 413)
    })
    await t.step("upstream 500 and 429: retried by both clients, and the retry succeeds", async () => {
      for (const status of [500, 429]) {
        gateway.emulator.setFaults([{ status, times: 1 }])
        front.paths.length = 0
        const answer = await chat("gpt-test")
        ok(answer.choices[0]?.message.content?.startsWith("Echo:"))
        strictEqual(front.paths.length, 2, `openai after ${status}`)
        gateway.emulator.setFaults([{ status, times: 1 }])
        front.paths.length = 0
        const reply = await message("claude-test")
        strictEqual(reply.content[0]?.type, "text")
        strictEqual(front.paths.length, 2, `anthropic after ${status}`)
      }
      gateway.emulator.clearFaults()
    })
    await t.step("a retryable answer carries no x-should-retry", async () => {
      gateway.emulator.setFaults([{ status: 503, times: 1 }])
      const response = await fetch(`${front.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-test", messages: [{ role: "user", content: "hi" }] })
      })
      await response.body?.cancel()
      ok(response.status >= 500, String(response.status))
      strictEqual(response.headers.get("x-should-retry"), null)
      gateway.emulator.clearFaults()
    })
  } finally {
    await front.close()
    await gateway.close()
  }
})

Deno.test("generate-content errors: Google's body (numeric code, RPC status), non-stream and JSON-array stream", async () => {
  const gateway = await startGateway({ config })
  try {
    const post = (path: string, key: string, body: unknown) =>
      fetch(`${gateway.url}/v1beta/models/${path}`, {
        method: "POST",
        headers: { "x-goog-api-key": key, "content-type": "application/json" },
        body: JSON.stringify(body)
      })
    const contents = [{ role: "user", parts: [{ text: "hi" }] }]
    for (const path of ["gemini-test:generateContent", "gemini-test:streamGenerateContent"]) {
      // Before a JSON-array stream, the error body is wrapped in the array as well: `[{"error": …}]`.
      const read = async (response: Response) => {
        const json = await response.json()
        strictEqual(Array.isArray(json), path.endsWith("streamGenerateContent"), path)
        return Array.isArray(json) ? json[0] : json
      }
      const unauthorized = await post(path, "sk-test-nobody", { contents })
      strictEqual(unauthorized.status, 401, path)
      strictEqual(unauthorized.headers.get("x-should-retry"), "false")
      const body = await read(unauthorized)
      strictEqual(body.error.code, 401, path)
      strictEqual(body.error.status, "UNAUTHENTICATED", path)
      strictEqual(body.error.message, "The API key is not valid.", path)
      deepStrictEqual(body.error.details[0].metadata, { code: "invalid_api_key", type: "invalid_request_error" })

      const unknown = await post(path.replace("gemini-test", "gemini-none"), KEY, { contents })
      strictEqual(unknown.status, 503, path)
      const missing = await read(unknown)
      strictEqual(missing.error.code, 503)
      strictEqual(missing.error.status, "UNAVAILABLE")
      strictEqual(missing.error.details[0].reason, "MODEL_NOT_FOUND")

      const bad = await post(path, KEY, { contents: [{ role: "user", parts: [{ text: 5 }] }] })
      strictEqual(bad.status, 400, path)
      const invalid = await read(bad)
      strictEqual(invalid.error.code, 400)
      strictEqual(invalid.error.status, "INVALID_ARGUMENT")
      const violation = invalid.error.details.find((detail: { "@type": string }) =>
        detail["@type"] === "type.googleapis.com/google.rpc.BadRequest"
      )
      strictEqual(typeof violation?.fieldViolations[0].field, "string", JSON.stringify(invalid))
      ok(violation.fieldViolations[0].field.startsWith("contents[0]"), JSON.stringify(invalid))
    }
  } finally {
    await gateway.close()
  }
})

Deno.test("unknown_model_status 404: model_not_found answers 404 as OpenAI does; the SDKs send it once", async (t) => {
  const gateway = await startGateway({
    config: (url) => ({ ...config(url), settings: { ...config(url).settings, unknown_model_status: 404 } })
  })
  const front = countingFrontDoor(gateway)
  try {
    await t.step("openai SDK: NotFoundError with code model_not_found, param model, one request", async () => {
      front.paths.length = 0
      const client = new OpenAI({ baseURL: `${front.url}/v1`, apiKey: KEY })
      const error = await failure(() =>
        client.chat.completions.create({ model: "no-such-model", messages: [{ role: "user", content: "hi" }] })
      ) as InstanceType<typeof OpenAI.APIError>
      ok(error instanceof OpenAI.NotFoundError, String(error))
      strictEqual(error.code, "model_not_found")
      strictEqual(error.param, "model")
      strictEqual(error.type, "invalid_request_error")
      strictEqual(front.paths.length, 1)
    })
    await t.step("AI SDK (3 retries by default on a 5xx): one request", async () => {
      front.paths.length = 0
      const provider = createOpenAI({ baseURL: `${front.url}/v1`, apiKey: KEY })
      const error = await failure(() => generateText({ model: provider.chat("no-such-model"), prompt: "hi" }))
      ok(APICallError.isInstance(error), String(error))
      strictEqual((error as APICallError).statusCode, 404)
      strictEqual(front.paths.length, 1)
    })
    await t.step(
      "a model whose channels cannot serve the route answers 404 too (rerank, speech, embeddings)",
      async () => {
        // claude-test is on an anthropic channel only: no rerank, audio or embedding wire.
        const routes: ReadonlyArray<readonly [string, object]> = [
          ["/v1/rerank", { model: "claude-test", query: "q", documents: ["a", "b"] }],
          ["/v1/audio/speech", { model: "claude-test", input: "hi", voice: "alloy" }],
          ["/v1/embeddings", { model: "claude-test", input: "hi" }]
        ]
        for (const [path, body] of routes) {
          const answer = await fetch(`${gateway.url}${path}`, {
            method: "POST",
            headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
            body: JSON.stringify(body)
          })
          strictEqual(answer.status, 404, path)
          const text = await answer.text()
          ok(text.includes("model_not_found"), `${path}: ${text}`)
        }
      }
    )
    await t.step("a known model still answers", async () => {
      const client = new OpenAI({ baseURL: `${front.url}/v1`, apiKey: KEY })
      const answer = await client.chat.completions.create({
        model: "gpt-test",
        messages: [{ role: "user", content: "hi" }],
        max_tokens: 20
      })
      ok(answer.choices[0]?.message.content?.startsWith("Echo:"))
    })
  } finally {
    await front.close()
    await gateway.close()
  }
})
