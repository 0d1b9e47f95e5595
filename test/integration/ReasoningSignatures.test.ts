/**
 * Reasoning signatures keep their origin across format crossings (issue 3):
 * through the official SDKs, a vendor's signature goes back to that vendor
 * byte for byte, however many client formats it crossed, and never reaches
 * another vendor. The emulator refuses signatures it did not mint, as the real
 * APIs do, so a leaked foreign signature fails the turn.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import Anthropic from "@anthropic-ai/sdk"
import { type Content, type GenerateContentResponse, GoogleGenAI, type Part } from "@google/genai"
import OpenAI from "openai"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { REDACTED_THINKING_TRIGGER, redactedThinkingData, thinkingSignature } from "../../emulator/Anthropic.ts"
import type { Emulator, RecordedRequest } from "../../emulator/Emulator.ts"
import { thoughtSignatureFor } from "../../emulator/Gemini.ts"
import { startGateway, type TestGateway } from "../support/Gateway.ts"

const KEY = "sk-test-alice-0001"

const config = (emulatorUrl: string) => {
  const channel = (name: string, type: string, model: string, settings = {}) => ({
    name,
    type,
    base_url: emulatorUrl,
    keys: ["sk-test-up"],
    models: [model],
    settings
  })
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: Object.fromEntries(["m-gemini", "m-claude", "m-gpt"].map((name) => [name, { input: 1, output: 2 }])),
      channels: [
        channel("gemini", "gemini", "m-gemini"),
        channel("claude", "anthropic", "m-claude"),
        channel("gpt", "openai", "m-gpt", { responses_api: true })
      ],
      users: [{ username: "alice", group: "default", quota: 50_000_000, tokens: [{ name: "main", key: KEY }] }]
    }),
    "signatures.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

type Json = Record<string, unknown>

const clients = (gateway: TestGateway) => ({
  anthropic: new Anthropic({ baseURL: gateway.url, apiKey: KEY, maxRetries: 0 }),
  openai: new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 }),
  // @google/genai defaults to API version v1; the gateway serves generate-content under /v1beta.
  google: new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: gateway.url, apiVersion: "v1beta" } })
})

/** The last request the emulator received on a path containing `path`. */
const lastTo = (gateway: TestGateway, path: string): RecordedRequest => {
  const request = gateway.emulator.requests.findLast((recorded) => recorded.path.includes(path))
  if (request === undefined) throw new Error(`no upstream request to ${path}`)
  return request
}

/** Every `thoughtSignature` of a generate-content request, in order. */
const thoughtSignatures = (request: RecordedRequest): ReadonlyArray<string> =>
  (request.body as { contents: ReadonlyArray<{ parts: ReadonlyArray<Json> }> }).contents
    .flatMap((content) => content.parts)
    .flatMap((part) => typeof part.thoughtSignature === "string" ? [part.thoughtSignature] : [])

/** Every `thinking` / `redacted_thinking` block of a messages request. */
const thinkingBlocks = (request: RecordedRequest): ReadonlyArray<Json> =>
  (request.body as { messages: ReadonlyArray<{ content: string | ReadonlyArray<Json> }> }).messages
    .flatMap((message) => typeof message.content === "string" ? [] : message.content)
    .filter((block) => block.type === "thinking" || block.type === "redacted_thinking")

const weather: Anthropic.Tool = {
  name: "get_weather",
  description: "Current weather in a city",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
}
const thinking = { type: "enabled", budget_tokens: 1024 } as const
const question: Anthropic.MessageParam = { role: "user", content: "Weather in Paris?" }

/** The thinking block of a messages answer (there is exactly one). */
const thinkingOf = (message: Anthropic.Message): Anthropic.ThinkingBlock => {
  const blocks = message.content.filter((block): block is Anthropic.ThinkingBlock => block.type === "thinking")
  strictEqual(blocks.length, 1, "one thinking block")
  return blocks[0]
}

/** All parts of a generate-content answer, chunks concatenated as a client keeps history. */
const modelTurn = (chunks: ReadonlyArray<GenerateContentResponse>): Content => ({
  role: "model",
  parts: chunks.flatMap((chunk) => chunk.candidates?.[0]?.content?.parts ?? [])
})

/**
 * `gateway` seen from a case that began now: the emulator's requests are only those it received since, so a case
 * never reads another case's upstream request.
 */
const sinceNow = (gateway: TestGateway): TestGateway => {
  const start = gateway.emulator.requests.length
  const emulator: Emulator = Object.create(gateway.emulator)
  Object.defineProperty(emulator, "requests", { get: () => gateway.emulator.requests.slice(start) })
  return { ...gateway, emulator }
}

// One gateway serves every case (each reads only its own upstream requests, through `sinceNow`), so the file starts
// the gateway once instead of once per case.
Deno.test("reasoning signatures: every case on one gateway", async (t) => {
  const shared = await startGateway({ config })
  try {
    await t.step(
      "signatures: a messages client on a gemini channel sends the Gemini signature back unchanged",
      async (t) => {
        const gateway = sinceNow(shared)
        const { anthropic } = clients(gateway)
        for (const stream of [false, true]) {
          await t.step(stream ? "stream" : "non-stream", async () => {
            const params = { model: "m-gemini", max_tokens: 4096, thinking, tools: [weather], messages: [question] }
            const first = stream
              ? await anthropic.messages.stream(params).finalMessage()
              : await anthropic.messages.create(params)
            const block = thinkingOf(first)
            const minted = thoughtSignatureFor(block.thinking)
            strictEqual(block.signature, `sluice.gemini.${minted}`, "the client holds the Gemini signature, marked")
            const call = first.content.find((item) => item.type === "tool_use")
            ok(call !== undefined, "a tool call")
            const second = await anthropic.messages.create({
              ...params,
              messages: [
                question,
                { role: "assistant", content: first.content },
                { role: "user", content: [{ type: "tool_result", tool_use_id: call.id, content: "sunny" }] }
              ]
            })
            const text = second.content.find((item) => item.type === "text")
            ok(text?.type === "text" && text.text.startsWith("Tool result:"), "the second turn is answered")
            deepStrictEqual(thoughtSignatures(lastTo(gateway, ":generateContent")), [minted], "byte for byte")
          })
        }
      }
    )

    await t.step("signatures: a messages client's Anthropic signature never reaches a gemini channel", async () => {
      const gateway = sinceNow(shared)
      const { anthropic } = clients(gateway)
      const first = await anthropic.messages.create({
        model: "m-claude",
        max_tokens: 4096,
        thinking,
        messages: [question]
      })
      const block = thinkingOf(first)
      strictEqual(block.signature, thinkingSignature(block.thinking), "Anthropic's own signature, as minted")
      const second = await anthropic.messages.create({
        model: "m-gemini",
        max_tokens: 4096,
        thinking,
        messages: [question, { role: "assistant", content: first.content }, { role: "user", content: "And tomorrow?" }]
      })
      ok(second.content.some((item) => item.type === "text"), "answered (the emulator refuses a foreign signature)")
      const upstream = lastTo(gateway, ":generateContent")
      deepStrictEqual(thoughtSignatures(upstream), [])
      ok(JSON.stringify(upstream.body).includes(block.thinking), "the thought text itself still travels")
    })

    await t.step(
      "signatures: a generate-content client on an anthropic channel returns Anthropic's signature",
      async (t) => {
        const gateway = sinceNow(shared)
        const { google } = clients(gateway)
        const user = (text: string): Content => ({ role: "user", parts: [{ text }] })
        const settings = { maxOutputTokens: 4096, thinkingConfig: { includeThoughts: true, thinkingBudget: 1024 } }
        for (const stream of [false, true]) {
          await t.step(stream ? "stream" : "non-stream", async () => {
            const request = { model: "m-claude", contents: [user("Weather in Paris?")], config: settings }
            const chunks: Array<GenerateContentResponse> = stream
              ? await Array.fromAsync(await google.models.generateContentStream(request))
              : [await google.models.generateContent(request)]
            const turn = modelTurn(chunks)
            const thoughts = (turn.parts ?? []).filter((part: Part) => part.thought === true)
            const text = thoughts.map((part) => part.text ?? "").join("")
            const signatures = thoughts.flatMap((part) => part.thoughtSignature ?? [])
            deepStrictEqual(signatures, [`sluice.anthropic.${thinkingSignature(text)}`], "marked Anthropic signature")
            const history = [user("Weather in Paris?"), turn, user("And tomorrow?")]

            await google.models.generateContent({ model: "m-claude", contents: history, config: settings })
            // the emulator checks the signature against the thinking text: a 200 means both arrived intact
            deepStrictEqual(thinkingBlocks(lastTo(gateway, "/v1/messages")), [
              { type: "thinking", thinking: text, signature: thinkingSignature(text) }
            ])

            // an openai channel speaks chat completions to this client format: no field for any signature
            await google.models.generateContent({ model: "m-gpt", contents: history, config: settings })
            const body = JSON.stringify(lastTo(gateway, "/v1/chat/completions").body)
            strictEqual(body.includes(thinkingSignature(text)), false)
            strictEqual(body.includes("sluice."), false)
          })
        }
      }
    )

    await t.step("signatures: a responses client carries a Gemini signature to Gemini only", async (t) => {
      const gateway = sinceNow(shared)
      const { openai } = clients(gateway)
      const question = { role: "user" as const, content: "Weather in Paris?" }
      const reasoning = { effort: "low" as const, summary: "auto" as const }
      const first = await openai.responses.create({ model: "m-gemini", input: [question], reasoning })
      const item = first.output.find((output) => output.type === "reasoning")
      ok(item?.type === "reasoning" && typeof item.encrypted_content === "string")
      const summary = item.summary.map((part) => part.text).join("\n\n")
      const minted = thoughtSignatureFor(summary)
      strictEqual(item.encrypted_content, `sluice.gemini.${minted}`)
      const input = [question, ...first.output, { role: "user" as const, content: "And tomorrow?" }] as Array<
        OpenAI.Responses.ResponseInputItem
      >

      await t.step("to an anthropic channel: no foreign signature arrives", async () => {
        const answer = await openai.responses.create({ model: "m-claude", input, reasoning })
        ok(answer.output_text.startsWith("Echo:"))
        deepStrictEqual(thinkingBlocks(lastTo(gateway, "/v1/messages")), [])
      })

      await t.step("to the gemini channel: the signature arrives unchanged", async () => {
        await openai.responses.create({ model: "m-gemini", input, reasoning })
        deepStrictEqual(thoughtSignatures(lastTo(gateway, ":generateContent")), [minted])
      })

      await t.step("through previous_response_id (stored answer) to an anthropic channel", async () => {
        const next = await openai.responses.create({
          model: "m-claude",
          input: "And tomorrow?",
          previous_response_id: first.id,
          reasoning
        })
        ok(next.output_text.startsWith("Echo:"))
        deepStrictEqual(thinkingBlocks(lastTo(gateway, "/v1/messages")), [])
      })

      await t.step("through previous_response_id to an openai channel: no reasoning item with it", async () => {
        const next = await openai.responses.create({
          model: "m-gpt",
          input: "And tomorrow?",
          previous_response_id: first.id,
          reasoning
        })
        ok(next.output_text.startsWith("Echo:"))
        const upstream = lastTo(gateway, "/v1/responses").body as { input: ReadonlyArray<Json> }
        deepStrictEqual(upstream.input.filter((item) => item.type === "reasoning"), [])
        strictEqual(JSON.stringify(upstream).includes(minted), false)
      })
    })

    await t.step("signatures: the emulator refuses signatures it did not mint, as the real APIs do", async () => {
      const gateway = sinceNow(shared)
      const post = (path: string, headers: Record<string, string>, body: unknown) =>
        fetch(`${gateway.emulator.url}${path}`, {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body: JSON.stringify(body)
        }).then(async (response) => ({ status: response.status, text: await response.text() }))
      const messages = (signature: string) =>
        post("/v1/messages", { "x-api-key": "k", "anthropic-version": "2023-06-01" }, {
          model: "m",
          max_tokens: 100,
          messages: [
            { role: "user", content: "Hi" },
            {
              role: "assistant",
              content: [{ type: "thinking", thinking: "Hm.", signature }, { type: "text", text: "Yo" }]
            },
            { role: "user", content: "Again" }
          ]
        })
      const generate = (thoughtSignature: string) =>
        post("/v1beta/models/m:generateContent", { "x-goog-api-key": "k" }, {
          contents: [
            { role: "user", parts: [{ text: "Hi" }] },
            { role: "model", parts: [{ text: "Hm.", thought: true, thoughtSignature }, { text: "Yo" }] },
            { role: "user", parts: [{ text: "Again" }] }
          ]
        })
      strictEqual((await messages(thinkingSignature("Hm."))).status, 200)
      const forged = await messages(`sluice.gemini.${thoughtSignatureFor("Hm.")}`)
      strictEqual(forged.status, 400)
      ok(forged.text.includes("messages.1.content.0: Invalid `signature` in `thinking` block"), forged.text)
      strictEqual((await messages(thinkingSignature("edited"))).status, 400, "a signature minted for other text")
      const redacted = (data: string) =>
        post("/v1/messages", { "x-api-key": "k", "anthropic-version": "2023-06-01" }, {
          model: "m",
          max_tokens: 100,
          messages: [
            { role: "user", content: "Hi" },
            { role: "assistant", content: [{ type: "redacted_thinking", data }, { type: "text", text: "Yo" }] },
            { role: "user", content: "Again" }
          ]
        })
      strictEqual((await redacted(redactedThinkingData("Hi"))).status, 200)
      const forgedData = await redacted("bm90LW1pbnRlZA==")
      strictEqual(forgedData.status, 400)
      ok(forgedData.text.includes("Invalid `data` in `redacted_thinking` block"), forgedData.text)
      strictEqual((await generate(thoughtSignatureFor("Hm."))).status, 200)
      const foreign = await generate(thinkingSignature("Hm."))
      strictEqual(foreign.status, 400)
      ok(foreign.text.includes("Corrupted thought signature."), foreign.text)
    })

    /**
     * The relay translates (does not forward as is) a request whose client format
     * equals the channel's wire format when it holds another vendor's signature
     * (`hasForeignReasoning`), and keeps `origin` when it assembles a streamed
     * answer for the Responses store.
     */
    await t.step({
      name: "signatures: same-format channels get a wrapped foreign signature left out (relay translates)",
      fn: async (t) => {
        const gateway = sinceNow(shared)
        const { anthropic, openai } = clients(gateway)
        await t.step("messages client: gemini turn, then the anthropic channel", async () => {
          const first = await anthropic.messages.create({
            model: "m-gemini",
            max_tokens: 4096,
            thinking,
            messages: [question]
          })
          ok(thinkingOf(first).signature.startsWith("sluice.gemini."))
          const second = await anthropic.messages.create({
            model: "m-claude",
            max_tokens: 4096,
            thinking,
            messages: [question, { role: "assistant", content: first.content }, { role: "user", content: "And?" }]
          })
          ok(second.content.some((item) => item.type === "text"))
          deepStrictEqual(thinkingBlocks(lastTo(gateway, "/v1/messages")), [])
        })

        await t.step("responses client: streamed gemini turn stored, then previous_response_id to claude", async () => {
          const stream = await openai.responses.create({
            model: "m-gemini",
            input: "Weather in Paris?",
            reasoning: { effort: "low", summary: "auto" },
            stream: true
          })
          let id = ""
          for await (const event of stream) if (event.type === "response.completed") id = event.response.id
          const next = await openai.responses.create({
            model: "m-claude",
            input: "And tomorrow?",
            previous_response_id: id,
            reasoning: { effort: "low" }
          })
          ok(next.output_text.startsWith("Echo:"))
          deepStrictEqual(thinkingBlocks(lastTo(gateway, "/v1/messages")), [])
        })

        await t.step("responses client: gemini turn, then the openai channel (same format)", async () => {
          const reasoning = { effort: "low" as const, summary: "auto" as const }
          const question = { role: "user" as const, content: "Weather in Paris?" }
          const first = await openai.responses.create({ model: "m-gemini", input: [question], reasoning })
          const input = [question, ...first.output, { role: "user" as const, content: "And?" }] as Array<
            OpenAI.Responses.ResponseInputItem
          >
          await openai.responses.create({ model: "m-gpt", input, reasoning })
          const upstream = JSON.stringify(lastTo(gateway, "/v1/responses").body)
          strictEqual(upstream.includes("sluice."), false)
        })
      }
    })

    await t.step("signatures: a responses client keeps Anthropic's redacted thinking and sends it back", async (t) => {
      const gateway = sinceNow(shared)
      const { openai } = clients(gateway)
      const reasoning = { effort: "low" as const, summary: "auto" as const }
      // Anthropic's documented test prompt for redacted thinking.
      const question = { role: "user" as const, content: `Think about it. ${REDACTED_THINKING_TRIGGER}` }
      for (const stream of [false, true]) {
        await t.step(stream ? "stream" : "non-stream", async () => {
          const first = stream
            ? await openai.responses.stream({ model: "m-claude", input: [question], reasoning }).finalResponse()
            : await openai.responses.create({ model: "m-claude", input: [question], reasoning })
          const tokens = first.output.flatMap((item) => item.type === "reasoning" ? [item.encrypted_content] : [])
          const data = redactedThinkingData(question.content)
          strictEqual(tokens.length, 2, "a thinking block and a redacted one")
          ok(tokens[0]?.startsWith("sluice.anthropic.sig-"), `${tokens[0]}`)
          strictEqual(tokens[1], `sluice.anthropic.redacted.${data}`)
          const input = [question, ...first.output, { role: "user" as const, content: "And tomorrow?" }] as Array<
            OpenAI.Responses.ResponseInputItem
          >
          const next = await openai.responses.create({ model: "m-claude", input, reasoning })
          ok(next.output_text.startsWith("Echo:"), "the next turn is answered")
          const blocks = thinkingBlocks(lastTo(gateway, "/v1/messages"))
          deepStrictEqual(blocks.map((block) => block.type), ["thinking", "redacted_thinking"])
          deepStrictEqual(blocks[1], { type: "redacted_thinking", data }, "byte for byte")
        })
      }
      await t.step("to another vendor the redacted block is left out", async () => {
        const first = await openai.responses.create({ model: "m-claude", input: [question], reasoning })
        const input = [question, ...first.output, { role: "user" as const, content: "And tomorrow?" }] as Array<
          OpenAI.Responses.ResponseInputItem
        >
        await openai.responses.create({ model: "m-gemini", input, reasoning })
        const upstream = JSON.stringify(lastTo(gateway, ":generateContent").body)
        strictEqual(upstream.includes(redactedThinkingData(question.content)), false)
      })
    })
  } finally {
    await shared.close()
  }
})
