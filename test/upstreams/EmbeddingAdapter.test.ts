/**
 * Which channel types embed, and where: openai at `{root}/v1/embeddings` with
 * a bearer key, gemini at `{root}/v1beta/models/{model}:batchEmbedContents`
 * with `x-goog-api-key` (the model escaped), both with the channel's extra
 * headers and whether or not the base URL ends in `/v1` or `/v1beta`;
 * anthropic cannot embed.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { embeddingAdapters } from "../../src/upstreams/EmbeddingAdapter.ts"

Deno.test("embedding adapters: URLs, keys and extra headers per channel type; anthropic has none", () => {
  for (const baseUrl of ["https://api.example.test", "https://api.example.test/v1"]) {
    const target = embeddingAdapters.openai!.target(
      { type: "openai", baseUrl, settings: { headers: { "OpenAI-Organization": "org-test" } } },
      "sk-test-key",
      "text-embedding-3-small"
    )
    strictEqual(target.url, "https://api.example.test/v1/embeddings")
    deepStrictEqual(target.headers, {
      "content-type": "application/json",
      authorization: "Bearer sk-test-key",
      "OpenAI-Organization": "org-test"
    })
  }
  for (const baseUrl of ["https://g.example.test", "https://g.example.test/v1beta"]) {
    const target = embeddingAdapters.gemini!.target(
      { type: "gemini", baseUrl, settings: {} },
      "sk-test-key",
      "tuned/model:x"
    )
    strictEqual(target.url, "https://g.example.test/v1beta/models/tuned%2Fmodel%3Ax:batchEmbedContents")
    deepStrictEqual(target.headers, { "content-type": "application/json", "x-goog-api-key": "sk-test-key" })
  }
  strictEqual(embeddingAdapters.anthropic, undefined)
  strictEqual(embeddingAdapters.openai!.wire, "openai")
  strictEqual(embeddingAdapters.gemini!.wire, "gemini")
})
