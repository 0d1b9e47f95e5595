/**
 * Issue 14, part A: a same-format channel takes what the vendor takes, as the
 * caller sent it; a translated channel refuses, naming the field, what it
 * cannot carry; a request rebuilt for inline media or a stored conversation
 * keeps every field. Each test goes through the official SDK of the inbound
 * format and asserts both the answer and what the emulator received.
 */
import { Result } from "effect"
import Anthropic from "@anthropic-ai/sdk"
import { GoogleGenAI, HarmBlockThreshold, HarmCategory, Modality, ThinkingLevel, Type } from "@google/genai"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { DEFAULT_OUTPUT_TOKENS } from "../../src/canonical/Estimate.ts"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { startGateway, type TestGateway } from "../support/Gateway.ts"

const KEY = "sk-test-alice-0001"
const PNG_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
const PNG = Uint8Array.from(atob(PNG_BASE64), (c) => c.charCodeAt(0))

type Json = Record<string, unknown>

const config = (emulatorUrl: string) => {
  const channel = (name: string, type: string, models: ReadonlyArray<string>, settings: Json = {}) => ({
    name,
    type,
    base_url: emulatorUrl,
    keys: ["sk-test-up"],
    models,
    settings
  })
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: Object.fromEntries(
        ["m-openai", "m-openai-inline", "m-anthropic", "m-anthropic-inline", "gemini-3-pro"].map((name) => [
          name,
          { input: 1, output: 2 }
        ])
      ),
      channels: [
        channel("openai", "openai", ["m-openai"], { responses_api: true }),
        channel("openai-inline", "openai", ["m-openai-inline"], { responses_api: true, inline_images: true }),
        channel("anthropic", "anthropic", ["m-anthropic"]),
        channel("anthropic-inline", "anthropic", ["m-anthropic-inline"], { inline_images: true }),
        channel("gemini", "gemini", ["gemini-3-pro"])
      ],
      users: [{ username: "alice", group: "default", quota: 50_000_000, tokens: [{ name: "main", key: KEY }] }],
      settings: { media_allow_hosts: ["127.0.0.1"] }
    }),
    "same-format.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

/** Serves one PNG at `/pixel.png` on 127.0.0.1 (allow-listed above). */
const startImageServer = () => {
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    (request) =>
      new URL(request.url).pathname === "/pixel.png"
        ? new Response(PNG, { headers: { "content-type": "image/png" } })
        : new Response("not found", { status: 404 })
  )
  return { pixel: `http://127.0.0.1:${server.addr.port}/pixel.png`, close: () => server.shutdown() }
}

const lastBody = (gateway: TestGateway): Json => gateway.emulator.requests.at(-1)?.body as Json

const used = async (gateway: TestGateway): Promise<number> => {
  const response = await fetch(`${gateway.url}/api/usage/token`, { headers: { authorization: `Bearer ${KEY}` } })
  return (await response.json()).data.total_used
}

/** A request that must be a 400 naming `param`, with no upstream call and no charge. */
const expectRefused = async (gateway: TestGateway, send: () => Promise<unknown>, param: string) => {
  const before = await used(gateway)
  const calls = gateway.emulator.requests.length
  const error = await send().then(() => undefined, (failure) => failure)
  ok(error instanceof OpenAI.BadRequestError || error instanceof Anthropic.BadRequestError, `a 400, got ${error}`)
  const body = error.error as { error?: Json } & Json
  const problem = (body.error ?? body) as Json
  strictEqual(problem.param, param)
  strictEqual(gateway.emulator.requests.length, calls, "no upstream call")
  strictEqual(await used(gateway), before, "no quota charged")
}

// One gateway serves every case (each asserts on its own requests: quota and emulator calls as differences,
// the last body the emulator received), so the file starts the gateway once instead of once per case.
Deno.test("same-format fields: every case on one gateway", async (t) => {
  const gateway = await startGateway({ config })
  try {
    await t.step(
      "item 1: video_url, file by file_id, input_image by file_id (and unmodeled messages blocks) pass on same-format channels; 400 naming the field elsewhere",
      async (t) => {
        const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
        const content = [
          { type: "text", text: "Look at this" },
          { type: "video_url", video_url: { url: "https://example.com/clip.mp4" } },
          { type: "file", file: { file_id: "file-abc123" } }
        ]
        const messages = [{ role: "user", content }] as unknown as Array<OpenAI.ChatCompletionMessageParam>

        await t.step("chat → openai: the parts arrive as sent", async () => {
          const completion = await openai.chat.completions.create({ model: "m-openai", messages })
          strictEqual(completion.choices[0].message.content, "Echo: Look at this")
          deepStrictEqual((lastBody(gateway).messages as Array<Json>)[0].content, content)
        })

        await t.step("chat → anthropic: 400 naming the video part, no call, no charge", async () => {
          await expectRefused(
            gateway,
            () => openai.chat.completions.create({ model: "m-anthropic", messages }),
            "messages[0].content[1]"
          )
          await expectRefused(
            gateway,
            () =>
              openai.chat.completions.create({
                model: "m-anthropic",
                messages: [{ role: "user", content: [content[0], content[2]] }] as Array<
                  OpenAI.ChatCompletionMessageParam
                >
              }),
            "messages[0].content[1].file.file_id"
          )
        })

        const input: OpenAI.Responses.ResponseInput = [{
          role: "user",
          content: [
            { type: "input_text", text: "What is in the picture" },
            { type: "input_image", file_id: "file-img42", detail: "high" }
          ]
        }]

        await t.step("responses → responses_api: input_image by file_id arrives as sent", async () => {
          const response = await openai.responses.create({ model: "m-openai", input })
          strictEqual(response.output_text, "I see 1 image(s) [file-img42] Echo: What is in the picture")
          deepStrictEqual(lastBody(gateway).input, input)
        })

        await t.step("responses → anthropic: 400 naming the file_id", async () => {
          await expectRefused(
            gateway,
            () => openai.responses.create({ model: "m-anthropic", input }),
            "input[0].content[1].file_id"
          )
        })

        // The same rule in the messages format: a Files-API document and a search result block.
        const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: KEY, maxRetries: 0 })
        const blocks = [
          { type: "document", source: { type: "file", file_id: "file_011abc" } },
          {
            type: "search_result",
            source: "https://example.com/page",
            title: "A page",
            content: [{ type: "text", text: "Some result" }]
          },
          { type: "text", text: "Summarise" }
        ] as Array<Anthropic.ContentBlockParam>

        await t.step("messages → anthropic: a file_id document and a search result arrive as sent", async () => {
          const message = await anthropic.messages.create({
            model: "m-anthropic",
            max_tokens: 100,
            messages: [{ role: "user", content: blocks }]
          })
          strictEqual((message.content[0] as { text: string }).text, "Echo: Summarise")
          deepStrictEqual((lastBody(gateway).messages as Array<Json>)[0].content, blocks)
        })

        await t.step("messages → openai: 400 naming the document's source", async () => {
          await expectRefused(
            gateway,
            () =>
              anthropic.messages.create({
                model: "m-openai",
                max_tokens: 100,
                messages: [{ role: "user", content: blocks }]
              }),
            "messages[0].content[0].source"
          )
        })
      }
    )

    await t.step(
      "item 2: legacy completions with several prompts: one choice per prompt, billed the sum; 400 when translated",
      async (t) => {
        const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
        const prompt = ["Say one", "Say two please", "Say three"]

        await t.step("non-stream: a choice per prompt, index per prompt, usage for all", async () => {
          const before = await used(gateway)
          const completion = await openai.completions.create({ model: "m-openai", prompt, max_tokens: 20 })
          deepStrictEqual(
            completion.choices.map((choice) => [choice.index, choice.text]),
            [[0, "Echo: Say one"], [1, "Echo: Say two please"], [2, "Echo: Say three"]]
          )
          deepStrictEqual(lastBody(gateway).prompt, prompt)
          const usage = completion.usage!
          ok(usage.completion_tokens >= 3 * 3, "the usage covers every prompt")
          strictEqual(await used(gateway) - before, usage.prompt_tokens * 1 + usage.completion_tokens * 2)
        })

        await t.step("stream: every prompt's chunks reach the caller; billed the sum of the usage", async () => {
          const before = await used(gateway)
          const stream = await openai.completions.create({
            model: "m-openai",
            prompt,
            max_tokens: 20,
            stream: true,
            stream_options: { include_usage: true }
          })
          const texts = ["", "", ""]
          let usage: OpenAI.CompletionUsage | undefined
          for await (const chunk of stream) {
            for (const choice of chunk.choices) texts[choice.index] += choice.text
            if (chunk.usage) usage = chunk.usage
          }
          deepStrictEqual(texts, ["Echo: Say one", "Echo: Say two please", "Echo: Say three"])
          ok(usage !== undefined)
          strictEqual(await used(gateway) - before, usage.prompt_tokens * 1 + usage.completion_tokens * 2)
        })

        await t.step("completions → anthropic: 400 naming prompt", async () => {
          await expectRefused(gateway, () => openai.completions.create({ model: "m-anthropic", prompt }), "prompt")
        })
      }
    )

    await t.step("item 3: URL media made inline in the caller's own body keep every other field", async (t) => {
      const images = startImageServer()
      try {
        await t.step(
          "generate-content → gemini: fileData becomes inlineData; config fields arrive as sent",
          async () => {
            const genai = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: gateway.url } })
            const safetySettings = [{
              category: HarmCategory.HARM_CATEGORY_HARASSMENT,
              threshold: HarmBlockThreshold.BLOCK_ONLY_HIGH
            }]
            const answer = await genai.models.generateContent({
              model: "gemini-3-pro",
              contents: [{
                role: "user",
                parts: [{ text: "describe" }, { fileData: { mimeType: "image/png", fileUri: images.pixel } }]
              }],
              config: {
                safetySettings,
                cachedContent: "cachedContents/abc123",
                responseModalities: [Modality.TEXT, Modality.IMAGE],
                imageConfig: { aspectRatio: "16:9", imageSize: "1K" },
                thinkingConfig: { thinkingLevel: ThinkingLevel.LOW },
                maxOutputTokens: 300
              }
            })
            strictEqual(answer.text, "I see 1 image(s) [image/png] Echo: describe")
            const body = lastBody(gateway)
            deepStrictEqual((body.contents as Array<Json>)[0].parts, [
              { text: "describe" },
              { inlineData: { mimeType: "image/png", data: PNG_BASE64 } }
            ])
            deepStrictEqual(body.safetySettings, safetySettings)
            strictEqual(body.cachedContent, "cachedContents/abc123")
            deepStrictEqual(body.generationConfig, {
              responseModalities: ["TEXT", "IMAGE"],
              imageConfig: { aspectRatio: "16:9", imageSize: "1K" },
              thinkingConfig: { thinkingLevel: "LOW" },
              maxOutputTokens: 300
            })
          }
        )

        await t.step(
          "messages → anthropic (inline_images): the url source becomes base64; other fields kept",
          async () => {
            const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: KEY, maxRetries: 0 })
            const message = await anthropic.messages.create({
              model: "m-anthropic-inline",
              max_tokens: 200,
              metadata: { user_id: "user-7" },
              service_tier: "standard_only",
              messages: [{
                role: "user",
                content: [
                  { type: "image", source: { type: "url", url: images.pixel }, cache_control: { type: "ephemeral" } },
                  { type: "text", text: "what is it" }
                ]
              }]
            })
            strictEqual((message.content[0] as { text: string }).text, "I see 1 image(s) [image/png] Echo: what is it")
            const body = lastBody(gateway)
            deepStrictEqual((body.messages as Array<Json>)[0].content, [
              {
                type: "image",
                source: { type: "base64", media_type: "image/png", data: PNG_BASE64 },
                cache_control: { type: "ephemeral" }
              },
              { type: "text", text: "what is it" }
            ])
            deepStrictEqual(body.metadata, { user_id: "user-7" })
            strictEqual(body.service_tier, "standard_only")
          }
        )

        await t.step(
          "chat → openai (inline_images): the URL becomes a data URI; detail and the rest kept",
          async () => {
            const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
            await openai.chat.completions.create({
              model: "m-openai-inline",
              service_tier: "flex",
              prediction: { type: "content", content: "A pixel" },
              messages: [{
                role: "user",
                content: [{ type: "text", text: "what" }, {
                  type: "image_url",
                  image_url: { url: images.pixel, detail: "low" }
                }]
              }]
            })
            const body = lastBody(gateway)
            deepStrictEqual((body.messages as Array<Json>)[0].content, [
              { type: "text", text: "what" },
              { type: "image_url", image_url: { url: `data:image/png;base64,${PNG_BASE64}`, detail: "low" } }
            ])
            strictEqual(body.service_tier, "flex")
            deepStrictEqual(body.prediction, { type: "content", content: "A pixel" })
          }
        )

        await t.step("responses → responses_api (inline_images): input_image URL becomes a data URI", async () => {
          const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
          const response = await openai.responses.create({
            model: "m-openai-inline",
            include: ["message.input_image.image_url"],
            input: [{
              role: "user",
              content: [{ type: "input_text", text: "see" }, {
                type: "input_image",
                image_url: images.pixel,
                detail: "auto"
              }]
            }]
          })
          ok(response.output_text.startsWith("I see 1 image(s)"))
          const body = lastBody(gateway)
          deepStrictEqual((body.input as Array<Json>)[0].content, [
            { type: "input_text", text: "see" },
            { type: "input_image", image_url: `data:image/png;base64,${PNG_BASE64}`, detail: "auto" }
          ])
          deepStrictEqual(body.include, ["message.input_image.image_url"])
        })
      } finally {
        await images.close()
      }
    })

    await t.step(
      "item 4: Responses on a responses_api channel: hosted tool choice, replayed hosted items, item_reference, and a stored conversation keeping every field",
      async (t) => {
        const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
        const input = [
          { role: "user", content: "find the news" },
          {
            type: "web_search_call",
            id: "ws_123",
            status: "completed",
            action: { type: "search", query: "news" }
          },
          {
            type: "message",
            id: "msg_1",
            role: "assistant",
            status: "completed",
            content: [{ type: "output_text", text: "Here is the news.", annotations: [] }]
          },
          { type: "item_reference", id: "msg_0" },
          { role: "user", content: "and the weather" }
        ] as unknown as OpenAI.Responses.ResponseInput
        const tools = [{ type: "web_search" }] as Array<OpenAI.Responses.Tool>
        const toolChoice = { type: "web_search" } as unknown as OpenAI.Responses.ToolChoiceTypes

        await t.step("a stateless tool loop replaying the previous output passes as sent", async () => {
          const response = await openai.responses.create({ model: "m-openai", input, tools, tool_choice: toolChoice })
          strictEqual(response.output_text, "Echo: and the weather")
          const body = lastBody(gateway)
          deepStrictEqual(body.input, input)
          deepStrictEqual(body.tool_choice, { type: "web_search" })
          deepStrictEqual(body.tools, tools)
        })

        await t.step("translated (anthropic): 400 naming the reference; the hosted call alone is dropped", async () => {
          await expectRefused(
            gateway,
            () => openai.responses.create({ model: "m-anthropic", input, tools, tool_choice: toolChoice }),
            "input[3]"
          )
          const replayOnly = (input as unknown as Array<Json>).filter((item) => item.type !== "item_reference")
          const response = await openai.responses.create({
            model: "m-anthropic",
            input: replayOnly as unknown as OpenAI.Responses.ResponseInput
          })
          strictEqual(response.output_text, "Echo: and the weather")
          const sent = JSON.stringify(lastBody(gateway))
          ok(
            !sent.includes("ws_123") && sent.includes("Here is the news."),
            "the replayed call dropped, the answer kept"
          )
        })

        await t.step("previous_response_id expanded: only input changes, every other field arrives", async () => {
          const first = await openai.responses.create({ model: "m-openai", input: "first turn" })
          const stream = await openai.responses.create({
            model: "m-openai",
            input: "second turn",
            previous_response_id: first.id,
            instructions: "be brief",
            store: false,
            include: ["reasoning.encrypted_content"],
            text: { verbosity: "low" },
            tools,
            metadata: { session: "s-1" },
            stream: true,
            stream_options: { include_obfuscation: false }
          })
          let text = ""
          for await (const event of stream) if (event.type === "response.output_text.delta") text += event.delta
          strictEqual(text, "Echo: second turn")
          const body = lastBody(gateway)
          strictEqual(body.previous_response_id, undefined)
          strictEqual(body.store, false)
          deepStrictEqual(body.include, ["reasoning.encrypted_content"])
          deepStrictEqual(body.text, { verbosity: "low" })
          deepStrictEqual(body.stream_options, { include_obfuscation: false })
          deepStrictEqual(body.tools, tools)
          deepStrictEqual(body.metadata, { session: "s-1" })
          strictEqual(body.instructions, "be brief")
          const items = body.input as Array<Json>
          strictEqual(items.length, 3)
          ok(JSON.stringify(items[0]).includes("first turn"))
          ok(JSON.stringify(items[1]).includes("Echo: first turn"))
          deepStrictEqual(items[2], { role: "user", content: "second turn" })
        })

        await t.step("a conversation continued on a responses_api channel is stored and continues again", async () => {
          const first = await openai.responses.create({ model: "m-openai", input: "turn one" })
          const second = await openai.responses.create({
            model: "m-openai",
            input: "turn two",
            previous_response_id: first.id
          })
          strictEqual(second.output_text, "Echo: turn two")
          const third = await openai.responses.create({
            model: "m-openai",
            input: "turn three",
            previous_response_id: second.id
          })
          strictEqual(third.output_text, "Echo: turn three")
          const items = JSON.stringify(lastBody(gateway).input)
          for (const text of ["turn one", "Echo: turn one", "turn two", "Echo: turn two", "turn three"]) {
            ok(items.includes(text), text)
          }
        })
      }
    )

    await t.step(
      "item 5: messages without max_tokens get the hold's default on the passthrough path as on the translated one",
      async (t) => {
        const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: KEY, maxRetries: 0 })
        await t.step("messages → anthropic (passthrough)", async () => {
          const message = await anthropic.messages.create(
            {
              model: "m-anthropic",
              messages: [{ role: "user", content: "hello there" }]
            } as unknown as Anthropic.MessageCreateParamsNonStreaming
          )
          strictEqual((message.content[0] as { text: string }).text, "Echo: hello there")
          strictEqual(lastBody(gateway).max_tokens, DEFAULT_OUTPUT_TOKENS)
        })
        await t.step("chat → anthropic (translated)", async () => {
          const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
          await openai.chat.completions.create({ model: "m-anthropic", messages: [{ role: "user", content: "hi" }] })
          strictEqual(lastBody(gateway).max_tokens, DEFAULT_OUTPUT_TOKENS)
        })
      }
    )

    await t.step(
      "the rule for chat n: several choices pass to a chat upstream, the hold and the bill cover them all; 400 when translated",
      async (t) => {
        const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
        const messages: Array<OpenAI.ChatCompletionMessageParam> = [{ role: "user", content: "pick a word" }]

        await t.step("non-stream: n choices, billed the reported usage", async () => {
          const before = await used(gateway)
          const completion = await openai.chat.completions.create({ model: "m-openai", messages, n: 3, max_tokens: 10 })
          deepStrictEqual(completion.choices.map((choice) => [choice.index, choice.message.content]), [
            [0, "Echo: pick a word"],
            [1, "Echo: pick a word"],
            [2, "Echo: pick a word"]
          ])
          strictEqual(lastBody(gateway).n, 3)
          const usage = completion.usage!
          strictEqual(await used(gateway) - before, usage.prompt_tokens + usage.completion_tokens * 2)
        })

        await t.step("stream: every choice's chunks reach the caller", async () => {
          const stream = await openai.chat.completions.create({ model: "m-openai", messages, n: 2, stream: true })
          const texts = ["", ""]
          for await (const chunk of stream) {
            for (const choice of chunk.choices) texts[choice.index] += choice.delta.content ?? ""
          }
          deepStrictEqual(texts, ["Echo: pick a word", "Echo: pick a word"])
        })

        await t.step("an n whose hold cannot be counted: 400 naming n", async () => {
          await expectRefused(
            gateway,
            () => openai.chat.completions.create({ model: "m-openai", messages, n: 1e300 }),
            "n"
          )
        })

        await t.step("chat → anthropic: 400 naming n", async () => {
          await expectRefused(
            gateway,
            () => openai.chat.completions.create({ model: "m-anthropic", messages, n: 2 }),
            "n"
          )
        })
      }
    )

    await t.step(
      "the rule for chat tools: allowed_tools and custom tool calls in history pass to a chat upstream; 400 when translated",
      async (t) => {
        const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
        const tools: Array<OpenAI.ChatCompletionTool> = [
          { type: "function", function: { name: "lookup", parameters: { type: "object", properties: {} } } },
          { type: "custom", custom: { name: "code_exec" } }
        ]
        const messages: Array<OpenAI.ChatCompletionMessageParam> = [
          { role: "user", content: "run it" },
          {
            role: "assistant",
            content: null,
            tool_calls: [{ id: "call_1", type: "custom", custom: { name: "code_exec", input: "print(1)" } }]
          },
          { role: "tool", tool_call_id: "call_1", content: "1" },
          { role: "user", content: "now explain" }
        ]
        const toolChoice: OpenAI.ChatCompletionToolChoiceOption = {
          type: "allowed_tools",
          allowed_tools: { mode: "auto", tools: [{ type: "function", function: { name: "lookup" } }] }
        }

        await t.step("chat → openai: arrives as sent", async () => {
          await openai.chat.completions.create({ model: "m-openai", messages, tools, tool_choice: toolChoice })
          const body = lastBody(gateway)
          deepStrictEqual(body.messages, messages)
          deepStrictEqual(body.tool_choice, toolChoice)
          deepStrictEqual(body.tools, tools)
        })

        await t.step("chat → anthropic: 400 naming the custom call", async () => {
          await expectRefused(
            gateway,
            () => openai.chat.completions.create({ model: "m-anthropic", messages, tools, tool_choice: toolChoice }),
            "messages[1].tool_calls[0]"
          )
        })
      }
    )

    await t.step(
      "the rule for rebuilt requests: another vendor's reasoning token is left out of a Responses body in place",
      async () => {
        const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
        const input = [
          { role: "user", content: "think first" },
          {
            type: "reasoning",
            id: "rs_1",
            summary: [{ type: "summary_text", text: "Thought elsewhere" }],
            encrypted_content: "sluice.anthropic.c2lnLWFiYw"
          },
          { type: "message", role: "assistant", content: [{ type: "output_text", text: "Done.", annotations: [] }] },
          { role: "user", content: "go on" }
        ] as unknown as OpenAI.Responses.ResponseInput
        const response = await openai.responses.create({
          model: "m-openai",
          input,
          store: false,
          include: ["reasoning.encrypted_content"],
          text: { verbosity: "high" },
          truncation: "auto"
        })
        strictEqual(response.output_text, "Echo: go on")
        const body = lastBody(gateway)
        deepStrictEqual(body.input, [
          (input as Array<unknown>)[0],
          (input as Array<unknown>)[2],
          (input as Array<unknown>)[3]
        ])
        strictEqual(body.store, false)
        deepStrictEqual(body.include, ["reasoning.encrypted_content"])
        deepStrictEqual(body.text, { verbosity: "high" })
        strictEqual(body.truncation, "auto")
      }
    )

    await t.step(
      "the rule for rebuilt requests: another vendor's thought signature is left out of a generate-content body in place",
      async () => {
        const genai = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: gateway.url } })
        const safetySettings = [{
          category: HarmCategory.HARM_CATEGORY_HATE_SPEECH,
          threshold: HarmBlockThreshold.BLOCK_LOW_AND_ABOVE
        }]
        const answer = await genai.models.generateContent({
          model: "gemini-3-pro",
          contents: [
            { role: "user", parts: [{ text: "weather in Paris?" }] },
            {
              role: "model",
              parts: [
                { text: "Thought elsewhere", thought: true, thoughtSignature: "sluice.anthropic.c2lnLWFiYw" },
                { functionCall: { name: "weather", args: { city: "Paris" } } }
              ]
            },
            { role: "user", parts: [{ functionResponse: { name: "weather", response: { result: "sunny" } } }] }
          ],
          config: {
            safetySettings,
            cachedContent: "cachedContents/xyz",
            maxOutputTokens: 100,
            tools: [{ functionDeclarations: [{ name: "weather", parameters: { type: Type.OBJECT, properties: {} } }] }]
          }
        })
        ok(answer.text?.startsWith("Tool result:"), String(answer.text))
        const body = lastBody(gateway)
        deepStrictEqual((body.contents as Array<Json>)[1].parts, [
          { text: "Thought elsewhere", thought: true },
          {
            functionCall: { name: "weather", args: { city: "Paris" } },
            thoughtSignature: "skip_thought_signature_validator"
          }
        ])
        deepStrictEqual(body.safetySettings, safetySettings)
        strictEqual(body.cachedContent, "cachedContents/xyz")
      }
    )

    await t.step(
      "the rule for rebuilt requests: another vendor's thinking block is left out of a messages body in place",
      async () => {
        const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: KEY, maxRetries: 0 })
        const toolUse = { type: "tool_use" as const, id: "toolu_1", name: "weather", input: { city: "Paris" } }
        const message = await anthropic.messages.create({
          model: "m-anthropic",
          max_tokens: 3000,
          thinking: { type: "enabled", budget_tokens: 1024 },
          metadata: { user_id: "user-9" },
          service_tier: "auto",
          tools: [{ name: "weather", input_schema: { type: "object", properties: {} } }],
          messages: [
            { role: "user", content: "weather in Paris?" },
            {
              role: "assistant",
              content: [
                { type: "thinking", thinking: "Thought elsewhere", signature: "sluice.gemini.c2lnLWFiYw" },
                toolUse
              ]
            },
            { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "sunny" }] }
          ]
        })
        ok(message.content.some((block) => block.type === "text" && block.text.startsWith("Tool result:")))
        const body = lastBody(gateway)
        deepStrictEqual((body.messages as Array<Json>)[1].content, [toolUse])
        deepStrictEqual(body.thinking, { type: "disabled" })
        deepStrictEqual(body.metadata, { user_id: "user-9" })
        strictEqual(body.service_tier, "auto")
        strictEqual(body.max_tokens, 3000)
      }
    )
  } finally {
    await gateway.close()
  }
})
