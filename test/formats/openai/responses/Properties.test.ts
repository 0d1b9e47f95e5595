import { Result } from "effect"
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import type { OutputPart, Part } from "../../../../src/canonical/Content.ts"
import type { Message, Request, Tool } from "../../../../src/canonical/Request.ts"
import type { Response } from "../../../../src/canonical/Response.ts"
import type { StreamPart } from "../../../../src/canonical/StreamPart.ts"
import { UpstreamFailed } from "../../../../src/errors/GatewayError.ts"
import { OpenAiResponsesFormat } from "../../../../src/formats/openai/responses/Format.ts"
import { runDecoder, runEncoder } from "../../../support/StreamSteps.ts"

const format = OpenAiResponsesFormat

/** fast-check builds records without a prototype; compare plain JSON data. */
const plain = (value: unknown): unknown => JSON.parse(JSON.stringify(value))

// ---- arbitraries restricted to what the Responses format expresses ----

const word = fc.string({ minLength: 1, maxLength: 12 }).filter((value) => value !== "__proto__")
const text = fc.string({ maxLength: 20 })
const base64 = fc.base64String({ minLength: 4, maxLength: 16 })
const url = word.map((path) => `https://example.com/${encodeURIComponent(path)}`)
const jsonObject = fc.dictionary(word, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 })

const textPart = text.map((value): Part => ({ type: "text", text: value }))
const imagePart = fc.record({
  source: fc.oneof(
    url.map((value) => ({ kind: "url" as const, url: value })),
    fc.record({
      kind: fc.constant("base64" as const),
      mediaType: fc.constantFrom("image/png", "image/jpeg", "image/webp"),
      data: base64
    })
  ),
  detail: fc.constantFrom("auto", "low", "high")
}).map((image): Part => ({ type: "image", ...image }))
const filePart = fc.record({
  source: fc.oneof(
    url.map((value) => ({ kind: "url" as const, url: value })),
    fc.record({
      kind: fc.constant("base64" as const),
      mediaType: fc.constantFrom("application/pdf", "text/plain"),
      data: base64
    })
  ),
  filename: word
}, { requiredKeys: ["source"] }).map((file): Part => ({ type: "file", ...file }))
const inputPart = fc.oneof(textPart, imagePart, filePart)

// Tool calls and tool results use separate id spaces so no result name is recovered from history.
const toolCall = fc.record({ callId: word.map((id) => `call_${id}`), name: word, arguments: text })
  .map((call): Part => ({ type: "tool-call", ...call }))
const reasoning = fc.record({ text, signature: word })
  .map((value): Part => ({ type: "reasoning", ...value, origin: "openai" }))
const toolResult = fc.record({
  callId: word.map((id) => `result_${id}`),
  content: fc.array(fc.oneof(textPart, imagePart), { minLength: 1, maxLength: 3 })
}).map((result): Part => ({ type: "tool-result", ...(result as Omit<Extract<Part, { type: "tool-result" }>, "type">) }))

const userMessage = fc.array(inputPart, { maxLength: 3 }).map((content): Message => ({ role: "user", content }))
const developerMessage = fc.array(inputPart, { maxLength: 2 })
  .map((content): Message => ({ role: "system", content, developer: true }))
const assistantMessage = fc.array(fc.oneof(textPart, toolCall, reasoning), { minLength: 1, maxLength: 4 })
  .map((content): Message => ({ role: "assistant", content }))
const toolMessage = fc.array(toolResult, { minLength: 1, maxLength: 3 })
  .map((content): Message => ({ role: "tool", content }))

/** No two assistant or two tool messages in a row (the decoder merges those). */
const conversation = fc.array(fc.oneof(userMessage, developerMessage, assistantMessage, toolMessage), { maxLength: 6 })
  .map((messages) =>
    messages.filter((message, index) =>
      index === 0 || message.role === "user" || message.role === "system" || messages[index - 1].role !== message.role
    )
  )

const messages = fc.tuple(fc.option(text, { nil: undefined }), conversation).map(([instructions, rest]) =>
  instructions === undefined
    ? rest
    : [{ role: "system" as const, content: [{ type: "text" as const, text: instructions }] }, ...rest]
)

const tool: fc.Arbitrary<Tool> = fc.oneof(
  fc.record({
    type: fc.constant("function" as const),
    name: word,
    description: text,
    parameters: jsonObject,
    strict: fc.boolean()
  }, { requiredKeys: ["type", "name", "parameters"] }),
  fc.record({
    type: fc.constant("builtin" as const),
    format: fc.constant("openai-responses"),
    definition: fc.record({ type: fc.constantFrom("web_search_preview", "file_search", "code_interpreter") })
  })
)

const request: fc.Arbitrary<Request> = fc.record({
  model: word,
  messages,
  tools: fc.array(tool, { maxLength: 3 }),
  toolChoice: fc.oneof(
    fc.constantFrom({ type: "auto" as const }, { type: "none" as const }, { type: "required" as const }),
    word.map((name) => ({ type: "tool" as const, name }))
  ),
  parallelToolCalls: fc.boolean(),
  maxOutputTokens: fc.nat(),
  temperature: fc.double({ min: 0, max: 2, noNaN: true }),
  topP: fc.double({ min: 0, max: 1, noNaN: true }),
  responseFormat: fc.oneof(
    fc.constantFrom({ type: "text" as const }, { type: "json_object" as const }),
    fc.record({
      type: fc.constant("json_schema" as const),
      name: word,
      schema: jsonObject,
      strict: fc.boolean(),
      description: text
    }, { requiredKeys: ["type", "name", "schema"] })
  ),
  reasoning: fc.oneof(
    fc.record({ effort: fc.constantFrom("none", "minimal", "low", "medium", "high", "xhigh" as const) }),
    fc.record({
      effort: fc.constantFrom("low" as const, "high" as const),
      includeThoughts: fc.constant(true)
    }, { requiredKeys: ["includeThoughts"] })
  ),
  stream: fc.boolean(),
  user: word,
  metadata: fc.dictionary(word, text, { maxKeys: 3 })
}, { requiredKeys: ["model", "messages", "stream"] })

Deno.test("property: canonical requests the format expresses survive encodeRequest → decodeRequest", () => {
  fc.assert(
    fc.property(request, (original) => {
      const encoded = format.encodeRequest(original)
      deepStrictEqual(encoded.dropped, [])
      const decoded = format.decodeRequest(JSON.parse(JSON.stringify(encoded.body)), {})
      if (Result.isFailure(decoded)) throw new Error(`${decoded.failure.message} (${decoded.failure.param})`)
      // An empty tool list is not written; everything else comes back as it was.
      const expected = original.tools?.length === 0 ? { ...original, tools: undefined } : original
      deepStrictEqual(plain(decoded.success), plain(expected))
    }),
    { numRuns: 300 }
  )
})

const nearlyValidItem = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.record({
    type: fc.constantFrom("message", "function_call", "function_call_output", "reasoning", "item_reference", 7),
    role: fc.oneof(fc.constantFrom("user", "assistant", "system", "developer"), fc.jsonValue({ maxDepth: 1 })),
    content: fc.oneof(
      fc.string(),
      fc.array(
        fc.record({
          type: fc.constantFrom("input_text", "input_image", "input_file", "input_audio", "output_text", "refusal"),
          text: fc.jsonValue({ maxDepth: 1 }),
          image_url: fc.jsonValue({ maxDepth: 1 }),
          file_data: fc.jsonValue({ maxDepth: 1 })
        }, { requiredKeys: ["type"] })
      ),
      fc.jsonValue({ maxDepth: 2 })
    ),
    call_id: fc.jsonValue({ maxDepth: 1 }),
    output: fc.jsonValue({ maxDepth: 2 })
  }, { requiredKeys: [] })
)
const nearlyValidBody = fc.record({
  model: fc.oneof(fc.string(), fc.jsonValue({ maxDepth: 1 })),
  input: fc.oneof(fc.string(), fc.array(nearlyValidItem, { maxLength: 4 }), fc.jsonValue({ maxDepth: 2 })),
  instructions: fc.jsonValue({ maxDepth: 1 }),
  tools: fc.oneof(fc.array(fc.jsonValue({ maxDepth: 2 })), fc.jsonValue({ maxDepth: 1 })),
  tool_choice: fc.jsonValue({ maxDepth: 2 }),
  text: fc.jsonValue({ maxDepth: 3 }),
  reasoning: fc.jsonValue({ maxDepth: 2 }),
  metadata: fc.jsonValue({ maxDepth: 2 })
}, { requiredKeys: [] })

Deno.test("property: any JSON value to decodeRequest never throws; ok or InvalidRequest", () => {
  fc.assert(
    fc.property(fc.oneof(fc.jsonValue({ maxDepth: 4 }), nearlyValidBody), (body) => {
      const decoded = format.decodeRequest(body, {})
      if (Result.isFailure(decoded)) {
        strictEqual(decoded.failure._tag, "InvalidRequest")
        strictEqual(typeof decoded.failure.param, "string")
      }
    }),
    { numRuns: 1000 }
  )
})

// ---- answers ----

const outputPart: fc.Arbitrary<OutputPart> = fc.oneof(
  text.map((value) => ({ type: "text" as const, text: value })),
  fc.record({ callId: word, name: word, arguments: text }).map((call) => ({ type: "tool-call" as const, ...call })),
  fc.record({ text, signature: word }, { requiredKeys: ["text"] })
    .map((value) => ({
      type: "reasoning" as const,
      ...value,
      ...(value.signature === undefined ? {} : { origin: "openai" as const })
    }))
)
const usage = fc.record({
  inputTokens: fc.nat(),
  outputTokens: fc.nat(),
  cachedInputTokens: fc.nat(),
  cacheCreationInputTokens: fc.nat(),
  reasoningTokens: fc.nat()
})
const answer: fc.Arbitrary<Response> = fc.record({
  content: fc.array(outputPart, { maxLength: 5 }),
  cut: fc.constantFrom(undefined, "length" as const, "content-filter" as const),
  usage
}).map(({ content, cut, usage }) => ({
  id: "resp_property",
  model: "gpt-test",
  created: 1700000000,
  content,
  finishReason: cut ?? (content.some((part) => part.type === "tool-call") ? "tool-calls" : "stop"),
  ...(cut === undefined ? {} : { rawFinishReason: cut === "length" ? "max_output_tokens" : "content_filter" }),
  usage
}))

const meta = { id: "resp_property", model: "gpt-test", created: 1700000000 }

Deno.test("property: canonical answers survive encodeResponse → decodeResponse", () => {
  fc.assert(
    fc.property(answer, (original) => {
      const body = JSON.parse(JSON.stringify(format.encodeResponse(original, meta)))
      const decoded = format.decodeResponse(body)
      if (decoded instanceof UpstreamFailed) throw new Error(decoded.message)
      deepStrictEqual(plain(decoded), plain(original))
    }),
    { numRuns: 300 }
  )
})

/** The parts a stream of `content` consists of, one block per part. */
const streamOf = (response: Response): ReadonlyArray<StreamPart> => [
  { _tag: "ResponseStart", id: response.id, model: response.model, created: response.created },
  ...response.content.flatMap((part, index): ReadonlyArray<StreamPart> => {
    switch (part.type) {
      case "text":
        return [
          { _tag: "BlockStart", index, block: { type: "text" } },
          ...(part.text === "" ? [] : [{ _tag: "TextDelta" as const, index, text: part.text }]),
          { _tag: "BlockStop", index }
        ]
      case "reasoning":
        return [
          { _tag: "BlockStart", index, block: { type: "reasoning" } },
          ...(part.text === "" ? [] : [{ _tag: "ReasoningDelta" as const, index, text: part.text }]),
          ...(part.signature === undefined
            ? []
            : [{ _tag: "ReasoningSignature" as const, index, signature: part.signature, origin: "openai" as const }]),
          { _tag: "BlockStop", index }
        ]
      case "tool-call":
        return [
          { _tag: "BlockStart", index, block: { type: "tool-call", callId: part.callId, name: part.name } },
          ...(part.arguments === "" ? [] : [{ _tag: "ToolInputDelta" as const, index, json: part.arguments }]),
          { _tag: "BlockStop", index }
        ]
    }
  }),
  {
    _tag: "Finish",
    reason: response.finishReason,
    ...(response.rawFinishReason === undefined ? {} : { rawReason: response.rawFinishReason }),
    usage: response.usage
  }
]

Deno.test("property: streamEncoder output read back by streamDecoder gives the same parts", () => {
  fc.assert(
    fc.property(answer, (original) => {
      const parts = streamOf(original)
      const result = runDecoder(format.streamDecoder, runEncoder(format.streamEncoder, meta, parts))
      strictEqual(result.failure, undefined)
      strictEqual(result.complete, true)
      const withoutUsageUpdates = result.parts.filter((part) => part._tag !== "UsageUpdate")
      deepStrictEqual(plain(withoutUsageUpdates), plain(parts))
    }),
    { numRuns: 300 }
  )
})
