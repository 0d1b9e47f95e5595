/**
 * `type: azure` channels end to end against the emulator's Azure OpenAI (served under `/azure`, so the channel's
 * `base_url` has a path), through the official SDKs as callers (`openai` chat, Responses and legacy completions,
 * `@anthropic-ai/sdk` Messages, `@google/genai` generate-content), streamed and not, with tools and images, on both
 * API version modes:
 *
 * - a dated channel (no `settings.api_version`: `2024-10-21`) calls `/openai/deployments/{deployment}/…` with
 *   `?api-version=2024-10-21`, the `api-key` header and no `authorization`; Responses callers are served through chat
 *   completions there;
 * - a `v1` channel calls `/openai/v1/…` with the deployment as `model` and no `api-version`, Responses included;
 * - every answer is billed exactly what the emulator reported (cached prompt tokens at `cached_input`);
 * - the content filter's 400 reaches the caller as a 400 with code `content_filter` (an Anthropic caller's
 *   `invalid_request_error`), is not tried on the next channel, disables no key and costs nothing; an answer the
 *   completion filter cut reaches each caller with its format's content-filter finish;
 * - an `entra:<token>` key is sent as `Authorization: Bearer <token>`, never as `api-key`;
 * - embeddings, images, speech and transcriptions go to the deployment's operations, billed by their prices;
 * - the admin API refuses an azure channel without `base_url` and a bad `settings.api_version`, naming them;
 * - Sora 2 videos go to the v1 API (`/openai/v1/videos`) even from a dated channel, billed per second.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import Anthropic from "@anthropic-ai/sdk"
import { GoogleGenAI } from "@google/genai"
import OpenAI, { toFile } from "openai"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { wavFile } from "../../emulator/Audio.ts"
import { type RecordedRequest, startEmulator } from "../../emulator/Emulator.ts"
import { browser } from "../support/Browser.ts"
import { ROOT_PASSWORD, startGateway } from "../support/Gateway.ts"
import { pixelPng } from "../emulator/Support.ts"
import { eventually, usageOf } from "../support/VideoGateway.ts"
import { assertBilledAsReported, type BilledAs, postsSince, rowReader } from "../support/BilledAsReported.ts"

const KEY = "sk-test-azure-caller-0001"
const UPSTREAM_KEY = "sk-test-azure-upstream-1"
const ENTRA_TOKEN = "entra-test-token-0001"
/** USD per 1M tokens. */
const PRICE = { input: 2, output: 8, cached_input: 0.5 }
const BILLED: BilledAs = {
  vendor: "Azure",
  quarters: { input: 8, cachedInput: 2, cacheWrite: 0, output: 32 },
  cacheApart: false
}

const config = (emulatorUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: {
        ...Object.fromEntries(["az-chat", "az-v1", "az-filter", "az-entra", "az-embed"].map((model) => [model, PRICE])),
        "az-image": { per_image: 0.04, family: "dall-e-3" },
        "az-tts": { per_1m_characters: 15 },
        "az-whisper": { per_second: 0.0001 }
      },
      channels: [
        {
          name: "azure-dated",
          type: "azure",
          base_url: `${emulatorUrl}/azure`,
          keys: [UPSTREAM_KEY],
          models: ["az-chat", "az-embed", "az-image", "az-tts", "az-whisper"],
          model_mapping: {
            "az-chat": "gpt-4o dated",
            "az-embed": "embed-small",
            "az-image": "dall-e-3",
            "az-tts": "tts-1",
            "az-whisper": "whisper-1"
          }
        },
        {
          // The SDK's `baseURL` form (`…/openai`): not doubled.
          name: "azure-v1",
          type: "azure",
          base_url: `${emulatorUrl}/azure/openai/`,
          keys: [UPSTREAM_KEY],
          models: ["az-v1"],
          model_mapping: { "az-v1": "gpt-4o-v1" },
          settings: { api_version: "v1" }
        },
        {
          name: "azure-filter-first",
          type: "azure",
          base_url: `${emulatorUrl}/azure`,
          keys: [UPSTREAM_KEY],
          models: ["az-filter"],
          priority: 1,
          model_mapping: { "az-filter": "guarded" },
          settings: { api_version: "2024-06-01" }
        },
        {
          name: "azure-filter-next",
          type: "azure",
          base_url: `${emulatorUrl}/azure`,
          keys: [UPSTREAM_KEY],
          models: ["az-filter"],
          model_mapping: { "az-filter": "guarded-next" }
        },
        {
          name: "azure-entra",
          type: "azure",
          base_url: `${emulatorUrl}/azure`,
          keys: [`entra:${ENTRA_TOKEN}`],
          models: ["az-entra"],
          model_mapping: { "az-entra": "entra-dep" },
          settings: { api_version: "v1" }
        }
      ],
      users: [{ username: "azu", group: "default", quota: 1_000_000_000, tokens: [{ name: "main", key: KEY }] }]
    }),
    "azure.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

/** The upstream call went to a dated deployment path with the channel's `api-key` and no `authorization`. */
const assertDated = (request: RecordedRequest, deployment: string, operation: string, version = "2024-10-21") => {
  strictEqual(request.path, `/azure/openai/deployments/${deployment}/${operation}`)
  deepStrictEqual(request.query, { "api-version": version })
  strictEqual(request.headers["api-key"], UPSTREAM_KEY)
  strictEqual(request.headers.authorization, undefined)
}

/** The upstream call went to the v1 API with the deployment as `model`. */
const assertV1 = (request: RecordedRequest, operation: string, deployment = "gpt-4o-v1") => {
  strictEqual(request.path, `/azure/openai/v1/${operation}`)
  deepStrictEqual(request.query, {})
  strictEqual((request.body as Record<string, unknown>).model, deployment)
}

const weather: Array<Anthropic.Tool> = [{
  name: "get_weather",
  description: "Weather in a city",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
}]

Deno.test("azure channels: both API versions from every SDK, billed as Azure reported", async (t) => {
  const gateway = await startGateway({ config, store: "postgres" })
  const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
  const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: KEY, maxRetries: 0 })
  const google = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: gateway.url, apiVersion: "v1beta" } })
  const nextRows = rowReader(gateway)
  try {
    await t.step(
      "dated: chat, Responses, legacy completions, Messages and generate-content reach the deployment path",
      async () => {
        const from = gateway.emulator.requests.length
        const chat = await openai.chat.completions.create({
          model: "az-chat",
          messages: [{ role: "user", content: "hello from the cached manual" }]
        })
        strictEqual(chat.choices[0].message.content, "Echo: hello from the cached manual")
        ok((chat.usage?.prompt_tokens_details?.cached_tokens ?? 0) > 0, "Azure's cached tokens reach the caller")

        const stream = await openai.chat.completions.create({
          model: "az-chat",
          messages: [{ role: "user", content: "stream please" }],
          stream: true
        })
        let streamed = ""
        for await (const chunk of stream) streamed += chunk.choices[0]?.delta.content ?? ""
        strictEqual(streamed, "Echo: stream please")

        const response = await openai.responses.create({ model: "az-chat", input: "responses via chat" })
        strictEqual(response.output_text, "Echo: responses via chat")

        const legacy = await openai.completions.create({ model: "az-chat", prompt: "legacy words", max_tokens: 20 })
        strictEqual(legacy.choices[0].text, "Echo: legacy words")

        const message = await anthropic.messages.create({
          model: "az-chat",
          max_tokens: 256,
          tools: weather,
          messages: [{ role: "user", content: "weather in Paris?" }]
        })
        const use = message.content.find((block) => block.type === "tool_use")
        ok(use !== undefined && use.type === "tool_use" && use.name === "get_weather", "a tool call")
        strictEqual(message.stop_reason, "tool_use")

        let generated = ""
        for await (
          const chunk of await google.models.generateContentStream({
            model: "az-chat",
            contents: [{
              role: "user",
              parts: [{ text: "describe this" }, { inlineData: { mimeType: "image/png", data: pixelPng } }]
            }]
          })
        ) generated += chunk.text ?? ""
        ok(generated.startsWith("I see 1 image"), generated)

        const reported = postsSince(gateway, from)
        strictEqual(reported.length, 6)
        const deployment = encodeURIComponent("gpt-4o dated")
        for (const [index, request] of reported.entries()) {
          assertDated(request, deployment, index === 3 ? "completions" : "chat/completions")
        }
        ok(reported[0].usage!.cacheRead > 0)
        assertBilledAsReported(await nextRows(), reported, BILLED)
      }
    )

    await t.step(
      "v1: Responses, chat with an image, Messages streamed reach /openai/v1 with the deployment as model",
      async () => {
        const from = gateway.emulator.requests.length
        const response = await openai.responses.create({
          model: "az-v1",
          input: [{
            role: "user",
            content: [{ type: "input_text", text: "look" }, {
              type: "input_image",
              image_url: `data:image/png;base64,${pixelPng}`,
              detail: "auto"
            }]
          }]
        })
        ok(response.output_text.startsWith("I see 1 image"), response.output_text)

        const responseStream = await openai.responses.create({ model: "az-v1", input: "stream v1", stream: true })
        let done = ""
        for await (const event of responseStream) if (event.type === "response.output_text.delta") done += event.delta
        strictEqual(done, "Echo: stream v1")

        const chat = await openai.chat.completions.create({
          model: "az-v1",
          messages: [{
            role: "user",
            content: [{ type: "text", text: "see" }, {
              type: "image_url",
              image_url: { url: `data:image/png;base64,${pixelPng}` }
            }]
          }]
        })
        ok(chat.choices[0].message.content?.startsWith("I see 1 image"))

        const messages = anthropic.messages.stream({
          model: "az-v1",
          max_tokens: 256,
          messages: [{ role: "user", content: "streamed message" }]
        })
        const final = await messages.finalMessage()
        strictEqual(final.content[0].type === "text" ? final.content[0].text : "", "Echo: streamed message")

        const reported = postsSince(gateway, from)
        strictEqual(reported.length, 4)
        assertV1(reported[0], "responses")
        assertV1(reported[1], "responses")
        assertV1(reported[2], "chat/completions")
        assertV1(reported[3], "chat/completions")
        for (const request of reported) {
          strictEqual(request.headers["api-key"], UPSTREAM_KEY)
          strictEqual(request.headers.authorization, undefined)
        }
        assertBilledAsReported(await nextRows(), reported, BILLED)
      }
    )

    await t.step(
      "the content filter's 400: the caller's refusal with code content_filter, not retried, free",
      async () => {
        const from = gateway.emulator.requests.length
        const chatError = await openai.chat.completions.create({
          model: "az-filter",
          messages: [{ role: "user", content: "something unsafe" }]
        }).then(() => undefined, (error: unknown) => error)
        ok(chatError instanceof OpenAI.BadRequestError, String(chatError))
        strictEqual(chatError.code, "content_filter")
        strictEqual(chatError.type, "invalid_request_error")

        const messageError = await anthropic.messages.create({
          model: "az-filter",
          max_tokens: 64,
          messages: [{ role: "user", content: "unsafe again" }]
        }).then(() => undefined, (error: unknown) => error)
        ok(messageError instanceof Anthropic.BadRequestError, String(messageError))
        strictEqual((messageError.error as { error: { type: string } }).error.type, "invalid_request_error")

        const reported = postsSince(gateway, from)
        strictEqual(reported.length, 2, "each refusal was one upstream call: never tried on the next channel")
        ok(reported.every((request) => request.path.startsWith("/azure/openai/deployments/guarded/")))
        strictEqual(reported[0].query["api-version"], "2024-06-01")
        const rows = await nextRows(2)
        ok(rows.length >= 2 && rows.every((row) => row.status >= 400 && row.cost === "0"), "nothing charged")

        // The key still serves: a refusal of the prompt disables nothing.
        const after = await openai.chat.completions.create({
          model: "az-filter",
          messages: [{ role: "user", content: "a fine question" }]
        })
        strictEqual(after.choices[0].message.content, "Echo: a fine question")
        strictEqual(postsSince(gateway, from).at(-1)?.path, "/azure/openai/deployments/guarded/chat/completions")
        await nextRows()
      }
    )

    await t.step(
      "an answer the completion filter cut: each caller's content-filter finish, billed as reported",
      async () => {
        const from = gateway.emulator.requests.length
        const chat = await openai.chat.completions.create({
          model: "az-chat",
          messages: [{ role: "user", content: "a violent tale" }]
        })
        strictEqual(chat.choices[0].finish_reason, "content_filter")

        const stream = anthropic.messages.stream({
          model: "az-chat",
          max_tokens: 256,
          messages: [{ role: "user", content: "a violent tale" }]
        })
        const final = await stream.finalMessage()
        strictEqual(final.stop_reason, "refusal")

        const generated = await google.models.generateContent({
          model: "az-chat",
          contents: [{ role: "user", parts: [{ text: "a violent tale" }] }]
        })
        strictEqual(generated.candidates?.[0]?.finishReason, "SAFETY")
        const reported = postsSince(gateway, from)
        assertBilledAsReported(await nextRows(), reported, BILLED)
      }
    )

    await t.step("an entra: key is sent as Authorization: Bearer, never as api-key", async () => {
      const from = gateway.emulator.requests.length
      const chat = await openai.chat.completions.create({
        model: "az-entra",
        messages: [{ role: "user", content: "hi entra" }]
      })
      strictEqual(chat.choices[0].message.content, "Echo: hi entra")
      const [request] = postsSince(gateway, from)
      assertV1(request, "chat/completions", "entra-dep")
      strictEqual(request.headers.authorization, `Bearer ${ENTRA_TOKEN}`)
      strictEqual(request.headers["api-key"], undefined)
      assertBilledAsReported(await nextRows(), [request], BILLED)
    })

    await t.step("embeddings go to the deployment's embeddings", async () => {
      const from = gateway.emulator.requests.length
      const embedded = await openai.embeddings.create({ model: "az-embed", input: ["one", "two"] })
      strictEqual(embedded.data.length, 2)
      const [request] = postsSince(gateway, from)
      assertDated(request, "embed-small", "embeddings")
      const rows = await nextRows()
      strictEqual(rows.filter((row) => row.status < 400).length, 1)
    })

    await t.step(
      "images, speech and transcriptions go to the deployment's operations, billed by their prices",
      async () => {
        const from = gateway.emulator.requests.length
        const image = await openai.images.generate({ model: "az-image", prompt: "a calm lake", size: "1024x1024" })
        strictEqual(image.data?.length, 1)
        const speech = await openai.audio.speech.create({ model: "az-tts", voice: "alloy", input: "hello azure" })
        ok((await speech.arrayBuffer()).byteLength > 0)
        const wav = wavFile(new Uint8Array(16_000 * 5), 16_000) // 2.5 s of 16-bit mono silence
        const transcript = await openai.audio.transcriptions.create({
          model: "az-whisper",
          file: await toFile(wav, "speech.wav", { type: "audio/wav" }),
          response_format: "verbose_json"
        })
        strictEqual(transcript.duration, 2.5)
        const reported = postsSince(gateway, from)
        assertDated(reported[0], "dall-e-3", "images/generations")
        assertDated(reported[1], "tts-1", "audio/speech")
        assertDated(reported[2], "whisper-1", "audio/transcriptions")
        const rows = await nextRows()
        deepStrictEqual(
          rows.filter((row) => row.status < 400).map((row) => [row.model, row.cost]),
          [
            ["az-image", "40000"], // one image at 0.04 USD
            ["az-tts", String(11 * 15)], // 11 characters at 15 USD per 1M
            // The 3 s the answer's usage reports (OpenAI's `usage.seconds`, whole seconds) at 0.0001 USD a second.
            ["az-whisper", "300"]
          ]
        )
      }
    )

    await t.step(
      "admin API: an azure channel needs a base_url; a bad settings.api_version is refused by name",
      async () => {
        const root = browser(gateway.url)
        await root.login("root", ROOT_PASSWORD)
        const channel = { name: "azure-admin", type: "azure", keys: ["sk-test-azure-admin-1"], models: ["az-chat"] }
        const noBase = await root.call("POST", "/api/channel/", channel)
        strictEqual(noBase.success, false)
        ok(noBase.message.includes("base_url is missing"), noBase.message)
        const badVersion = await root.call("POST", "/api/channel/", {
          ...channel,
          base_url: "https://res.openai.azure.com",
          settings: { api_version: "2024-10" }
        })
        strictEqual(badVersion.success, false)
        ok(badVersion.message.includes("settings.api_version"), badVersion.message)
        const created = await root.call<{ settings: { api_version?: string } }>("POST", "/api/channel/", {
          ...channel,
          base_url: "https://res.openai.azure.com",
          settings: { api_version: "v1" }
        })
        strictEqual(created.success, true, created.message)
        strictEqual(created.data.settings.api_version, "v1")
      }
    )
  } finally {
    await gateway.close()
  }
})

Deno.test("azure channels: Sora 2 videos through the v1 API on a dated channel, billed per second", async () => {
  const emulator = startEmulator({ videoStepMs: 100 })
  const gateway = await startGateway({
    config: (emulatorUrl) => {
      const parsed = parseBootstrap(
        JSON.stringify({
          groups: { default: { ratio: 1 } },
          models: { "az-sora": { per_second: 0.1, family: "openai-video" } },
          channels: [{
            name: "azure-videos",
            type: "azure",
            base_url: `${emulatorUrl}/azure`,
            keys: [UPSTREAM_KEY],
            models: ["az-sora"],
            model_mapping: { "az-sora": "sora-2-dep" }
          }],
          users: [{ username: "vid", group: "default", quota: 100_000_000, tokens: [{ name: "main", key: KEY }] }],
          settings: { task_poll_interval_ms: 100 }
        }),
        "azure-videos.json"
      )
      if (Result.isFailure(parsed)) throw new Error(parsed.failure)
      return parsed.success
    },
    store: "postgres",
    emulator,
    ownsEmulator: true
  })
  try {
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
    const created = await client.videos.create({ model: "az-sora" as "sora-2", prompt: "a calm lake", seconds: "8" })
    strictEqual(created.status, "queued")
    await eventually(async () => (await client.videos.retrieve(created.id)).status === "completed")
    const bytes = new Uint8Array(await (await client.videos.downloadContent(created.id)).arrayBuffer())
    strictEqual(new TextDecoder().decode(bytes.subarray(4, 8)), "ftyp")
    await eventually(async () => (await usageOf(gateway, KEY)).used === 800_000) // 8 s at 0.1 USD

    const posts = emulator.requests.filter((request) => request.method === "POST")
    strictEqual(posts.length, 1)
    strictEqual(posts[0].path, "/azure/openai/v1/videos", "videos go to the v1 API whatever the api_version")
    strictEqual((posts[0].body as Record<string, unknown>).model, "sora-2-dep", "the deployment as model")
    ok(emulator.requests.some((request) => /^\/azure\/openai\/v1\/videos\/[^/]+$/.test(request.path)), "polled")
    for (const request of emulator.requests) {
      strictEqual(request.headers["api-key"], UPSTREAM_KEY)
      strictEqual(request.headers.authorization, undefined)
    }
  } finally {
    await gateway.close()
  }
})
