/**
 * The rerank APIs, as the emulator speaks them:
 *
 * - Cohere `POST /v2/rerank` (docs.cohere.com/v2/reference/rerank; the AI
 *   SDK's Cohere provider sends it): `model` (`rerank-*`), `query`,
 *   `documents` (strings, 1–10,000), `top_n` ≥ 1, `max_tokens_per_doc`;
 *   answers `{id, results: [{index, relevance_score}], meta: {api_version,
 *   billed_units: {search_units}}}`, errors as `{id, message}` (400, or 404
 *   for an unknown model). A search unit is 100 chunks of 500 tokens (tokens
 *   here: characters / 4).
 * - Jina `POST /v1/rerank` (jina.ai/reranker, "API"): `model`
 *   (`jina-reranker-*`), `query`, `documents` (strings or `{text}`), `top_n`,
 *   `return_documents` (default true); answers `{model, results: [{index,
 *   relevance_score, document?: {text}}], usage: {total_tokens}}`, errors as
 *   FastAPI's 422 `{detail: [{loc, msg, type}]}`.
 *
 * Scores are `relevanceScore(query, document)`, results by falling score.
 *
 * @since 0.1.0
 */
import { jsonReply, type Reply } from "./Sse.ts"
import { isObject, type RouteContext, stringOr } from "./Wire.ts"

const words = (text: string): ReadonlySet<string> => new Set(text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])

/**
 * The emulator's relevance of `document` to `query`: the share of the
 * query's words the document has, in [0, 1], with a small length penalty so
 * ties between documents are rare. @category rerank
 */
export const relevanceScore = (query: string, document: string): number => {
  const asked = words(query)
  const present = words(document)
  if (asked.size === 0) return 0
  let shared = 0
  for (const word of asked) if (present.has(word)) shared++
  return Math.round((shared / asked.size) * 0.9 * 1e6) / 1e6 + Math.round(0.1 / (1 + present.size) * 1e6) / 1e6
}

/** Search units as Cohere counts them: 100 chunks a unit, a document (with the query) one chunk per 500 tokens. */
export const cohereSearchUnits = (query: string, documents: ReadonlyArray<string>): number => {
  const queryTokens = Math.ceil(query.length / 4)
  const chunks = documents.reduce(
    (sum, document) => sum + Math.max(1, Math.ceil((queryTokens + Math.ceil(document.length / 4)) / 500)),
    0
  )
  return Math.ceil(chunks / 100)
}

const ranked = (query: string, documents: ReadonlyArray<string>, topN: number | undefined) =>
  documents.map((document, index) => ({ index, relevance_score: relevanceScore(query, document) }))
    .sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index)
    .slice(0, topN ?? documents.length)

const cohereBad = (context: RouteContext, message: string, status = 400): Reply =>
  jsonReply({ id: context.ids.next("cohere-"), message }, status)

/** Cohere `POST /v2/rerank`. @category routes */
export const cohereRerank = (context: RouteContext): Reply => {
  const body = context.body
  const model = stringOr(body.model)
  if (model === undefined) return cohereBad(context, "invalid request: model must be specified.")
  if (!model.startsWith("rerank-")) {
    return cohereBad(context, `model '${model}' not found, make sure the correct model ID was used.`, 404)
  }
  const query = body.query
  if (typeof query !== "string" || query.length === 0) {
    return cohereBad(context, "invalid request: query must not be empty.")
  }
  const documents = body.documents
  if (!Array.isArray(documents) || documents.length === 0) {
    return cohereBad(context, "invalid request: list of documents must not be empty.")
  }
  if (!documents.every((document) => typeof document === "string")) {
    return cohereBad(context, "invalid request: documents must be a list of strings.")
  }
  if (documents.length > 10_000) return cohereBad(context, "invalid request: too many documents (max 10000).")
  const topN = body.top_n
  if (topN !== undefined && (typeof topN !== "number" || !Number.isInteger(topN) || topN < 1)) {
    return cohereBad(context, "invalid request: top_n must be greater than 0.")
  }
  return jsonReply({
    id: context.ids.next("rerank-"),
    results: ranked(query, documents as ReadonlyArray<string>, topN as number | undefined),
    meta: {
      api_version: { version: "2" },
      billed_units: { search_units: cohereSearchUnits(query, documents as ReadonlyArray<string>) }
    }
  })
}

const jinaBad = (field: string, msg: string): Reply =>
  jsonReply({ detail: [{ loc: ["body", field], msg, type: "value_error" }] }, 422)

/** Jina `POST /v1/rerank`. @category routes */
export const jinaRerank = (context: RouteContext): Reply => {
  const body = context.body
  const model = stringOr(body.model)
  if (model === undefined || !model.startsWith("jina-")) return jinaBad("model", `Invalid model: ${String(model)}`)
  const query = body.query
  if (typeof query !== "string" || query.length === 0) return jinaBad("query", "Field required")
  const documents = body.documents
  if (!Array.isArray(documents) || documents.length === 0) return jinaBad("documents", "Field required")
  const texts: Array<string> = []
  for (const document of documents) {
    if (typeof document === "string") texts.push(document)
    else if (isObject(document) && typeof document.text === "string") texts.push(document.text)
    else return jinaBad("documents", "Input should be a valid string or a text document")
  }
  const topN = body.top_n
  if (topN !== undefined && (typeof topN !== "number" || !Number.isInteger(topN) || topN < 1)) {
    return jinaBad("top_n", "Input should be greater than 0")
  }
  const returnDocuments = body.return_documents ?? true
  const totalTokens = texts.reduce((sum, text) => sum + Math.ceil((query.length + text.length) / 4), 0)
  return jsonReply({
    model,
    results: ranked(query, texts, topN as number | undefined).map((result) => ({
      ...result,
      ...(returnDocuments === true ? { document: { text: texts[result.index] } } : {})
    })),
    usage: { total_tokens: totalTokens }
  })
}
