/**
 * `probesRerank`: a channel probe is a rerank only when the channel's type
 * reranks and the model's price makes it a rerank model; a cohere model priced
 * by tokens is a chat model (Cohere bills reranks per search unit), a Jina
 * one may rerank (Jina bills reranks by tokens).
 */
import { strictEqual } from "node:assert/strict"
import { toFixed } from "../../src/domain/Pricing.ts"
import { probesRerank } from "../../src/services/HealthProber.ts"
import { rerankAdapters } from "../../src/upstreams/RerankAdapter.ts"

const perSearch = { perSearch: toFixed(0.002), free: false }
const byTokens = { input: toFixed(2.5), output: toFixed(10), free: false }

Deno.test("probesRerank: by the channel type and the model's price", () => {
  strictEqual(probesRerank(rerankAdapters.cohere, perSearch), true)
  strictEqual(probesRerank(rerankAdapters.cohere, byTokens), false, "a cohere chat model")
  strictEqual(probesRerank(rerankAdapters.cohere, undefined), true, "an unpriced model on a rerank type")
  strictEqual(probesRerank(rerankAdapters.jina, perSearch), true)
  strictEqual(probesRerank(rerankAdapters.jina, { input: toFixed(0.02), free: false }), true, "Jina bills by tokens")
  strictEqual(probesRerank(rerankAdapters.openai, perSearch), false, "openai channels do not rerank")
  strictEqual(probesRerank(rerankAdapters.cohere, { free: true }), true)
})
