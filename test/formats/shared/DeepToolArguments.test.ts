/**
 * Tool-call arguments and tool results are JSON text inside a body (a
 * caller's history, an upstream's answer), so the body's own nesting check
 * does not see into them: each format that parses them checks their nesting
 * first, and text nested deeper than `MAX_JSON_DEPTH` is read as text that
 * is not a JSON object, as malformed arguments already were.
 */
import { deepStrictEqual, ok } from "node:assert/strict"
import type { Request } from "../../../src/canonical/Request.ts"
import { MAX_JSON_DEPTH } from "../../../src/domain/JsonDepth.ts"
import { AnthropicFormat } from "../../../src/formats/anthropic/messages/Format.ts"
import { outputBlockOf } from "../../../src/formats/anthropic/messages/ResponseCodec.ts"
import { encodePart, parseArguments } from "../../../src/formats/gemini/generate-content/Parts.ts"
import { freeformInput } from "../../../src/formats/openai/responses/ResponseCodec.ts"

/** An object whose one field nests `levels - 1` arrays: `levels` levels in all. */
const deepObject = (levels: number): string => `{"a":${"[".repeat(levels - 1)}${"]".repeat(levels - 1)}}`
const BOMB = deepObject(1_000_000)
const DEEPEST = deepObject(MAX_JSON_DEPTH)

Deno.test("anthropic request encoder: tool-call arguments nested too deep become {} and are listed as dropped", () => {
  const request: Request = {
    model: "claude-x",
    stream: false,
    messages: [
      { role: "user", content: [{ type: "text", text: "Hi" }] },
      {
        role: "assistant",
        content: [
          { type: "tool-call", callId: "toolu_1", name: "f", arguments: BOMB },
          { type: "tool-call", callId: "toolu_2", name: "f", arguments: DEEPEST }
        ]
      },
      {
        role: "tool",
        content: [
          { type: "tool-result", callId: "toolu_1", content: [{ type: "text", text: "ok" }] },
          { type: "tool-result", callId: "toolu_2", content: [{ type: "text", text: "ok" }] }
        ]
      }
    ]
  }
  const { body, dropped } = AnthropicFormat.encodeRequest(request)
  const blocks = (body.messages as Array<{ content: Array<{ type: string; input?: unknown }> }>)[1].content
  deepStrictEqual(blocks[0].input, {})
  deepStrictEqual(blocks[1].input, JSON.parse(DEEPEST), "64 levels are parsed")
  ok(dropped.includes("toolCall.arguments"), dropped.join())
})

Deno.test("anthropic response encoder: an upstream's tool arguments nested too deep become {}", () => {
  deepStrictEqual(outputBlockOf({ type: "tool-call", callId: "c", name: "f", arguments: BOMB }).input, {})
  deepStrictEqual(
    outputBlockOf({ type: "tool-call", callId: "c", name: "f", arguments: DEEPEST }).input,
    JSON.parse(DEEPEST)
  )
})

Deno.test("generate-content: function-call args and function responses nested too deep are not parsed", () => {
  deepStrictEqual(parseArguments(BOMB), {})
  deepStrictEqual(parseArguments(DEEPEST), JSON.parse(DEEPEST))
  const encoded = encodePart(
    { type: "tool-result", callId: "c", name: "f", content: [{ type: "text", text: BOMB }] },
    () => undefined
  )
  deepStrictEqual((encoded?.functionResponse as { response: unknown }).response, { result: BOMB })
})

Deno.test("responses: a freeform tool's arguments nested too deep are passed on as their text", () => {
  const bomb = `{"input":"x","more":${"[".repeat(1_000_000)}${"]".repeat(1_000_000)}}`
  deepStrictEqual(freeformInput(bomb), bomb)
  deepStrictEqual(freeformInput('{"input":"x","more":[[]]}'), "x")
})
