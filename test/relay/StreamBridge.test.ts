/**
 * The stream bridge's pure steps, with plain values: upstream SSE events in,
 * framed text and a meter delta out.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import type { ResponseMeta } from "../../src/formats/Format.ts"
import { formatOf } from "../../src/formats/Formats.ts"
import {
  type BridgeConfig,
  bridgeEnd,
  bridgeEvents,
  bridgeInitial,
  type BridgeState
} from "../../src/relay/StreamBridge.ts"
import { sse } from "../support/StreamSteps.ts"

const meta: ResponseMeta = { id: "chatcmpl-1", model: "gpt-test", created: 1, includeUsage: false }

const chunk = (delta: object, extra: object = {}) =>
  sse({
    id: "c1",
    object: "chat.completion.chunk",
    created: 1,
    model: "gpt-test",
    choices: [{ index: 0, delta, finish_reason: null }],
    ...extra
  })
const usageChunk = sse({
  id: "c1",
  object: "chat.completion.chunk",
  created: 1,
  model: "gpt-test",
  choices: [],
  usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 }
})
const finishChunk = sse({
  id: "c1",
  object: "chat.completion.chunk",
  created: 1,
  model: "gpt-test",
  choices: [{ index: 0, delta: {}, finish_reason: "stop" }]
})

const chat = formatOf("openai-chat")
const anthropic = formatOf("anthropic")

const config = (overrides: Partial<BridgeConfig> = {}): BridgeConfig => ({
  inbound: chat,
  wire: chat,
  passthrough: true,
  meta,
  jsonArray: false,
  assemble: false,
  ...overrides
})

/**
 * Runs every batch, then the end, as `bridgeBody` does (events held back at the final usage are run next, with
 * `cost` once they were held); returns the text, the last state, every delta and where the events were held.
 */
const run = (
  bridge: BridgeConfig,
  batches: ReadonlyArray<ReadonlyArray<ReturnType<typeof sse>>>,
  cost?: number
) => {
  let state: BridgeState = bridgeInitial(bridge, undefined)
  let text = ""
  let held: number | undefined
  let known: number | undefined
  const deltas = []
  for (const batch of batches) {
    let events: ReadonlyArray<ReturnType<typeof sse>> | undefined = batch
    while (events !== undefined) {
      const [next, out, delta] = bridgeEvents(bridge, { ...state, held: undefined }, events, known)
      state = next
      text += out
      deltas.push(delta)
      events = next.held
      if (events !== undefined) {
        held ??= text.length
        known = cost
      }
      if (state.done) return { text, state, deltas, held }
    }
  }
  const [last, out, delta] = bridgeEnd(bridge, state, known)
  return { text: text + out, state: last, deltas: [...deltas, delta], held }
}

Deno.test("StreamBridge: a passthrough chat stream is forwarded as received, less the usage chunk nobody asked for", () => {
  const { text, deltas, state } = run(config(), [[
    chunk({ role: "assistant", content: "Hel" }),
    chunk({ content: "lo" })
  ], [
    finishChunk,
    usageChunk,
    sse("[DONE]")
  ]])
  ok(text.includes('"content":"Hel"') && text.includes('"content":"lo"'))
  ok(!text.includes('"choices":[]'), "the usage-only chunk is hidden")
  ok(text.includes("[DONE]"))
  strictEqual(state.done, true)
  strictEqual(deltas.reduce((sum, delta) => sum + delta.deliveredCharacters, 0), 5)
  deepStrictEqual(deltas.findLast((delta) => delta.usage !== undefined)?.usage?.outputTokens, 3)
  ok(deltas.some((delta) => delta.final), "the final usage arrived")
})

Deno.test("StreamBridge: a caller that asked for usage gets the usage-only chunk", () => {
  const { text } = run(config({ meta: { ...meta, includeUsage: true } }), [[
    chunk({ content: "x" }),
    finishChunk,
    usageChunk,
    sse("[DONE]")
  ]])
  ok(text.includes('"choices":[]'))
})

Deno.test("StreamBridge: an upstream that ends before its end marker ends the caller's stream with an error event and a failure", () => {
  const { text, deltas, state } = run(config(), [[chunk({ content: "partial" })]])
  ok(text.includes('"error"'), text)
  ok(!text.includes("[DONE]"), "never a completion marker")
  strictEqual(state.done, true)
  const failed = deltas.at(-1)!
  strictEqual(failed.failure?.kind, "stream-broken")
  strictEqual(failed.final, false)
})

Deno.test("StreamBridge: an Anthropic stream translated for a chat caller, metered as it goes", () => {
  const events = [
    sse({
      type: "message_start",
      message: {
        id: "msg_1",
        type: "message",
        role: "assistant",
        model: "claude-test",
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 7, output_tokens: 1 }
      }
    }, "message_start"),
    sse({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }, "content_block_start"),
    sse(
      { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hello there" } },
      "content_block_delta"
    )
  ]
  const bridge = config({ wire: anthropic, passthrough: false, assemble: true })
  const [state, text, delta] = bridgeEvents(bridge, bridgeInitial(bridge, undefined), events)
  ok(text.includes('"content":"Hello there"'), text)
  strictEqual(delta.deliveredCharacters, 11)
  strictEqual(delta.usage?.outputTokens, 1, "message_start's provisional usage")
  strictEqual(delta.final, false)
  strictEqual(state.done, false)
  deepStrictEqual([...state.assembled!.values()], [{ type: "text", text: "Hello there" }])
})

Deno.test("StreamBridge: the JSON-array framing opens once and closes at the end", () => {
  const gemini = formatOf("gemini")
  const bridge = config({ inbound: gemini, wire: gemini, jsonArray: true })
  const answer = (text: string, finish?: string) =>
    sse({
      candidates: [{
        content: { role: "model", parts: [{ text }] },
        index: 0,
        ...(finish ? { finishReason: finish } : {})
      }],
      usageMetadata: { promptTokenCount: 2, candidatesTokenCount: 1, totalTokenCount: 3 }
    })
  const { text } = run(bridge, [[answer("a")], [answer("b", "STOP")]])
  const parsed = JSON.parse(text)
  strictEqual(parsed.length, 2)
  strictEqual(parsed[1].candidates[0].content.parts[0].text, "b")
})

Deno.test("StreamBridge: events are held back at the final usage, so the bill comes before the answer's end", () => {
  const { text, held, deltas } = run(config({ meta: { ...meta, includeUsage: true } }), [[
    chunk({ content: "x" }),
    finishChunk,
    usageChunk,
    sse("[DONE]")
  ]])
  ok(held !== undefined, "held")
  ok(
    !text.slice(0, held).includes('"choices":[]') && !text.slice(0, held).includes("[DONE]"),
    "nothing of the end before"
  )
  ok(text.slice(held).includes('"choices":[]') && text.slice(held).includes("[DONE]"))
  strictEqual(deltas.filter((delta) => delta.final).length, 1, "the final usage is metered once")
  strictEqual(deltas.reduce((sum, delta) => sum + delta.deliveredCharacters, 0), 1)
})

Deno.test("StreamBridge: the cost is written into the caller's final usage, once, in every inbound format", () => {
  const passthrough = run(config({ meta: { ...meta, includeUsage: true } }), [[
    chunk({ content: "x" }),
    finishChunk,
    usageChunk,
    sse("[DONE]")
  ]], 0.000123)
  strictEqual(passthrough.text.match(/"cost":0.000123/g)?.length, 1, passthrough.text)
  const openAiStream = [chunk({ content: "hi" }), finishChunk, usageChunk, sse("[DONE]")]
  for (const inbound of ["anthropic", "openai-responses", "gemini", "completions"] as const) {
    const translated = run(
      config({ inbound: formatOf(inbound), passthrough: false, meta: { ...meta, includeUsage: true } }),
      [openAiStream],
      0.5
    )
    strictEqual(translated.text.match(/"cost":0.5/g)?.length, 1, `${inbound}: ${translated.text}`)
  }
})
