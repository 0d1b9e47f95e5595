/**
 * Embeddings end to end through the official SDKs: `openai`
 * `embeddings.create` (default Base64, `float`, several inputs, `dimensions`)
 * and `@google/genai` `models.embedContent` (one and several contents), on
 * openai and gemini channels, the crossings included; every vector equals the
 * emulator's `embeddingVector` for the upstream model and input. Billing is
 * checked against `/api/usage/token`: ceil(ratio × input tokens × input price)
 * from the upstream's usage, or the prompt estimate where the upstream
 * reports none (gemini). Errors (missing input, unknown model, an
 * anthropic-only model) in each route's envelope cost nothing; 2,048 inputs
 * (OpenAI's limit) pass on both channel types and one more is a 400 naming
 * `input`.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { GoogleGenAI } from "@google/genai"
import OpenAI from "openai"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { defaultDimensions, embeddingVector } from "../../emulator/Embeddings.ts"
import { startGateway, type TestGateway } from "../support/Gateway.ts"

const KEY = "sk-test-embed-0001"
const OPENAI_MODEL = "text-embedding-3-small"
const GEMINI_MODEL = "gemini-embedding-001"
/** Served by a gemini channel under another name, so the upstream model is visible in the vectors. */
const MAPPED_MODEL = "embed-mapped"
const MAPPED_UPSTREAM = "text-embedding-004"

/** Ratio and input prices in thousandths (exact integer arithmetic in the test). */
const RATIO_MILLI = 1_500n
const PRICE_MILLI: Record<string, bigint> = {
  [OPENAI_MODEL]: 2_500n,
  [GEMINI_MODEL]: 1_250n,
  [MAPPED_MODEL]: 1_250n
}

const config = (emulatorUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1.5 } },
      models: {
        [OPENAI_MODEL]: { input: 2.5 },
        [GEMINI_MODEL]: { input: 1.25 },
        [MAPPED_MODEL]: { input: 1.25 },
        "claude-only": { input: 3, output: 15 },
        "gpt-4o": { input: 2.5, output: 10 }
      },
      channels: [
        {
          name: "openai",
          type: "openai",
          base_url: emulatorUrl,
          keys: ["sk-test-up"],
          models: [OPENAI_MODEL, "gpt-4o"]
        },
        {
          name: "gemini",
          type: "gemini",
          base_url: emulatorUrl,
          keys: ["sk-test-up"],
          models: [GEMINI_MODEL, MAPPED_MODEL],
          model_mapping: { [MAPPED_MODEL]: MAPPED_UPSTREAM }
        },
        { name: "anthropic", type: "anthropic", base_url: emulatorUrl, keys: ["sk-test-up"], models: ["claude-only"] }
      ],
      users: [{ username: "alice", group: "default", quota: 100_000_000, tokens: [{ name: "main", key: KEY }] }]
    }),
    "embeddings.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

/** Quota units of `tokens` input tokens of `model`: ceil(ratio × tokens × input price). */
const costOf = (model: string, tokens: number): number =>
  Number((RATIO_MILLI * BigInt(tokens) * PRICE_MILLI[model] + 999_999n) / 1_000_000n)

/** The gateway's prompt estimate (the text routes' rule): ceil(characters / 4) + 3 per input. */
const estimate = (texts: ReadonlyArray<string>): number =>
  Math.ceil(texts.reduce((sum, text) => sum + text.length, 0) / 4) + 3 * texts.length

/** What the openai emulator reports: max(1, ceil(characters / 4)) per text. */
const openAiReported = (texts: ReadonlyArray<string>): number =>
  texts.reduce((sum, text) => sum + Math.max(1, Math.ceil(text.length / 4)), 0)

const totalUsed = async (gateway: TestGateway): Promise<number> => {
  const response = await fetch(`${gateway.url}/api/usage/token`, { headers: { authorization: `Bearer ${KEY}` } })
  const body = await response.json()
  strictEqual(body.success, true)
  return body.data.total_used
}

/** Runs `send` and checks it charged exactly `expected` quota units. */
const charged = async <A>(gateway: TestGateway, expected: number, send: () => Promise<A>): Promise<A> => {
  const before = await totalUsed(gateway)
  const result = await send()
  strictEqual((await totalUsed(gateway)) - before, expected, "quota charged")
  return result
}

const expectedVectors = (upstreamModel: string, texts: ReadonlyArray<string>, dimensions: number) =>
  texts.map((text) => embeddingVector(upstreamModel, text, dimensions))

const post = (gateway: TestGateway, path: string, body: unknown) =>
  fetch(`${gateway.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-goog-api-key": KEY, authorization: `Bearer ${KEY}` },
    body: JSON.stringify(body)
  })

Deno.test("embeddings: openai and @google/genai SDKs on openai and gemini channels, billed, errors", async (t) => {
  const gateway = await startGateway({ config })
  const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
  const genai = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: gateway.url, apiVersion: "v1beta" } })
  const texts = ["the quick brown fox", "jumps over\u0000 the lazy dog", "日本語のテキスト"]
  try {
    await t.step("openai SDK, openai channel, default (Base64 on the wire), several inputs", async () => {
      const answer = await charged(
        gateway,
        costOf(OPENAI_MODEL, openAiReported(texts)),
        () => openai.embeddings.create({ model: OPENAI_MODEL, input: texts })
      )
      strictEqual(answer.object, "list")
      strictEqual(answer.model, OPENAI_MODEL)
      deepStrictEqual(
        answer.data.map((item) => item.embedding),
        expectedVectors(OPENAI_MODEL, texts, defaultDimensions("openai", OPENAI_MODEL))
      )
      deepStrictEqual(answer.data.map((item) => [item.object, item.index]), [
        [
          "embedding",
          0
        ],
        ["embedding", 1],
        ["embedding", 2]
      ])
      strictEqual(answer.usage.prompt_tokens, openAiReported(texts))
      // Passthrough: the caller's body reached the upstream as sent, model and all.
      const sent = gateway.emulator.requests.at(-1)!
      strictEqual(sent.path, "/v1/embeddings")
      strictEqual((sent.body as Record<string, unknown>).encoding_format, "base64")
    })

    await t.step("openai SDK, openai channel, float and dimensions", async () => {
      const answer = await openai.embeddings.create({
        model: OPENAI_MODEL,
        input: "one text",
        encoding_format: "float",
        dimensions: 12
      })
      deepStrictEqual(answer.data.map((item) => item.embedding), expectedVectors(OPENAI_MODEL, ["one text"], 12))
    })

    await t.step("openai SDK → gemini channel (crossing), Base64 encoded by the gateway, estimate billed", async () => {
      const answer = await charged(
        gateway,
        costOf(GEMINI_MODEL, estimate(texts)),
        () => openai.embeddings.create({ model: GEMINI_MODEL, input: texts, dimensions: 16 })
      )
      deepStrictEqual(answer.data.map((item) => item.embedding), expectedVectors(GEMINI_MODEL, texts, 16))
      strictEqual(answer.usage.prompt_tokens, estimate(texts))
      const sent = gateway.emulator.requests.at(-1)!
      strictEqual(sent.path, `/v1beta/models/${GEMINI_MODEL}:batchEmbedContents`)
      const requests = (sent.body as { requests: Array<Record<string, unknown>> }).requests
      strictEqual(requests.length, 3)
      deepStrictEqual(requests[0], {
        model: `models/${GEMINI_MODEL}`,
        content: { parts: [{ text: texts[0] }] },
        outputDimensionality: 16
      })
    })

    await t.step("openai SDK → gemini channel, float, default dimensions of the upstream model", async () => {
      const answer = await openai.embeddings.create({ model: MAPPED_MODEL, input: "mapped", encoding_format: "float" })
      deepStrictEqual(
        answer.data.map((item) => item.embedding),
        expectedVectors(MAPPED_UPSTREAM, ["mapped"], defaultDimensions("gemini", MAPPED_UPSTREAM))
      )
    })

    await t.step("@google/genai, gemini channel, one content (passthrough)", async () => {
      const answer = await charged(
        gateway,
        costOf(GEMINI_MODEL, estimate(["hello gemini"])),
        () =>
          genai.models.embedContent({
            model: GEMINI_MODEL,
            contents: "hello gemini",
            config: { outputDimensionality: 8, taskType: "RETRIEVAL_QUERY" }
          })
      )
      deepStrictEqual(answer.embeddings?.map((one) => one.values), expectedVectors(GEMINI_MODEL, ["hello gemini"], 8))
      const sent = gateway.emulator.requests.at(-1)!
      strictEqual(sent.path, `/v1beta/models/${GEMINI_MODEL}:batchEmbedContents`)
      strictEqual((sent.body as { requests: Array<{ taskType: string }> }).requests[0].taskType, "RETRIEVAL_QUERY")
    })

    await t.step("@google/genai, gemini channel, several contents, model mapped", async () => {
      const answer = await genai.models.embedContent({
        model: MAPPED_MODEL,
        contents: texts,
        config: { outputDimensionality: 5, taskType: "RETRIEVAL_DOCUMENT", title: "A title" }
      })
      deepStrictEqual(answer.embeddings?.map((one) => one.values), expectedVectors(MAPPED_UPSTREAM, texts, 5))
      const sent = gateway.emulator.requests.at(-1)!
      strictEqual(sent.path, `/v1beta/models/${MAPPED_UPSTREAM}:batchEmbedContents`)
      const requests = (sent.body as { requests: Array<Record<string, unknown>> }).requests
      ok(requests.every((one) => one.model === `models/${MAPPED_UPSTREAM}` && one.title === "A title"))
    })

    await t.step("@google/genai → openai channel (crossing), several contents, usage billed as reported", async () => {
      const answer = await charged(
        gateway,
        costOf(OPENAI_MODEL, openAiReported(texts)),
        () => genai.models.embedContent({ model: OPENAI_MODEL, contents: texts, config: { outputDimensionality: 7 } })
      )
      deepStrictEqual(answer.embeddings?.map((one) => one.values), expectedVectors(OPENAI_MODEL, texts, 7))
      const sent = gateway.emulator.requests.at(-1)!
      strictEqual(sent.path, "/v1/embeddings")
      deepStrictEqual(sent.body, { model: OPENAI_MODEL, input: texts, encoding_format: "float", dimensions: 7 })
    })

    await t.step("@google/genai → openai channel, one content; :embedContent by hand answers {embedding}", async () => {
      const answer = await genai.models.embedContent({ model: OPENAI_MODEL, contents: "single" })
      deepStrictEqual(
        answer.embeddings?.map((one) => one.values),
        expectedVectors(OPENAI_MODEL, ["single"], defaultDimensions("openai", OPENAI_MODEL))
      )
      for (const model of [OPENAI_MODEL, GEMINI_MODEL]) {
        const response = await post(gateway, `/v1beta/models/${model}:embedContent`, {
          content: { parts: [{ text: "by hand" }] },
          outputDimensionality: 3
        })
        strictEqual(response.status, 200)
        deepStrictEqual(await response.json(), { embedding: { values: embeddingVector(model, "by hand", 3) } })
      }
    })

    await t.step(
      "token-array inputs go to openai channels; on a gemini-only model they are a 400 naming input",
      async () => {
        const answer = await openai.embeddings.create({
          model: OPENAI_MODEL,
          input: [[1, 2, 3], [4]],
          encoding_format: "float",
          dimensions: 4
        })
        deepStrictEqual(answer.data.map((item) => item.embedding), [
          embeddingVector(OPENAI_MODEL, [1, 2, 3], 4),
          embeddingVector(OPENAI_MODEL, [4], 4)
        ])
        const refused = await post(gateway, "/v1/embeddings", { model: GEMINI_MODEL, input: [1, 2, 3] })
        strictEqual(refused.status, 400)
        strictEqual((await refused.json()).error.param, "input")
      }
    )

    await t.step("2,048 inputs pass on both channel types; 2,049 are a 400 naming input", async () => {
      const many = Array.from({ length: 2048 }, (_, index) => `input number ${index}`)
      const direct = await charged(
        gateway,
        costOf(OPENAI_MODEL, openAiReported(many)),
        () => openai.embeddings.create({ model: OPENAI_MODEL, input: many, dimensions: 2 })
      )
      deepStrictEqual(direct.data.map((item) => item.embedding), expectedVectors(OPENAI_MODEL, many, 2))
      const before = gateway.emulator.requests.length
      const crossed = await charged(
        gateway,
        costOf(GEMINI_MODEL, estimate(many)),
        () => openai.embeddings.create({ model: GEMINI_MODEL, input: many, dimensions: 2 })
      )
      deepStrictEqual(crossed.data.map((item) => item.embedding), expectedVectors(GEMINI_MODEL, many, 2))
      // The gemini API takes at most 100 requests a batch: 21 calls.
      strictEqual(gateway.emulator.requests.length - before, 21)
      const error = await charged(
        gateway,
        0,
        () =>
          openai.embeddings.create({ model: OPENAI_MODEL, input: [...many, "one more"] }).then(
            () => undefined,
            (error: unknown) => error
          )
      )
      ok(error instanceof OpenAI.BadRequestError)
      strictEqual(error.status, 400)
      strictEqual(error.param, "input")
    })

    await t.step("/v1/embeddings errors in the gateway envelope, free", async () => {
      const cases: Array<[unknown, number, string, string]> = [
        [{ model: OPENAI_MODEL }, 400, "invalid_request", "input"],
        [{ model: OPENAI_MODEL, input: "" }, 400, "invalid_request", "input"],
        [{ model: OPENAI_MODEL, input: "x", dimensions: 0 }, 400, "invalid_request", "dimensions"],
        [{ model: OPENAI_MODEL, input: "x", encoding_format: "int8" }, 400, "invalid_request", "encoding_format"],
        [{ model: "no-such-model", input: "x" }, 503, "model_not_found", "model"],
        [{ model: "claude-only", input: "x" }, 503, "model_not_found", "model"]
      ]
      for (const [body, status, code, param] of cases) {
        const response = await charged(gateway, 0, () => post(gateway, "/v1/embeddings", body))
        strictEqual(response.status, status, JSON.stringify(body))
        const error = (await response.json()).error
        strictEqual(error.code, code)
        strictEqual(error.param, param)
        strictEqual(typeof error.message, "string")
      }
      const sdkError = await openai.embeddings.create({ model: "claude-only", input: "x" }).catch((error) => error)
      ok(sdkError instanceof OpenAI.APIError)
      strictEqual(sdkError.status, 503)
      strictEqual(sdkError.code, "model_not_found")
    })

    await t.step("generate-content embedding errors in Google's shape, free", async () => {
      const cases: Array<[string, unknown, number, string]> = [
        [`${GEMINI_MODEL}:embedContent`, {}, 400, "INVALID_ARGUMENT"],
        [`${GEMINI_MODEL}:batchEmbedContents`, {}, 400, "INVALID_ARGUMENT"],
        [
          `${GEMINI_MODEL}:batchEmbedContents`,
          { requests: [{ content: { parts: [{ inlineData: {} }] } }] },
          400,
          "INVALID_ARGUMENT"
        ],
        [
          `${GEMINI_MODEL}:embedContent`,
          { content: { parts: [{ text: "x" }] }, taskType: "NOPE" },
          400,
          "INVALID_ARGUMENT"
        ],
        ["no-such-model:embedContent", { content: { parts: [{ text: "x" }] } }, 503, "UNAVAILABLE"],
        ["claude-only:batchEmbedContents", { requests: [{ content: { parts: [{ text: "x" }] } }] }, 503, "UNAVAILABLE"]
      ]
      for (const [path, body, status, rpc] of cases) {
        const response = await charged(gateway, 0, () => post(gateway, `/v1beta/models/${path}`, body))
        strictEqual(response.status, status, path)
        const error = (await response.json()).error
        strictEqual(error.code, status)
        strictEqual(error.status, rpc)
      }
      const tooMany = await post(gateway, `/v1beta/models/${GEMINI_MODEL}:batchEmbedContents`, {
        requests: Array.from({ length: 101 }, () => ({ content: { parts: [{ text: "x" }] } }))
      })
      strictEqual(tooMany.status, 400)
      ok((await tooMany.json()).error.message.includes("At most 100 requests"))
      const sdkError = await genai.models.embedContent({ model: "claude-only", contents: "x" }).catch((error) => error)
      ok(sdkError instanceof Error)
      ok(String(sdkError.message).includes("model_not_found"), sdkError.message)
    })

    await t.step("model lists say what embedding models support", async () => {
      const list = await (await fetch(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${KEY}` } }))
        .json()
      const byId = new Map(list.data.map((model: { id: string }) => [model.id, model]))
      deepStrictEqual((byId.get(OPENAI_MODEL) as { supported_endpoints: unknown }).supported_endpoints, [
        "/v1/embeddings"
      ])
      ok(!(byId.get("gpt-4o") as { supported_endpoints: Array<string> }).supported_endpoints.includes("/v1/embeddings"))
      const pager = await genai.models.list()
      const methods = new Map<string, ReadonlyArray<string>>()
      for await (const model of pager) methods.set(model.name ?? "", model.supportedActions ?? [])
      ok(methods.get(`models/${GEMINI_MODEL}`)?.includes("embedContent"), JSON.stringify([...methods]))
      ok(!methods.get("models/gpt-4o")?.includes("embedContent"))
    })
  } finally {
    await gateway.close()
  }
})
