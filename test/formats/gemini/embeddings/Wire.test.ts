/**
 * The generate-content embedding methods with plain values: one content and
 * batches decoded with the fields the API has, refusals naming the field by
 * its path, the `:batchEmbedContents` body sent upstream (translated, or the
 * caller's own with the model mapped) and answers read or refused.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { UpstreamFailed } from "../../../../src/errors/GatewayError.ts"
import {
  decodeGeminiEmbeddings,
  decodeGeminiEmbedRequest,
  encodeGeminiEmbeddings,
  geminiEmbeddingsUsage,
  geminiEmbeddingWire
} from "../../../../src/formats/gemini/embeddings/Wire.ts"

const text = (value: string) => ({ parts: [{ text: value }] })

Deno.test("gemini embeddings: one content and batches decode with task type, title and dimensionality", () => {
  deepStrictEqual(
    decodeGeminiEmbedRequest(
      {
        content: { parts: [{ text: "a" }, { text: "b" }] },
        taskType: "RETRIEVAL_DOCUMENT",
        title: "T",
        outputDimensionality: 8
      },
      "m",
      false
    ),
    Result.succeed({
      model: "m",
      inputs: [{ type: "text", text: "a\nb", title: "T", taskType: "RETRIEVAL_DOCUMENT" }],
      dimensions: 8
    })
  )
  deepStrictEqual(
    decodeGeminiEmbedRequest(
      {
        requests: [{ model: "models/m", content: text("x") }, {
          model: "m",
          content: text("y"),
          taskType: "CLUSTERING"
        }]
      },
      "m",
      true
    ),
    Result.succeed({
      model: "m",
      inputs: [
        { type: "text", text: "x", title: undefined, taskType: undefined },
        { type: "text", text: "y", title: undefined, taskType: "CLUSTERING" }
      ],
      dimensions: undefined
    })
  )
})

Deno.test("gemini embeddings: refusals name the field by its path", () => {
  const cases: Array<[Record<string, unknown>, boolean, string]> = [
    [{}, false, "content"],
    [{ content: {} }, false, "content.parts"],
    [{ content: { parts: [] } }, false, "content.parts"],
    [{ content: { parts: [{ text: "" }] } }, false, "content.parts"],
    [{ content: { parts: [{ inlineData: { data: "" } }] } }, false, "content.parts[0]"],
    [{ content: text("x"), taskType: "NOPE" }, false, "taskType"],
    [{ content: text("x"), outputDimensionality: 0 }, false, "outputDimensionality"],
    [{ content: text("x"), title: 3 }, false, "title"],
    [{}, true, "requests"],
    [{ requests: [] }, true, "requests"],
    [{ requests: Array.from({ length: 101 }, () => ({ content: text("x") })) }, true, "requests"],
    [{ requests: [{ content: text("x") }, {}] }, true, "requests[1].content"],
    [{ requests: [{ model: "models/other", content: text("x") }] }, true, "requests[0].model"],
    [
      { requests: [{ content: text("x"), outputDimensionality: 4 }, { content: text("y") }] },
      true,
      "requests[1].outputDimensionality"
    ]
  ]
  for (const [raw, batch, param] of cases) {
    const decoded = decodeGeminiEmbedRequest(raw, "m", batch)
    ok(Result.isFailure(decoded), JSON.stringify(raw).slice(0, 80))
    strictEqual(decoded.failure.param, param, JSON.stringify(raw).slice(0, 80))
  }
  const hundred = decodeGeminiEmbedRequest(
    { requests: Array.from({ length: 100 }, () => ({ content: text("x") })) },
    "m",
    true
  )
  ok(Result.isSuccess(hundred))
})

Deno.test("gemini embeddings wire: translated and passthrough :batchEmbedContents bodies", () => {
  deepStrictEqual(
    geminiEmbeddingWire.encodeRequest({
      model: "alias",
      inputs: [{ type: "text", text: "a", title: "T", taskType: "RETRIEVAL_DOCUMENT" }, { type: "text", text: "b" }],
      dimensions: 5,
      user: "dropped"
    }, "up"),
    {
      requests: [
        {
          model: "models/up",
          content: { parts: [{ text: "a" }] },
          taskType: "RETRIEVAL_DOCUMENT",
          title: "T",
          outputDimensionality: 5
        },
        { model: "models/up", content: { parts: [{ text: "b" }] }, outputDimensionality: 5 }
      ]
    }
  )
  deepStrictEqual(
    geminiEmbeddingWire.passthroughBody(
      { requests: [{ model: "models/alias", content: text("x"), extra: 1 }], other: true },
      { format: "gemini", batch: true },
      "up"
    ),
    { requests: [{ model: "models/up", content: text("x"), extra: 1 }], other: true }
  )
  deepStrictEqual(
    geminiEmbeddingWire.passthroughBody({ content: text("x"), taskType: "CLUSTERING" }, {
      format: "gemini",
      batch: false
    }, "up"),
    { requests: [{ content: text("x"), taskType: "CLUSTERING", model: "models/up" }] }
  )
  const upstream = { embeddings: [{ values: [1, 2], extra: "kept" }] }
  deepStrictEqual(
    JSON.parse(
      geminiEmbeddingWire.passthroughAnswer(JSON.stringify(upstream), upstream, { format: "gemini", batch: false })
    ),
    { embedding: { values: [1, 2], extra: "kept" } }
  )
  strictEqual(geminiEmbeddingWire.passthroughAnswer("as is", upstream, { format: "gemini", batch: true }), "as is")
})

Deno.test("gemini embeddings: answers are read, with usageMetadata when present; bad ones are refused", () => {
  deepStrictEqual(decodeGeminiEmbeddings({ embeddings: [{ values: [1] }, { values: [2, 3] }] }, 2), {
    vectors: [[1], [2, 3]],
    usage: undefined
  })
  deepStrictEqual(
    decodeGeminiEmbeddings({ embeddings: [{ values: [1] }], usageMetadata: { promptTokenCount: 4 } }, 1).valueOf(),
    { vectors: [[1]], usage: { inputTokens: 4, outputTokens: 0 } }
  )
  deepStrictEqual(geminiEmbeddingsUsage({ embeddings: [{ values: [1] }] }, 1), undefined)
  for (
    const bad of [null, { embeddings: [] }, { embeddings: [{ values: [1] }] }, { embeddings: [{}, { values: [1] }] }]
  ) {
    ok(decodeGeminiEmbeddings(bad, 2) instanceof UpstreamFailed, JSON.stringify(bad))
  }
  ok(geminiEmbeddingsUsage({ embeddings: [1, 2] }, 2) instanceof UpstreamFailed)
  deepStrictEqual(encodeGeminiEmbeddings([[1], [2]], true), { embeddings: [{ values: [1] }, { values: [2] }] })
  deepStrictEqual(encodeGeminiEmbeddings([[1]], false), { embedding: { values: [1] } })
})
