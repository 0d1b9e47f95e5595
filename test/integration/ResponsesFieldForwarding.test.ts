/**
 * Issue 14, item 6: Responses `store`, `include`, `text.verbosity` and
 * `stream_options` reach the upstream wherever its format can say them
 * (chat completions has `store`, `verbosity`, `stream_options`; Anthropic and
 * Gemini have none, so they are dropped and listed), and the channel setting
 * `forward_store: false` keeps `store` from the upstream on every path. The
 * emulator refuses what OpenAI refuses in these fields (a bad `include` value
 * or `verbosity`, `stream_options` without `stream`).
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import type OpenAI from "openai"
import { startGateway } from "../support/Gateway.ts"
import { everyChannelType, lastBodyTo, sdkClients } from "../support/EveryChannelType.ts"

const streamed = async (stream: AsyncIterable<OpenAI.Responses.ResponseStreamEvent>): Promise<string> => {
  let text = ""
  for await (const event of stream) if (event.type === "response.output_text.delta") text += event.delta
  return text
}

const fields = {
  store: false,
  include: ["reasoning.encrypted_content" as const],
  text: { verbosity: "low" as const },
  stream: true as const,
  stream_options: { include_obfuscation: false }
}

Deno.test("responses: store, include, text.verbosity and stream_options reach every upstream that has them", async (t) => {
  const gateway = await startGateway({ config: everyChannelType() })
  const { openai } = sdkClients(gateway)
  try {
    await t.step("responses_api channel (same format): all four as sent", async () => {
      strictEqual(
        await streamed(await openai.responses.create({ model: "m-resp", input: "hello", ...fields })),
        "Echo: hello"
      )
      const sent = lastBodyTo(gateway, "/v1/responses")
      strictEqual(sent.store, false)
      deepStrictEqual(sent.include, ["reasoning.encrypted_content"])
      deepStrictEqual(sent.text, { verbosity: "low" })
      deepStrictEqual(sent.stream_options, { include_obfuscation: false })
    })

    await t.step("chat channel (translated): store, verbosity and stream_options in chat's fields", async () => {
      strictEqual(
        await streamed(await openai.responses.create({ model: "m-chat", input: "hello", ...fields })),
        "Echo: hello"
      )
      const sent = lastBodyTo(gateway, "/v1/chat/completions")
      strictEqual(sent.store, false)
      strictEqual(sent.verbosity, "low")
      deepStrictEqual(sent.stream_options, { include_usage: true, include_obfuscation: false })
      strictEqual("include" in sent, false, "chat has no include")
    })

    await t.step("anthropic and gemini channels (translated): dropped, the answer unchanged", async () => {
      for (const [model, path] of [["m-claude", "/v1/messages"], ["m-gemini", ":streamGenerateContent"]]) {
        strictEqual(await streamed(await openai.responses.create({ model, input: "hello", ...fields })), "Echo: hello")
        const sent = lastBodyTo(gateway, path)
        for (const name of ["store", "include", "verbosity", "stream_options"]) {
          strictEqual(name in sent, false, `${model}: ${name}`)
        }
      }
    })

    await t.step("previous_response_id expanded on a responses_api channel keeps store: false", async () => {
      const first = await openai.responses.create({ model: "m-resp", input: "first turn" })
      await openai.responses.create({ model: "m-resp", input: "second", previous_response_id: first.id, store: false })
      const sent = lastBodyTo(gateway, "/v1/responses")
      strictEqual(sent.store, false)
      ok(JSON.stringify(sent.input).includes("first turn"))
    })
  } finally {
    await gateway.close()
  }
})

Deno.test("responses: forward_store: false keeps store from the upstream, passthrough and translated", async () => {
  const gateway = await startGateway({ config: everyChannelType({ forward_store: false }) })
  const { openai } = sdkClients(gateway)
  try {
    for (const [model, path] of [["m-resp", "/v1/responses"], ["m-chat", "/v1/chat/completions"]]) {
      const answer = await openai.responses.create({ model, input: "hello", store: false, text: { verbosity: "low" } })
      strictEqual(answer.output_text, "Echo: hello")
      const sent = lastBodyTo(gateway, path)
      strictEqual("store" in sent, false, `${model}: store withheld`)
      ok(JSON.stringify(sent).includes('"low"'), `${model}: the other fields still go`)
    }
    await openai.chat.completions.create({ model: "m-chat", store: true, messages: [{ role: "user", content: "hi" }] })
    strictEqual("store" in lastBodyTo(gateway, "/v1/chat/completions"), false, "chat passthrough: store withheld")
  } finally {
    await gateway.close()
  }
})
