/**
 * The emulator's embedding routes: deterministic unit vectors (same model,
 * input and dimensions, same vector; dimensions honoured; float32-exact, so
 * Base64 and JSON agree), and the fields each vendor validates refused in its
 * own error shape.
 */
import { Buffer } from "node:buffer"
import { deepStrictEqual, notDeepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { defaultDimensions, embeddingVector } from "../../emulator/Embeddings.ts"
import { withEmulator } from "./Support.ts"

const post = (url: string, path: string, body: unknown) =>
  fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-test-x", "x-goog-api-key": "sk-test-x" },
    body: JSON.stringify(body)
  })

Deno.test("emulator embeddings: vectors are deterministic unit vectors of the asked length, float32-exact", () => {
  const vector = embeddingVector("m", "hello", 64)
  strictEqual(vector.length, 64)
  deepStrictEqual(embeddingVector("m", "hello", 64), vector)
  notDeepStrictEqual(embeddingVector("m", "hello!", 64), vector)
  notDeepStrictEqual(embeddingVector("other", "hello", 64), vector)
  notDeepStrictEqual(embeddingVector("m", [1, 2], 64), embeddingVector("m", "1,2", 64))
  ok(Math.abs(Math.hypot(...vector) - 1) < 1e-6)
  ok(vector.every((value) => Math.fround(value) === value))
  strictEqual(defaultDimensions("openai", "text-embedding-3-large"), 3072)
  strictEqual(defaultDimensions("openai", "text-embedding-3-small"), 1536)
  strictEqual(defaultDimensions("gemini", "text-embedding-004"), 768)
  strictEqual(defaultDimensions("gemini", "gemini-embedding-001"), 3072)
})

Deno.test("emulator embeddings: OpenAI route answers floats or Base64 float32 with usage, and refuses bad fields", async () => {
  await withEmulator({}, async (emulator) => {
    const float = await (await post(emulator.url, "/v1/embeddings", {
      model: "text-embedding-3-small",
      input: ["a", "bbbbbbbbb"],
      dimensions: 4
    })).json()
    deepStrictEqual(float.data.map((item: { embedding: unknown }) => item.embedding), [
      embeddingVector("text-embedding-3-small", "a", 4),
      embeddingVector("text-embedding-3-small", "bbbbbbbbb", 4)
    ])
    deepStrictEqual(float.usage, { prompt_tokens: 4, total_tokens: 4 })
    const base64 = await (await post(emulator.url, "/v1/embeddings", {
      model: "text-embedding-3-small",
      input: [[5, 6]],
      dimensions: 4,
      encoding_format: "base64"
    })).json()
    const bytes = Buffer.from(base64.data[0].embedding, "base64")
    deepStrictEqual(
      Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, 4)),
      embeddingVector("text-embedding-3-small", [5, 6], 4)
    )
    strictEqual(base64.usage.prompt_tokens, 2)
    const refusals: Array<[unknown, string | null]> = [
      [{ input: "x" }, null],
      [{ model: "text-embedding-3-small" }, "input"],
      [{ model: "text-embedding-3-small", input: "" }, "input"],
      [{ model: "text-embedding-3-small", input: Array.from({ length: 2049 }, () => "x") }, "input"],
      [{ model: "text-embedding-3-small", input: ["a", 1] }, "input"],
      [{ model: "text-embedding-3-small", input: "x".repeat(4 * 8192 + 1) }, null],
      [{ model: "text-embedding-3-small", input: Array.from({ length: 8193 }, () => 1) }, null],
      [{ model: "text-embedding-3-small", input: "x", dimensions: 0 }, "dimensions"],
      [{ model: "text-embedding-ada-002", input: "x", dimensions: 8 }, "dimensions"],
      [{ model: "text-embedding-3-small", input: "x", encoding_format: "int8" }, "encoding_format"]
    ]
    for (const [body, param] of refusals) {
      const response = await post(emulator.url, "/v1/embeddings", body)
      strictEqual(response.status, 400, JSON.stringify(body).slice(0, 60))
      const error = (await response.json()).error
      strictEqual(error.type, "invalid_request_error")
      strictEqual(error.param, param)
    }
  })
})

Deno.test("emulator embeddings: generate-content methods answer values and refuse what the API refuses", async () => {
  await withEmulator({}, async (emulator) => {
    const one = await (await post(emulator.url, "/v1beta/models/gemini-embedding-001:embedContent", {
      content: { parts: [{ text: "a" }, { text: "b" }] },
      outputDimensionality: 3,
      taskType: "SEMANTIC_SIMILARITY"
    })).json()
    deepStrictEqual(one, { embedding: { values: embeddingVector("gemini-embedding-001", "a\nb", 3) } })
    const batch = await (await post(emulator.url, "/v1beta/models/gemini-embedding-001:batchEmbedContents", {
      requests: [
        { model: "models/gemini-embedding-001", content: { parts: [{ text: "x" }] }, outputDimensionality: 2 },
        { model: "models/gemini-embedding-001", content: { parts: [{ text: "y" }] } }
      ]
    })).json()
    deepStrictEqual(batch, {
      embeddings: [
        { values: embeddingVector("gemini-embedding-001", "x", 2) },
        { values: embeddingVector("gemini-embedding-001", "y", 3072) }
      ]
    })
    const ok1 = { model: "models/gemini-embedding-001", content: { parts: [{ text: "x" }] } }
    const refusals: Array<[string, unknown, string]> = [
      [":batchEmbedContents", {}, "requests"],
      [":batchEmbedContents", { requests: Array.from({ length: 101 }, () => ok1) }, "at most 100 requests"],
      [":batchEmbedContents", { requests: [{ content: ok1.content }] }, "requests[0].model"],
      [":batchEmbedContents", { requests: [{ ...ok1, model: "models/other" }] }, "requests[0].model"],
      [":batchEmbedContents", { requests: [{ ...ok1, taskType: "NOPE" }] }, "task_type"],
      [":batchEmbedContents", { requests: [{ ...ok1, outputDimensionality: 0 }] }, "output_dimensionality"],
      [":embedContent", {}, "content"],
      [":embedContent", { content: { parts: [{ text: "" }] } }, "content"]
    ]
    for (const [method, body, words] of refusals) {
      const response = await post(emulator.url, `/v1beta/models/gemini-embedding-001${method}`, body)
      strictEqual(response.status, 400, `${method} ${JSON.stringify(body).slice(0, 60)}`)
      const error = (await response.json()).error
      strictEqual(error.status, "INVALID_ARGUMENT")
      ok(error.message.includes(words), error.message)
    }
  })
})
