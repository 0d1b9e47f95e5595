/**
 * Legacy completions (`POST /v1/completions`): requests, `text_completion`
 * answers and streams, shaped after platform.openai.com/docs/api-reference/completions
 * (create example with `gpt-3.5-turbo-instruct`, the completion object and its
 * streamed chunks), plus property tests.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import type { Request } from "../../../../src/canonical/Request.ts"
import type { Response } from "../../../../src/canonical/Response.ts"
import type { StreamPart } from "../../../../src/canonical/StreamPart.ts"
import { InvalidRequest, UpstreamFailed } from "../../../../src/errors/GatewayError.ts"
import { CompletionsFormat } from "../../../../src/formats/openai/completions/Format.ts"
import { runDecoder, runEncoder, sse } from "../../../support/StreamSteps.ts"

const decode = (body: unknown): Request => {
  const decoded = CompletionsFormat.decodeRequest(body, {})
  if (Result.isFailure(decoded)) throw new Error(`expected ok, got ${decoded.failure.message}`)
  return decoded.success
}

const rejectedParam = (body: unknown): string | undefined => {
  const decoded = CompletionsFormat.decodeRequest(body, {})
  if (Result.isSuccess(decoded)) throw new Error("expected an InvalidRequest")
  return decoded.failure.param
}

Deno.test("decodeRequest: the documented example becomes one user message", () => {
  deepStrictEqual(
    decode({
      model: "gpt-3.5-turbo-instruct",
      prompt: "Say this is a test",
      max_tokens: 7,
      temperature: 0,
      top_p: 1,
      stop: "\n",
      stream: false,
      echo: false,
      logprobs: null,
      suffix: null
    }),
    {
      model: "gpt-3.5-turbo-instruct",
      messages: [{ role: "user", content: [{ type: "text", text: "Say this is a test" }] }],
      maxOutputTokens: 7,
      temperature: 0,
      topP: 1,
      stopSequences: ["\n"],
      stream: false
    }
  )
  deepStrictEqual(decode({ model: "m", prompt: ["Only one"], stop: ["a", "b"], n: 1 }).stopSequences, ["a", "b"])
  strictEqual(decode({ model: "m", prompt: "x" }).stream, false)
  strictEqual(Result.isSuccess(CompletionsFormat.decodeRequest({ model: "m", prompt: "x" }, { stream: true })), true)
})

Deno.test("decodeRequest: missing prompt, token prompts and n > 1 are rejected", () => {
  strictEqual(rejectedParam({ model: "m" }), "prompt")
  strictEqual(rejectedParam({ prompt: "x" }), "model")
  strictEqual(rejectedParam({ model: "m", prompt: [] }), "prompt")
  strictEqual(rejectedParam({ model: "m", prompt: [1212, 318] }), "prompt[0]")
  strictEqual(rejectedParam({ model: "m", prompt: "x", n: 0 }), "n")
  strictEqual(rejectedParam({ model: "m", prompt: "x", max_tokens: "ten" }), "max_tokens")
})

Deno.test("encodeRequest: messages flatten into one prompt; what the format lacks is listed", () => {
  const request: Request = {
    model: "gpt-3.5-turbo-instruct",
    messages: [
      { role: "system", content: [{ type: "text", text: "You write haiku." }] },
      {
        role: "user",
        content: [
          { type: "text", text: "About the sea" },
          { type: "image", source: { kind: "url", url: "https://example.com/sea.png" } }
        ]
      },
      { role: "assistant", content: [{ type: "tool-call", callId: "c", name: "f", arguments: "{}" }] }
    ],
    tools: [{ type: "function", name: "f", parameters: {} }],
    maxOutputTokens: 50,
    stopSequences: ["\n\n"],
    reasoning: { effort: "low" },
    stream: true
  }
  const encoded = CompletionsFormat.encodeRequest(request)
  deepStrictEqual(encoded.body, {
    model: "gpt-3.5-turbo-instruct",
    prompt: "You write haiku.\n\nAbout the sea",
    max_tokens: 50,
    stop: ["\n\n"],
    stream: true,
    stream_options: { include_usage: true }
  })
  deepStrictEqual(encoded.dropped, ["tools", "reasoning", "messages.roles", "messages.tool-call", "messages.media"])
})

Deno.test("decodeResponse / encodeResponse: the text_completion object", () => {
  const response = CompletionsFormat.decodeResponse({
    id: "cmpl-uqkvlQyYK7bGYrRHQ0eXlWi7",
    object: "text_completion",
    created: 1589478378,
    model: "gpt-3.5-turbo-instruct",
    system_fingerprint: "fp_44709d6fcb",
    choices: [{ text: "\n\nThis is indeed a test", index: 0, logprobs: null, finish_reason: "length" }],
    usage: { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 }
  })
  deepStrictEqual(response, {
    id: "cmpl-uqkvlQyYK7bGYrRHQ0eXlWi7",
    model: "gpt-3.5-turbo-instruct",
    created: 1589478378,
    content: [{ type: "text", text: "\n\nThis is indeed a test" }],
    finishReason: "length",
    rawFinishReason: "length",
    usage: { inputTokens: 5, outputTokens: 7 }
  })
  const canonical: Response = {
    id: "up",
    model: "claude-x",
    created: 9,
    content: [
      { type: "reasoning", text: "hmm" },
      { type: "text", text: "Hello" },
      { type: "tool-call", callId: "c", name: "f", arguments: "{}" }
    ],
    finishReason: "tool-calls",
    usage: { inputTokens: 3, outputTokens: 4, cachedInputTokens: 1 }
  }
  deepStrictEqual(CompletionsFormat.encodeResponse(canonical, { id: "cmpl-gw", model: "gpt-x", created: 10 }), {
    id: "cmpl-gw",
    object: "text_completion",
    created: 10,
    model: "gpt-x",
    choices: [{ index: 0, text: "Hello", logprobs: null, finish_reason: "stop" }],
    usage: {
      prompt_tokens: 3,
      completion_tokens: 4,
      total_tokens: 7,
      prompt_tokens_details: { cached_tokens: 1 },
      completion_tokens_details: { reasoning_tokens: 0 }
    }
  })
  const finish = (finishReason: Response["finishReason"]) =>
    (CompletionsFormat.encodeResponse({ ...canonical, finishReason }, { id: "", model: "", created: 0 }) as {
      choices: Array<{ finish_reason: string }>
    }).choices[0].finish_reason
  strictEqual(finish("length"), "length")
  strictEqual(finish("content-filter"), "content_filter")
  strictEqual(finish("stop"), "stop")
  const failed = CompletionsFormat.decodeResponse({ error: { message: "overloaded", type: "server_error" } })
  ok(failed instanceof UpstreamFailed)
  strictEqual(failed.kind, "server")
  const bad = CompletionsFormat.decodeResponse({ choices: [{ message: { content: "chat?" } }] })
  ok(bad instanceof UpstreamFailed && bad.kind === "bad-body")
})

const chunk = (text: string, finish_reason: string | null = null) =>
  sse({
    id: "cmpl-7iA7iJjj8V2zOkCGvWF2hAkDWBQZe",
    object: "text_completion",
    created: 1690759702,
    choices: [{ text, index: 0, logprobs: null, finish_reason }],
    model: "gpt-3.5-turbo-instruct"
  })

Deno.test("streamDecoder: text chunks, usage chunk, [DONE]", () => {
  const result = runDecoder(CompletionsFormat.streamDecoder, [
    chunk("This"),
    chunk(" is a test."),
    chunk("", "stop"),
    sse({
      id: "cmpl-7iA7iJjj8V2zOkCGvWF2hAkDWBQZe",
      object: "text_completion",
      created: 1690759702,
      choices: [],
      model: "gpt-3.5-turbo-instruct",
      usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 }
    }),
    sse("[DONE]")
  ])
  const usage = { inputTokens: 5, outputTokens: 5 }
  strictEqual(result.complete, true)
  deepStrictEqual(result.parts, [
    {
      _tag: "ResponseStart",
      id: "cmpl-7iA7iJjj8V2zOkCGvWF2hAkDWBQZe",
      model: "gpt-3.5-turbo-instruct",
      created: 1690759702
    },
    { _tag: "BlockStart", index: 0, block: { type: "text" } },
    { _tag: "TextDelta", index: 0, text: "This" },
    { _tag: "TextDelta", index: 0, text: " is a test." },
    { _tag: "BlockStop", index: 0 },
    { _tag: "UsageUpdate", usage, final: true },
    { _tag: "Finish", reason: "stop", rawReason: "stop", usage }
  ])
})

Deno.test("streamDecoder: in-band error and a stream cut before [DONE]", () => {
  const failed = runDecoder(CompletionsFormat.streamDecoder, [
    chunk("This"),
    sse({ error: { message: "Rate limit reached", type: "requests", code: "rate_limit_exceeded" } })
  ])
  strictEqual(failed.failure?.kind, "throttled")
  const cut = runDecoder(CompletionsFormat.streamDecoder, [chunk("This"), chunk(" is")])
  strictEqual(cut.complete, false)
  strictEqual(cut.parts.some((part) => part._tag === "Finish"), false)
})

const parts: ReadonlyArray<StreamPart> = [
  { _tag: "ResponseStart", id: "up", model: "up-model", created: 1 },
  { _tag: "BlockStart", index: 0, block: { type: "reasoning" } },
  { _tag: "ReasoningDelta", index: 0, text: "hidden" },
  { _tag: "BlockStop", index: 0 },
  { _tag: "BlockStart", index: 1, block: { type: "text" } },
  { _tag: "TextDelta", index: 1, text: "Hello" },
  { _tag: "TextDelta", index: 1, text: " world" },
  { _tag: "BlockStop", index: 1 },
  { _tag: "Finish", reason: "length", usage: { inputTokens: 2, outputTokens: 3 } }
]

Deno.test("streamEncoder: text chunks, finish, usage, [DONE]; failure without [DONE]", () => {
  const meta = { id: "cmpl-gw", model: "gpt-3.5-turbo-instruct", created: 1690759702, includeUsage: true }
  const payloads = runEncoder(CompletionsFormat.streamEncoder, meta, parts)
    .map((event) => (event.data === "[DONE]" ? "[DONE]" : JSON.parse(event.data)))
  const envelope = { id: "cmpl-gw", object: "text_completion", created: 1690759702, model: "gpt-3.5-turbo-instruct" }
  const textChunk = (text: string, finish_reason: string | null = null) => ({
    ...envelope,
    choices: [{ index: 0, text, logprobs: null, finish_reason }]
  })
  deepStrictEqual(payloads, [
    textChunk("Hello"),
    textChunk(" world"),
    textChunk("", "length"),
    {
      ...envelope,
      choices: [],
      usage: {
        prompt_tokens: 2,
        completion_tokens: 3,
        total_tokens: 5,
        prompt_tokens_details: { cached_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0 }
      }
    },
    "[DONE]"
  ])
  const failed = runEncoder(CompletionsFormat.streamEncoder, meta, parts.slice(0, 6), {
    status: 502,
    type: "platform_api_error",
    code: "bad_response",
    message: "Upstream broke",
    param: ""
  })
  strictEqual(failed.some((event) => event.data === "[DONE]"), false)
  deepStrictEqual(JSON.parse(failed[failed.length - 1].data).error.message, "Upstream broke")
})

Deno.test("classifyError: statuses and the quota-exhausted error", () => {
  const body = (type: string, code: string | null) =>
    JSON.stringify({ error: { message: "m", type, param: null, code } })
  strictEqual(
    CompletionsFormat.classifyError(401, body("invalid_request_error", "invalid_api_key")).kind,
    "unauthorized"
  )
  strictEqual(CompletionsFormat.classifyError(403, "").kind, "unauthorized")
  strictEqual(CompletionsFormat.classifyError(429, body("requests", "rate_limit_exceeded")).kind, "throttled")
  strictEqual(CompletionsFormat.classifyError(429, body("insufficient_quota", "insufficient_quota")).kind, "quota")
  for (const status of [400, 404, 413, 422]) strictEqual(CompletionsFormat.classifyError(status, "").kind, "rejected")
  strictEqual(CompletionsFormat.classifyError(502, "").kind, "server")
})

/** Requests the format expresses: one user message with one text part, and its sampling fields. */
const completionsRequest: fc.Arbitrary<Request> = fc.record({
  model: fc.string({ minLength: 1, maxLength: 10 }),
  prompt: fc.string({ maxLength: 40 }),
  maxOutputTokens: fc.option(fc.integer({ min: 1, max: 4096 }), { nil: undefined }),
  temperature: fc.option(fc.integer({ min: 0, max: 200 }).map((value) => value / 100), { nil: undefined }),
  topP: fc.option(fc.integer({ min: 0, max: 100 }).map((value) => value / 100), { nil: undefined }),
  stopSequences: fc.option(fc.array(fc.string({ minLength: 1, maxLength: 5 }), { maxLength: 4 }), { nil: undefined }),
  seed: fc.option(fc.integer(), { nil: undefined }),
  presencePenalty: fc.option(fc.integer({ min: -200, max: 200 }).map((value) => value / 100), { nil: undefined }),
  frequencyPenalty: fc.option(fc.integer({ min: -200, max: 200 }).map((value) => value / 100), { nil: undefined }),
  user: fc.option(fc.string({ maxLength: 10 }), { nil: undefined }),
  stream: fc.boolean()
}).map(({ prompt, ...rest }) =>
  JSON.parse(JSON.stringify({ ...rest, messages: [{ role: "user", content: [{ type: "text", text: prompt }] }] }))
)

Deno.test("property: expressible canonical requests survive encodeRequest → decodeRequest", () => {
  fc.assert(
    fc.property(completionsRequest, (request) => {
      const encoded = CompletionsFormat.encodeRequest(request)
      deepStrictEqual(encoded.dropped, [])
      const decoded = CompletionsFormat.decodeRequest(JSON.parse(JSON.stringify(encoded.body)), {})
      ok(Result.isSuccess(decoded))
      deepStrictEqual(decoded.success, request)
    }),
    { numRuns: 300 }
  )
})

Deno.test("property: decodeRequest never throws on arbitrary JSON", () => {
  const nearValid = fc.record({
    model: fc.oneof(fc.string(), fc.anything()),
    prompt: fc.oneof(fc.string(), fc.array(fc.string()), fc.anything()),
    n: fc.anything(),
    stop: fc.anything()
  }, { requiredKeys: [] })
  fc.assert(
    fc.property(fc.oneof(fc.jsonValue(), fc.anything(), nearValid), (body) => {
      const decoded = CompletionsFormat.decodeRequest(body, {})
      ok(Result.isSuccess(decoded) || decoded.failure instanceof InvalidRequest)
    }),
    { numRuns: 1000 }
  )
})

Deno.test("decodeRequest: a batch of prompts is left to a completions upstream, its hold covering every prompt", () => {
  const decoded = CompletionsFormat.decodeRequest({ model: "m", prompt: ["one", "two", "three"], max_tokens: 5 }, {})
  if (Result.isFailure(decoded)) throw new Error(decoded.failure.message)
  deepStrictEqual(decoded.success.messages, [{
    role: "user",
    content: [{ type: "text", text: "one" }, { type: "text", text: "two" }, { type: "text", text: "three" }]
  }])
  strictEqual(decoded.success.maxOutputTokens, 5)
  strictEqual(decoded.success.choices, 3)
  deepStrictEqual(decoded.success.untranslatable?.map((note) => note.param), ["prompt"])
  const twice = CompletionsFormat.decodeRequest({ model: "m", prompt: ["one", "two"], n: 2 }, {})
  strictEqual(Result.isSuccess(twice) && twice.success.choices, 4)
  deepStrictEqual(Result.isSuccess(twice) && twice.success.untranslatable?.map((note) => note.param), ["prompt", "n"])
  const single = CompletionsFormat.decodeRequest({ model: "m", prompt: ["one"], max_tokens: 5 }, {})
  strictEqual(Result.isSuccess(single) && single.success.untranslatable, undefined)
  strictEqual(Result.isSuccess(single) && single.success.maxOutputTokens, 5)
  strictEqual(Result.isSuccess(single) && single.success.choices, undefined)
})
