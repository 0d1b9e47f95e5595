/**
 * Custom (freeform) tools of the Responses format across a translation (Codex's `apply_patch`): offered to another
 * format as a function with one string argument, `input`; a translated answer's call of it goes back to the caller as
 * a `custom_tool_call` item (JSON and stream, read by the `openai` SDK); `custom_tool_call` and
 * `custom_tool_call_output` history items replay as a call and its result.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import type { StreamPart } from "../../../../src/canonical/StreamPart.ts"
import { OpenAiResponsesFormat } from "../../../../src/formats/openai/responses/Format.ts"
import { runEncoder } from "../../../support/StreamSteps.ts"

const applyPatch = {
  type: "custom",
  name: "apply_patch",
  description: "Edit files with a patch.",
  format: { type: "grammar", syntax: "lark", definition: 'start: "*** Begin Patch" LF' }
}
const patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-old\n+new\n*** End Patch\n"
const request = { model: "gpt-5.5", input: "edit", tools: [applyPatch] }
const meta = { id: "resp_abc", model: "gpt-5.5", created: 1741290958, request }
const usage = { inputTokens: 10, outputTokens: 5 }

Deno.test("decodeRequest: a custom tool becomes a function with one string input naming its grammar", () => {
  const decoded = OpenAiResponsesFormat.decodeRequest(request, {})
  ok(Result.isSuccess(decoded))
  deepStrictEqual(decoded.success.tools, [{
    type: "function",
    name: "apply_patch",
    description: "Edit files with a patch.",
    parameters: {
      type: "object",
      properties: {
        input: {
          type: "string",
          description:
            'The tool\'s raw input, as free text. It must match this lark grammar:\nstart: "*** Begin Patch" LF'
        }
      },
      required: ["input"],
      additionalProperties: false
    }
  }])
  strictEqual(decoded.success.untranslatable, undefined)
  const chosen = OpenAiResponsesFormat.decodeRequest({
    ...request,
    tool_choice: { type: "custom", name: "apply_patch" }
  }, {})
  ok(Result.isSuccess(chosen))
  deepStrictEqual(chosen.success.toolChoice, { type: "tool", name: "apply_patch" })
})

Deno.test("decodeRequest: custom_tool_call and its output replay as a call with {input} and its result", () => {
  const decoded = OpenAiResponsesFormat.decodeRequest({
    ...request,
    input: [
      { role: "user", content: "edit" },
      { type: "custom_tool_call", id: "ctc_1", call_id: "call_1", name: "apply_patch", input: patch },
      { type: "custom_tool_call_output", call_id: "call_1", output: "Success. Updated a.txt" }
    ]
  }, {})
  ok(Result.isSuccess(decoded))
  deepStrictEqual(decoded.success.messages.slice(1), [
    {
      role: "assistant",
      content: [{
        type: "tool-call",
        callId: "call_1",
        name: "apply_patch",
        arguments: JSON.stringify({ input: patch })
      }]
    },
    {
      role: "tool",
      content: [{
        type: "tool-result",
        callId: "call_1",
        name: "apply_patch",
        content: [{ type: "text", text: "Success. Updated a.txt" }]
      }]
    }
  ])
  strictEqual(decoded.success.untranslatable, undefined)
})

Deno.test("encodeResponse: a call of a custom tool is a custom_tool_call item with the raw input", () => {
  const body = OpenAiResponsesFormat.encodeResponse({
    id: "up",
    model: "m",
    created: 1,
    content: [
      { type: "tool-call", callId: "call_1", name: "apply_patch", arguments: JSON.stringify({ input: patch }) },
      { type: "tool-call", callId: "call_2", name: "exec_command", arguments: '{"cmd":"ls"}' }
    ],
    finishReason: "tool-calls",
    usage
  }, meta) as { output: ReadonlyArray<Record<string, unknown>> }
  deepStrictEqual(body.output, [
    {
      id: "ctc_abc_0",
      type: "custom_tool_call",
      status: "completed",
      call_id: "call_1",
      name: "apply_patch",
      input: patch
    },
    {
      id: "fc_abc_1",
      type: "function_call",
      status: "completed",
      call_id: "call_2",
      name: "exec_command",
      arguments: '{"cmd":"ls"}'
    }
  ])
})

Deno.test("streamEncoder: a custom tool's call streams as custom_tool_call, its input whole; the SDK reads it", async () => {
  const args = JSON.stringify({ input: patch })
  const parts: ReadonlyArray<StreamPart> = [
    { _tag: "ResponseStart", id: "up", model: "m", created: 1 },
    { _tag: "BlockStart", index: 0, block: { type: "tool-call", callId: "call_1", name: "apply_patch" } },
    { _tag: "ToolInputDelta", index: 0, json: args.slice(0, 20) },
    { _tag: "ToolInputDelta", index: 0, json: args.slice(20) },
    { _tag: "BlockStop", index: 0 },
    { _tag: "Finish", reason: "tool-calls", usage }
  ]
  const events = runEncoder(OpenAiResponsesFormat.streamEncoder, meta, parts)
  const types = events.map((event) => event.event)
  deepStrictEqual(types, [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.custom_tool_call_input.delta",
    "response.custom_tool_call_input.done",
    "response.output_item.done",
    "response.completed"
  ])
  const done = JSON.parse(events[5].data) as { item: Record<string, unknown> }
  deepStrictEqual(done.item, {
    id: "ctc_abc_0",
    type: "custom_tool_call",
    status: "completed",
    call_id: "call_1",
    name: "apply_patch",
    input: patch
  })
  const bytes = events.map((event) => `event: ${event.event}\ndata: ${event.data}\n\n`).join("")
  const client = new OpenAI({
    apiKey: "sk-test-custom",
    baseURL: "http://sdk.invalid/v1",
    fetch: () => Promise.resolve(new Response(bytes, { headers: { "content-type": "text/event-stream" } }))
  })
  const stream = client.responses.stream({ model: "gpt-5.5", input: "edit" })
  const final = await stream.finalResponse()
  deepStrictEqual(final.output.map((item) => item.type), ["custom_tool_call"])
  strictEqual((final.output[0] as { input: string }).input, patch)
})
