/**
 * Vertex AI's dialects (`src/formats/vertex/`) with plain values: Claude's Messages body without `model` and with
 * `anthropic_version`, translated and passed through (every other field kept); generate-content bodies with every
 * content's role and without the Gemini API's `store`; and the `:predict` embeddings wire (instances, parameters,
 * predictions with their token counts).
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { UpstreamFailed } from "../../../src/errors/GatewayError.ts"
import { VERTEX_ANTHROPIC_VERSION, VertexAnthropicFormat } from "../../../src/formats/vertex/AnthropicFormat.ts"
import { vertexEmbeddingWire } from "../../../src/formats/vertex/Embeddings.ts"
import { VertexGeminiFormat } from "../../../src/formats/vertex/GeminiFormat.ts"

const target = { model: "claude-sonnet-4-5@20250929", stream: true, outputCap: 1024 }

Deno.test("vertex anthropic: a translated request has no model and anthropic_version vertex-2023-10-16", () => {
  const { body } = VertexAnthropicFormat.encodeRequest({
    model: "claude-sonnet-4-5@20250929",
    messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
    maxOutputTokens: 64,
    stream: true
  })
  strictEqual("model" in body, false)
  strictEqual(body.anthropic_version, VERTEX_ANTHROPIC_VERSION)
  strictEqual(VERTEX_ANTHROPIC_VERSION, "vertex-2023-10-16")
  strictEqual(body.max_tokens, 64)
  strictEqual(body.stream, true)
})

Deno.test("vertex anthropic: a passed-through body keeps every field but model", () => {
  const raw = {
    model: "vx-claude",
    messages: [{ role: "user", content: "hi" }],
    metadata: { user_id: "u-1" },
    stream: true,
    future_field: { kept: true }
  }
  const body = VertexAnthropicFormat.passthrough.body(raw, target)
  deepStrictEqual(body, {
    messages: [{ role: "user", content: "hi" }],
    metadata: { user_id: "u-1" },
    stream: true,
    future_field: { kept: true },
    max_tokens: 1024,
    anthropic_version: "vertex-2023-10-16"
  })
  strictEqual(raw.model, "vx-claude", "the caller's body is left as it is")
  // A caller that named its own version keeps it.
  strictEqual(
    VertexAnthropicFormat.passthrough.body({ ...raw, anthropic_version: "vertex-2023-10-16" }, target)
      .anthropic_version,
    "vertex-2023-10-16"
  )
  strictEqual(VertexAnthropicFormat.name, "anthropic")
})

Deno.test("vertex gemini: a passed-through content without a role is the user's, and store is left out", () => {
  const raw = {
    contents: [{ parts: [{ text: "a" }] }, { role: "model", parts: [{ text: "b" }] }, { role: "user", parts: [] }],
    store: true,
    generationConfig: { temperature: 0.2 }
  }
  const body = VertexGeminiFormat.passthrough.body(raw, { model: "gemini-2.5-flash", stream: false, outputCap: 99 })
  deepStrictEqual(body.contents, [
    { role: "user", parts: [{ text: "a" }] },
    { role: "model", parts: [{ text: "b" }] },
    { role: "user", parts: [] }
  ])
  strictEqual("store" in body, false)
  deepStrictEqual(body.generationConfig, { temperature: 0.2, maxOutputTokens: 99 })
  strictEqual(raw.contents[0].role, undefined, "the caller's body is left as it is")
  const encoded = VertexGeminiFormat.encodeRequest({
    model: "gemini-2.5-flash",
    messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
    stream: false
  }).body as { contents: Array<{ role: string }> }
  deepStrictEqual(encoded.contents.map((content) => content.role), ["user"])
})

Deno.test("vertex embeddings: instances and parameters out, vectors and summed token counts in", () => {
  const body = vertexEmbeddingWire.encodeRequest({
    model: "text-embedding-005",
    inputs: [{ type: "text", text: "one", taskType: "RETRIEVAL_DOCUMENT", title: "T" }, { type: "text", text: "two" }],
    dimensions: 4
  }, "text-embedding-005")
  deepStrictEqual(body, {
    instances: [{ content: "one", task_type: "RETRIEVAL_DOCUMENT", title: "T" }, { content: "two" }],
    parameters: { outputDimensionality: 4 }
  })
  const answer = {
    predictions: [
      { embeddings: { values: [0.1, 0.2], statistics: { truncated: false, token_count: 3 } } },
      { embeddings: { values: [0.3, 0.4], statistics: { truncated: false, token_count: 5 } } }
    ]
  }
  deepStrictEqual(vertexEmbeddingWire.decodeResponse(answer, 2), {
    vectors: [[0.1, 0.2], [0.3, 0.4]],
    usage: { inputTokens: 8, outputTokens: 0 }
  })
  ok(vertexEmbeddingWire.decodeResponse(answer, 3) instanceof UpstreamFailed, "a count that differs is bad-body")
  ok(
    vertexEmbeddingWire.decodeResponse({ predictions: [{ embeddings: { values: ["x"] } }] }, 1) instanceof
      UpstreamFailed
  )
  const noCounts = vertexEmbeddingWire.decodeResponse({ predictions: [{ embeddings: { values: [1] } }] }, 1)
  strictEqual((noCounts as { usage: unknown }).usage, undefined, "no token count: no reported usage")
})

Deno.test("vertex errors: Google's status bodies on both publishers: a refused key, throttling, a bad request", () => {
  const body = (code: number, status: string) => JSON.stringify({ error: { code, message: "m", status } })
  for (const format of [VertexAnthropicFormat, VertexGeminiFormat]) {
    strictEqual(format.classifyError(401, body(401, "UNAUTHENTICATED")).kind, "unauthorized")
    strictEqual(format.classifyError(403, body(403, "PERMISSION_DENIED")).kind, "unauthorized")
    strictEqual(format.classifyError(429, body(429, "RESOURCE_EXHAUSTED")).kind, "throttled")
    strictEqual(format.classifyError(400, body(400, "INVALID_ARGUMENT")).kind, "rejected")
  }
})
