/**
 * The generate-content embedding methods (ai.google.dev/api/embeddings):
 * `POST /v1beta/models/{model}:embedContent` takes one `EmbedContentRequest`
 * `{content: {parts: [{text}]}, taskType?, title?, outputDimensionality?}` and
 * answers `{embedding: {values}}`; `:batchEmbedContents` takes `{requests:
 * [EmbedContentRequest & {model: "models/{model}"}]}` (at most 100: the API's
 * "at most 100 requests can be in one batch") and answers `{embeddings:
 * [{values}]}`. Only `parts[].text` is embedded (the API: "Only the
 * parts.text fields will be counted"). No usage is reported; an answer that
 * carries `usageMetadata.promptTokenCount` is read. `@google/genai`'s
 * `models.embedContent` calls `:batchEmbedContents` on the Gemini API, one
 * request per content (`embedContentParametersPrivateToMldev` in its source).
 *
 * @since 0.1.0
 */
import { Result, Schema } from "effect"
import type { EmbeddingInput, EmbeddingRequest, EmbeddingResponse } from "../../../canonical/Embedding.ts"
import type { Usage } from "../../../canonical/Usage.ts"
import { UpstreamFailed } from "../../../errors/GatewayError.ts"
import type { Decoded } from "../../Format.ts"
import { classifyGeminiError } from "../generate-content/ErrorBody.ts"
import { invalidAt, makeWireDecoder } from "../../shared/WireDecode.ts"
import type { CallerEmbeddingWire } from "../../embeddings/EmbeddingWire.ts"

/**
 * The most requests one `:batchEmbedContents` call may carry (the API answers
 * more with 400 "at most 100 requests can be in one batch").
 *
 * @category constants
 */
export const GEMINI_MAX_BATCH_REQUESTS = 100

/**
 * The `TaskType` values of the embeddings API (ai.google.dev/api/embeddings#tasktype).
 *
 * @category constants
 */
export const GEMINI_TASK_TYPES = [
  "TASK_TYPE_UNSPECIFIED",
  "RETRIEVAL_QUERY",
  "RETRIEVAL_DOCUMENT",
  "SEMANTIC_SIMILARITY",
  "CLASSIFICATION",
  "CLUSTERING",
  "QUESTION_ANSWERING",
  "FACT_VERIFICATION",
  "CODE_RETRIEVAL_QUERY"
] as const

const Part = Schema.Struct({ text: Schema.optional(Schema.NullOr(Schema.String)) })
const EmbedRequest = Schema.Struct({
  model: Schema.optional(Schema.NullOr(Schema.String)),
  content: Schema.Struct({ parts: Schema.Array(Part) }),
  taskType: Schema.optional(Schema.NullOr(Schema.Literals(GEMINI_TASK_TYPES))),
  title: Schema.optional(Schema.NullOr(Schema.String)),
  outputDimensionality: Schema.optional(Schema.NullOr(Schema.Int))
})
const decodeEmbedRequest = makeWireDecoder(EmbedRequest)
const Batch = Schema.Struct({ requests: Schema.Array(Schema.Unknown) })
const decodeBatch = makeWireDecoder(Batch)

/**
 * One `EmbedContentRequest` at `prefix` as an input and its dimensionality, or what is wrong with it; in a batch
 * (`model` given) a request that names a model must name the path's.
 */
const requestInput = (
  value: unknown,
  prefix: ReadonlyArray<PropertyKey>,
  model: string | undefined
): Decoded<{ readonly input: EmbeddingInput; readonly dimensions: number | undefined }> => {
  const decoded = decodeEmbedRequest(value, prefix)
  if (Result.isFailure(decoded)) return Result.fail(decoded.failure)
  const { content, taskType, title, outputDimensionality } = decoded.success
  const named = decoded.success.model ?? undefined
  if (model !== undefined && named !== undefined && named !== model && named !== `models/${model}`) {
    return Result.fail(invalidAt([...prefix, "model"], `Expected "models/${model}", the model of the path.`))
  }
  const texts: Array<string> = []
  for (let index = 0; index < content.parts.length; index++) {
    const text = content.parts[index].text
    if (typeof text !== "string") {
      return Result.fail(invalidAt([...prefix, "content", "parts", index], "Only text parts can be embedded."))
    }
    texts.push(text)
  }
  const text = texts.join("\n")
  if (text.length === 0) {
    return Result.fail(invalidAt([...prefix, "content", "parts"], "Expected a part with non-empty text."))
  }
  if (outputDimensionality !== undefined && outputDimensionality !== null && outputDimensionality < 1) {
    return Result.fail(invalidAt([...prefix, "outputDimensionality"], "Expected an integer of at least 1."))
  }
  return Result.succeed({
    input: { type: "text", text, title: title ?? undefined, taskType: taskType ?? undefined },
    dimensions: outputDimensionality ?? undefined
  })
}

/**
 * A caller's `:embedContent` (`batch: false`) or `:batchEmbedContents` body
 * for the path's `model` as a canonical request. Fails with `InvalidRequest`
 * naming the field: no `content` or `requests`, a non-text part, no text, an
 * unknown `taskType`, an `outputDimensionality` below 1, a batch request's
 * `model` other than the path's, more than 100 requests, or requests asking different
 * `outputDimensionality` (the canonical request has one).
 *
 * @category decoding
 */
export const decodeGeminiEmbedRequest = (
  raw: Record<string, unknown>,
  model: string,
  batch: boolean
): Decoded<EmbeddingRequest> => {
  if (!batch) {
    // The path names the model of one `:embedContent`; a `model` in its body is not checked.
    const one = requestInput(raw, [], undefined)
    return Result.map(one, ({ input, dimensions }) => ({ model, inputs: [input], dimensions }))
  }
  const body = decodeBatch(raw)
  if (Result.isFailure(body)) return Result.fail(body.failure)
  const requests = body.success.requests
  if (requests.length === 0) return Result.fail(invalidAt(["requests"], "Expected at least one request."))
  if (requests.length > GEMINI_MAX_BATCH_REQUESTS) {
    return Result.fail(invalidAt(
      ["requests"],
      `At most ${GEMINI_MAX_BATCH_REQUESTS} requests can be in one batch; this one has ${requests.length}.`
    ))
  }
  const inputs: Array<EmbeddingInput> = []
  let dimensions: number | undefined
  for (let index = 0; index < requests.length; index++) {
    const one = requestInput(requests[index], ["requests", index], model)
    if (Result.isFailure(one)) return Result.fail(one.failure)
    if (index > 0 && one.success.dimensions !== dimensions) {
      return Result.fail(invalidAt(
        ["requests", index, "outputDimensionality"],
        "Every request of a batch must ask the same outputDimensionality."
      ))
    }
    dimensions = one.success.dimensions
    inputs.push(one.success.input)
  }
  return Result.succeed({ model, inputs, dimensions })
}

/**
 * The caller's answer: `{embeddings: [{values}]}` for a batch, `{embedding:
 * {values}}` for one content.
 *
 * @category encoding
 */
export const encodeGeminiEmbeddings = (
  vectors: ReadonlyArray<ReadonlyArray<number>>,
  batch: boolean
): Record<string, unknown> =>
  batch ? { embeddings: vectors.map((values) => ({ values })) } : { embedding: { values: vectors[0] ?? [] } }

const badBody = (message: string) => new UpstreamFailed({ kind: "bad-body", status: 200, message })

const isFiniteNumber = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value)

/**
 * An upstream's `:batchEmbedContents` answer: `embeddings[]` holding exactly
 * `count` objects whose `values` are arrays of finite numbers, and
 * `usageMetadata.promptTokenCount` when present.
 *
 * @category decoding
 */
export const decodeGeminiEmbeddings = (json: unknown, count: number): EmbeddingResponse | UpstreamFailed => {
  if (typeof json !== "object" || json === null || Array.isArray(json)) return badBody("Not an embeddings answer.")
  const record = json as Record<string, unknown>
  const embeddings = record.embeddings
  if (!Array.isArray(embeddings) || embeddings.length !== count) {
    return badBody(`Expected ${count} embeddings in the answer.`)
  }
  const vectors: Array<ReadonlyArray<number>> = []
  for (const item of embeddings) {
    const values: unknown = typeof item === "object" && item !== null
      ? (item as Record<string, unknown>).values
      : undefined
    if (!Array.isArray(values) || !values.every(isFiniteNumber)) return badBody("An embedding is not a vector.")
    vectors.push(values)
  }
  return { vectors, usage: usageOf(record) }
}

/** `usageMetadata.promptTokenCount` of an answer, when present and a non-negative integer. */
const usageOf = (record: Record<string, unknown>): Usage | undefined => {
  const metadata = record.usageMetadata
  const prompt = typeof metadata === "object" && metadata !== null
    ? (metadata as Record<string, unknown>).promptTokenCount
    : undefined
  return Number.isSafeInteger(prompt) && (prompt as number) >= 0
    ? { inputTokens: prompt as number, outputTokens: 0 }
    : undefined
}

/**
 * A passthrough answer's usage, its vectors left as sent: `embeddings[]` must
 * hold `count` objects.
 *
 * @category decoding
 */
export const geminiEmbeddingsUsage = (json: unknown, count: number): Usage | undefined | UpstreamFailed => {
  if (typeof json !== "object" || json === null || Array.isArray(json)) return badBody("Not an embeddings answer.")
  const record = json as Record<string, unknown>
  const embeddings = record.embeddings
  if (!Array.isArray(embeddings) || embeddings.length !== count || !embeddings.every(isObject)) {
    return badBody(`Expected ${count} embeddings in the answer.`)
  }
  return usageOf(record)
}

const isObject = (value: unknown): boolean => typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * The generate-content embeddings wire: always `:batchEmbedContents` (one call
 * for up to 100 inputs, each request naming `models/{model}`); a caller's own
 * body keeps its fields, with each request's model mapped (one
 * `:embedContent` body becomes a batch of one, and its answer `{embedding}`
 * again).
 *
 * @category formats
 */
export const geminiEmbeddingWire: CallerEmbeddingWire = {
  name: "gemini",
  maxInputs: GEMINI_MAX_BATCH_REQUESTS,
  acceptsTokens: false,
  encodeRequest: (request, model) => ({
    requests: request.inputs.map((input) => {
      const one: Record<string, unknown> = {
        model: `models/${model}`,
        content: { parts: [{ text: input.type === "text" ? input.text : "" }] }
      }
      if (input.type === "text" && input.taskType !== undefined) one.taskType = input.taskType
      if (input.type === "text" && input.title !== undefined) one.title = input.title
      if (request.dimensions !== undefined) one.outputDimensionality = request.dimensions
      return one
    })
  }),
  passthroughBody: (raw, inbound, model) => {
    const name = `models/${model}`
    if (inbound.format === "gemini" && inbound.batch && Array.isArray(raw.requests)) {
      return {
        ...raw,
        requests: raw.requests.map((one: unknown) =>
          typeof one === "object" && one !== null ? { ...one, model: name } : one
        )
      }
    }
    return { requests: [{ ...raw, model: name }] }
  },
  decodeResponse: decodeGeminiEmbeddings,
  passthroughUsage: geminiEmbeddingsUsage,
  passthroughAnswer: (text, json, inbound) => {
    if (inbound.format !== "gemini" || inbound.batch) return text
    const embeddings = (json as { embeddings: ReadonlyArray<unknown> }).embeddings
    return JSON.stringify({ embedding: embeddings[0] })
  },
  classifyError: classifyGeminiError
}
