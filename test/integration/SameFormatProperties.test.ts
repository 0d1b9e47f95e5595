/**
 * Issue 14's property: for each format, an arbitrary valid request (streamed
 * or not, with or without a sampling temperature) carrying fields Sluice does
 * not model (at the top level, on a message, on a content part; any JSON
 * value, strings with NUL and lone surrogates), sent to a channel of that
 * same format, reaches the upstream with those fields byte-for-byte equal
 * (compared as the JSON text each side serialises).
 * Sent as raw HTTP, since the SDKs' types do not let unknown fields through.
 */
import { Result } from "effect"
import fc from "fast-check"
import { strictEqual } from "node:assert/strict"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { startGateway, type TestGateway } from "../support/Gateway.ts"

const KEY = "sk-test-alice-0001"

type Json = Record<string, unknown>

const config = (emulatorUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: {
        "m-openai": { input: 1, output: 2 },
        "m-anthropic": { input: 1, output: 2 },
        "gemini-3-pro": { input: 1, output: 2 }
      },
      channels: [
        {
          name: "openai",
          type: "openai",
          base_url: emulatorUrl,
          keys: ["sk-test-up"],
          models: ["m-openai"],
          settings: { responses_api: true }
        },
        { name: "anthropic", type: "anthropic", base_url: emulatorUrl, keys: ["sk-test-up"], models: ["m-anthropic"] },
        { name: "gemini", type: "gemini", base_url: emulatorUrl, keys: ["sk-test-up"], models: ["gemini-3-pro"] }
      ],
      users: [{ username: "alice", group: "default", quota: 1_000_000_000, tokens: [{ name: "main", key: KEY }] }]
    }),
    "properties.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

/** Fields no format models: `x_`-prefixed names (never a real field), any JSON value, hostile strings included. */
const unmodeled = fc.dictionary(
  fc.string({ unit: "binary", maxLength: 6 }).map((name) => `x_${name}`),
  fc.jsonValue({ maxDepth: 3, stringUnit: "binary" }),
  { maxKeys: 3 }
)

const text = fc.string({ unit: fc.constantFrom(..."abcdefghij klmnop"), minLength: 1, maxLength: 30 })
  .filter((value) => value.trim() !== "")

/** What varies in the modeled part of a request. */
interface Shape {
  readonly stream: boolean
  readonly temperature: number | undefined
}

const shape: fc.Arbitrary<Shape> = fc.record({
  stream: fc.boolean(),
  temperature: fc.option(fc.integer({ min: 0, max: 10 }).map((tenths) => tenths / 10), { nil: undefined })
})

/** The modeled fields of `shape` in the chat, completions, Responses and messages formats. */
const modeled = (shape: Shape): Json => ({
  ...(shape.stream ? { stream: true } : {}),
  ...(shape.temperature === undefined ? {} : { temperature: shape.temperature })
})

interface Case {
  readonly path: (shape: Shape) => string
  readonly headers: Record<string, string>
  /** The body with the extra fields at the top, on the first message and on its first part. */
  readonly body: (text: string, top: Json, message: Json, part: Json, shape: Shape) => Json
  /** The first message and its first part in a body as the upstream received it. */
  readonly firstMessage: (body: Json) => Json
  readonly firstPart: ((message: Json) => Json) | undefined
}

const bearer = { authorization: `Bearer ${KEY}`, "content-type": "application/json" }
const first = (value: unknown): Json => (Array.isArray(value) ? value[0] : {}) as Json

const cases: Record<string, Case> = {
  "chat completions → openai": {
    path: () => "/v1/chat/completions",
    headers: bearer,
    body: (text, top, message, part, shape) => ({
      ...top,
      ...modeled(shape),
      model: "m-openai",
      messages: [{ ...message, role: "user", content: [{ ...part, type: "text", text }] }]
    }),
    firstMessage: (body) => first(body.messages),
    firstPart: (message) => first(message.content)
  },
  "legacy completions → openai": {
    path: () => "/v1/completions",
    headers: bearer,
    body: (text, top, _message, _part, shape) => ({
      ...top,
      ...modeled(shape),
      model: "m-openai",
      prompt: text,
      max_tokens: 8
    }),
    firstMessage: () => ({}),
    firstPart: undefined
  },
  "responses → openai (responses_api)": {
    path: () => "/v1/responses",
    headers: bearer,
    body: (text, top, message, part, shape) => ({
      ...top,
      ...modeled(shape),
      model: "m-openai",
      input: [{ ...message, role: "user", content: [{ ...part, type: "input_text", text }] }]
    }),
    firstMessage: (body) => first(body.input),
    firstPart: (message) => first(message.content)
  },
  "messages → anthropic": {
    path: () => "/v1/messages",
    headers: { "x-api-key": KEY, "anthropic-version": "2023-06-01", "content-type": "application/json" },
    body: (text, top, message, part, shape) => ({
      ...top,
      ...modeled(shape),
      model: "m-anthropic",
      max_tokens: 64,
      messages: [{ ...message, role: "user", content: [{ ...part, type: "text", text }] }]
    }),
    firstMessage: (body) => first(body.messages),
    firstPart: (message) => first(message.content)
  },
  "generate-content → gemini": {
    path: (shape) =>
      shape.stream
        ? "/v1beta/models/gemini-3-pro:streamGenerateContent?alt=sse"
        : "/v1beta/models/gemini-3-pro:generateContent",
    headers: { "x-goog-api-key": KEY, "content-type": "application/json" },
    body: (text, top, message, part, shape) => ({
      ...top,
      ...(shape.temperature === undefined ? {} : { generationConfig: { temperature: shape.temperature } }),
      contents: [{ ...message, role: "user", parts: [{ ...part, text }] }]
    }),
    firstMessage: (body) => first(body.contents),
    firstPart: (message) => first(message.parts)
  }
}

/** Each field of `extra` holds, in `received`, the same JSON text. */
const sameFields = (received: Json, extra: Json, where: string) => {
  for (const [name, value] of Object.entries(extra)) {
    strictEqual(JSON.stringify(received[name]), JSON.stringify(value), `${where}.${name}`)
  }
}

const check = async (gateway: TestGateway, item: Case) => {
  await fc.assert(
    fc.asyncProperty(text, unmodeled, unmodeled, unmodeled, shape, async (prompt, top, message, part, shape) => {
      const before = gateway.emulator.requests.length
      const response = await fetch(gateway.url + item.path(shape), {
        method: "POST",
        headers: item.headers,
        body: JSON.stringify(item.body(prompt, top, message, part, shape))
      })
      const answer = await response.text()
      strictEqual(response.status, 200, answer)
      strictEqual(gateway.emulator.requests.length, before + 1)
      const received = gateway.emulator.requests.at(-1)!.body as Json
      sameFields(received, top, "body")
      const receivedMessage = item.firstMessage(received)
      if (item.firstPart !== undefined) {
        sameFields(receivedMessage, message, "message")
        sameFields(item.firstPart(receivedMessage), part, "part")
      }
    }),
    { numRuns: 25 }
  )
}

Deno.test("property: fields Sluice does not model reach a same-format upstream byte for byte", async (t) => {
  const gateway = await startGateway({ config })
  try {
    for (const [name, item] of Object.entries(cases)) {
      await t.step(name, () => check(gateway, item))
    }
  } finally {
    await gateway.close()
  }
})
