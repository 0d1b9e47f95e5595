/**
 * The official `@google/genai` client against a tiny server that answers with
 * this format's encoders: what a Gemini SDK user sees through Sluice.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict"
import { Sse } from "effect/encoding"
import { ApiError, FunctionCallingConfigMode, GoogleGenAI } from "@google/genai"
import type { StreamPart } from "../../../../src/canonical/StreamPart.ts"
import type { Response } from "../../../../src/canonical/Response.ts"
import type { Problem } from "../../../../src/formats/Format.ts"
import { GeminiFormat } from "../../../../src/formats/gemini/generate-content/Format.ts"
import { runEncoder } from "../../../support/StreamSteps.ts"

const meta = { id: "resp_sdk", model: "gemini-2.5-flash", created: 1_700_000_000 }
const usage = { inputTokens: 5, outputTokens: 9, reasoningTokens: 4 }

const streamParts: ReadonlyArray<StreamPart> = [
  { _tag: "ResponseStart", id: "x", model: "y", created: 0 },
  { _tag: "BlockStart", index: 0, block: { type: "reasoning" } },
  { _tag: "ReasoningDelta", index: 0, text: "Thinking" },
  { _tag: "BlockStop", index: 0 },
  { _tag: "BlockStart", index: 1, block: { type: "text" } },
  { _tag: "TextDelta", index: 1, text: "Hello" },
  { _tag: "TextDelta", index: 1, text: ", world" },
  { _tag: "BlockStop", index: 1 },
  { _tag: "BlockStart", index: 2, block: { type: "tool-call", callId: "c1", name: "get_weather" } },
  { _tag: "ToolInputDelta", index: 2, json: '{"city":"Paris"}' },
  { _tag: "BlockStop", index: 2 },
  { _tag: "Finish", reason: "tool-calls", usage }
]

const answer: Response = {
  id: "u",
  model: "m",
  created: 0,
  content: [
    { type: "text", text: "Hi there" },
    { type: "reasoning", text: "", signature: "c2ln" },
    { type: "tool-call", callId: "c9", name: "lookup", arguments: '{"q":"x"}' }
  ],
  finishReason: "tool-calls",
  usage
}

const sseBody = (parts: ReadonlyArray<StreamPart>, problem?: Problem): string =>
  runEncoder(GeminiFormat.streamEncoder, meta, parts, problem).map((event) => Sse.encoder.write(event)).join("")

const withServer = async (
  handler: (request: Request, body: unknown) => globalThis.Response,
  run: (client: GoogleGenAI) => Promise<void>
) => {
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (request) => {
    const body = request.method === "POST" ? await request.json() : undefined
    return handler(request, body)
  })
  try {
    const client = new GoogleGenAI({ apiKey: "k", httpOptions: { baseUrl: `http://127.0.0.1:${server.addr.port}` } })
    await run(client)
  } finally {
    await server.shutdown()
  }
}

const sseResponse = (text: string) =>
  new globalThis.Response(text, { headers: { "content-type": "text/event-stream" } })

Deno.test("@google/genai generateContentStream reads the stream encoder's chunks", async () => {
  let seen: { url: string; body: unknown } | undefined
  await withServer((request, body) => {
    seen = { url: request.url, body }
    return sseResponse(sseBody(streamParts))
  }, async (client) => {
    const stream = await client.models.generateContentStream({
      model: "gemini-2.5-flash",
      contents: "Weather in Paris?",
      config: {
        systemInstruction: "Be brief.",
        temperature: 0.3,
        maxOutputTokens: 100,
        stopSequences: ["END"],
        thinkingConfig: { thinkingBudget: 1024, includeThoughts: true },
        tools: [{
          functionDeclarations: [{
            name: "get_weather",
            parametersJsonSchema: { type: "object", properties: { city: { type: "string" } } }
          }]
        }],
        toolConfig: { functionCallingConfig: { mode: FunctionCallingConfigMode.ANY } }
      }
    })
    const chunks = []
    for await (const chunk of stream) chunks.push(chunk)
    const parts = chunks.flatMap((chunk) => chunk.candidates?.[0]?.content?.parts ?? [])
    strictEqual(parts.filter((part) => !part.thought).map((part) => part.text ?? "").join(""), "Hello, world")
    const thoughts = parts.filter((part) => part.thought)
    strictEqual(thoughts[0]?.text, "Thinking")
    const calls = chunks.flatMap((chunk) => chunk.functionCalls ?? [])
    deepStrictEqual(calls, [{ name: "get_weather", args: { city: "Paris" }, id: "c1" }])
    const last = chunks.at(-1)!
    strictEqual(last.candidates?.[0]?.finishReason, "STOP")
    strictEqual(last.usageMetadata?.thoughtsTokenCount, 4)
    strictEqual(last.usageMetadata?.candidatesTokenCount, 5)
    strictEqual(last.responseId, "resp_sdk")
  })
  // what the SDK sent decodes into the canonical request
  ok(seen !== undefined)
  // @google/genai 3.1.0 defaults to API version v1 (GOOGLE_AI_API_DEFAULT_VERSION), not v1beta
  const url = new URL(seen.url)
  strictEqual(`${url.pathname}${url.search}`, "/v1/models/gemini-2.5-flash:streamGenerateContent?alt=sse")
  const decoded = GeminiFormat.decodeRequest(seen.body, { model: "gemini-2.5-flash", stream: true })
  ok(Result.isSuccess(decoded))
  const request = decoded.success
  deepStrictEqual(request.messages, [
    { role: "system", content: [{ type: "text", text: "Be brief." }] },
    { role: "user", content: [{ type: "text", text: "Weather in Paris?" }] }
  ])
  strictEqual(request.temperature, 0.3)
  strictEqual(request.maxOutputTokens, 100)
  deepStrictEqual(request.stopSequences, ["END"])
  deepStrictEqual(request.reasoning, { enabled: true, budgetTokens: 1024, includeThoughts: true })
  deepStrictEqual(request.toolChoice, { type: "required" })
  strictEqual(request.tools?.[0]?.type === "function" && request.tools[0].name, "get_weather")
})

Deno.test("@google/genai generateContent parses encodeResponse output", async () => {
  await withServer(
    () => globalThis.Response.json(GeminiFormat.encodeResponse(answer, meta)),
    async (client) => {
      const response = await client.models.generateContent({ model: "gemini-2.5-flash", contents: "hi" })
      strictEqual(response.candidates?.[0]?.content?.parts?.[0]?.text, "Hi there")
      deepStrictEqual(response.functionCalls, [{ name: "lookup", args: { q: "x" }, id: "c9" }])
      strictEqual(response.candidates?.[0]?.content?.parts?.[1]?.thoughtSignature, "c2ln")
      strictEqual(response.candidates?.[0]?.finishReason, "STOP")
      strictEqual(response.usageMetadata?.totalTokenCount, 14)
      strictEqual(response.modelVersion, "gemini-2.5-flash")
    }
  )
})

Deno.test("@google/genai raises an ApiError for an in-band stream error and for an error body", async () => {
  const problem: Problem = {
    status: 429,
    type: "platform_api_error",
    code: "too_many_requests",
    message: "Too many requests",
    param: ""
  }
  await withServer(() => sseResponse(sseBody(streamParts.slice(0, 6), problem)), async (client) => {
    const stream = await client.models.generateContentStream({ model: "gemini-2.5-flash", contents: "hi" })
    await rejects(async () => {
      for await (const _chunk of stream) {
        // drain
      }
    }, (error: unknown) => error instanceof ApiError && error.status === 429)
  })
  await withServer(
    () =>
      globalThis.Response.json(GeminiFormat.encodeError({ ...problem, status: 400, code: "invalid_request" }), {
        status: 400
      }),
    async (client) => {
      await rejects(
        client.models.generateContent({ model: "gemini-2.5-flash", contents: "hi" }),
        (error: unknown) => error instanceof ApiError && error.status === 400
      )
    }
  )
})
