/**
 * The emulator's embedding routes: OpenAI `POST /v1/embeddings`
 * (platform.openai.com/docs/api-reference/embeddings) and generate-content
 * `:embedContent` / `:batchEmbedContents` (ai.google.dev/api/embeddings), each
 * validating the fields its vendor validates and answering deterministic
 * vectors: `embeddingVector(model, input, dimensions)`, a unit vector seeded by
 * a hash of the model and the input, its values float32-exact (so Base64
 * float32 and JSON numbers carry the same values). Tests compute the expected
 * vectors with the same function.
 *
 * OpenAI reports `usage.prompt_tokens` (per text `max(1, ceil(characters / 4))`,
 * per token array its length); generate-content reports no usage.
 *
 * @since 0.1.0
 */
import { vendorErrorBody } from "./Faults.ts"
import { jsonReply, type Reply } from "./Sse.ts"
import { arrayOr, isObject, type JsonObject, objectOr, type RouteContext } from "./Wire.ts"

/** Seeds a 32-bit state from text (FNV-1a). */
const seedOf = (text: string): number => {
  let hash = 0x811c9dc5
  for (let index = 0; index < text.length; index++) {
    hash ^= text.charCodeAt(index)
    hash = Math.imul(hash, 0x01000193)
  }
  return hash >>> 0
}

/**
 * The vector the emulator answers for `input` (a text, or token ids) on
 * `model` with `dimensions` values: uniform values from a generator seeded by
 * (model, input), scaled to unit length, each rounded to float32. Same
 * arguments, same vector.
 *
 * @category answers
 */
export const embeddingVector = (
  model: string,
  input: string | ReadonlyArray<number>,
  dimensions: number
): Array<number> => {
  let state = seedOf(`${model}\u0000${typeof input === "string" ? `text:${input}` : `tokens:${input.join(",")}`}`)
  const raw = new Array<number>(dimensions)
  let norm = 0
  for (let index = 0; index < dimensions; index++) {
    // mulberry32
    state = (state + 0x6d2b79f5) | 0
    let t = Math.imul(state ^ (state >>> 15), 1 | state)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    const value = ((t ^ (t >>> 14)) >>> 0) / 4294967296 * 2 - 1
    raw[index] = value
    norm += value * value
  }
  const scale = norm === 0 ? 0 : 1 / Math.sqrt(norm)
  return raw.map((value) => Math.fround(value * scale))
}

/**
 * The vector length a model answers when none is asked: OpenAI
 * `text-embedding-3-large` 3072, other OpenAI models 1536; generate-content
 * `embedding-001` and `text-embedding-004` 768, other models 3072
 * (`gemini-embedding-001`).
 *
 * @category answers
 */
export const defaultDimensions = (vendor: "openai" | "gemini", model: string): number =>
  vendor === "openai"
    ? (model.includes("3-large") ? 3072 : 1536)
    : (/(^|\/)(embedding-001|text-embedding-004)$/.test(model) ? 768 : 3072)

/** The most inputs of one OpenAI request, the most tokens of one input, and the most requests of one batch. */
const OPENAI_MAX_INPUTS = 2048
const OPENAI_MAX_INPUT_TOKENS = 8192
const GEMINI_MAX_REQUESTS = 100

const GEMINI_TASK_TYPES: ReadonlySet<string> = new Set([
  "TASK_TYPE_UNSPECIFIED",
  "RETRIEVAL_QUERY",
  "RETRIEVAL_DOCUMENT",
  "SEMANTIC_SIMILARITY",
  "CLASSIFICATION",
  "CLUSTERING",
  "QUESTION_ANSWERING",
  "FACT_VERIFICATION",
  "CODE_RETRIEVAL_QUERY"
])

const openAiError = (message: string, param: string | null): Reply =>
  jsonReply({ error: { message, type: "invalid_request_error", param, code: null } }, 400)

const isTokenId = (value: unknown): boolean => typeof value === "number" && Number.isSafeInteger(value) && value >= 0

/** OpenAI's `input` as a list of texts or token arrays, or `undefined` when the API refuses it. */
const openAiInputs = (input: unknown): ReadonlyArray<string | ReadonlyArray<number>> | undefined => {
  if (typeof input === "string") return input.length > 0 ? [input] : undefined
  if (!Array.isArray(input) || input.length === 0) return undefined
  if (input.every(isTokenId)) return [input as Array<number>]
  if (input.length > OPENAI_MAX_INPUTS) return undefined
  if (input.every((item) => typeof item === "string" && item.length > 0)) return input as Array<string>
  if (input.every((item) => Array.isArray(item) && item.length > 0 && item.every(isTokenId))) {
    return input as Array<Array<number>>
  }
  return undefined
}

/**
 * `POST /v1/embeddings`: `model` and a valid `input` required (a non-empty
 * string, a non-empty array of token ids, or a non-empty array of at most
 * 2,048 non-empty strings or token arrays; no input over 8,192 tokens, a text
 * counted as `ceil(characters / 4)`); `dimensions` an integer ≥ 1 and only on `text-embedding-3`
 * models; `encoding_format` `float` (default) or `base64` (little-endian
 * float32). Refusals are 400s in OpenAI's error shape.
 *
 * @category routes
 */
export const openAiEmbeddings = (context: RouteContext): Reply => {
  const { body } = context
  if (typeof body.model !== "string" || body.model.length === 0) {
    return openAiError("you must provide a model parameter", null)
  }
  if (body.input === undefined) return openAiError("'input' is a required property", "input")
  const inputs = openAiInputs(body.input)
  if (inputs === undefined) {
    return openAiError(
      "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.",
      "input"
    )
  }
  const format = body.encoding_format ?? "float"
  if (format !== "float" && format !== "base64") {
    return openAiError(
      `Invalid value for 'encoding_format': '${String(format)}'. Expected 'float' or 'base64'.`,
      "encoding_format"
    )
  }
  let dimensions = defaultDimensions("openai", body.model)
  if (body.dimensions !== undefined && body.dimensions !== null) {
    if (!body.model.startsWith("text-embedding-3")) {
      return openAiError("This model does not support specifying dimensions.", "dimensions")
    }
    if (typeof body.dimensions !== "number" || !Number.isSafeInteger(body.dimensions) || body.dimensions < 1) {
      return openAiError(
        `Invalid value for 'dimensions' = ${JSON.stringify(body.dimensions)}. Must be at least 1.`,
        "dimensions"
      )
    }
    dimensions = body.dimensions
  }
  const model = body.model
  const tokensOf = (input: string | ReadonlyArray<number>) =>
    typeof input === "string" ? Math.max(1, Math.ceil(input.length / 4)) : input.length
  const tooLong = inputs.find((input) => tokensOf(input) > OPENAI_MAX_INPUT_TOKENS)
  if (tooLong !== undefined) {
    return openAiError(
      `This model's maximum context length is ${OPENAI_MAX_INPUT_TOKENS} tokens, however you requested ${
        tokensOf(tooLong)
      } tokens in your prompt. Please reduce your prompt.`,
      null
    )
  }
  let promptTokens = 0
  const data = inputs.map((input, index) => {
    promptTokens += tokensOf(input)
    const vector = embeddingVector(model, input, dimensions)
    return { object: "embedding", index, embedding: format === "base64" ? float32Base64(vector) : vector }
  })
  return jsonReply({ object: "list", data, model, usage: { prompt_tokens: promptTokens, total_tokens: promptTokens } })
}

/** Little-endian float32 bytes as Base64 (what OpenAI's `base64` encoding is). */
const float32Base64 = (vector: ReadonlyArray<number>): string => {
  const bytes = new Uint8Array(vector.length * 4)
  const view = new DataView(bytes.buffer)
  vector.forEach((value, index) => view.setFloat32(index * 4, value, true))
  let binary = ""
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary)
}

const geminiError = (message: string): Reply => jsonReply(vendorErrorBody("gemini", 400, message), 400)

/** One `EmbedContentRequest` at `where`: its vector, or the API's refusal. */
const geminiEmbedOne = (
  request: JsonObject,
  where: string,
  model: string,
  batch: boolean
): { readonly values: Array<number> } | Reply => {
  if (batch && request.model !== `models/${model}`) {
    return geminiError(
      `* ${where}.model: model must be "models/${model}", the model of the batch request (got ${
        JSON.stringify(request.model ?? null)
      })`
    )
  }
  if (!isObject(request.content)) return geminiError(`* ${where}.content: content is not specified`)
  const texts = arrayOr(objectOr(request.content).parts).flatMap((part) =>
    isObject(part) && typeof part.text === "string" ? [part.text] : []
  )
  const text = texts.join("\n")
  if (text.length === 0) return geminiError(`* ${where}.content: contents must not be empty`)
  if (request.taskType !== undefined && !GEMINI_TASK_TYPES.has(String(request.taskType))) {
    return geminiError(
      `Invalid value at '${where === "EmbedContentRequest" ? "" : `${where}.`}task_type', "${String(request.taskType)}"`
    )
  }
  let dimensions = defaultDimensions("gemini", model)
  if (request.outputDimensionality !== undefined) {
    const asked = request.outputDimensionality
    if (typeof asked !== "number" || !Number.isSafeInteger(asked) || asked < 1) {
      return geminiError(`* ${where}.output_dimensionality: must be a positive integer`)
    }
    dimensions = asked
  }
  return { values: embeddingVector(model, text, dimensions) }
}

/**
 * `:embedContent` (one request, `{embedding: {values}}`) and
 * `:batchEmbedContents` (`requests[]`, at most 100, each naming
 * `models/{model}` of the path; `{embeddings: [{values}]}`): `content` with
 * non-empty text, a known `taskType`, `outputDimensionality` ≥ 1. Refusals are
 * 400 INVALID_ARGUMENT in Google's error shape.
 *
 * @category routes
 */
export const geminiEmbed = (context: RouteContext): Reply => {
  const model = context.model
  if (!context.path.endsWith(":batchEmbedContents")) {
    const one = geminiEmbedOne(context.body, "EmbedContentRequest", model, false)
    return "values" in one ? jsonReply({ embedding: { values: one.values } }) : one
  }
  const requests = context.body.requests
  if (!Array.isArray(requests) || requests.length === 0) {
    return geminiError("* BatchEmbedContentsRequest.requests: requests is not specified")
  }
  if (requests.length > GEMINI_MAX_REQUESTS) {
    return geminiError("* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch")
  }
  const embeddings: Array<{ readonly values: Array<number> }> = []
  for (let index = 0; index < requests.length; index++) {
    const one = geminiEmbedOne(objectOr(requests[index]), `BatchEmbedContentsRequest.requests[${index}]`, model, true)
    if (!("values" in one)) return one
    embeddings.push(one)
  }
  return jsonReply({ embeddings })
}
