/**
 * The Vercel AI SDK (`ai`) through Sluice with each of its three providers
 * pointed at the gateway (`baseURL`), every channel on the emulator:
 * `generateText`, `streamText`, a tool round trip (a tool with `execute`, two
 * steps), and errors (a wrong key surfaces as a 401 `APICallError` with the
 * gateway's message; an unknown model as a 503 with its message). Requests are
 * counted in front of the gateway.
 */
import { ok, strictEqual } from "node:assert/strict"
import { APICallError, generateText, type LanguageModel, stepCountIs, streamText, tool } from "ai"
import { createAnthropic } from "@ai-sdk/anthropic"
import { createGoogleGenerativeAI } from "@ai-sdk/google"
import { createOpenAI } from "@ai-sdk/openai"
import { z } from "zod"
import { countingFrontDoor } from "../support/CountingFrontDoor.ts"
import { basicConfig, startGateway } from "../support/Gateway.ts" // The AI SDK's own compatibility notes (unknown model names) are noise here.
;(globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false

const KEY = "sk-test-alice-0001"
const WRONG_KEY = "sk-test-nobody-0001"

const config = (emulatorUrl: string) =>
  basicConfig(emulatorUrl, {
    models: {
      "gpt-test": { input: 2, output: 8 },
      "claude-test": { input: 2, output: 8 },
      "gemini-2.5-flash": { input: 2, output: 8 }
    },
    channels: [
      { name: "emu-openai", type: "openai", base_url: emulatorUrl, keys: ["sk-test-up-o"], models: ["gpt-test"] },
      {
        name: "emu-anthropic",
        type: "anthropic",
        base_url: emulatorUrl,
        keys: ["sk-test-up-a"],
        models: ["claude-test"]
      },
      {
        name: "emu-gemini",
        type: "gemini",
        base_url: emulatorUrl,
        keys: ["sk-test-up-g"],
        models: ["gemini-2.5-flash"]
      }
    ],
    settings: { retry_times: 0 }
  })

/** One provider of the AI SDK, set up against the gateway's base URL. */
interface Provider {
  readonly name: string
  readonly path: string
  readonly model: (base: string, apiKey: string, model?: string) => LanguageModel
  /** The tool output as the provider sends it back (the emulator echoes it). */
  readonly toolEcho: string
}

const providers: ReadonlyArray<Provider> = [
  {
    name: "openai (responses)",
    path: "/v1/responses",
    model: (base, apiKey, model = "gpt-test") => createOpenAI({ baseURL: `${base}/v1`, apiKey })(model),
    toolEcho: '{"forecast":"rain in sample"}'
  },
  {
    name: "openai (chat)",
    path: "/v1/chat/completions",
    model: (base, apiKey, model = "gpt-test") => createOpenAI({ baseURL: `${base}/v1`, apiKey }).chat(model),
    toolEcho: '{"forecast":"rain in sample"}'
  },
  {
    name: "anthropic",
    path: "/v1/messages",
    model: (base, apiKey, model = "claude-test") => createAnthropic({ baseURL: `${base}/v1`, apiKey })(model),
    toolEcho: '{"forecast":"rain in sample"}'
  },
  {
    name: "google",
    path: "/v1beta/models/",
    model: (base, apiKey, model = "gemini-2.5-flash") =>
      createGoogleGenerativeAI({ baseURL: `${base}/v1beta`, apiKey })(model),
    // @ai-sdk/google wraps a tool's output as `functionResponse.response: {name, content}`.
    toolEcho: '{"name":"get_weather","content":{"forecast":"rain in sample"}}'
  }
]

const weather = tool({
  description: "The weather in a city",
  inputSchema: z.object({ city: z.string() }),
  execute: ({ city }) => Promise.resolve({ forecast: `rain in ${city}` })
})

const apiCallError = async (call: () => Promise<unknown>): Promise<APICallError> => {
  try {
    await call()
  } catch (error) {
    ok(APICallError.isInstance(error), `expected an APICallError, got ${error}`)
    return error
  }
  throw new Error("expected the call to fail")
}

Deno.test("AI SDK: generateText, streamText, a tool round trip and errors with each provider", async (t) => {
  const gateway = await startGateway({ config })
  const front = countingFrontDoor(gateway)
  try {
    for (const provider of providers) {
      const model = provider.model(front.url, KEY)
      await t.step(`${provider.name}: generateText`, async () => {
        front.paths.length = 0
        const result = await generateText({ model, prompt: "Hello there" })
        strictEqual(result.text, "Echo: Hello there")
        strictEqual(result.finishReason, "stop")
        ok((result.usage.inputTokens ?? 0) > 0 && (result.usage.outputTokens ?? 0) > 0, JSON.stringify(result.usage))
        strictEqual(front.paths.length, 1)
        ok(front.paths[0].startsWith(provider.path), front.paths[0])
      })

      await t.step(`${provider.name}: streamText`, async () => {
        const result = streamText({ model, prompt: "Stream this please" })
        let text = ""
        for await (const delta of result.textStream) text += delta
        strictEqual(text, "Echo: Stream this please")
        strictEqual(await result.finishReason, "stop")
        ok(((await result.usage).outputTokens ?? 0) > 0)
      })

      await t.step(`${provider.name}: a tool round trip over two steps`, async () => {
        front.paths.length = 0
        const result = await generateText({
          model,
          prompt: "What is the weather in Paris?",
          tools: { get_weather: weather },
          stopWhen: stepCountIs(3)
        })
        strictEqual(result.steps.length, 2)
        const call = result.steps[0].toolCalls[0]
        strictEqual(call?.toolName, "get_weather")
        strictEqual(result.steps[0].toolResults.length, 1)
        strictEqual(result.text, `Tool result: ${provider.toolEcho}`)
        strictEqual(front.paths.length, 2)
      })

      await t.step(`${provider.name}: streamText with the tool round trip`, async () => {
        const result = streamText({
          model,
          prompt: "Weather in Rome, streamed",
          tools: { get_weather: weather },
          stopWhen: stepCountIs(3)
        })
        let text = ""
        for await (const delta of result.textStream) text += delta
        strictEqual(text, `Tool result: ${provider.toolEcho}`)
        strictEqual((await result.steps).length, 2)
      })

      await t.step(`${provider.name}: a wrong key is a 401 with the gateway's message, sent once`, async () => {
        front.paths.length = 0
        const error = await apiCallError(() =>
          generateText({ model: provider.model(front.url, WRONG_KEY), prompt: "hi" })
        )
        strictEqual(error.statusCode, 401)
        strictEqual(error.message, "The API key is not valid.")
        strictEqual(error.isRetryable, false)
        strictEqual(error.responseHeaders?.["x-should-retry"], "false")
        strictEqual(front.paths.length, 1)
      })

      await t.step(`${provider.name}: an unknown model is a 503 with the gateway's message`, async () => {
        front.paths.length = 0
        // The AI SDK decides retries from the status alone (APICallError.isRetryable: 408, 409, 429, 5xx)
        // and ignores x-should-retry, so with its default maxRetries (2) it would send this three times
        // (2 s and 4 s apart). maxRetries: 0 keeps the test fast and shows what it would retry.
        const error = await apiCallError(() =>
          generateText({ model: provider.model(front.url, KEY, "no-such-model"), prompt: "hi", maxRetries: 0 })
        )
        strictEqual(error.statusCode, 503)
        strictEqual(error.message, 'Model "no-such-model" is not available for this key.')
        strictEqual(error.responseHeaders?.["x-should-retry"], "false")
        strictEqual(error.isRetryable, true)
        strictEqual(front.paths.length, 1)
      })
    }
  } finally {
    await front.close()
    await gateway.close()
  }
})
