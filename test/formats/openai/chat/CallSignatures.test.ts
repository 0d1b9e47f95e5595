/**
 * Gemini call signatures through chat completions (`CallSignatures.ts`): read
 * from and written to `tool_calls[].extra_content.google.thought_signature`,
 * the field of Gemini's OpenAI-compatible endpoint
 * (ai.google.dev/gemini-api/docs/thought-signatures, "OpenAI compatibility"),
 * and the validator-skipping value the generate-content encoder gives an
 * unsigned call of a Gemini 3 model's current turn.
 */
import { Result } from "effect"
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import type { OutputPart } from "../../../../src/canonical/Content.ts"
import type { Request } from "../../../../src/canonical/Request.ts"
import type { StreamPart } from "../../../../src/canonical/StreamPart.ts"
import { GeminiFormat } from "../../../../src/formats/gemini/generate-content/Format.ts"
import { checksCallSignatures, SKIP_SIGNATURE_VALIDATOR } from "../../../../src/formats/gemini/Models.ts"
import { OpenAiChatFormat } from "../../../../src/formats/openai/chat/Format.ts"
import { runEncoder } from "../../../support/StreamSteps.ts"

const meta = { id: "chatcmpl-gw-1", model: "gemini-3-pro-preview", created: 1741569952 }
const call = { type: "tool-call", callId: "fc-1", name: "get_weather", arguments: '{"city":"Paris"}' } as const

Deno.test("decodeRequest: a call's extra_content signature becomes a signature-only part before it", () => {
  const decoded = OpenAiChatFormat.decodeRequest({
    model: "m",
    messages: [
      { role: "user", content: "Weather?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "fc-1",
            type: "function",
            function: { name: "get_weather", arguments: '{"city":"Paris"}' },
            extra_content: { google: { thought_signature: "c2lnLTE=" } }
          },
          {
            id: "fc-2",
            type: "function",
            function: { name: "get_weather", arguments: "{}" },
            extra_content: { google: { thought_signature: "sluice.anthropic.EqQB" }, other: { x: 1 } }
          },
          { id: "fc-3", type: "function", function: { name: "get_weather", arguments: "{}" }, extra_content: "junk" }
        ]
      }
    ]
  }, {})
  if (Result.isFailure(decoded)) throw new Error(decoded.failure.message)
  deepStrictEqual(decoded.success.messages[1].content.map((part) => part.type === "reasoning" ? part : part.type), [
    { type: "reasoning", text: "", signature: "c2lnLTE=", origin: "gemini" },
    "tool-call",
    { type: "reasoning", text: "", signature: "EqQB", origin: "anthropic" },
    "tool-call",
    "tool-call"
  ])
})

Deno.test("encodeResponse: only a signature-only Gemini part signs the call after it", () => {
  const encode = (content: ReadonlyArray<OutputPart>) => {
    const body = OpenAiChatFormat.encodeResponse({
      id: "r",
      model: "m",
      created: 0,
      content,
      finishReason: "tool-calls",
      usage: { inputTokens: 1, outputTokens: 1 }
    }, meta) as { choices: ReadonlyArray<{ message: { tool_calls: ReadonlyArray<Record<string, unknown>> } }> }
    return body.choices[0].message.tool_calls.map((item) => item.extra_content)
  }
  deepStrictEqual(
    encode([
      { type: "reasoning", text: "", signature: "c2ln", origin: "gemini" },
      call,
      { ...call, callId: "fc-2" }
    ]),
    [{ google: { thought_signature: "c2ln" } }, undefined],
    "a parallel call stays unsigned, as Gemini sends it"
  )
  deepStrictEqual(encode([{ type: "reasoning", text: "", signature: "EqQB", origin: "anthropic" }, call]), [undefined])
  deepStrictEqual(
    encode([{ type: "reasoning", text: "Thinking.", signature: "c2ln", origin: "gemini" }, call]),
    [undefined],
    "a signed thought keeps its signature to itself"
  )
})

Deno.test("stream encoder: the signature goes on the call's first chunk only", () => {
  const parts: ReadonlyArray<StreamPart> = [
    { _tag: "ResponseStart", id: "r", model: "m", created: 0 },
    { _tag: "BlockStart", index: 0, block: { type: "reasoning" } },
    { _tag: "ReasoningDelta", index: 0, text: "Hm." },
    { _tag: "ReasoningSignature", index: 0, signature: "dGhvdWdodA==", origin: "gemini" },
    { _tag: "BlockStop", index: 0 },
    { _tag: "BlockStart", index: 1, block: { type: "reasoning" } },
    { _tag: "ReasoningSignature", index: 1, signature: "c2ln", origin: "gemini" },
    { _tag: "BlockStop", index: 1 },
    { _tag: "BlockStart", index: 2, block: { type: "tool-call", callId: "fc-1", name: "get_weather" } },
    { _tag: "ToolInputDelta", index: 2, json: "{}" },
    { _tag: "BlockStop", index: 2 },
    { _tag: "BlockStart", index: 3, block: { type: "tool-call", callId: "fc-2", name: "get_weather" } },
    { _tag: "BlockStop", index: 3 },
    { _tag: "Finish", reason: "tool-calls", usage: { inputTokens: 1, outputTokens: 1 } }
  ]
  const calls = runEncoder(OpenAiChatFormat.streamEncoder, meta, parts)
    .filter((event) => event.data.startsWith("{"))
    .flatMap((event) => JSON.parse(event.data).choices[0]?.delta?.tool_calls ?? [])
  deepStrictEqual(calls.map((item: Record<string, unknown>) => item.extra_content), [
    { google: { thought_signature: "c2ln" } },
    undefined,
    undefined
  ])
})

const loop = (model: string): Request => ({
  model,
  stream: false,
  messages: [
    { role: "user", content: [{ type: "text", text: "Weather in Paris?" }] },
    { role: "assistant", content: [call] },
    { role: "tool", content: [{ type: "tool-result", callId: "fc-1", content: [{ type: "text", text: "sunny" }] }] },
    { role: "user", content: [{ type: "text", text: "And Rome?" }] },
    {
      role: "assistant",
      content: [{ type: "text", text: "Checking." }, { ...call, callId: "fc-2" }, { ...call, callId: "fc-3" }]
    },
    { role: "tool", content: [{ type: "tool-result", callId: "fc-2", content: [{ type: "text", text: "rain" }] }] },
    {
      role: "assistant",
      content: [{ type: "reasoning", text: "", signature: "c2ln", origin: "gemini" }, { ...call, callId: "fc-4" }]
    }
  ]
})

const signatures = (request: Request) =>
  (GeminiFormat.encodeRequest(request).body as {
    contents: ReadonlyArray<{ parts: ReadonlyArray<Record<string, unknown>> }>
  })
    .contents.map((content) => content.parts.map((part) => part.thoughtSignature))

Deno.test("encodeRequest: a Gemini 3 model's unsigned calls of the current turn get the validator-skipping value", () => {
  deepStrictEqual(
    signatures(loop("gemini-3-pro-preview")),
    [
      [undefined],
      [undefined],
      [undefined, undefined],
      [undefined, SKIP_SIGNATURE_VALIDATOR, undefined],
      [undefined],
      ["c2ln"]
    ],
    "an earlier turn untouched (its result and the next question travel as one user turn); the first call of each step of this turn signed; a real signature kept"
  )
  deepStrictEqual(signatures(loop("gemini-2.5-flash")), [
    [undefined],
    [undefined],
    [undefined, undefined],
    [undefined, undefined, undefined],
    [undefined],
    ["c2ln"]
  ], "older models are sent what the client sent")
})

Deno.test("checksCallSignatures: Gemini 3 and later, by name", () => {
  for (const model of ["gemini-3-pro-preview", "models/gemini-3-flash", "gemini-3.5-pro", "gemini-10-x"]) {
    strictEqual(checksCallSignatures(model), true, model)
  }
  for (const model of ["gemini-2.5-flash", "gemini-pro", "my-gemini-3", "gemma-3-27b"]) {
    strictEqual(checksCallSignatures(model), false, model)
  }
})

const chatLoop = (model: string): Request => ({
  model,
  stream: false,
  messages: [
    { role: "user", content: [{ type: "text", text: "Weather in Paris?" }] },
    {
      role: "assistant",
      content: [{ type: "reasoning", text: "", signature: "c2ln", origin: "gemini" }, call, { ...call, callId: "fc-2" }]
    },
    { role: "tool", content: [{ type: "tool-result", callId: "fc-1", content: [{ type: "text", text: "sunny" }] }] },
    { role: "assistant", content: [{ ...call, callId: "fc-3" }] }
  ]
})

const chatCallExtras = (request: Request) =>
  (OpenAiChatFormat.encodeRequest(request).body as {
    messages: ReadonlyArray<{ tool_calls?: ReadonlyArray<Record<string, unknown>> }>
  }).messages.flatMap((message) => message.tool_calls ?? []).map((item) => item.extra_content)

Deno.test("chat encodeRequest: only a Gemini model gets signatures, and Gemini 3 the validator-skipping one", () => {
  const signed = { google: { thought_signature: "c2ln" } }
  deepStrictEqual(chatCallExtras(chatLoop("gpt-4.1")), [undefined, undefined, undefined], "never to other models")
  deepStrictEqual(chatCallExtras(chatLoop("gemini-2.5-flash")), [signed, undefined, undefined])
  deepStrictEqual(chatCallExtras(chatLoop("gemini-3-flash-preview")), [
    signed,
    undefined,
    { google: { thought_signature: SKIP_SIGNATURE_VALIDATOR } }
  ])
})

Deno.test("chat decodeResponse and stream decoder: a call's extra_content signature is Gemini's", () => {
  const decoded = OpenAiChatFormat.decodeResponse({
    id: "x",
    object: "chat.completion",
    created: 1,
    model: "gemini-3-flash-preview",
    choices: [{
      index: 0,
      finish_reason: "tool_calls",
      message: {
        role: "assistant",
        content: null,
        tool_calls: [{
          id: "fc-1",
          type: "function",
          function: { name: "get_weather", arguments: "{}" },
          extra_content: { google: { thought_signature: "c2ln" } }
        }]
      }
    }]
  })
  if (!("content" in decoded)) throw new Error(decoded.message)
  deepStrictEqual(decoded.content.slice(0, 1), [{ type: "reasoning", text: "", signature: "c2ln", origin: "gemini" }])
  const [, parts] = OpenAiChatFormat.streamDecoder.step(OpenAiChatFormat.streamDecoder.initial(), {
    _tag: "Event",
    event: "message",
    id: undefined,
    data: JSON.stringify({
      id: "x",
      choices: [{
        index: 0,
        delta: {
          tool_calls: [{
            index: 0,
            id: "fc-1",
            type: "function",
            function: { name: "get_weather", arguments: "" },
            extra_content: { google: { thought_signature: "c2ln" } }
          }]
        },
        finish_reason: null
      }]
    })
  }) as readonly [unknown, ReadonlyArray<StreamPart>]
  deepStrictEqual(parts.map((part) => part._tag), [
    "ResponseStart",
    "BlockStart",
    "ReasoningSignature",
    "BlockStop",
    "BlockStart"
  ])
  deepStrictEqual(parts[2], { _tag: "ReasoningSignature", index: 0, signature: "c2ln", origin: "gemini" })
})
