/**
 * `type: vertex` channels end to end against the emulator's Vertex AI (served under `/vertex`, so the channel's
 * `base_url` has a path), through the official SDKs as callers:
 *
 * - `openai` chat completions and Responses, streamed and not, with tools, to a Gemini model (generate-content) and
 *   a Claude model (rawPredict) on one channel whose key is the service-account key JSON the emulator issued: one
 *   token from the emulator's token endpoint serves every call; each answer is billed exactly the usage the
 *   emulator reported, cache reads at `cached_input` and cache writes at `cache_write`;
 * - an `@anthropic-ai/sdk` caller reaches Claude on Vertex with every field it sent, `model` left out and
 *   `anthropic_version: vertex-2023-10-16` in the body, `anthropic-beta` as a header, an image block, streamed and
 *   not;
 * - an `@google/genai` caller (and a raw one whose contents have no role, which Vertex AI requires) reaches Gemini
 *   on Vertex, an image part included; legacy completions too;
 * - embeddings through `:predict`, billed the token counts the emulator reported;
 * - a key that is not JSON is a Vertex API key, sent as `x-goog-api-key`;
 * - a token endpoint that refuses the key (an assertion signed by a key it did not issue: `invalid_grant`)
 *   disables the key, and the failed call costs nothing; no private key or token reaches the logs;
 * - bootstrap validation names `settings.project`; the admin API refuses a vertex channel without one, gives a
 *   channel without `base_url` its location's endpoint (`global` without a region) and masks the key JSON.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import Anthropic from "@anthropic-ai/sdk"
import { GoogleGenAI } from "@google/genai"
import { exportPKCS8, generateKeyPair } from "jose"
import OpenAI from "openai"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { type RecordedRequest, startEmulator } from "../../emulator/Emulator.ts"
import { VERTEX_TEST_API_KEY, VERTEX_TEST_PROJECT } from "../../emulator/Vertex.ts"
import { browser } from "../support/Browser.ts"
import { ROOT_PASSWORD, startGateway, type TestGateway } from "../support/Gateway.ts"

const KEY = "sk-test-vertex-caller-0001"
/** USD per 1M tokens: whole quota units a token, so each answer's cost is exact. */
const PRICE = { input: 4, output: 8, cached_input: 1, cache_write: 5 }
const PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
const PLACE = `/vertex/v1/projects/${VERTEX_TEST_PROJECT}/locations/us-central1`
const GEMINI_MODEL = "gemini-2.5-flash"
const CLAUDE_MODEL = "claude-sonnet-4-5@20250929"

/** A service-account key the emulator did not issue, pointed at its token endpoint. */
const strangerKey = async (emulatorUrl: string) => {
  const pair = await generateKeyPair("RS256", { extractable: true })
  return JSON.stringify({
    type: "service_account",
    project_id: VERTEX_TEST_PROJECT,
    private_key_id: "stranger-key-1",
    private_key: await exportPKCS8(pair.privateKey),
    client_email: `stranger@${VERTEX_TEST_PROJECT}.iam.gserviceaccount.com`,
    token_uri: `${emulatorUrl}/vertex/token`
  })
}

const config = (serviceAccount: string, stranger: string) => (emulatorUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: Object.fromEntries(
        ["vx-gemini", "vx-claude", "vx-embed", "vx-express", "vx-refused"].map((model) => [model, PRICE])
      ),
      channels: [
        {
          name: "vertex",
          type: "vertex",
          base_url: `${emulatorUrl}/vertex`,
          keys: [serviceAccount],
          models: ["vx-gemini", "vx-claude", "vx-embed"],
          model_mapping: { "vx-gemini": GEMINI_MODEL, "vx-claude": CLAUDE_MODEL, "vx-embed": "text-embedding-005" },
          settings: { project: VERTEX_TEST_PROJECT, location: "us-central1" }
        },
        {
          name: "vertex-express",
          type: "vertex",
          base_url: `${emulatorUrl}/vertex/v1`,
          keys: [VERTEX_TEST_API_KEY],
          models: ["vx-express"],
          model_mapping: { "vx-express": GEMINI_MODEL },
          settings: { project: VERTEX_TEST_PROJECT }
        },
        {
          name: "vertex-refused",
          type: "vertex",
          base_url: `${emulatorUrl}/vertex`,
          keys: [stranger],
          models: ["vx-refused"],
          model_mapping: { "vx-refused": GEMINI_MODEL },
          settings: { project: VERTEX_TEST_PROJECT }
        }
      ],
      users: [{ username: "vera", group: "default", quota: 1_000_000_000, tokens: [{ name: "main", key: KEY }] }]
    }),
    "vertex.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

interface Row {
  readonly id: string
  readonly model: string
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly cached_tokens: number
  readonly cost: string
  readonly status: number
}

/** The model calls the emulator recorded since `from` (its token requests left out). */
const callsSince = (gateway: TestGateway, from: number): ReadonlyArray<RecordedRequest> =>
  gateway.emulator.requests.slice(from).filter((request) =>
    request.method === "POST" && request.path !== "/vertex/token"
  )

/** Whether a recorded call went to Claude (the anthropic publisher). */
const isClaude = (request: RecordedRequest) => request.path.includes("/publishers/anthropic/")

/**
 * What a reported answer costs: Gemini's prompt count includes its cache reads; Claude's `input_tokens` excludes
 * its cache reads and writes.
 */
const pricedAsReported = (request: RecordedRequest): bigint => {
  const usage = request.usage!
  const uncached = isClaude(request) ? usage.input : usage.input - usage.cacheRead
  return BigInt(
    PRICE.input * uncached + PRICE.cached_input * usage.cacheRead + PRICE.cache_write * usage.cacheWrite +
      PRICE.output * usage.output
  )
}

Deno.test("vertex channels: Gemini and Claude on Vertex AI through the SDKs, billed as Vertex reported", async (t) => {
  const emulator = startEmulator()
  const serviceAccount = await emulator.vertexServiceAccountKey()
  const stranger = await strangerKey(emulator.url)
  const gateway = await startGateway({
    config: config(serviceAccount, stranger),
    store: "postgres",
    emulator,
    ownsEmulator: true
  })
  const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
  const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: KEY, maxRetries: 0 })
  let lastRow = "0"
  const nextRows = async (failed = 0) => {
    let rows = await gateway.query<Row>(
      `SELECT id::text AS id, model, prompt_tokens, completion_tokens, cached_tokens, cost::text AS cost, status
       FROM usage_logs WHERE id > ${lastRow} ORDER BY usage_logs.id`
    )
    for (let tries = 0; rows.filter((row) => row.status >= 400).length < failed && tries < 50; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      rows = await gateway.query<Row>(
        `SELECT id::text AS id, model, prompt_tokens, completion_tokens, cached_tokens, cost::text AS cost, status
         FROM usage_logs WHERE id > ${lastRow} ORDER BY usage_logs.id`
      )
    }
    if (rows.length > 0) lastRow = rows.at(-1)!.id
    return rows
  }
  /** Each billed row, in order, is the matching call's reported usage at the model's prices. */
  const assertBilledAsReported = async (reported: ReadonlyArray<RecordedRequest>) => {
    const billed = (await nextRows()).filter((row) => row.status < 400)
    strictEqual(billed.length, reported.length, "one billed row per answer")
    billed.forEach((row, index) => {
      const call = reported[index]
      const usage = call.usage!
      ok(usage !== undefined, `call ${index}: the emulator reported usage`)
      const prompt = isClaude(call) ? usage.input + usage.cacheRead + usage.cacheWrite : usage.input
      deepStrictEqual(
        { prompt: row.prompt_tokens, completion: row.completion_tokens, cached: row.cached_tokens },
        { prompt, completion: usage.output, cached: usage.cacheRead },
        `row ${row.id} (${row.model}): the tokens Vertex reported`
      )
      strictEqual(BigInt(row.cost), pricedAsReported(call), `row ${row.id}: cache reads and writes at their prices`)
    })
  }
  const tool: OpenAI.ChatCompletionTool = {
    type: "function",
    function: {
      name: "get_weather",
      description: "Weather in a city",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
    }
  }
  try {
    await t.step("openai chat and Responses to Gemini and Claude, streamed and not, one token for all", async () => {
      const from = gateway.emulator.requests.length
      const gemini = await openai.chat.completions.create({
        model: "vx-gemini",
        messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hello from the cached manual" }]
      })
      strictEqual(gemini.choices[0].message.content, "Echo: hello from the cached manual")
      const claudeStream = await openai.chat.completions.create({
        model: "vx-claude",
        messages: [{ role: "user", content: "write this cachewrite prompt" }],
        stream: true,
        stream_options: { include_usage: true }
      })
      let streamed = ""
      for await (const chunk of claudeStream) streamed += chunk.choices[0]?.delta.content ?? ""
      strictEqual(streamed, "Echo: write this cachewrite prompt")
      const claudeCached = await openai.chat.completions.create({
        model: "vx-claude",
        messages: [{ role: "user", content: "read the cached prompt" }]
      })
      strictEqual(claudeCached.choices[0].message.content, "Echo: read the cached prompt")
      const toolCall = await openai.chat.completions.create({
        model: "vx-claude",
        messages: [{
          role: "user",
          content: [
            { type: "text", text: "weather here?" },
            { type: "image_url", image_url: { url: `data:image/png;base64,${PIXEL}` } }
          ]
        }],
        tools: [tool]
      })
      strictEqual(toolCall.choices[0].finish_reason, "tool_calls")
      strictEqual(toolCall.choices[0].message.tool_calls?.[0]?.type, "function")
      const responses = await openai.responses.create({
        model: "vx-gemini",
        input: "weather in Paris?",
        tools: [{ type: "function", name: "get_weather", parameters: tool.function.parameters!, strict: false }]
      })
      ok(responses.output.some((item) => item.type === "function_call" && item.name === "get_weather"))
      const responsesStream = await openai.responses.create({ model: "vx-claude", input: "stream me", stream: true })
      let text = ""
      for await (const event of responsesStream) if (event.type === "response.output_text.delta") text += event.delta
      strictEqual(text, "Echo: stream me")

      const tokens = gateway.emulator.requests.filter((request) => request.path === "/vertex/token")
      strictEqual(tokens.length, 1, "one access token served all six calls")
      const calls = callsSince(gateway, from)
      deepStrictEqual(calls.map((call) => call.path), [
        `${PLACE}/publishers/google/models/${GEMINI_MODEL}:generateContent`,
        `${PLACE}/publishers/anthropic/models/${CLAUDE_MODEL}:streamRawPredict`,
        `${PLACE}/publishers/anthropic/models/${CLAUDE_MODEL}:rawPredict`,
        `${PLACE}/publishers/anthropic/models/${CLAUDE_MODEL}:rawPredict`,
        `${PLACE}/publishers/google/models/${GEMINI_MODEL}:generateContent`,
        `${PLACE}/publishers/anthropic/models/${CLAUDE_MODEL}:streamRawPredict`
      ])
      ok(calls[0].usage!.cacheRead > 0, "Gemini reported cache reads")
      ok(calls[1].usage!.cacheWrite > 0, "Claude reported cache writes")
      ok(calls[2].usage!.cacheRead > 0, "Claude reported cache reads")
      const claudeImage = calls[3].body as { messages: Array<{ content: Array<{ type: string }> }> }
      ok(claudeImage.messages[0].content.some((block) => block.type === "image"), "the image reached Claude")
      for (const call of calls.filter(isClaude)) {
        const body = call.body as Record<string, unknown>
        strictEqual("model" in body, false)
        strictEqual(body.anthropic_version, "vertex-2023-10-16")
      }
      await assertBilledAsReported(calls)
    })

    await t.step("a Messages caller reaches Claude on Vertex with every field it sent but model", async () => {
      const from = gateway.emulator.requests.length
      const message = await anthropic.messages.create({
        model: "vx-claude",
        max_tokens: 256,
        service_tier: "standard_only",
        metadata: { user_id: "user-vertex-1" },
        stop_sequences: ["NEVER"],
        messages: [{
          role: "user",
          content: [
            { type: "image", source: { type: "base64", media_type: "image/png", data: PIXEL } },
            { type: "text", text: "what is this" }
          ]
        }]
      }, { headers: { "anthropic-beta": "context-1m-2025-08-07" } })
      ok(message.content[0].type === "text" && message.content[0].text.startsWith("I see 1 image(s)"))
      const stream = anthropic.messages.stream({
        model: "vx-claude",
        max_tokens: 256,
        messages: [{ role: "user", content: "stream through vertex" }]
      })
      const final = await stream.finalMessage()
      deepStrictEqual(final.content, [{ type: "text", text: "Echo: stream through vertex" }])
      const calls = callsSince(gateway, from)
      strictEqual(calls.length, 2)
      const body = calls[0].body as Record<string, unknown>
      strictEqual("model" in body, false, "no model in the body")
      strictEqual(body.anthropic_version, "vertex-2023-10-16")
      strictEqual(body.service_tier, "standard_only")
      deepStrictEqual(body.metadata, { user_id: "user-vertex-1" })
      deepStrictEqual(body.stop_sequences, ["NEVER"])
      strictEqual(calls[0].headers["anthropic-beta"], "context-1m-2025-08-07")
      strictEqual(calls[0].headers["anthropic-version"], undefined, "the version is in the body, not a header")
      strictEqual((calls[1].body as Record<string, unknown>).stream, true)
      ok(calls[1].path.endsWith(":streamRawPredict"))
      await assertBilledAsReported(calls)
    })

    await t.step("a generate-content caller, and legacy completions, reach Gemini on Vertex", async () => {
      const from = gateway.emulator.requests.length
      const genai = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: gateway.url, apiVersion: "v1beta" } })
      const answer = await genai.models.generateContent({
        model: "vx-gemini",
        contents: [{
          role: "user",
          parts: [{ text: "describe" }, { inlineData: { mimeType: "image/png", data: PIXEL } }]
        }]
      })
      ok(answer.text?.startsWith("I see 1 image(s)"), String(answer.text))
      let streamed = ""
      for await (const chunk of await genai.models.generateContentStream({ model: "vx-gemini", contents: "one two" })) {
        streamed += chunk.text ?? ""
      }
      strictEqual(streamed, "Echo: one two")
      // The Gemini API takes a content without a role as the user's; Vertex AI requires the role.
      const raw = await fetch(`${gateway.url}/v1beta/models/vx-gemini:generateContent`, {
        method: "POST",
        headers: { "x-goog-api-key": KEY, "content-type": "application/json" },
        body: JSON.stringify({ contents: [{ parts: [{ text: "no role here" }] }] })
      })
      strictEqual(raw.status, 200)
      strictEqual((await raw.json()).candidates[0].content.parts[0].text, "Echo: no role here")
      const completion = await openai.completions.create({ model: "vx-gemini", prompt: "complete me", max_tokens: 32 })
      strictEqual(completion.choices[0].text, "Echo: complete me")
      const completionStream = await openai.completions.create({
        model: "vx-gemini",
        prompt: "stream me too",
        stream: true
      })
      let completed = ""
      for await (const chunk of completionStream) completed += chunk.choices[0]?.text ?? ""
      strictEqual(completed, "Echo: stream me too")
      const calls = callsSince(gateway, from)
      strictEqual(calls.length, 5)
      strictEqual(calls[1].query.alt, "sse")
      deepStrictEqual((calls[2].body as { contents: Array<{ role: string }> }).contents.map((c) => c.role), ["user"])
      await assertBilledAsReported(calls)
    })

    await t.step("embeddings go through :predict, billed the token counts reported", async () => {
      const from = gateway.emulator.requests.length
      const embedded = await openai.embeddings.create({
        model: "vx-embed",
        input: ["first text", "second"],
        dimensions: 8
      })
      strictEqual(embedded.data.length, 2)
      strictEqual(embedded.data[0].embedding.length, 8)
      const [call] = callsSince(gateway, from)
      strictEqual(call.path, `${PLACE}/publishers/google/models/text-embedding-005:predict`)
      deepStrictEqual(call.body, {
        instances: [{ content: "first text" }, { content: "second" }],
        parameters: { outputDimensionality: 8 }
      })
      strictEqual(embedded.usage.prompt_tokens, call.usage!.input)
      const [row] = (await nextRows()).filter((one) => one.status < 400)
      strictEqual(row.prompt_tokens, call.usage!.input)
      strictEqual(BigInt(row.cost), BigInt(PRICE.input * call.usage!.input))
    })

    await t.step("a key that is not JSON is a Vertex API key, sent as x-goog-api-key", async () => {
      const from = gateway.emulator.requests.length
      const answer = await openai.chat.completions.create({
        model: "vx-express",
        messages: [{ role: "user", content: "express call" }]
      })
      strictEqual(answer.choices[0].message.content, "Echo: express call")
      const [call] = callsSince(gateway, from)
      strictEqual(call.path, `${PLACE}/publishers/google/models/${GEMINI_MODEL}:generateContent`, "/v1 not doubled")
      strictEqual(call.headers["x-goog-api-key"], VERTEX_TEST_API_KEY)
      strictEqual(call.headers.authorization, undefined)
      await assertBilledAsReported([call])
    })

    await t.step("a token endpoint that refuses the key disables it; the failed call costs nothing", async () => {
      const from = gateway.emulator.requests.length
      const failed = await openai.chat.completions.create({
        model: "vx-refused",
        messages: [{ role: "user", content: "hi" }]
      }).catch((error: unknown) => error)
      ok(failed instanceof OpenAI.APIError, `an error, got ${failed}`)
      const sent = gateway.emulator.requests.slice(from)
      deepStrictEqual(sent.map((request) => request.path), ["/vertex/token"], "no model call without a token")
      const keys = await gateway.query<{ enabled: boolean; disabled_reason: string | null }>(
        `SELECT k.enabled, k.disabled_reason FROM channel_keys k JOIN channels c ON c.id = k.channel_id
         WHERE c.name = 'vertex-refused'`
      )
      strictEqual(keys.length, 1)
      strictEqual(keys[0].enabled, false)
      ok(keys[0].disabled_reason?.startsWith("unauthorized"), `disabled as refused, got ${keys[0].disabled_reason}`)
      ok(keys[0].disabled_reason?.includes("invalid_grant"), keys[0].disabled_reason ?? "")
      const rows = await nextRows(1)
      ok(rows.length > 0 && rows.every((row) => row.status >= 400 && row.cost === "0"), "only a failed row, free")
      const logs = gateway.logs.join("\n")
      ok(!logs.includes("PRIVATE KEY") && !logs.includes("ya29."), "no private key or token in the logs")
    })

    await t.step(
      "bootstrap and admin API: settings.project required, default base URL by location, key masked",
      async () => {
        const missing = parseBootstrap(
          JSON.stringify({
            channels: [{ name: "v", type: "vertex", keys: [VERTEX_TEST_API_KEY], models: ["vx-gemini"] }]
          }),
          "missing.json"
        )
        strictEqual(Result.isSuccess(missing), false)
        ok(
          Result.isFailure(missing) && missing.failure.startsWith("channels[0].settings.project:"),
          Result.isFailure(missing) ? missing.failure : ""
        )

        const root = browser(gateway.url)
        await root.login("root", ROOT_PASSWORD)
        const refused = await root.call("POST", "/api/channel/", {
          name: "vertex-no-project",
          type: "vertex",
          keys: [VERTEX_TEST_API_KEY],
          models: ["vx-gemini"]
        })
        strictEqual(refused.success, false)
        ok(refused.message.includes("settings.project"), refused.message)
        for (
          const [location, expected] of [
            ["europe-west4", "https://europe-west4-aiplatform.googleapis.com"],
            ["global", "https://aiplatform.googleapis.com"],
            [undefined, "https://us-central1-aiplatform.googleapis.com"]
          ] as const
        ) {
          const created = await root.call<{ base_url: string }>("POST", "/api/channel/", {
            name: `vertex-admin-${location ?? "default"}`,
            type: "vertex",
            keys: [serviceAccount],
            models: ["vx-gemini"],
            settings: { project: VERTEX_TEST_PROJECT, ...(location === undefined ? {} : { location }) }
          })
          strictEqual(created.success, true, created.message)
          strictEqual(created.data.base_url, expected)
        }
        const listed = await root.call<unknown>("GET", "/api/channel/")
        ok(!JSON.stringify(listed).includes("PRIVATE KEY"), "the service-account key is masked in the channel list")
      }
    )
  } finally {
    await gateway.close()
  }
})
