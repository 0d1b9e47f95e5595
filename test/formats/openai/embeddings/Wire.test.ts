/**
 * The OpenAI embeddings format with plain values: every input shape the API
 * takes, each refusal with the field it names, Base64 vectors as the `openai`
 * SDK decodes them, and upstream answers read in index order or refused.
 */
import { Result } from "effect"
import { Buffer } from "node:buffer"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import {
  decodeOpenAiEmbeddingRequest,
  decodeOpenAiEmbeddings,
  encodeOpenAiEmbeddings,
  openAiEmbeddingsUsage,
  openAiEmbeddingWire
} from "../../../../src/formats/openai/embeddings/Wire.ts"
import { decodeFloat32Base64, encodeFloat32Base64 } from "../../../../src/formats/embeddings/Float32Base64.ts"
import { UpstreamFailed } from "../../../../src/errors/GatewayError.ts"

const refusal = (raw: Record<string, unknown>) => {
  const decoded = decodeOpenAiEmbeddingRequest(raw)
  ok(Result.isFailure(decoded), `expected a refusal of ${JSON.stringify(raw).slice(0, 80)}`)
  return decoded.failure
}

Deno.test("openai embeddings: every input shape decodes to canonical inputs", () => {
  const cases: Array<[unknown, unknown]> = [
    ["one text", [{ type: "text", text: "one text" }]],
    [["a", "b\u0000", "\ud800"], [{ type: "text", text: "a" }, { type: "text", text: "b\u0000" }, {
      type: "text",
      text: "\ud800"
    }]],
    [[1, 2, 3], [{ type: "tokens", tokens: [1, 2, 3] }]],
    [[[1], [2, 3]], [{ type: "tokens", tokens: [1] }, { type: "tokens", tokens: [2, 3] }]]
  ]
  for (const [input, inputs] of cases) {
    const decoded = decodeOpenAiEmbeddingRequest({
      model: "m",
      input,
      dimensions: 8,
      user: "u",
      encoding_format: "base64"
    })
    ok(Result.isSuccess(decoded))
    deepStrictEqual(decoded.success.request, { model: "m", inputs, dimensions: 8, user: "u" })
    strictEqual(decoded.success.base64, true)
  }
  const plain = decodeOpenAiEmbeddingRequest({ model: "m", input: "x", encoding_format: null, dimensions: null })
  ok(Result.isSuccess(plain))
  strictEqual(plain.success.base64, false)
  strictEqual(plain.success.request.dimensions, undefined)
})

Deno.test("openai embeddings: refusals name the field", () => {
  const many = Array.from({ length: 2049 }, () => "x")
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ input: "x" }, "model"],
    [{ model: "m" }, "input"],
    [{ model: "m", input: null }, "input"],
    [{ model: "m", input: "" }, "input"],
    [{ model: "m", input: [] }, "input"],
    [{ model: "m", input: {} }, "input"],
    [{ model: "m", input: many }, "input"],
    [{ model: "m", input: ["a", ""] }, "input[1]"],
    [{ model: "m", input: ["a", 1] }, "input[1]"],
    [{ model: "m", input: [1, -1] }, "input[1]"],
    [{ model: "m", input: [1, 1.5] }, "input[1]"],
    [{ model: "m", input: [[1], []] }, "input[1]"],
    [{ model: "m", input: [[1], [2, "x"]] }, "input[1][1]"],
    [{ model: "m", input: [[1], "a"] }, "input[1]"],
    [{ model: "m", input: "x", dimensions: 0 }, "dimensions"],
    [{ model: "m", input: "x", dimensions: 1.5 }, "dimensions"],
    [{ model: "m", input: "x", encoding_format: "int8" }, "encoding_format"],
    [{ model: "m", input: "x", user: 7 }, "user"]
  ]
  for (const [raw, param] of cases) {
    const error = refusal(raw)
    strictEqual(error.param, param, JSON.stringify(raw).slice(0, 80))
    ok(error.message.length > 0)
  }
  ok(refusal({ model: "m", input: many }).message.includes("2048"))
  const oneLongTokenInput = decodeOpenAiEmbeddingRequest({ model: "m", input: Array.from({ length: 3000 }, () => 7) })
  ok(Result.isSuccess(oneLongTokenInput))
  strictEqual(oneLongTokenInput.success.request.inputs.length, 1)
  const limit = decodeOpenAiEmbeddingRequest({ model: "m", input: many.slice(1) })
  ok(Result.isSuccess(limit))
  strictEqual(limit.success.request.inputs.length, 2048)
})

Deno.test("openai embeddings: Base64 is little-endian float32, as the openai SDK decodes it", () => {
  fc.assert(fc.property(fc.array(fc.float({ noNaN: true, noDefaultInfinity: true }), { maxLength: 64 }), (vector) => {
    const text = encodeFloat32Base64(vector)
    const bytes = Buffer.from(text, "base64")
    // The SDK's `toFloat32Array`.
    const sdk = Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4))
    deepStrictEqual(sdk, vector.map(Math.fround))
    deepStrictEqual(decodeFloat32Base64(text), vector.map(Math.fround))
  }))
  strictEqual(decodeFloat32Base64("AAA="), undefined)
  strictEqual(decodeFloat32Base64("@@@@"), undefined)
  const answer = encodeOpenAiEmbeddings([[0.5, -1]], 7, "m", true)
  deepStrictEqual(answer, {
    object: "list",
    data: [{ object: "embedding", index: 0, embedding: encodeFloat32Base64([0.5, -1]) }],
    model: "m",
    usage: { prompt_tokens: 7, total_tokens: 7 }
  })
  deepStrictEqual(
    (encodeOpenAiEmbeddings([[0.5, -1]], 7, "m", false).data as Array<{ embedding: unknown }>)[0].embedding,
    [
      0.5,
      -1
    ]
  )
})

Deno.test("openai embeddings: upstream answers are read in index order, with usage; bad ones are refused", () => {
  const answer = {
    data: [{ index: 1, embedding: [2] }, { index: 0, embedding: encodeFloat32Base64([1]) }],
    usage: { prompt_tokens: 5, total_tokens: 5 }
  }
  deepStrictEqual(decodeOpenAiEmbeddings(answer, 2), {
    vectors: [[1], [2]],
    usage: { inputTokens: 5, outputTokens: 0 }
  })
  deepStrictEqual(decodeOpenAiEmbeddings({ data: [{ embedding: [1] }] }, 1), { vectors: [[1]], usage: undefined })
  deepStrictEqual(openAiEmbeddingsUsage(answer, 2), { inputTokens: 5, outputTokens: 0 })
  for (
    const bad of [
      null,
      [],
      { data: [] },
      { data: [{ embedding: [1] }] },
      { data: [{ embedding: "nope!" }, { embedding: [1] }] },
      { data: [{ embedding: [1, "2"] }, { embedding: [1] }] },
      { data: [{ index: 0, embedding: [1] }, { index: 0, embedding: [2] }] }
    ]
  ) {
    const decoded = decodeOpenAiEmbeddings(bad, 2)
    ok(decoded instanceof UpstreamFailed, JSON.stringify(bad))
    strictEqual(decoded.kind, "bad-body")
  }
  ok(openAiEmbeddingsUsage({ data: [] }, 2) instanceof UpstreamFailed)
})

Deno.test("openai embeddings wire: translated body asks for floats; passthrough maps only the model", () => {
  deepStrictEqual(
    openAiEmbeddingWire.encodeRequest({
      model: "alias",
      inputs: [{ type: "text", text: "a", title: "dropped", taskType: "RETRIEVAL_DOCUMENT" }, {
        type: "text",
        text: "b"
      }],
      dimensions: 3,
      user: "u"
    }, "upstream"),
    { model: "upstream", input: ["a", "b"], encoding_format: "float", dimensions: 3, user: "u" }
  )
  deepStrictEqual(
    openAiEmbeddingWire.encodeRequest({ model: "m", inputs: [{ type: "tokens", tokens: [1, 2] }] }, "u"),
    { model: "u", input: [[1, 2]], encoding_format: "float" }
  )
  deepStrictEqual(
    openAiEmbeddingWire.passthroughBody(
      { model: "alias", input: "x", extra: true },
      { format: "openai", base64: true },
      "up"
    ),
    { model: "up", input: "x", extra: true }
  )
  strictEqual(
    openAiEmbeddingWire.passthroughAnswer('{"as":"is"}', {}, { format: "openai", base64: false }),
    '{"as":"is"}'
  )
})
