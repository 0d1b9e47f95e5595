import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { OpenAiResponsesFormat } from "../../../../src/formats/openai/responses/Format.ts"
import { runDecoder, sse } from "../../../support/StreamSteps.ts"

const decoder = OpenAiResponsesFormat.streamDecoder

/** An event as the API streams it: `event:` line = `type`, `sequence_number` from 0. */
const events = (list: ReadonlyArray<Record<string, unknown>>) =>
  list.map((data, sequence) => sse({ ...data, sequence_number: sequence }, String(data.type)))

const response = (status: string, extra: Record<string, unknown> = {}) => ({
  id: "resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654",
  object: "response",
  created_at: 1741290958,
  status,
  error: null,
  incomplete_details: null,
  model: "gpt-4.1-2025-04-14",
  output: [],
  ...extra
})

const usage = {
  input_tokens: 37,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: 11,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: 48
}

// Shaped like the streaming guide's text example.
const textStream = [
  { type: "response.created", response: response("in_progress") },
  { type: "response.in_progress", response: response("in_progress") },
  {
    type: "response.output_item.added",
    output_index: 0,
    item: { id: "msg_1", type: "message", status: "in_progress", role: "assistant", content: [] }
  },
  {
    type: "response.content_part.added",
    item_id: "msg_1",
    output_index: 0,
    content_index: 0,
    part: { type: "output_text", text: "", annotations: [] }
  },
  {
    type: "response.output_text.delta",
    item_id: "msg_1",
    output_index: 0,
    content_index: 0,
    delta: "Hi",
    logprobs: []
  },
  {
    type: "response.output_text.delta",
    item_id: "msg_1",
    output_index: 0,
    content_index: 0,
    delta: " there!",
    logprobs: []
  },
  { type: "response.output_text.done", item_id: "msg_1", output_index: 0, content_index: 0, text: "Hi there!" },
  {
    type: "response.content_part.done",
    item_id: "msg_1",
    output_index: 0,
    content_index: 0,
    part: { type: "output_text", text: "Hi there!", annotations: [] }
  },
  {
    type: "response.output_item.done",
    output_index: 0,
    item: {
      id: "msg_1",
      type: "message",
      status: "completed",
      role: "assistant",
      content: [{ type: "output_text", text: "Hi there!", annotations: [] }]
    }
  },
  { type: "response.completed", response: response("completed", { usage }) }
]

Deno.test("streamDecoder: text stream → ResponseStart, block, deltas, usage, Finish; complete", () => {
  const result = runDecoder(decoder, events(textStream))
  strictEqual(result.failure, undefined)
  strictEqual(result.complete, true)
  const finalUsage = { inputTokens: 37, outputTokens: 11, cachedInputTokens: 0, reasoningTokens: 0 }
  deepStrictEqual(result.parts, [
    {
      _tag: "ResponseStart",
      id: "resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654",
      model: "gpt-4.1-2025-04-14",
      created: 1741290958
    },
    { _tag: "BlockStart", index: 0, block: { type: "text" } },
    { _tag: "TextDelta", index: 0, text: "Hi" },
    { _tag: "TextDelta", index: 0, text: " there!" },
    { _tag: "BlockStop", index: 0 },
    { _tag: "UsageUpdate", usage: finalUsage, final: true },
    { _tag: "Finish", reason: "stop", usage: finalUsage }
  ])
})

Deno.test("streamDecoder: reasoning summary with encrypted_content, parallel function calls → tool-calls", () => {
  const result = runDecoder(
    decoder,
    events([
      { type: "response.created", response: response("in_progress") },
      { type: "response.output_item.added", output_index: 0, item: { id: "rs_1", type: "reasoning", summary: [] } },
      {
        type: "response.reasoning_summary_part.added",
        item_id: "rs_1",
        output_index: 0,
        summary_index: 0,
        part: { type: "summary_text", text: "" }
      },
      {
        type: "response.reasoning_summary_text.delta",
        item_id: "rs_1",
        output_index: 0,
        summary_index: 0,
        delta: "First."
      },
      {
        type: "response.reasoning_summary_text.delta",
        item_id: "rs_1",
        output_index: 0,
        summary_index: 1,
        delta: "Second."
      },
      {
        type: "response.output_item.done",
        output_index: 0,
        item: {
          id: "rs_1",
          type: "reasoning",
          summary: [{ type: "summary_text", text: "First." }, { type: "summary_text", text: "Second." }],
          encrypted_content: "gAAAA-opaque"
        }
      },
      { type: "response.web_search_call.in_progress", output_index: 1, item_id: "ws_1" },
      {
        type: "response.output_item.added",
        output_index: 1,
        item: { id: "ws_1", type: "web_search_call", status: "in_progress" }
      },
      {
        type: "response.output_item.added",
        output_index: 2,
        item: {
          id: "fc_1",
          type: "function_call",
          status: "in_progress",
          arguments: "",
          call_id: "call_1",
          name: "get_weather"
        }
      },
      { type: "response.function_call_arguments.delta", item_id: "fc_1", output_index: 2, delta: '{"location":' },
      { type: "response.function_call_arguments.delta", item_id: "fc_1", output_index: 2, delta: '"Paris"}' },
      {
        type: "response.output_item.added",
        output_index: 3,
        item: {
          id: "fc_2",
          type: "function_call",
          status: "in_progress",
          arguments: "",
          call_id: "call_2",
          name: "get_weather"
        }
      },
      {
        type: "response.function_call_arguments.done",
        item_id: "fc_1",
        output_index: 2,
        arguments: '{"location":"Paris"}'
      },
      {
        type: "response.output_item.done",
        output_index: 2,
        item: {
          id: "fc_1",
          type: "function_call",
          status: "completed",
          arguments: '{"location":"Paris"}',
          call_id: "call_1",
          name: "get_weather"
        }
      },
      {
        type: "response.output_item.done",
        output_index: 3,
        item: {
          id: "fc_2",
          type: "function_call",
          status: "completed",
          arguments: '{"location":"Bogotá"}',
          call_id: "call_2",
          name: "get_weather"
        }
      },
      { type: "response.completed", response: response("completed", { usage }) }
    ])
  )
  strictEqual(result.complete, true)
  deepStrictEqual(result.parts.slice(1, -2), [
    { _tag: "BlockStart", index: 0, block: { type: "reasoning" } },
    { _tag: "ReasoningDelta", index: 0, text: "First." },
    { _tag: "ReasoningDelta", index: 0, text: "\n\nSecond." },
    { _tag: "ReasoningSignature", index: 0, signature: "gAAAA-opaque", origin: "openai" },
    { _tag: "BlockStop", index: 0 },
    { _tag: "BlockStart", index: 1, block: { type: "tool-call", callId: "call_1", name: "get_weather" } },
    { _tag: "ToolInputDelta", index: 1, json: '{"location":' },
    { _tag: "ToolInputDelta", index: 1, json: '"Paris"}' },
    { _tag: "BlockStart", index: 2, block: { type: "tool-call", callId: "call_2", name: "get_weather" } },
    { _tag: "BlockStop", index: 1 },
    // No delta came for the second call: its arguments come from output_item.done.
    { _tag: "ToolInputDelta", index: 2, json: '{"location":"Bogotá"}' },
    { _tag: "BlockStop", index: 2 }
  ])
  const finish = result.parts.at(-1)
  strictEqual(finish?._tag === "Finish" && finish.reason, "tool-calls")
})

Deno.test("streamDecoder: response.incomplete → length; open blocks are closed before Finish", () => {
  const result = runDecoder(
    decoder,
    events([
      ...textStream.slice(0, 5),
      {
        type: "response.incomplete",
        response: response("incomplete", { incomplete_details: { reason: "max_output_tokens" }, usage })
      }
    ])
  )
  strictEqual(result.complete, true)
  deepStrictEqual(result.parts.slice(-3, -1).map((part) => part._tag), ["BlockStop", "UsageUpdate"])
  const finish = result.parts.at(-1)
  strictEqual(finish?._tag === "Finish" && finish.reason, "length")
  strictEqual(finish?._tag === "Finish" && finish.rawReason, "max_output_tokens")
})

Deno.test("streamDecoder: in-band error and response.failed → UpstreamFailed with the code's kind", () => {
  const rateLimited = runDecoder(
    decoder,
    events([
      ...textStream.slice(0, 5),
      { type: "error", code: "rate_limit_exceeded", message: "Rate limit reached.", param: null }
    ])
  )
  strictEqual(rateLimited.failure?.kind, "throttled")
  strictEqual(rateLimited.failure?.message, "Rate limit reached.")
  strictEqual(rateLimited.complete, false)
  const nested = runDecoder(
    decoder,
    events([{ type: "error", error: { type: "server_error", code: "server_error", message: "Boom." } }])
  )
  strictEqual(nested.failure?.kind, "server")
  const failed = runDecoder(
    decoder,
    events([
      { type: "response.created", response: response("in_progress") },
      {
        type: "response.failed",
        response: response("failed", { error: { code: "invalid_prompt", message: "Prompt flagged." } })
      }
    ])
  )
  strictEqual(failed.failure?.kind, "rejected")
  strictEqual(failed.failure?.message, "Prompt flagged.")
})

Deno.test("streamDecoder: a stream that stops before response.completed is not complete", () => {
  const result = runDecoder(decoder, events(textStream.slice(0, 6)))
  strictEqual(result.failure, undefined)
  strictEqual(result.complete, false)
  strictEqual(result.parts.some((part) => part._tag === "Finish"), false)
})

Deno.test("streamDecoder: unknown events are skipped; malformed known events are bad-body", () => {
  const skipped = runDecoder(decoder, [
    sse("not json at all", "keepalive"),
    sse({ type: "response.future_event", whatever: 1 }, "response.future_event"),
    sse("[DONE]")
  ])
  deepStrictEqual(skipped.parts, [])
  strictEqual(skipped.failure, undefined)
  const malformed = runDecoder(decoder, [sse("{oops", "response.output_text.delta")])
  strictEqual(malformed.failure?.kind, "bad-body")
  const missing = runDecoder(decoder, [sse({ type: "response.created" }, "response.created")])
  strictEqual(missing.failure?.kind, "bad-body")
})
