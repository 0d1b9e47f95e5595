import { Result } from "effect"
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import type { Part } from "../../../../src/canonical/Content.ts"
import type { StreamPart } from "../../../../src/canonical/StreamPart.ts"
import type { Message, Request, Tool } from "../../../../src/canonical/Request.ts"
import { UpstreamFailed } from "../../../../src/errors/GatewayError.ts"
import { GeminiFormat } from "../../../../src/formats/gemini/generate-content/Format.ts"
import { runDecoder, runEncoder, sse } from "../../../support/StreamSteps.ts"

/** Drops `undefined` members, as the wire does. */
const plain = (value: unknown): unknown => JSON.parse(JSON.stringify(value))

const key = fc.stringMatching(/^k[a-z]{0,3}$/)
const jsonObject = fc.dictionary(key, fc.oneof(fc.integer(), fc.string(), fc.boolean(), fc.constant(null)), {
  maxKeys: 3
})
const base64 = fc.base64String({ maxLength: 16 })
const name = fc.stringMatching(/^[a-z][a-z0-9_]{0,8}$/)
const number = fc.double({ noNaN: true, noDefaultInfinity: true })

const userPart: fc.Arbitrary<Part> = fc.oneof(
  fc.string().map((text) => ({ type: "text" as const, text })),
  base64.map((data) => ({ type: "image" as const, source: { kind: "base64" as const, mediaType: "image/png", data } })),
  name.map((file) => ({
    type: "image" as const,
    source: { kind: "url" as const, url: `https://example.com/${file}.png` }
  })),
  fc.record({ data: base64, format: fc.constantFrom("wav", "mp3", "ogg", "flac") }).map((audio) => ({
    type: "audio" as const,
    ...audio
  })),
  base64.map((data) => ({
    type: "file" as const,
    source: { kind: "base64" as const, mediaType: "application/pdf", data }
  }))
)

/** An assistant item: text, signed reasoning or a tool call, optionally carrying a signature (signature-only part before it). */
type Item =
  | { readonly kind: "text"; readonly text: string; readonly signature: string | null }
  | { readonly kind: "reasoning"; readonly text: string; readonly signature: string }
  | { readonly kind: "call"; readonly name: string; readonly args: object; readonly signature: string | null }

const item: fc.Arbitrary<Item> = fc.oneof(
  fc.record({ kind: fc.constant("text" as const), text: fc.string(), signature: fc.option(base64) }),
  fc.record({ kind: fc.constant("reasoning" as const), text: fc.string({ minLength: 1 }), signature: base64 }),
  fc.record({ kind: fc.constant("call" as const), name, args: jsonObject, signature: fc.option(base64) })
)

const turn = fc.record({
  user: fc.array(userPart, { minLength: 1, maxLength: 3 }),
  // always answered: two adjacent user turns would be merged into one on the wire
  assistant: fc.array(item, { minLength: 1, maxLength: 4 }),
  results: fc.array(jsonObject, { minLength: 4, maxLength: 4 })
})

const buildMessages = (
  system: ReadonlyArray<string> | null,
  turns: ReadonlyArray<{ user: Part[]; assistant: Item[]; results: object[] }>
): ReadonlyArray<Message> => {
  const messages: Array<Message> = []
  if (system !== null) messages.push({ role: "system", content: system.map((text) => ({ type: "text", text })) })
  let callNumber = 0
  for (const { user, assistant, results } of turns) {
    messages.push({ role: "user", content: user })
    const content: Array<Part> = []
    const calls: Array<{ callId: string; name: string }> = []
    for (const entry of assistant) {
      if (entry.kind !== "reasoning" && entry.signature !== null) {
        content.push({ type: "reasoning", text: "", signature: entry.signature, origin: "gemini" })
      }
      if (entry.kind === "text") content.push({ type: "text", text: entry.text })
      if (entry.kind === "reasoning") {
        content.push({ type: "reasoning", text: entry.text, signature: entry.signature, origin: "gemini" })
      }
      if (entry.kind === "call") {
        const callId = `call_${callNumber++}`
        calls.push({ callId, name: entry.name })
        content.push({ type: "tool-call", callId, name: entry.name, arguments: JSON.stringify(entry.args) })
      }
    }
    messages.push({ role: "assistant", content })
    if (calls.length > 0) {
      messages.push({
        role: "tool",
        content: calls.map((call, index) => ({
          type: "tool-result",
          callId: call.callId,
          name: call.name,
          content: [{ type: "text", text: JSON.stringify(results[index % results.length]) }]
        }))
      })
    }
  }
  return messages
}

const functionTool: fc.Arbitrary<Tool> = fc.record({
  name,
  description: fc.option(fc.string()),
  properties: fc.dictionary(key, fc.constantFrom({ type: "string" }, { type: "integer" }), { maxKeys: 3 })
}).map(({ name, description, properties }) => ({
  type: "function",
  name,
  ...(description !== null ? { description } : {}),
  parameters: { type: "object", properties }
}))

const builtinTool: fc.Arbitrary<Tool> = fc.constantFrom("googleSearch", "codeExecution", "urlContext").map((
  builtin
) => ({ type: "builtin", format: "gemini", definition: { [builtin]: {} } }))

/** Canonical requests restricted to what generate-content expresses (see GeminiParts.ts for the signature rules). */
const expressibleRequest: fc.Arbitrary<Request> = fc.record({
  model: fc.stringMatching(/^[a-z0-9.-]{1,16}$/),
  stream: fc.boolean(),
  system: fc.option(fc.array(fc.string(), { minLength: 1, maxLength: 2 })),
  turns: fc.array(turn, { minLength: 1, maxLength: 4 }),
  functionTools: fc.array(functionTool, { maxLength: 3 }),
  builtinTools: fc.array(builtinTool, { maxLength: 2 }),
  toolChoice: fc.option(fc.oneof(
    fc.constantFrom({ type: "auto" as const }, { type: "none" as const }, { type: "required" as const }),
    name.map((tool) => ({ type: "tool" as const, name: tool }))
  )),
  maxOutputTokens: fc.option(fc.nat()),
  temperature: fc.option(number),
  topP: fc.option(number),
  topK: fc.option(fc.nat()),
  stopSequences: fc.option(fc.array(fc.string(), { maxLength: 3 })),
  seed: fc.option(fc.integer()),
  presencePenalty: fc.option(number),
  frequencyPenalty: fc.option(number),
  responseFormat: fc.option(fc.oneof(
    fc.constantFrom({ type: "text" as const }, { type: "json_object" as const }),
    jsonObject.map((example) => ({
      type: "json_schema" as const,
      name: "response",
      schema: { type: "object", examples: [example] }
    }))
  )),
  reasoning: fc.option(fc.oneof(
    fc.constant({ enabled: false }),
    fc.constant({ enabled: true, includeThoughts: true }),
    fc.constant({ includeThoughts: true }),
    fc.integer({ min: 1, max: 32768 }).map((budgetTokens) => ({ enabled: true, budgetTokens, includeThoughts: true }))
  ))
}).map(({ system, turns, functionTools, builtinTools, ...rest }) => {
  const tools = [...functionTools, ...builtinTools]
  const request: Record<string, unknown> = {
    model: rest.model,
    stream: rest.stream,
    messages: buildMessages(system, turns),
    tools: tools.length > 0 ? tools : null
  }
  for (const [field, value] of Object.entries(rest)) if (value !== null) request[field] = value
  // A budget is expressed one to one only under the cap (above it, it is fitted under the cap).
  const budget = (rest.reasoning as { budgetTokens?: number } | null)?.budgetTokens
  if (budget !== undefined && rest.maxOutputTokens !== null && rest.maxOutputTokens <= budget) {
    request.maxOutputTokens = budget + 1
  }
  return Object.fromEntries(Object.entries(request).filter(([, value]) => value !== null)) as unknown as Request
})

Deno.test("property: expressible canonical requests survive encodeRequest → decodeRequest", () => {
  fc.assert(
    fc.property(expressibleRequest, (request) => {
      const encoded = GeminiFormat.encodeRequest(request)
      deepStrictEqual(encoded.dropped, [])
      strictEqual("model" in encoded.body, false)
      const decoded = GeminiFormat.decodeRequest(plain(encoded.body), { model: request.model, stream: request.stream })
      if (Result.isFailure(decoded)) throw new Error(`decode failed: ${decoded.failure.message}`)
      deepStrictEqual(plain(decoded.success), plain(request))
    }),
    { numRuns: 300 }
  )
})

const contentsLike = fc.record({
  contents: fc.array(fc.record({
    role: fc.oneof(fc.constantFrom("user", "model", "function"), fc.jsonValue()),
    parts: fc.array(fc.oneof(
      fc.jsonValue(),
      fc.record({ text: fc.jsonValue(), thought: fc.jsonValue(), thoughtSignature: fc.jsonValue() }, {
        requiredKeys: []
      }),
      fc.record({ functionCall: fc.record({ name: fc.jsonValue(), args: fc.jsonValue() }, { requiredKeys: [] }) }),
      fc.record({
        functionResponse: fc.record({ name: fc.jsonValue(), response: fc.jsonValue(), parts: fc.jsonValue() })
      }),
      fc.record({ inline_data: fc.record({ mime_type: fc.jsonValue(), data: fc.jsonValue() }, { requiredKeys: [] }) })
    ))
  })),
  generationConfig: fc.jsonValue(),
  tools: fc.oneof(fc.jsonValue(), fc.array(fc.record({ functionDeclarations: fc.jsonValue() }))),
  toolConfig: fc.jsonValue(),
  system_instruction: fc.jsonValue()
}, { requiredKeys: [] })

Deno.test("property: arbitrary JSON never makes decodeRequest throw; it gives ok or an InvalidRequest", () => {
  fc.assert(
    fc.property(fc.oneof(fc.jsonValue(), contentsLike), fc.option(fc.string()), (body, model) => {
      const decoded = GeminiFormat.decodeRequest(body, { model: model ?? undefined })
      if (Result.isFailure(decoded)) strictEqual(decoded.failure._tag, "InvalidRequest")
    }),
    { numRuns: 1000 }
  )
})

Deno.test("property: arbitrary JSON never makes decodeResponse or the stream decoder throw", () => {
  fc.assert(
    fc.property(fc.jsonValue(), (value) => {
      const response = GeminiFormat.decodeResponse(value)
      if (response instanceof UpstreamFailed) strictEqual(response.kind, "bad-body")
      const decoder = GeminiFormat.streamDecoder
      decoder.step(decoder.initial(), sse(JSON.stringify(value)))
    }),
    { numRuns: 500 }
  )
})

type Block =
  | { readonly kind: "text"; readonly deltas: ReadonlyArray<string> }
  | { readonly kind: "reasoning"; readonly deltas: ReadonlyArray<string>; readonly signature: string }
  | { readonly kind: "signature"; readonly signature: string }
  | { readonly kind: "call"; readonly name: string; readonly args: object }

const deltas = fc.array(fc.string({ minLength: 1 }), { minLength: 1, maxLength: 3 })
const block: fc.Arbitrary<Block> = fc.oneof(
  fc.record({ kind: fc.constant("text" as const), deltas }),
  fc.record({ kind: fc.constant("reasoning" as const), deltas, signature: base64 }),
  fc.record({ kind: fc.constant("signature" as const), signature: base64 }),
  fc.record({ kind: fc.constant("call" as const), name, args: jsonObject })
)

/** Canonical stream parts for blocks (adjacent text blocks merge on the wire, so they are not generated). */
const streamOf = (blocks: ReadonlyArray<Block>, usage: { inputTokens: number; outputTokens: number }) => {
  const kept = blocks.filter((current, index) => !(current.kind === "text" && blocks[index - 1]?.kind === "text"))
  const parts: Array<StreamPart> = [{ _tag: "ResponseStart", id: "resp_p", model: "gemini-x", created: 0 }]
  let calls = 0
  for (const [index, current] of kept.entries()) {
    switch (current.kind) {
      case "text":
        parts.push({ _tag: "BlockStart", index, block: { type: "text" } })
        for (const text of current.deltas) parts.push({ _tag: "TextDelta", index, text })
        break
      case "reasoning":
        parts.push({ _tag: "BlockStart", index, block: { type: "reasoning" } })
        for (const text of current.deltas) parts.push({ _tag: "ReasoningDelta", index, text })
        parts.push({ _tag: "ReasoningSignature", index, signature: current.signature, origin: "gemini" })
        break
      case "signature":
        parts.push({ _tag: "BlockStart", index, block: { type: "reasoning" } })
        parts.push({ _tag: "ReasoningSignature", index, signature: current.signature, origin: "gemini" })
        break
      case "call": {
        const callId = `call_${current.name}_${calls++}`
        parts.push({ _tag: "BlockStart", index, block: { type: "tool-call", callId, name: current.name } })
        parts.push({ _tag: "ToolInputDelta", index, json: JSON.stringify(current.args) })
      }
    }
    parts.push({ _tag: "BlockStop", index })
  }
  const reason = calls > 0 ? "tool-calls" as const : "stop" as const
  parts.push({ _tag: "Finish", reason, rawReason: "STOP", usage })
  return parts
}

Deno.test("property: streamDecoder ∘ streamEncoder is the identity on expressible canonical streams", () => {
  fc.assert(
    fc.property(
      fc.array(block, { maxLength: 6 }),
      fc.record({ inputTokens: fc.nat(), outputTokens: fc.nat() }),
      (blocks, usage) => {
        const parts = streamOf(blocks, usage)
        const events = runEncoder(GeminiFormat.streamEncoder, { id: "resp_p", model: "gemini-x", created: 9 }, parts)
        const decoded = runDecoder(GeminiFormat.streamDecoder, events)
        strictEqual(decoded.complete, true)
        deepStrictEqual(plain(decoded.parts.filter((part) => part._tag !== "UsageUpdate")), plain(parts))
      }
    ),
    { numRuns: 300 }
  )
})
