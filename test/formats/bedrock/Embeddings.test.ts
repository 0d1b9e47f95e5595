/**
 * Bedrock's embedding bodies (`src/formats/bedrock/embeddings/Wire.ts`) and the adapter's choice of family by the
 * mapped model id, with plain values.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { UpstreamFailed } from "../../../src/errors/GatewayError.ts"
import { cohereEmbeddingWire, titanEmbeddingWire } from "../../../src/formats/bedrock/embeddings/Wire.ts"
import { embeddingWireOf } from "../../../src/relay/embeddings/EmbeddingAttempt.ts"
import type { Candidate } from "../../../src/services/ChannelRouter.ts"
import { embeddingAdapters } from "../../../src/upstreams/EmbeddingAdapter.ts"

Deno.test("Titan embeddings: one inputText a call, dimensions, normalize; inputTextTokenCount is the usage", () => {
  strictEqual(titanEmbeddingWire.maxInputs, 1)
  deepStrictEqual(
    titanEmbeddingWire.encodeRequest(
      { model: "emb", inputs: [{ type: "text", text: "hello" }], dimensions: 256 },
      "amazon.titan-embed-text-v2:0"
    ),
    { inputText: "hello", dimensions: 256, normalize: true }
  )
  deepStrictEqual(titanEmbeddingWire.decodeResponse({ embedding: [0.1, -0.2], inputTextTokenCount: 3 }, 1), {
    vectors: [[0.1, -0.2]],
    usage: { inputTokens: 3, outputTokens: 0 }
  })
  const bad = titanEmbeddingWire.decodeResponse({ embedding: "x" }, 1)
  strictEqual(bad instanceof UpstreamFailed && bad.kind, "bad-body")
})

Deno.test("Cohere embeddings: texts and input_type from the task type; floats as a list or by type; usage from the header", () => {
  deepStrictEqual(
    cohereEmbeddingWire.encodeRequest(
      {
        model: "emb",
        inputs: [{ type: "text", text: "a", taskType: "RETRIEVAL_QUERY" }, { type: "text", text: "b" }],
        dimensions: 512
      },
      "cohere.embed-english-v3"
    ),
    { texts: ["a", "b"], input_type: "search_query" }
  )
  deepStrictEqual(
    cohereEmbeddingWire.encodeRequest(
      { model: "emb", inputs: [{ type: "text", text: "a" }], dimensions: 512 },
      "cohere.embed-v4:0"
    ),
    { texts: ["a"], input_type: "search_document", output_dimension: 512 }
  )
  deepStrictEqual(
    cohereEmbeddingWire.decodeResponse({ id: "e1", response_type: "embeddings_floats", embeddings: [[1], [2]] }, 2),
    { vectors: [[1], [2]], usage: undefined }
  )
  deepStrictEqual(
    cohereEmbeddingWire.decodeResponse({ response_type: "embeddings_by_type", embeddings: { float: [[3]] } }, 1),
    { vectors: [[3]], usage: undefined }
  )
  deepStrictEqual(
    cohereEmbeddingWire.decodeResponse({ embeddings: [[4]] }, 1, { "x-amzn-bedrock-input-token-count": "7" }),
    { vectors: [[4]], usage: { inputTokens: 7, outputTokens: 0 } },
    "the input tokens from InvokeModel's header"
  )
  strictEqual(
    cohereEmbeddingWire.decodeResponse({ embeddings: [[4]] }, 1, {
      "x-amzn-bedrock-input-token-count": "-1"
    }) instanceof
      UpstreamFailed,
    false
  )
  const short = cohereEmbeddingWire.decodeResponse({ embeddings: [[1]] }, 2)
  strictEqual(short instanceof UpstreamFailed && short.kind, "bad-body")
})

Deno.test("bedrock embeddings: the family by the mapped model id, through InvokeModel", () => {
  const candidate = (upstreamModel: string) =>
    ({
      channel: {
        type: "bedrock",
        baseUrl: "https://bedrock-runtime.us-east-1.amazonaws.com",
        settings: { region: "us-east-1" }
      },
      key: { key: "sk-test-bedrock-api-key" },
      upstreamModel
    }) as unknown as Candidate
  strictEqual(embeddingWireOf(candidate("amazon.titan-embed-text-v2:0"))?.name, "bedrock-titan")
  strictEqual(embeddingWireOf(candidate("cohere.embed-multilingual-v3"))?.name, "bedrock-cohere")
  strictEqual(embeddingWireOf(candidate("anthropic.claude-3-haiku-20240307-v1:0")), undefined)
  const target = embeddingAdapters.bedrock!.target(
    candidate("x").channel,
    "sk-test-bedrock-api-key",
    "amazon.titan-embed-text-v2:0"
  )
  strictEqual(target.url, "https://bedrock-runtime.us-east-1.amazonaws.com/model/amazon.titan-embed-text-v2%3A0/invoke")
  strictEqual(target.headers.authorization, "Bearer sk-test-bedrock-api-key")
})
