/**
 * The rerank format: request checks naming the field, each wire's body,
 * answer decoding that refuses a ranking of documents never sent, the
 * caller's answer sorted and cut to `top_n` with documents when asked, and
 * the search-unit bound never below the measured units (property).
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import {
  decodeRerankAnswer,
  decodeRerankRequest,
  encodeRerankAnswer,
  encodeRerankRequest,
  type RerankRequest,
  searchUnitsBound,
  searchUnitsMeasured
} from "../../../src/formats/rerank/Codec.ts"
import { UpstreamFailed } from "../../../src/errors/GatewayError.ts"

const request = (body: Record<string, unknown>): RerankRequest => {
  const decoded = decodeRerankRequest(body)
  if (Result.isFailure(decoded)) throw new Error(decoded.failure.message)
  return decoded.success
}

Deno.test("decodeRerankRequest names the bad field", () => {
  const cases: ReadonlyArray<[Record<string, unknown>, string]> = [
    [{ query: "q", documents: ["a"] }, "model"],
    [{ model: "m", query: "", documents: ["a"] }, "query"],
    [{ model: "m", query: "q", documents: "a" }, "documents"],
    [{ model: "m", query: "q", documents: ["a", null] }, "documents[1]"],
    [{ model: "m", query: "q", documents: ["a"], top_n: 1.5 }, "top_n"],
    [{ model: "m", query: "q", documents: ["a"], max_tokens_per_doc: 0 }, "max_tokens_per_doc"]
  ]
  for (const [body, param] of cases) {
    const decoded = decodeRerankRequest(body)
    ok(Result.isFailure(decoded))
    strictEqual(decoded.failure.param, param)
  }
  strictEqual(request({ model: "m", query: "q", documents: ["a", "b"], top_n: 9 }).topN, 2)
})

Deno.test("encodeRerankRequest: cohere gets strings (objects as JSON), jina texts and return_documents false", () => {
  const checked = request({ model: "m", query: "q", documents: ["a", { text: "b", id: 1 }], top_n: 1 })
  deepStrictEqual(encodeRerankRequest("cohere", checked, "up"), {
    model: "up",
    query: "q",
    top_n: 1,
    documents: ["a", '{"text":"b","id":1}']
  })
  deepStrictEqual(encodeRerankRequest("jina", checked, "up"), {
    model: "up",
    query: "q",
    top_n: 1,
    documents: ["a", "b"],
    return_documents: false
  })
})

Deno.test("decodeRerankAnswer refuses an index outside the documents sent; reads Cohere's units and Jina's tokens", () => {
  ok(decodeRerankAnswer("cohere", { results: [{ index: 2, relevance_score: 0.5 }] }, 2) instanceof UpstreamFailed)
  ok(decodeRerankAnswer("cohere", { results: [{ index: 0 }] }, 2) instanceof UpstreamFailed)
  ok(decodeRerankAnswer("jina", "no", 2) instanceof UpstreamFailed)
  const cohere = decodeRerankAnswer("cohere", {
    id: "x",
    results: [{ index: 1, relevance_score: 0.2 }],
    meta: { billed_units: { search_units: 3 } }
  }, 2)
  ok(!(cohere instanceof UpstreamFailed))
  strictEqual(cohere.searchUnits, 3)
  const jina = decodeRerankAnswer("jina", { results: [], usage: { total_tokens: 40 } }, 2)
  ok(!(jina instanceof UpstreamFailed))
  strictEqual(jina.tokens, 40)
  strictEqual(jina.searchUnits, undefined)
})

Deno.test("encodeRerankAnswer sorts by score, keeps top_n and adds documents when asked", () => {
  const checked = request({
    model: "m",
    query: "q",
    documents: ["a", { text: "b" }, "c"],
    top_n: 2,
    return_documents: true
  })
  const body = encodeRerankAnswer(
    checked,
    {
      id: undefined,
      results: [{ index: 0, relevanceScore: 0.1 }, { index: 1, relevanceScore: 0.9 }, {
        index: 2,
        relevanceScore: 0.5
      }],
      searchUnits: undefined,
      tokens: undefined
    },
    1,
    "id-1"
  )
  deepStrictEqual(body, {
    id: "id-1",
    results: [
      { index: 1, relevance_score: 0.9, document: { text: "b" } },
      { index: 2, relevance_score: 0.5, document: { text: "c" } }
    ],
    meta: { api_version: { version: "2" }, billed_units: { search_units: 1 } }
  })
})

Deno.test("searchUnitsBound is never below the measured units (property)", () => {
  fc.assert(
    fc.property(fc.string({ minLength: 1 }), fc.array(fc.string(), { minLength: 1, maxLength: 300 }), (q, docs) => {
      const checked = request({ model: "m", query: q, documents: docs })
      ok(searchUnitsBound(checked) >= searchUnitsMeasured(checked))
    })
  )
})
