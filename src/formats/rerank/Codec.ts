/**
 * Rerank: the public request and answer (Cohere's v2 shape,
 * docs.cohere.com/v2/reference/rerank, with v1's `return_documents` and
 * object documents kept for the clients that send them) and the two upstream
 * wires:
 *
 * - `cohere`: `POST /v2/rerank` `{model, query, documents: string[], top_n,
 *   max_tokens_per_doc}` → `{id, results: [{index, relevance_score}], meta:
 *   {billed_units: {search_units}}}`; object documents are sent as their JSON
 *   text, as the AI SDK's Cohere provider does (`@ai-sdk/cohere`,
 *   `cohere-reranking-model.ts`).
 * - `jina`: `POST /v1/rerank` `{model, query, documents, top_n,
 *   return_documents}` → `{model, results: [{index, relevance_score,
 *   document?}], usage: {total_tokens}}` (jina.ai/reranker, "API"); object
 *   documents with a `text` field go as that text.
 *
 * A search unit is Cohere's: one query with up to 100 documents, a document
 * longer than 500 tokens (with the query) counting once per 500-token chunk
 * (docs.cohere.com/docs/rerank-overview, "Pricing").
 *
 * @since 0.1.0
 */
import { Result } from "effect"
import { utf8Length } from "../../canonical/Estimate.ts"
import { safeVendorText } from "../../domain/Redact.ts"
import { InvalidRequest, UpstreamFailed, type UpstreamFailureKind } from "../../errors/GatewayError.ts"
import { classifyOpenAiError } from "../openai/shared/ErrorBody.ts"
import type { Decoded } from "../shared/Decoded.ts"

/** A document: text, or an object (fields the caller chose). @category models */
export type RerankDocument = string | Readonly<Record<string, unknown>>

/** A checked rerank request. @category models */
export interface RerankRequest {
  readonly model: string
  readonly query: string
  readonly documents: ReadonlyArray<RerankDocument>
  /** How many results to return (default all). */
  readonly topN: number | undefined
  /** Whether each result carries its document (default false, as Cohere v2 answers none). */
  readonly returnDocuments: boolean
  readonly maxTokensPerDoc: number | undefined
}

/** Cohere's limit on documents per request. @category limits */
export const MAX_DOCUMENTS = 10_000

/** The wires that rerank. @category models */
export type RerankWireName = "cohere" | "jina"

/** One ranked document as a wire answered it. @category models */
export interface Ranked {
  readonly index: number
  readonly relevanceScore: number
}

/** A decoded upstream answer. @category models */
export interface RerankAnswer {
  readonly id: string | undefined
  readonly results: ReadonlyArray<Ranked>
  /** Search units the vendor billed (Cohere), if it said. */
  readonly searchUnits: number | undefined
  /** Tokens the vendor counted (Jina), if it said. */
  readonly tokens: number | undefined
}

const invalid = (message: string, param: string) => Result.fail(new InvalidRequest({ message, param }))

/**
 * Checks a `/v1/rerank` or `/v2/rerank` body. Fails with `InvalidRequest`
 * naming the field.
 *
 * @category decoding
 */
export const decodeRerankRequest = (
  body: Record<string, unknown>
): Decoded<RerankRequest> => {
  const { model, query, documents } = body
  if (typeof model !== "string" || model.length === 0) return invalid("`model` must be a non-empty string.", "model")
  if (typeof query !== "string" || query.length === 0) return invalid("`query` must be a non-empty string.", "query")
  if (!Array.isArray(documents) || documents.length === 0) {
    return invalid("`documents` must be a non-empty array of strings or objects.", "documents")
  }
  if (documents.length > MAX_DOCUMENTS) {
    return invalid(`\`documents\` has ${documents.length} items; at most ${MAX_DOCUMENTS} are allowed.`, "documents")
  }
  for (const [index, document] of documents.entries()) {
    const isObject = typeof document === "object" && document !== null && !Array.isArray(document)
    if (typeof document !== "string" && !isObject) {
      return invalid(`\`documents[${index}]\` must be a string or an object.`, `documents[${index}]`)
    }
  }
  const topN = body.top_n
  if (topN !== undefined && (typeof topN !== "number" || !Number.isInteger(topN) || topN < 1)) {
    return invalid("`top_n` must be a positive integer.", "top_n")
  }
  const returnDocuments = body.return_documents
  if (returnDocuments !== undefined && typeof returnDocuments !== "boolean") {
    return invalid("`return_documents` must be a boolean.", "return_documents")
  }
  const maxTokens = body.max_tokens_per_doc
  if (maxTokens !== undefined && (typeof maxTokens !== "number" || !Number.isInteger(maxTokens) || maxTokens < 1)) {
    return invalid("`max_tokens_per_doc` must be a positive integer.", "max_tokens_per_doc")
  }
  return Result.succeed({
    model,
    query,
    documents: documents as ReadonlyArray<RerankDocument>,
    topN: topN === undefined ? undefined : Math.min(topN, documents.length),
    returnDocuments: returnDocuments ?? false,
    maxTokensPerDoc: maxTokens
  })
}

/** A document's text as a wire that only reads text receives it. */
const textOf = (document: RerankDocument): string => typeof document === "string" ? document : JSON.stringify(document)

/** Tokens per chunk in Cohere's search-unit rule. */
const CHUNK_TOKENS = 500
/** Documents per search unit. */
const DOCUMENTS_PER_UNIT = 100

/**
 * The search units `request` can cost at most: each document's chunks of
 * 500 tokens (query included, tokens estimated as UTF-8 bytes / 2, above any
 * tokenizer's count for text), 100 chunks a unit.
 *
 * @category billing
 */
export const searchUnitsBound = (request: RerankRequest): number => {
  const queryTokens = Math.ceil(utf8Length(request.query) / 2)
  const chunks = request.documents.reduce(
    (sum, document) =>
      sum + Math.max(1, Math.ceil((queryTokens + Math.ceil(utf8Length(textOf(document)) / 2)) / CHUNK_TOKENS)),
    0
  )
  return Math.ceil(chunks / DOCUMENTS_PER_UNIT)
}

/**
 * The search units of `request` when the vendor reports none: one per 100
 * documents.
 *
 * @category billing
 */
export const searchUnitsMeasured = (request: RerankRequest): number =>
  Math.ceil(request.documents.length / DOCUMENTS_PER_UNIT)

/**
 * The upstream body of `request` for `wire`, `model` the upstream's name.
 *
 * @category encoding
 */
export const encodeRerankRequest = (
  wire: RerankWireName,
  request: RerankRequest,
  model: string
): Record<string, unknown> => {
  const common = { model, query: request.query, ...(request.topN === undefined ? {} : { top_n: request.topN }) }
  switch (wire) {
    case "cohere":
      return {
        ...common,
        documents: request.documents.map(textOf),
        ...(request.maxTokensPerDoc === undefined ? {} : { max_tokens_per_doc: request.maxTokensPerDoc })
      }
    case "jina":
      return {
        ...common,
        documents: request.documents.map((document) =>
          typeof document === "string" ? document : typeof document.text === "string" ? document.text : textOf(document)
        ),
        return_documents: false
      }
  }
}

const finiteCount = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isFinite(value) && value >= 0 ? Math.ceil(value) : undefined

/**
 * Reads a wire's 2xx answer; `UpstreamFailed` (`bad-body`) when it is not a
 * ranking of the `count` documents sent.
 *
 * @category decoding
 */
export const decodeRerankAnswer = (
  wire: RerankWireName,
  json: unknown,
  count: number
): RerankAnswer | UpstreamFailed => {
  const bad = (message: string) => new UpstreamFailed({ kind: "bad-body", status: 200, message })
  if (typeof json !== "object" || json === null) return bad("The rerank answer is not an object.")
  const answer = json as Record<string, unknown>
  if (!Array.isArray(answer.results)) return bad("The rerank answer has no results.")
  const results: Array<Ranked> = []
  for (const item of answer.results as ReadonlyArray<unknown>) {
    const result = (typeof item === "object" && item !== null ? item : {}) as Record<string, unknown>
    const index = result.index
    const score = result.relevance_score
    if (
      typeof index !== "number" || !Number.isInteger(index) || index < 0 || index >= count ||
      typeof score !== "number" || !Number.isFinite(score)
    ) return bad("A rerank result has no valid index or score.")
    results.push({ index, relevanceScore: score })
  }
  const meta = (typeof answer.meta === "object" && answer.meta !== null ? answer.meta : {}) as Record<string, unknown>
  const billed =
    (typeof meta.billed_units === "object" && meta.billed_units !== null ? meta.billed_units : {}) as Record<
      string,
      unknown
    >
  const usage = (typeof answer.usage === "object" && answer.usage !== null ? answer.usage : {}) as Record<
    string,
    unknown
  >
  return {
    id: typeof answer.id === "string" ? safeVendorText(answer.id, 100) : undefined,
    results,
    searchUnits: wire === "cohere" ? finiteCount(billed.search_units) : undefined,
    tokens: wire === "jina" ? finiteCount(usage.total_tokens) : undefined
  }
}

/**
 * The caller's answer, in Cohere's v2 shape: `{id, results: [{index,
 * relevance_score, document?}], meta: {api_version: {version: "2"},
 * billed_units: {search_units}}}`, results by falling score, at most
 * `top_n`; `document` (`{text}` for a text document, the object as sent
 * otherwise) when `return_documents` was true.
 *
 * @category encoding
 */
export const encodeRerankAnswer = (
  request: RerankRequest,
  answer: RerankAnswer,
  searchUnits: number,
  id: string
): Record<string, unknown> => {
  const sorted = answer.results.toSorted((a, b) => b.relevanceScore - a.relevanceScore || a.index - b.index)
  const kept = request.topN === undefined ? sorted : sorted.slice(0, request.topN)
  return {
    id: answer.id ?? id,
    results: kept.map((result) => {
      const document = request.documents[result.index]
      return {
        index: result.index,
        relevance_score: result.relevanceScore,
        ...(request.returnDocuments ? { document: typeof document === "string" ? { text: document } : document } : {})
      }
    }),
    meta: { api_version: { version: "2" }, billed_units: { search_units: searchUnits } }
  }
}

/**
 * How `wire`'s error answers are read: both wires' by OpenAI's error-body rule (`classifyOpenAiError`: the
 * failure kind by the status and quota codes, the vendor's message made safe, else one naming the status).
 *
 * @category decoding
 */
export const rerankErrorClassifier = (
  _wire: RerankWireName
): (status: number, text: string) => { readonly kind: UpstreamFailureKind; readonly message: string } =>
  classifyOpenAiError
