/**
 * The stream bridge's pure steps and its phases, with plain values: upstream
 * SSE events in, framed text and meter deltas out; and `bridgeBody` run as a
 * stream (one chunk per read, the bill before the end, a withheld end).
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { Effect, Stream } from "effect"
import { LedgerUnavailable, UpstreamFailed } from "../../../src/errors/GatewayError.ts"
import type { DecodeStep, ResponseMeta } from "../../../src/formats/Format.ts"
import { formatOf } from "../../../src/formats/Formats.ts"
import {
  bridgeBill,
  bridgeBody,
  type BridgeConfig,
  bridgeEnd,
  bridgeEvents,
  bridgeInitial,
  type BridgePhase,
  bridgeRead,
  bridgeStart,
  type BridgeState,
  type UpstreamRead
} from "../../../src/relay/pipeline/StreamBridge.ts"
import { sse } from "../../support/StreamSteps.ts"

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

/** The state machine, with plain values: phases in, phases, text and deltas out. */
const openAiAnswer = [chunk({ role: "assistant", content: "Hi" }), finishChunk, usageChunk, sse("[DONE]")]
const usageConfig = config({ meta: { ...meta, includeUsage: true } })
const streaming = (bridge: BridgeConfig) =>
  bridgeStart(bridge, undefined) as Extract<BridgePhase, { _tag: "Streaming" }>
const events = (list: ReadonlyArray<ReturnType<typeof sse>>): UpstreamRead => ({ _tag: "Events", events: list })
const end: UpstreamRead = { _tag: "End" }

Deno.test("bridge phases: a read without the final usage streams on, framed and metered", () => {
  const [phase, text, deltas] = bridgeRead(usageConfig, streaming(usageConfig), events([chunk({ content: "Hi" })]))
  strictEqual(phase._tag, "Streaming")
  ok(text.includes('"content":"Hi"'), text)
  deepStrictEqual(deltas.map((delta) => delta.deliveredCharacters), [2])
})

Deno.test("bridge phases: the final usage holds the rest back until the bill; a made bill frames it with its cost", () => {
  const [held, before, deltas] = bridgeRead(usageConfig, streaming(usageConfig), events(openAiAnswer))
  strictEqual(held._tag, "Held")
  if (held._tag !== "Held") return
  deepStrictEqual(held.held, openAiAnswer.slice(2), "held from the event that carried the final usage")
  ok(before.includes('"content":"Hi"') && before.includes('"finish_reason":"stop"'), before)
  ok(!before.includes('"usage"') && !before.includes("[DONE]"), "nothing of the end before the bill")
  strictEqual(deltas.length, 1)
  strictEqual(deltas[0].final, true)
  deepStrictEqual(deltas[0].usage, { inputTokens: 5, outputTokens: 3 })

  const [billed, after, afterDeltas] = bridgeBill(usageConfig, held, { _tag: "Made", cost: 0.25 })
  deepStrictEqual(billed._tag === "Billed" ? billed.cost : billed._tag, 0.25)
  ok(after.includes('"cost":0.25') && after.includes("[DONE]"), after)
  strictEqual(afterDeltas.filter((delta) => delta.final).length, 0, "the final usage is metered once")
  if (billed._tag !== "Billed") return
  const [last, tail, tailDeltas] = bridgeRead(usageConfig, billed, end)
  strictEqual(last._tag, "Done")
  strictEqual(tail, "", "a passthrough stream's end was its own [DONE]")
  strictEqual(tailDeltas.length, 1)
})

Deno.test("bridge phases: a lost bill drops what was held and ends with the ledger's error event, never [DONE]", () => {
  const [held] = bridgeRead(usageConfig, streaming(usageConfig), events(openAiAnswer))
  if (held._tag !== "Held") throw new Error(`expected Held, got ${held._tag}`)
  const [phase, text, deltas] = bridgeBill(usageConfig, held, { _tag: "Lost", error: new LedgerUnavailable() })
  strictEqual(phase._tag, "Done")
  strictEqual(JSON.parse(text.slice("data: ".length)).error.code, "quota_ledger_unavailable")
  ok(!text.includes("[DONE]") && !text.includes('"usage"'), text)
  deepStrictEqual(deltas, [], "the bill is made; the meter does not change")
})

Deno.test("bridge phases: an upstream end with no final usage is metered and held; the bill frames the end", () => {
  const bridge = config({ wire: anthropic, passthrough: false })
  const anthropicAnswer = [
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
    sse({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "ok" } }, "content_block_delta"),
    sse({ type: "content_block_stop", index: 0 }, "content_block_stop"),
    sse({ type: "message_stop" }, "message_stop")
  ]
  const [streamingOn] = bridgeRead(bridge, streaming(bridge), events(anthropicAnswer))
  if (streamingOn._tag !== "Streaming") throw new Error(`expected Streaming, got ${streamingOn._tag}`)
  const [held, text, deltas] = bridgeRead(bridge, streamingOn, end)
  strictEqual(held._tag, "Held")
  strictEqual(text, "", "the end waits for the bill")
  strictEqual(deltas.length, 1)
  if (held._tag !== "Held") return
  strictEqual(held.held, "end")
  const [phase, last] = bridgeBill(bridge, held, { _tag: "Made", cost: undefined })
  strictEqual(phase._tag, "Done")
  ok(last.includes("[DONE]"), last)
  const [, lost] = bridgeBill(bridge, held, { _tag: "Lost", error: new LedgerUnavailable() })
  ok(lost.includes("quota_ledger_unavailable") && !lost.includes("[DONE]"), lost)
})

Deno.test("bridge phases: a broken stream's end and a failed read end at once with an error event, no bill", () => {
  const [broken, brokenText, brokenDeltas] = bridgeRead(config(), streaming(config()), end)
  strictEqual(broken._tag, "Done")
  ok(brokenText.includes('"error"') && !brokenText.includes("[DONE]"), brokenText)
  strictEqual(brokenDeltas[0].failure?.kind, "stream-broken")
  const error = new UpstreamFailed({ kind: "timeout", status: 0, message: "The upstream went quiet." })
  const [failed, failedText, failedDeltas] = bridgeRead(config(), streaming(config()), { _tag: "Failed", error })
  strictEqual(failed._tag, "Done")
  ok(failedText.includes('"error"'), failedText)
  strictEqual(failedDeltas[0].failure, error)
})

Deno.test("bridge phases: once billed, a second final usage holds nothing back", () => {
  const [held] = bridgeRead(usageConfig, streaming(usageConfig), events(openAiAnswer.slice(0, 3)))
  if (held._tag !== "Held") throw new Error(`expected Held, got ${held._tag}`)
  const [billed] = bridgeBill(usageConfig, held, { _tag: "Made", cost: 0.5 })
  if (billed._tag !== "Billed") throw new Error(`expected Billed, got ${billed._tag}`)
  const [phase, text] = bridgeRead(usageConfig, billed, events([usageChunk, sse("[DONE]")]))
  strictEqual(phase._tag, "Billed")
  ok(text.includes("[DONE]"), text)
  strictEqual(text.match(/"cost"/g), null, "the cost is written once, into the first final usage")
})

/** Runs `bridgeBody` over `reads` (the first, then each of the rest by `next`); the chunks, the reads taken, the bills. */
const runBody = async (
  bridge: BridgeConfig,
  reads: ReadonlyArray<ReadonlyArray<ReturnType<typeof sse>>>,
  onFinal: Effect.Effect<number | undefined, LedgerUnavailable>
) => {
  const decoder = bridge.wire.streamDecoder
  const firstStep = decoder.step(decoder.initial(), reads[0][0]) as DecodeStep<unknown>
  let taken = 1
  const next = Effect.sync(() => reads[taken++])
  const log: Array<string> = []
  const body = bridgeBody(
    bridge,
    firstStep,
    reads[0],
    next,
    (delta) => log.push(delta.final ? "final" : "delta"),
    Effect.andThen(Effect.sync(() => log.push("bill")), onFinal)
  )
  const chunks = [...await Effect.runPromise(Stream.runCollect(body))].map((bytes) => new TextDecoder().decode(bytes))
  return { chunks, text: chunks.join(""), taken, log }
}

Deno.test("bridgeBody: one chunk per upstream read, billed once before the end leaves", async () => {
  const { chunks, taken, log } = await runBody(usageConfig, [
    [chunk({ role: "assistant", content: "Hi" })],
    [chunk({ content: " there" }), finishChunk],
    [usageChunk, sse("[DONE]")]
  ], Effect.succeed(0.125))
  strictEqual(chunks.length, 3)
  ok(chunks[1].includes('"content":" there"'))
  ok(chunks[2].includes('"cost":0.125') && chunks[2].endsWith("data: [DONE]\n\n"), chunks[2])
  strictEqual(taken, 4, "the three reads and the end")
  deepStrictEqual(log, ["delta", "delta", "final", "bill", "delta", "delta"])
})

/** What ends each inbound format's answer: what a withheld end never writes. */
const endMarkers = {
  "openai-chat": ["[DONE]", '"usage"'],
  anthropic: ["message_stop", "message_delta"],
  "openai-responses": ["response.completed", "response.incomplete"],
  gemini: ['"finishReason"', '"usageMetadata"']
} as const

for (const inbound of ["openai-chat", "anthropic", "openai-responses", "gemini"] as const) {
  Deno.test(`bridgeBody: a bill the ledger cannot make durable ends a ${inbound} answer with its error event, no end`, async () => {
    const bridge = config({
      inbound: formatOf(inbound),
      passthrough: inbound === "openai-chat",
      meta: usageConfig.meta
    })
    const { text, taken, log } = await runBody(bridge, [
      [chunk({ role: "assistant", content: "Hi" })],
      [finishChunk, usageChunk, sse("[DONE]")]
    ], Effect.fail(new LedgerUnavailable()))
    ok(text.includes("quota_ledger_unavailable"), text)
    ok(text.includes("Hi"), "what came before the hold was delivered")
    for (const marker of endMarkers[inbound]) ok(!text.includes(marker), `${inbound}: no ${marker} in ${text}`)
    strictEqual(taken, 2, "nothing read after the error")
    strictEqual(log.filter((entry) => entry === "bill").length, 1)
    if (inbound === "anthropic") ok(text.includes("event: error\n"), text)
    if (inbound === "openai-responses") ok(text.includes("event: error\n") && text.includes('"type":"error"'), text)
    if (inbound === "gemini") strictEqual(JSON.parse(text.split("data: ").at(-1)!).error.code, 503)
    if (inbound === "openai-chat") {
      strictEqual(JSON.parse(text.split("data: ").at(-1)!).error.code, "quota_ledger_unavailable")
    }
  })
}
