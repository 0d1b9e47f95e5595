/**
 * Gemini 3 tool loops through chat completions: Gemini 3 refuses a function
 * call sent back without its thought signature, and chat completions has no
 * field for one. Through the official `openai` SDK, the gateway hands the
 * signature out on the tool call (`extra_content.google.thought_signature`, the
 * field of Gemini's own OpenAI-compatible endpoint), takes it back on the next
 * turn, and gives a call Gemini never signed (a loop begun on another model) the
 * validator-skipping value Gemini documents. The emulator refuses an unsigned
 * call for `gemini-3…` models, as the real API does.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import type { Emulator, RecordedRequest } from "../../emulator/Emulator.ts"
import { thoughtSignatureFor } from "../../emulator/Gemini.ts"
import { startGateway, type TestGateway } from "../support/Gateway.ts"

const KEY = "sk-test-gemini3-0001"
const MODEL = "gemini-3-pro-preview"
/** Served by an openai channel: Gemini's OpenAI-compatible endpoint. */
const COMPAT_MODEL = "gemini-3-flash-preview"

const config = (emulatorUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: { [MODEL]: { input: 1, output: 2 }, [COMPAT_MODEL]: { input: 1, output: 2 } },
      channels: [
        { name: "gemini", type: "gemini", base_url: emulatorUrl, keys: ["sk-test-up"], models: [MODEL] },
        { name: "gemini-compat", type: "openai", base_url: emulatorUrl, keys: ["sk-test-up"], models: [COMPAT_MODEL] }
      ],
      users: [{ username: "carol", group: "default", quota: 50_000_000, tokens: [{ name: "main", key: KEY }] }]
    }),
    "gemini3.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

type Json = Record<string, unknown>

const tools: Array<OpenAI.Chat.ChatCompletionTool> = [{
  type: "function",
  function: {
    name: "get_weather",
    description: "Current weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
  }
}]
const question: OpenAI.Chat.ChatCompletionMessageParam = { role: "user", content: "Weather in Paris?" }

/** The `thoughtSignature` of every `functionCall` part of the last generate-content request. */
const callSignatures = (gateway: TestGateway): ReadonlyArray<unknown> => {
  const request: RecordedRequest | undefined = gateway.emulator.requests.findLast((recorded) =>
    recorded.path.includes(":generateContent") || recorded.path.includes(":streamGenerateContent")
  )
  if (request === undefined) throw new Error("no generate-content request")
  return (request.body as { contents: ReadonlyArray<{ parts: ReadonlyArray<Json> }> }).contents
    .flatMap((content) => content.parts)
    .flatMap((part) => part.functionCall === undefined ? [] : [part.thoughtSignature])
}

/** The signature Gemini's emulator mints for its `get_weather` call (the first call of an answer). */
const mintedFor = (call: { readonly function: { readonly name: string; readonly arguments: string } }) =>
  thoughtSignatureFor(`${call.function.name}:${JSON.stringify(JSON.parse(call.function.arguments))}`)

/** A tool call as the SDK hands it out, with the extension field the gateway adds. */
type SignedCall = OpenAI.Chat.ChatCompletionMessageFunctionToolCall & {
  readonly extra_content?: { readonly google?: { readonly thought_signature?: string } }
}

/** The `extra_content` of every tool call of the last chat completions request upstream. */
const chatCallExtras = (gateway: TestGateway): ReadonlyArray<unknown> => {
  const request = gateway.emulator.requests.findLast((recorded) => recorded.path.includes("/chat/completions"))
  if (request === undefined) throw new Error("no chat completions request")
  return (request.body as { messages: ReadonlyArray<{ tool_calls?: ReadonlyArray<Json> }> }).messages
    .flatMap((message) => message.tool_calls ?? [])
    .map((call) => call.extra_content)
}

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
Deno.test("gemini 3 call signatures: every case on one gateway", async (t) => {
  const shared = await startGateway({ config })
  try {
    await t.step("gemini 3: a chat client's tool loop carries the call's signature out and back", async (t) => {
      const gateway = sinceNow(shared)
      const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
      for (const stream of [false, true]) {
        await t.step(stream ? "stream" : "non-stream", async () => {
          let message: OpenAI.Chat.ChatCompletionMessageParam
          let call: SignedCall
          if (stream) {
            const runner = openai.chat.completions.stream({ model: MODEL, messages: [question], tools })
            const completion = await runner.finalChatCompletion()
            message = completion.choices[0].message as OpenAI.Chat.ChatCompletionMessageParam
            call = completion.choices[0].message.tool_calls?.[0] as SignedCall
          } else {
            const completion = await openai.chat.completions.create({ model: MODEL, messages: [question], tools })
            message = completion.choices[0].message as OpenAI.Chat.ChatCompletionMessageParam
            call = completion.choices[0].message.tool_calls?.[0] as SignedCall
          }
          ok(call !== undefined && call.type === "function", "a tool call")
          strictEqual(call.extra_content?.google?.thought_signature, mintedFor(call), "the call carries its signature")
          const second = await openai.chat.completions.create({
            model: MODEL,
            tools,
            messages: [question, message, { role: "tool", tool_call_id: call.id, content: "sunny" }]
          })
          ok(second.choices[0].message.content?.startsWith("Tool result:"), "the second turn is answered")
          deepStrictEqual(callSignatures(gateway), [mintedFor(call)], "sent back byte for byte")
        })
      }
    })

    await t.step("gemini 3: the signature is on the tool call's first stream chunk", async () => {
      const gateway = sinceNow(shared)
      const response = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
        body: JSON.stringify({ model: MODEL, messages: [question], tools, stream: true })
      })
      strictEqual(response.status, 200)
      const deltas = (await response.text()).split("\n")
        .filter((line) => line.startsWith("data: {"))
        .map((line) => JSON.parse(line.slice(6)).choices?.[0]?.delta as Json | undefined)
      const calls = deltas.flatMap((delta) => (delta?.tool_calls as ReadonlyArray<Json> | undefined) ?? [])
      const first = calls[0] as unknown as SignedCall | undefined
      ok(first?.id !== undefined, "the call's first chunk has its id")
      ok(typeof first?.extra_content?.google?.thought_signature === "string", JSON.stringify(first))
      strictEqual(calls.slice(1).some((delta) => "extra_content" in delta), false, "only on the first chunk")
    })

    await t.step("gemini 3: a tool loop begun on another model gets the validator-skipping signature", async (t) => {
      const gateway = sinceNow(shared)
      const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
      // A history a client carried over from another model: the calls were never signed by Gemini.
      const history: Array<OpenAI.Chat.ChatCompletionMessageParam> = [
        { role: "user", content: "Weather in Paris and Rome?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: "call_a", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
            { id: "call_b", type: "function", function: { name: "get_weather", arguments: '{"city":"Rome"}' } }
          ]
        },
        { role: "tool", tool_call_id: "call_a", content: "sunny" },
        { role: "tool", tool_call_id: "call_b", content: "rain" }
      ]
      for (const stream of [false, true]) {
        await t.step(stream ? "stream" : "non-stream", async () => {
          const text = stream
            ? (await openai.chat.completions.stream({ model: MODEL, tools, messages: history }).finalChatCompletion())
              .choices[0].message.content
            : (await openai.chat.completions.create({ model: MODEL, tools, messages: history })).choices[0].message
              .content
          ok(text?.startsWith("Tool result:") && text.includes("sunny") && text.includes("rain"), `answered: ${text}`)
          deepStrictEqual(
            callSignatures(gateway),
            ["skip_thought_signature_validator", undefined],
            "the first call of the step is marked, the parallel one left as Gemini leaves it"
          )
        })
      }
    })

    await t.step("gemini 3: the emulator refuses an unsigned call in the current turn only", async () => {
      const gateway = sinceNow(shared)
      const generate = (contents: ReadonlyArray<Json>) =>
        fetch(`${gateway.emulator.url}/v1beta/models/${MODEL}:generateContent`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-goog-api-key": "k" },
          body: JSON.stringify({ contents })
        }).then(async (response) => ({ status: response.status, text: await response.text() }))
      const call = (thoughtSignature?: string): Json => ({
        role: "model",
        parts: [{ functionCall: { name: "get_weather", args: {} }, ...(thoughtSignature ? { thoughtSignature } : {}) }]
      })
      const result: Json = { role: "user", parts: [{ functionResponse: { name: "get_weather", response: { ok: 1 } } }] }
      const ask: Json = { role: "user", parts: [{ text: "Weather?" }] }
      const unsigned = await generate([ask, call(), result])
      strictEqual(unsigned.status, 400)
      ok(unsigned.text.includes("Function call is missing a thought_signature in functionCall parts"), unsigned.text)
      strictEqual((await generate([ask, call(thoughtSignatureFor("x")), result])).status, 200)
      strictEqual((await generate([ask, call("skip_thought_signature_validator"), result])).status, 200)
      strictEqual((await generate([ask, call("context_engineering_is_the_way_to_go"), result])).status, 200)
      strictEqual((await generate([ask, call(), result, ask])).status, 200, "an earlier turn is not checked")
      const older = await fetch(`${gateway.emulator.url}/v1beta/models/gemini-2.5-flash:generateContent`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-goog-api-key": "k" },
        body: JSON.stringify({ contents: [ask, call(), result] })
      })
      strictEqual(older.status, 200, "Gemini 2.5 does not check")
      await older.body?.cancel()
      // The same rule on the OpenAI-compatible endpoint, where the signature is the call's extra_content.
      const chat = (extra?: Json) =>
        fetch(`${gateway.emulator.url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: "Bearer k" },
          body: JSON.stringify({
            model: COMPAT_MODEL,
            messages: [
              { role: "user", content: "Weather?" },
              {
                role: "assistant",
                content: null,
                tool_calls: [{
                  id: "c1",
                  type: "function",
                  function: { name: "get_weather", arguments: "{}" },
                  ...extra
                }]
              },
              { role: "tool", tool_call_id: "c1", content: "sunny" }
            ]
          })
        }).then(async (response) => ({ status: response.status, text: await response.text() }))
      const missing = await chat()
      strictEqual(missing.status, 400)
      ok(missing.text.includes("missing a thought_signature"), missing.text)
      const forged = await chat({ extra_content: { google: { thought_signature: "sluice.anthropic.EqQB" } } })
      ok(forged.status === 400 && forged.text.includes("Corrupted thought signature."), forged.text)
      strictEqual(
        (await chat({ extra_content: { google: { thought_signature: thoughtSignatureFor("x") } } })).status,
        200
      )
    })

    await t.step(
      "gemini 3 on an openai channel (Gemini's OpenAI-compatible endpoint): a messages client's loop",
      async (t) => {
        const gateway = sinceNow(shared)
        const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: KEY, maxRetries: 0 })
        const weather: Anthropic.Tool = {
          name: "get_weather",
          description: "Current weather in a city",
          input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
        }
        const ask: Anthropic.MessageParam = { role: "user", content: "Weather in Paris?" }
        for (const stream of [false, true]) {
          await t.step(stream ? "stream" : "non-stream", async () => {
            const params = { model: COMPAT_MODEL, max_tokens: 256, tools: [weather], messages: [ask] }
            const first = stream
              ? await anthropic.messages.stream(params).finalMessage()
              : await anthropic.messages.create(params)
            const call = first.content.find((block) => block.type === "tool_use")
            ok(call !== undefined, "a tool call")
            const minted = thoughtSignatureFor(JSON.stringify(call.input))
            const thinking = first.content.find((block) => block.type === "thinking")
            strictEqual(thinking?.type === "thinking" && thinking.signature, `sluice.gemini.${minted}`)
            const second = await anthropic.messages.create({
              ...params,
              messages: [
                ask,
                { role: "assistant", content: first.content },
                { role: "user", content: [{ type: "tool_result", tool_use_id: call.id, content: "sunny" }] }
              ]
            })
            ok(second.content.some((block) => block.type === "text"), "the second turn is answered")
            deepStrictEqual(
              chatCallExtras(gateway),
              [{ google: { thought_signature: minted } }],
              "sent back as it came"
            )
          })
        }
        await t.step("a loop begun on another model gets the validator-skipping value", async () => {
          const answer = await anthropic.messages.create({
            model: COMPAT_MODEL,
            max_tokens: 256,
            tools: [weather],
            messages: [
              ask,
              { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "get_weather", input: {} }] },
              { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "sunny" }] }
            ]
          })
          ok(answer.content.some((block) => block.type === "text"), "answered")
          deepStrictEqual(chatCallExtras(gateway), [{
            google: { thought_signature: "skip_thought_signature_validator" }
          }])
        })
      }
    )
  } finally {
    await shared.close()
  }
})
