/**
 * Property tests: canonical requests that chat completions can express survive
 * encodeRequest → JSON → decodeRequest unchanged, and arbitrary JSON never
 * makes the decoders throw.
 */
import { Result } from "effect"
import { deepStrictEqual, ok } from "node:assert/strict"
import fc from "fast-check"
import type { Part } from "../../../../src/canonical/Content.ts"
import type { Message, Request } from "../../../../src/canonical/Request.ts"
import { InvalidRequest } from "../../../../src/errors/GatewayError.ts"
import { makeOpenAiChatFormat, OpenAiChatFormat } from "../../../../src/formats/openai/chat/Format.ts"
import { runDecoder, sse } from "../../../support/StreamSteps.ts"

const text = fc.string({ maxLength: 20 })
const nonEmptyText = fc.string({ minLength: 1, maxLength: 20 })
const identifier = fc.stringMatching(/^[a-zA-Z_][a-zA-Z0-9_]{0,15}$/)
const base64 = fc.base64String({ minLength: 4, maxLength: 24 })
const fraction = (max: number) => fc.integer({ min: 0, max: max * 100 }).map((value) => value / 100)

const textPart = text.map((value): Part => ({ type: "text", text: value }))

const imagePart = fc.record({
  source: fc.oneof(
    fc.webUrl().map((url) => ({ kind: "url" as const, url })),
    fc.record({
      kind: fc.constant("base64" as const),
      mediaType: fc.constantFrom("image/png", "image/jpeg", "image/webp"),
      data: base64
    })
  ),
  detail: fc.option(fc.constantFrom("auto", "low", "high"), { nil: undefined })
}).map(({ source, detail }): Part =>
  detail === undefined ? { type: "image", source } : { type: "image", source, detail }
)

const audioPart = fc.record({ data: base64, format: fc.constantFrom("wav", "mp3") })
  .map(({ data, format }): Part => ({ type: "audio", data, format }))

const filePart = fc.record({
  mediaType: fc.constantFrom("application/pdf", "text/plain"),
  data: base64,
  filename: fc.option(fc.constantFrom("a.pdf", "notes.txt"), { nil: undefined })
}).map(({ mediaType, data, filename }): Part => {
  const source = { kind: "base64" as const, mediaType, data }
  return filename === undefined ? { type: "file", source } : { type: "file", source, filename }
})

const systemMessage = fc.record({
  texts: fc.array(textPart, { minLength: 1, maxLength: 3 }),
  developer: fc.boolean()
}).map(({ texts, developer }): Message =>
  developer ? { role: "system", content: texts, developer: true } : { role: "system", content: texts }
)

const userMessage = fc.array(fc.oneof(textPart, imagePart, audioPart, filePart), { minLength: 1, maxLength: 4 })
  .map((content): Message => ({ role: "user", content }))

const toolCall = fc.record({ callId: identifier, name: identifier, arguments: text })
  .map((call): Part => ({ type: "tool-call", ...call }))

// Chat sends an assistant turn with neither text nor calls as `content: ""`,
// which reads back as one empty text part, so such turns have at least one.
const assistantMessage = fc.record({
  texts: fc.array(textPart, { maxLength: 2 }),
  calls: fc.array(toolCall, { maxLength: 3 })
}).filter(({ texts, calls }) => texts.length + calls.length > 0)
  .map(({ texts, calls }): Message => ({ role: "assistant", content: [...texts, ...calls] }))

const toolMessage = fc.record({ callId: identifier, texts: fc.array(nonEmptyText, { minLength: 1, maxLength: 2 }) })
  .map(({ callId, texts }): Message => ({
    role: "tool",
    content: [{ type: "tool-result", callId, content: texts.map((value) => ({ type: "text", text: value })) }]
  }))

const jsonSchema = fc.dictionary(identifier, fc.constantFrom({ type: "string" }, { type: "number" }), {
  maxKeys: 3,
  noNullPrototype: true
})
  .map((properties) => ({ type: "object", properties }))

const functionTool = fc.record({
  name: identifier,
  description: fc.option(text, { nil: undefined }),
  parameters: jsonSchema,
  strict: fc.option(fc.boolean(), { nil: undefined })
}).map(({ name, description, parameters, strict }) => ({
  type: "function" as const,
  name,
  parameters,
  ...(description === undefined ? {} : { description }),
  ...(strict === undefined ? {} : { strict })
}))

const optional = <A>(arbitrary: fc.Arbitrary<A>) => fc.option(arbitrary, { nil: undefined })

/** Canonical requests restricted to what chat completions expresses. */
const chatRequest: fc.Arbitrary<Request> = fc.record({
  model: nonEmptyText,
  messages: fc.array(fc.oneof(systemMessage, userMessage, assistantMessage, toolMessage), {
    minLength: 1,
    maxLength: 6
  }),
  tools: optional(fc.array(functionTool, { minLength: 1, maxLength: 3 })),
  toolChoice: optional(
    fc.oneof(
      fc.constantFrom({ type: "auto" as const }, { type: "none" as const }, { type: "required" as const }),
      identifier.map((name) => ({ type: "tool" as const, name }))
    )
  ),
  parallelToolCalls: optional(fc.boolean()),
  maxOutputTokens: optional(fc.integer({ min: 1, max: 100_000 })),
  temperature: optional(fraction(2)),
  topP: optional(fraction(1)),
  stopSequences: optional(fc.array(nonEmptyText, { maxLength: 4 })),
  seed: optional(fc.integer()),
  presencePenalty: optional(fraction(2)),
  frequencyPenalty: optional(fraction(2)),
  responseFormat: optional(
    fc.oneof(
      fc.constantFrom({ type: "text" as const }, { type: "json_object" as const }),
      fc.record({
        name: identifier,
        schema: jsonSchema,
        strict: optional(fc.boolean()),
        description: optional(text)
      }).map(({ name, schema, strict, description }) => ({
        type: "json_schema" as const,
        name,
        schema,
        ...(strict === undefined ? {} : { strict }),
        ...(description === undefined ? {} : { description })
      }))
    )
  ),
  reasoning: optional(
    fc.constantFrom("none", "minimal", "low", "medium", "high", "xhigh").map((effort) => ({ effort }))
  ),
  stream: fc.boolean(),
  user: optional(text),
  metadata: optional(fc.dictionary(identifier, text, { maxKeys: 3, noNullPrototype: true }))
}, { requiredKeys: ["model", "messages", "stream"] }).map((request) =>
  Object.fromEntries(Object.entries(request).filter(([, value]) => value !== undefined)) as unknown as Request
)

/**
 * Tool-result names are recovered from history on decode; compare without
 * them. JSON-normalized so null-prototype objects from fast-check compare as
 * plain objects.
 */
const withoutResultNames = (request: Request): Request =>
  JSON.parse(JSON.stringify({
    ...request,
    messages: request.messages.map((message) => ({
      ...message,
      content: message.content.map((part) => {
        if (part.type !== "tool-result") return part
        const { name: _name, ...rest } = part
        return rest
      })
    }))
  }))

const roundTrip = (format: typeof OpenAiChatFormat, request: Request): Request => {
  const encoded = format.encodeRequest(request)
  deepStrictEqual(encoded.dropped, [])
  const decoded = format.decodeRequest(JSON.parse(JSON.stringify(encoded.body)), {})
  if (Result.isFailure(decoded)) throw new Error(`decode failed: ${decoded.failure.message}`)
  return decoded.success
}

Deno.test("property: expressible canonical requests survive encodeRequest → decodeRequest", () => {
  fc.assert(
    fc.property(chatRequest, (request) => {
      deepStrictEqual(withoutResultNames(roundTrip(OpenAiChatFormat, request)), withoutResultNames(request))
    }),
    { numRuns: 300 }
  )
})

Deno.test("property: with reasoning history kept, assistant reasoning text survives too", () => {
  const format = makeOpenAiChatFormat({ reasoningHistory: "reasoning_content" })
  const withReasoning = fc.record({ request: chatRequest, reasoning: nonEmptyText }).map(({ request, reasoning }) => ({
    ...request,
    messages: request.messages.map((message): Message =>
      message.role === "assistant"
        ? { ...message, content: [{ type: "reasoning", text: reasoning }, ...message.content] }
        : message
    )
  }))
  fc.assert(
    fc.property(withReasoning, (request) => {
      deepStrictEqual(withoutResultNames(roundTrip(format, request)), withoutResultNames(request))
    }),
    { numRuns: 100 }
  )
})

Deno.test("property: decodeRequest never throws on arbitrary JSON", () => {
  const nearValid = fc.record({
    model: fc.oneof(text, fc.anything()),
    messages: fc.oneof(
      fc.array(
        fc.record({
          role: fc.oneof(
            fc.constantFrom("system", "developer", "user", "assistant", "tool", "function"),
            fc.anything()
          ),
          content: fc.oneof(text, fc.anything(), fc.array(fc.record({ type: fc.string(), text: fc.anything() }))),
          tool_calls: fc.anything(),
          tool_call_id: fc.anything()
        }, { requiredKeys: ["role"] })
      ),
      fc.anything()
    ),
    tools: fc.anything(),
    tool_choice: fc.anything(),
    stop: fc.anything(),
    response_format: fc.anything()
  }, { requiredKeys: [] })
  fc.assert(
    fc.property(fc.oneof(fc.jsonValue(), fc.anything(), nearValid), (body) => {
      const decoded = OpenAiChatFormat.decodeRequest(body, {})
      ok(Result.isSuccess(decoded) || decoded.failure instanceof InvalidRequest)
    }),
    { numRuns: 1000 }
  )
})

Deno.test("property: the stream decoder and decodeResponse never throw on arbitrary data", () => {
  fc.assert(
    fc.property(fc.array(fc.oneof(fc.jsonValue().map((value) => JSON.stringify(value) ?? ""), fc.string())), (data) => {
      runDecoder(OpenAiChatFormat.streamDecoder, data.map((item) => sse(item)))
    }),
    { numRuns: 300 }
  )
  fc.assert(fc.property(fc.jsonValue(), (body) => void OpenAiChatFormat.decodeResponse(body)), { numRuns: 300 })
})
