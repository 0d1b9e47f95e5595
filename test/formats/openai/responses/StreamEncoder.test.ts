import { deepStrictEqual, rejects, strictEqual } from "node:assert/strict"
import type { Sse } from "effect/encoding"
import OpenAI from "openai"
import type { StreamPart } from "../../../../src/canonical/StreamPart.ts"
import type { Problem } from "../../../../src/formats/Format.ts"
import { OpenAiResponsesFormat } from "../../../../src/formats/openai/responses/Format.ts"
import { runEncoder } from "../../../support/StreamSteps.ts"

const encoder = OpenAiResponsesFormat.streamEncoder
const meta = { id: "resp_abc", model: "gpt-4.1", created: 1741290958 }
const usage = { inputTokens: 37, outputTokens: 40, cachedInputTokens: 5, reasoningTokens: 12 }

const conversation: ReadonlyArray<StreamPart> = [
  { _tag: "ResponseStart", id: "upstream", model: "upstream-model", created: 1 },
  { _tag: "BlockStart", index: 0, block: { type: "reasoning" } },
  { _tag: "ReasoningDelta", index: 0, text: "Two " },
  { _tag: "ReasoningDelta", index: 0, text: "cities." },
  { _tag: "ReasoningSignature", index: 0, signature: "sig-1" },
  { _tag: "BlockStop", index: 0 },
  { _tag: "BlockStart", index: 1, block: { type: "text" } },
  { _tag: "TextDelta", index: 1, text: "Checking " },
  { _tag: "TextDelta", index: 1, text: "both." },
  { _tag: "BlockStop", index: 1 },
  { _tag: "BlockStart", index: 2, block: { type: "tool-call", callId: "call_1", name: "get_weather" } },
  { _tag: "ToolInputDelta", index: 2, json: '{"location":' },
  { _tag: "ToolInputDelta", index: 2, json: '"Paris"}' },
  { _tag: "BlockStop", index: 2 },
  { _tag: "BlockStart", index: 3, block: { type: "tool-call", callId: "call_2", name: "get_weather" } },
  { _tag: "ToolInputDelta", index: 3, json: '{"location":"Bogotá"}' },
  { _tag: "BlockStop", index: 3 },
  { _tag: "UsageUpdate", usage },
  { _tag: "Finish", reason: "tool-calls", usage }
]

const expectedOutput = [
  {
    id: "rs_abc_0",
    type: "reasoning",
    summary: [{ type: "summary_text", text: "Two cities." }],
    encrypted_content: "sig-1"
  },
  {
    id: "msg_abc_1",
    type: "message",
    status: "completed",
    role: "assistant",
    content: [{ type: "output_text", text: "Checking both.", annotations: [], logprobs: [] }]
  },
  {
    id: "fc_abc_2",
    type: "function_call",
    status: "completed",
    call_id: "call_1",
    name: "get_weather",
    arguments: '{"location":"Paris"}'
  },
  {
    id: "fc_abc_3",
    type: "function_call",
    status: "completed",
    call_id: "call_2",
    name: "get_weather",
    arguments: '{"location":"Bogotá"}'
  }
]

const parsed = (events: ReadonlyArray<Sse.Event>) => events.map((event) => JSON.parse(event.data))

Deno.test("streamEncoder: event names, sequence numbers and the documented event order", () => {
  const events = runEncoder(encoder, meta, conversation)
  const data = parsed(events)
  deepStrictEqual(events.map((event) => event.event), data.map((item) => item.type))
  deepStrictEqual(data.map((item) => item.sequence_number), data.map((_, index) => index))
  deepStrictEqual(data.map((item) => item.type), [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_text.delta",
    "response.reasoning_summary_text.delta",
    "response.reasoning_summary_text.done",
    "response.reasoning_summary_part.done",
    "response.output_item.done",
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.output_item.added",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.output_item.done",
    "response.output_item.added",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.output_item.done",
    "response.completed"
  ])
  strictEqual(data[0].response.status, "in_progress")
  deepStrictEqual(data[0].response.output, [])
  strictEqual(data[0].response.id, "resp_abc")
  deepStrictEqual(data[11], {
    type: "response.output_text.delta",
    item_id: "msg_abc_1",
    output_index: 1,
    content_index: 0,
    delta: "Checking ",
    logprobs: [],
    sequence_number: 11
  })
  const completed = data.at(-1)
  strictEqual(completed.response.status, "completed")
  deepStrictEqual(completed.response.output, expectedOutput)
  deepStrictEqual(completed.response.usage, {
    input_tokens: 37,
    input_tokens_details: { cached_tokens: 5, cache_write_tokens: 0 },
    output_tokens: 40,
    output_tokens_details: { reasoning_tokens: 12 },
    total_tokens: 77
  })
})

Deno.test("streamEncoder: length → response.incomplete; fail → one error event, never response.completed", () => {
  const cut: ReadonlyArray<StreamPart> = [
    { _tag: "ResponseStart", id: "u", model: "m", created: 1 },
    { _tag: "BlockStart", index: 0, block: { type: "text" } },
    { _tag: "TextDelta", index: 0, text: "Once upon" },
    { _tag: "Finish", reason: "length", usage: { inputTokens: 3, outputTokens: 2 } }
  ]
  const incomplete = parsed(runEncoder(encoder, meta, cut))
  const last = incomplete.at(-1)
  strictEqual(last.type, "response.incomplete")
  deepStrictEqual(last.response.incomplete_details, { reason: "max_output_tokens" })
  // The open text block was closed before the terminal event.
  strictEqual(incomplete.at(-2).type, "response.output_item.done")

  const problem: Problem = {
    status: 429,
    type: "rate_limit_error",
    code: "rate_limit_exceeded",
    message: "Slow down",
    param: ""
  }
  const failed = runEncoder(encoder, meta, cut.slice(0, 3), problem)
  const data = parsed(failed)
  deepStrictEqual(data.at(-1), {
    type: "error",
    code: "rate_limit_exceeded",
    message: "Slow down",
    param: "",
    sequence_number: data.length - 1
  })
  strictEqual(failed.at(-1)?.event, "error")
  strictEqual(data.some((item) => item.type === "response.completed"), false)
  deepStrictEqual(encoder.end(encoder.initial(meta)), [])
})

/** Serves `events` as an SSE body on a local port and hands an SDK client to `use`. */
const withServer = async (
  events: ReadonlyArray<Sse.Event>,
  use: (client: OpenAI) => Promise<void>
): Promise<void> => {
  const body = events.map((event) => `event: ${event.event}\ndata: ${event.data}\n\n`).join("")
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (request) => {
    await request.body?.cancel()
    return new Response(body, { headers: { "content-type": "text/event-stream" } })
  })
  try {
    const client = new OpenAI({ apiKey: "test-key", baseURL: `http://127.0.0.1:${server.addr.port}/v1`, maxRetries: 0 })
    await use(client)
  } finally {
    await server.shutdown()
  }
}

Deno.test("streamEncoder: the OpenAI SDK's responses.stream() accepts the bytes; finalResponse matches", async () => {
  await withServer(runEncoder(encoder, meta, conversation), async (client) => {
    const stream = client.responses.stream({ model: "gpt-4.1", input: "Weather in Paris and Bogotá?" })
    const deltas: Array<string> = []
    stream.on("response.output_text.delta", (event) => deltas.push(event.delta))
    const final = await stream.finalResponse()
    deepStrictEqual(deltas, ["Checking ", "both."])
    strictEqual(final.id, "resp_abc")
    strictEqual(final.status, "completed")
    strictEqual(final.output_text, "Checking both.")
    // `parsed` / `parsed_arguments` are added by the SDK's parse helper, not read from the wire.
    const helperKeys = new Set(["parsed", "parsed_arguments"])
    const wire = JSON.parse(JSON.stringify(final.output, (key, value) => helperKeys.has(key) ? undefined : value))
    deepStrictEqual(wire, expectedOutput)
    strictEqual(final.usage?.total_tokens, 77)
  })
})

Deno.test("streamEncoder: responses.create({stream: true}) iterates every event; incomplete and error streams", async () => {
  const events = runEncoder(encoder, meta, conversation)
  await withServer(events, async (client) => {
    const stream = await client.responses.create({ model: "gpt-4.1", input: "hi", stream: true })
    const types: Array<string> = []
    for await (const event of stream) types.push(event.type)
    deepStrictEqual(types, events.map((event) => event.event))
  })

  const cut: ReadonlyArray<StreamPart> = [
    { _tag: "ResponseStart", id: "u", model: "m", created: 1 },
    { _tag: "BlockStart", index: 0, block: { type: "text" } },
    { _tag: "TextDelta", index: 0, text: "Once upon" },
    { _tag: "Finish", reason: "length", usage: { inputTokens: 3, outputTokens: 2 } }
  ]
  await withServer(runEncoder(encoder, meta, cut), async (client) => {
    const final = await client.responses.stream({ model: "gpt-4.1", input: "hi" }).finalResponse()
    strictEqual(final.status, "incomplete")
    strictEqual(final.output_text, "Once upon")
  })

  const problem: Problem = {
    status: 500,
    type: "server_error",
    code: "server_error",
    message: "Upstream broke",
    param: ""
  }
  await withServer(runEncoder(encoder, meta, cut.slice(0, 3), problem), async (client) => {
    await rejects(client.responses.stream({ model: "gpt-4.1", input: "hi" }).finalResponse(), /Upstream broke/)
  })
})
