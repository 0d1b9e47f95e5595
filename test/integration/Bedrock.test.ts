/**
 * `type: bedrock` channels end to end against the emulator's Bedrock Runtime (served under `/bedrock`, SigV4
 * verified on every call), through the official SDKs as callers:
 *
 * - Converse for every inbound format (chat completions, Responses, Messages, generate-content, legacy completions),
 *   streamed (event-stream frames) and not, with tools and images, SigV4-signed;
 * - `bedrock_api: invoke`: a Claude-Code-like Messages request (system, tools, thinking, `cache_control`, metadata,
 *   `anthropic-beta`) reaches InvokeModel with every field it sent, `anthropic_version` and `anthropic_beta` in the
 *   body, no `model` or `stream`, with a Bedrock API key as Bearer; a chat caller to the same channel is translated;
 * - each answer billed exactly what the emulator reported: cache reads at `cached_input`, writes at `cache_write`;
 * - embeddings through InvokeModel (Titan one input a call, Cohere a batch);
 * - Bedrock's refusals: a ValidationException is the caller's 400 with nothing charged; a refused key is disabled.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import Anthropic from "@anthropic-ai/sdk"
import { GoogleGenAI } from "@google/genai"
import OpenAI from "openai"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { BEDROCK_TEST_API_KEY, BEDROCK_TEST_CHANNEL_KEY } from "../../emulator/BedrockAuth.ts"
import { browser } from "../support/Browser.ts"
import { ROOT_PASSWORD, startGateway } from "../support/Gateway.ts"
import { assertBilledAsReported, type BilledAs, postsSince, rowReader } from "../support/BilledAsReported.ts"

const KEY = "sk-test-bedrock-caller-0001"
/** USD per 1M tokens. */
const PRICE = { input: 2, output: 8, cached_input: 0.5, cache_write: 2.5 }
const BILLED: BilledAs = {
  vendor: "Bedrock",
  quarters: { input: 8, cachedInput: 2, cacheWrite: 10, output: 32 },
  cacheApart: true
}
const CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

const config = (emulatorUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: Object.fromEntries(
        ["br-claude", "br-nova", "br-invoke", "br-titan", "br-cohere", "br-refused"].map((model) => [model, PRICE])
      ),
      channels: [
        {
          name: "bedrock-converse",
          type: "bedrock",
          base_url: `${emulatorUrl}/bedrock`,
          keys: [BEDROCK_TEST_CHANNEL_KEY],
          models: ["br-claude", "br-nova", "br-titan", "br-cohere"],
          model_mapping: {
            "br-claude": CLAUDE,
            "br-nova": "amazon.nova-lite-v1:0",
            "br-titan": "amazon.titan-embed-text-v2:0",
            "br-cohere": "cohere.embed-english-v3"
          },
          settings: { region: "us-east-1" }
        },
        {
          name: "bedrock-invoke",
          type: "bedrock",
          base_url: `${emulatorUrl}/bedrock/`,
          keys: [BEDROCK_TEST_API_KEY],
          models: ["br-invoke"],
          model_mapping: { "br-invoke": "anthropic.claude-sonnet-4-5-20250929-v1:0" },
          settings: { region: "us-east-1", bedrock_api: "invoke" }
        },
        {
          name: "bedrock-refused",
          type: "bedrock",
          base_url: `${emulatorUrl}/bedrock`,
          keys: ["AKIDEXAMPLE|not-the-secret-at-all"],
          models: ["br-refused"],
          model_mapping: { "br-refused": CLAUDE },
          settings: { region: "us-east-1" }
        }
      ],
      users: [{ username: "bea", group: "default", quota: 1_000_000_000, tokens: [{ name: "main", key: KEY }] }]
    }),
    "bedrock.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

Deno.test("bedrock channels: Converse and InvokeModel from every SDK, billed as Bedrock reported", async (t) => {
  const gateway = await startGateway({ config, store: "postgres" })
  const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
  const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: KEY, maxRetries: 0 })
  const google = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: gateway.url, apiVersion: "v1beta" } })
  const nextRows = rowReader(gateway)
  const lastPost = (from: number) => postsSince(gateway, from).at(-1)!
  try {
    await t.step("chat completions through Converse, signed with SigV4, streamed and not", async () => {
      const from = gateway.emulator.requests.length
      const answer = await openai.chat.completions.create({
        model: "br-claude",
        messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Say hello" }],
        max_tokens: 64
      })
      ok((answer.choices[0].message.content ?? "").length > 0)
      const sent = lastPost(from)
      strictEqual(sent.path, `/bedrock/model/${encodeURIComponent(CLAUDE)}/converse`)
      ok(sent.headers.authorization.startsWith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"), "SigV4-signed")
      ok(sent.headers.authorization.includes("/us-east-1/bedrock/aws4_request"))
      const body = sent.body as Record<string, unknown>
      deepStrictEqual(body.system, [{ text: "Be brief." }])
      deepStrictEqual(body.inferenceConfig, { maxTokens: 64 })
      strictEqual("model" in body, false)

      const stream = await openai.chat.completions.create({
        model: "br-claude",
        messages: [{ role: "user", content: "Say hello in a stream" }],
        stream: true,
        stream_options: { include_usage: true }
      })
      let text = ""
      let usage: OpenAI.CompletionUsage | undefined
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? ""
        usage = chunk.usage ?? usage
      }
      ok(text.length > 0)
      ok(usage !== undefined && usage.completion_tokens > 0)
      strictEqual(lastPost(from).path, `/bedrock/model/${encodeURIComponent(CLAUDE)}/converse-stream`)
      assertBilledAsReported(await nextRows(), postsSince(gateway, from), BILLED)
    })

    await t.step("tools and an image cross to Converse; the tool call comes back, streamed and not", async () => {
      const from = gateway.emulator.requests.length
      const tools: Array<OpenAI.ChatCompletionTool> = [{
        type: "function",
        function: {
          name: "get_weather",
          description: "Weather by city",
          parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
        }
      }]
      const messages: Array<OpenAI.ChatCompletionMessageParam> = [{
        role: "user",
        content: [
          { type: "text", text: "What is in this image? Then call get_weather for Oslo." },
          { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } }
        ]
      }]
      const answer = await openai.chat.completions.create({ model: "br-claude", messages, tools, tool_choice: "auto" })
      const call = answer.choices[0].message.tool_calls?.[0]
      ok(call !== undefined && call.type === "function" && call.function.name === "get_weather")
      strictEqual(answer.choices[0].finish_reason, "tool_calls")
      const body = lastPost(from).body as { messages: Array<{ content: Array<Record<string, unknown>> }> }
      deepStrictEqual(body.messages[0].content[1], { image: { format: "png", source: { bytes: PNG } } })
      deepStrictEqual((lastPost(from).body as Record<string, unknown>).toolConfig, {
        tools: [{
          toolSpec: {
            name: "get_weather",
            description: "Weather by city",
            inputSchema: { json: tools[0].type === "function" ? tools[0].function.parameters : {} }
          }
        }],
        toolChoice: { auto: {} }
      })
      // The tool result goes back as a toolResult block; the loop ends in text.
      const followUp = await openai.chat.completions.create({
        model: "br-claude",
        tools,
        messages: [
          ...messages,
          answer.choices[0].message,
          { role: "tool", tool_call_id: call.id, content: "4°C and clear" }
        ]
      })
      ok((followUp.choices[0].message.content ?? "").length > 0)
      const loop = lastPost(from).body as { messages: Array<{ role: string; content: Array<Record<string, unknown>> }> }
      const result = loop.messages.at(-1)!.content[0].toolResult as Record<string, unknown>
      strictEqual(result.toolUseId, call.id)

      const stream = await openai.chat.completions.create({
        model: "br-claude",
        messages,
        tools,
        stream: true,
        stream_options: { include_usage: true }
      })
      let name = ""
      let args = ""
      for await (const chunk of stream) {
        const delta = chunk.choices[0]?.delta.tool_calls?.[0]
        name += delta?.function?.name ?? ""
        args += delta?.function?.arguments ?? ""
      }
      strictEqual(name, "get_weather")
      ok(typeof JSON.parse(args) === "object")
      assertBilledAsReported(await nextRows(), postsSince(gateway, from), BILLED)
    })

    await t.step("Responses, Messages, generate-content and legacy completions reach Converse", async () => {
      const from = gateway.emulator.requests.length
      const response = await openai.responses.create({ model: "br-nova", input: "Say hello", max_output_tokens: 50 })
      ok(response.output_text.length > 0)
      strictEqual(lastPost(from).path, `/bedrock/model/${encodeURIComponent("amazon.nova-lite-v1:0")}/converse`)
      const streamed = await openai.responses.create({ model: "br-nova", input: "Say hello", stream: true })
      let completed = false
      for await (const event of streamed) completed ||= event.type === "response.completed"
      ok(completed)

      const message = await anthropic.messages.create({
        model: "br-claude",
        max_tokens: 100,
        messages: [{ role: "user", content: "Say hello" }]
      })
      strictEqual(message.content[0].type, "text")
      const messageStream = anthropic.messages.stream({
        model: "br-claude",
        max_tokens: 100,
        messages: [{ role: "user", content: "Say hello in a stream" }]
      })
      const final = await messageStream.finalMessage()
      ok(final.usage.output_tokens > 0)
      strictEqual(lastPost(from).path, `/bedrock/model/${encodeURIComponent(CLAUDE)}/converse-stream`)

      const generated = await google.models.generateContent({ model: "br-claude", contents: "Say hello" })
      ok((generated.text ?? "").length > 0)
      let streamedText = ""
      for await (const chunk of await google.models.generateContentStream({ model: "br-nova", contents: "Hello" })) {
        streamedText += chunk.text ?? ""
      }
      ok(streamedText.length > 0)

      const completion = await openai.completions.create({
        model: "br-nova",
        prompt: "Once upon a time",
        max_tokens: 20
      })
      ok(completion.choices[0].text.length > 0)
      assertBilledAsReported(await nextRows(), postsSince(gateway, from), BILLED)
    })

    await t.step("cache reads are billed at cached_input and cache writes at cache_write, as reported", async () => {
      const from = gateway.emulator.requests.length
      const read = await openai.chat.completions.create({
        model: "br-claude",
        messages: [{ role: "user", content: "this prompt is cached, mostly cached" }]
      })
      ok((read.usage?.prompt_tokens_details?.cached_tokens ?? 0) > 0, "the caller sees the cache read")
      const readUsage = lastPost(from).usage!
      ok(readUsage.cacheRead > 0)
      const stream = await anthropic.messages.create({
        model: "br-claude",
        max_tokens: 64,
        stream: true,
        messages: [{ role: "user", content: "this prompt goes to the cache: cachewrite please" }]
      })
      let written = 0
      for await (const event of stream) {
        if (event.type === "message_start") written = event.message.usage.cache_creation_input_tokens ?? 0
        if (event.type === "message_delta") written = event.usage.cache_creation_input_tokens ?? written
      }
      ok(lastPost(from).usage!.cacheWrite > 0)
      strictEqual(written, lastPost(from).usage!.cacheWrite, "the Messages caller sees the cache write")
      assertBilledAsReported(await nextRows(), postsSince(gateway, from), BILLED)
    })

    await t.step(
      "bedrock_api invoke: a Claude-Code-like Messages request reaches InvokeModel with every field",
      async () => {
        const from = gateway.emulator.requests.length
        const request = {
          model: "br-invoke",
          max_tokens: 4096,
          system: [{
            type: "text" as const,
            text: "You are a coding agent.",
            cache_control: { type: "ephemeral" as const }
          }],
          tools: [{
            name: "Read",
            description: "Read a file",
            input_schema: { type: "object" as const, properties: { path: { type: "string" } }, required: ["path"] }
          }],
          thinking: { type: "enabled" as const, budget_tokens: 1024 },
          metadata: { user_id: "user_abc_session_1" },
          messages: [{ role: "user" as const, content: "Read README.md, this prompt is cached" }]
        }
        const betas = {
          headers: { "anthropic-beta": "interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14" }
        }
        const answer = await anthropic.messages.create(request, betas)
        ok(answer.content.length > 0)
        const sent = lastPost(from)
        strictEqual(
          sent.path,
          `/bedrock/model/${encodeURIComponent("anthropic.claude-sonnet-4-5-20250929-v1:0")}/invoke`
        )
        strictEqual(sent.headers.authorization, `Bearer ${BEDROCK_TEST_API_KEY}`)
        const { model: _model, ...fields } = request
        deepStrictEqual(sent.body, {
          anthropic_version: "bedrock-2023-05-31",
          ...fields,
          anthropic_beta: ["interleaved-thinking-2025-05-14", "fine-grained-tool-streaming-2025-05-14"]
        })

        const stream = await anthropic.messages.create({ ...request, stream: true }, betas)
        const types: Array<string> = []
        for await (const event of stream) types.push(event.type)
        strictEqual(types[0], "message_start")
        strictEqual(types.at(-1), "message_stop")
        const streamed = lastPost(from)
        strictEqual(streamed.path.endsWith("/invoke-with-response-stream"), true)
        strictEqual("stream" in (streamed.body as Record<string, unknown>), false)

        // A chat caller to the same channel is translated to the Messages body.
        const chat = await openai.chat.completions.create({
          model: "br-invoke",
          messages: [{ role: "user", content: "Say hello" }],
          max_tokens: 50
        })
        ok((chat.choices[0].message.content ?? "").length > 0)
        const translated = lastPost(from).body as Record<string, unknown>
        strictEqual(translated.anthropic_version, "bedrock-2023-05-31")
        strictEqual("model" in translated, false)
        assertBilledAsReported(await nextRows(), postsSince(gateway, from), BILLED)
      }
    )

    await t.step(
      "embeddings: Titan one input a call, its counts added up; Cohere in one call, billed as reported",
      async () => {
        const from = gateway.emulator.requests.length
        const titan = await openai.embeddings.create({
          model: "br-titan",
          input: ["one", "two words", "three words here"]
        })
        strictEqual(titan.data.length, 3)
        const calls = postsSince(gateway, from)
        strictEqual(calls.length, 3, "one InvokeModel call per input")
        deepStrictEqual(calls.map((call) => (call.body as Record<string, unknown>).inputText).sort(), [
          "one",
          "three words here",
          "two words"
        ])
        const reported = calls.reduce((sum, call) => sum + call.usage!.input, 0)
        strictEqual(titan.usage.prompt_tokens, reported)
        const cohereFrom = gateway.emulator.requests.length
        const cohere = await openai.embeddings.create({ model: "br-cohere", input: ["alpha", "beta"] })
        strictEqual(cohere.data.length, 2)
        deepStrictEqual(postsSince(gateway, cohereFrom)[0].body, {
          texts: ["alpha", "beta"],
          input_type: "search_document"
        })
        const cohereReported = postsSince(gateway, cohereFrom)[0].usage!.input
        strictEqual(cohere.usage.prompt_tokens, cohereReported, "Cohere's input tokens from InvokeModel's header")
        const rows = (await nextRows()).filter((row) => row.status < 400)
        strictEqual(rows.length, 2)
        deepStrictEqual(rows.map((row) => row.prompt_tokens), [reported, cohereReported])
        deepStrictEqual(rows.map((row) => BigInt(row.cost)), [BigInt(2 * reported), BigInt(2 * cohereReported)])
      }
    )

    await t.step("Bedrock's ValidationException is the caller's 400, nothing charged", async () => {
      const before = await nextRows()
      strictEqual(before.filter((row) => row.status < 400).length, 0)
      const refused = await openai.chat.completions.create({
        model: "br-claude",
        messages: [{ role: "user", content: "Hot" }],
        temperature: 1.5
      }).then(() => undefined, (error: unknown) => error)
      ok(refused instanceof OpenAI.APIError, String(refused))
      strictEqual(refused.status, 400)
      const rows = await nextRows(1)
      strictEqual(rows.filter((row) => row.status < 400).length, 0, "nothing billed")
      ok(rows.every((row) => BigInt(row.cost) === 0n))
    })

    await t.step(
      "a throttlingException frame mid-stream ends the caller's stream, billed for what was delivered",
      async () => {
        gateway.emulator.setFaults([{ match: { path: "converse-stream" }, status: 429, breakAfterEvents: 6, times: 1 }])
        const response = await fetch(`${gateway.url}/v1/messages`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-api-key": KEY, "anthropic-version": "2023-06-01" },
          body: JSON.stringify({
            model: "br-claude",
            max_tokens: 400,
            stream: true,
            messages: [{ role: "user", content: "Tell me a long story about a river, with many words in it." }]
          })
        })
        const text = await response.text()
        gateway.emulator.setFaults([])
        let delivered = 0
        for (const line of text.split("\n")) {
          if (!line.startsWith("data: ")) continue
          const event = JSON.parse(line.slice(6))
          if (event.type === "content_block_delta" && event.delta?.type === "text_delta") {
            delivered += event.delta.text.length
          }
        }
        ok(delivered > 0, "some text was delivered before the exception")
        ok(text.includes("event: error"), "the caller got an in-band error, not a complete answer")
        ok(!text.includes("event: message_stop"), "no end marker")
        ok(text.includes('"code":"too_many_requests"'), "the exception's type decided the failure: throttled")
        const rows = await nextRows(1)
        strictEqual(rows.length, 1)
        ok(rows[0].status >= 400, `a failed row, got ${rows[0].status}`)
        strictEqual(rows[0].completion_tokens, Math.ceil(delivered / 4), "the delivered text, by the cut-stream rule")
        ok(BigInt(rows[0].cost) > 0n)
      }
    )

    await t.step("a key Bedrock refuses is disabled, and no part of its secret reaches the upstream", async () => {
      const from = gateway.emulator.requests.length
      const refused = await openai.chat.completions.create({
        model: "br-refused",
        messages: [{ role: "user", content: "Hello" }]
      }).then(() => undefined, (error: unknown) => error)
      ok(refused instanceof OpenAI.APIError, String(refused))
      const sent = postsSince(gateway, from)
      ok(sent.length >= 1)
      ok(sent.every((call) => !JSON.stringify(call.headers).includes("not-the-secret-at-all")))
      const keys = await gateway.query<{ enabled: boolean }>(
        `SELECT k.enabled FROM channel_keys k JOIN channels c ON c.id = k.channel_id WHERE c.name = 'bedrock-refused'`
      )
      deepStrictEqual(keys, [{ enabled: false }])
    })

    await t.step("admin API: settings.region is required and named; the default base URL is the region's", async () => {
      const root = browser(gateway.url)
      await root.login("root", ROOT_PASSWORD)
      const channel = {
        name: "bedrock-admin",
        type: "bedrock",
        keys: [BEDROCK_TEST_CHANNEL_KEY],
        models: ["br-claude"]
      }
      const missing = await root.call("POST", "/api/channel/", channel)
      strictEqual(missing.success, false)
      ok(missing.message.includes("settings.region"), missing.message)
      const bad = await root.call("POST", "/api/channel/", { ...channel, settings: { region: "x.evil.test" } })
      strictEqual(bad.success, false)
      ok(bad.message.includes("settings.region"), bad.message)
      const created = await root.call<{ base_url: string; keys: ReadonlyArray<{ key: string }> }>(
        "POST",
        "/api/channel/",
        { ...channel, settings: { region: "eu-central-1", bedrock_api: "invoke" } }
      )
      strictEqual(created.success, true, created.message)
      strictEqual(created.data.base_url, "https://bedrock-runtime.eu-central-1.amazonaws.com")
      const listed = await root.call<Array<{ name: string; keys: ReadonlyArray<{ key: string }> }>>(
        "GET",
        "/api/channel/"
      )
      const shown = JSON.stringify(listed.data.find((item) => item.name === "bedrock-admin"))
      ok(!shown.includes("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"), "the secret access key is never shown whole")
    })
  } finally {
    await gateway.close()
  }
})
