/**
 * Vertex AI's text embeddings (`POST …/publishers/google/models/{model}:predict`,
 * cloud.google.com/vertex-ai/generative-ai/docs/model-reference/text-embeddings-api): the body is
 * `{instances: [{content, task_type?, title?}], parameters: {outputDimensionality?, autoTruncate?}}` and the answer
 * `{predictions: [{embeddings: {values: [number], statistics: {token_count, truncated}}}]}`, one prediction per
 * instance in order (the same fields `@google/genai` writes and reads in Vertex mode for `models.embedContent`,
 * `embedContentParametersPrivateToVertex` / `embedContentResponseFromVertex`). The tokens billed are the sum of the
 * predictions' `statistics.token_count`. At most `VERTEX_MAX_INSTANCES` instances a call (the API's limit for the
 * text-embedding models). Errors are Google's `google.rpc.Status` shape, as generate-content's.
 *
 * @since 0.1.0
 */
import type { EmbeddingResponse } from "../../canonical/Embedding.ts"
import type { Usage } from "../../canonical/Usage.ts"
import { UpstreamFailed } from "../../errors/GatewayError.ts"
import type { EmbeddingWire } from "../embeddings/EmbeddingWire.ts"
import { classifyGeminiError } from "../gemini/generate-content/ErrorBody.ts"

/**
 * The most instances one `:predict` call carries ("up to 250 input texts" a request for the text-embedding models,
 * cloud.google.com/vertex-ai/generative-ai/docs/embeddings/get-text-embeddings).
 *
 * @category constants
 */
export const VERTEX_MAX_INSTANCES = 250

const badBody = (message: string) => new UpstreamFailed({ kind: "bad-body", status: 200, message })

const isFiniteNumber = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value)

const objectOf = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : undefined

/** The predictions of an answer holding exactly `count`, or a `bad-body` failure. */
const predictionsOf = (json: unknown, count: number): ReadonlyArray<Record<string, unknown>> | UpstreamFailed => {
  const predictions = objectOf(json)?.predictions
  if (!Array.isArray(predictions) || predictions.length !== count) {
    return badBody(`Expected ${count} predictions in the answer.`)
  }
  const embeddings: Array<Record<string, unknown>> = []
  for (const prediction of predictions) {
    const embedding = objectOf(objectOf(prediction)?.embeddings)
    if (embedding === undefined) return badBody("A prediction holds no embeddings.")
    embeddings.push(embedding)
  }
  return embeddings
}

/** The summed `statistics.token_count` of `embeddings`, or `undefined` when any lacks a non-negative integer one. */
const usageOf = (embeddings: ReadonlyArray<Record<string, unknown>>): Usage | undefined => {
  let tokens = 0
  for (const embedding of embeddings) {
    const count = objectOf(embedding.statistics)?.token_count
    if (!Number.isSafeInteger(count) || (count as number) < 0) return undefined
    tokens += count as number
  }
  return { inputTokens: tokens, outputTokens: 0 }
}

/**
 * A `:predict` answer for `count` instances: one vector per instance, and the summed token counts as usage.
 *
 * @category decoding
 */
export const decodeVertexEmbeddings = (json: unknown, count: number): EmbeddingResponse | UpstreamFailed => {
  const embeddings = predictionsOf(json, count)
  if (embeddings instanceof UpstreamFailed) return embeddings
  const vectors: Array<ReadonlyArray<number>> = []
  for (const embedding of embeddings) {
    const values = embedding.values
    if (!Array.isArray(values) || !values.every(isFiniteNumber)) return badBody("An embedding is not a vector.")
    vectors.push(values)
  }
  return { vectors, usage: usageOf(embeddings) }
}

/**
 * The `:predict` embeddings wire. No caller speaks it (the gateway's embedding routes are OpenAI's and
 * generate-content's), so a request always reaches it translated; `passthroughBody` would forward a body as given,
 * the model being in the path.
 *
 * @category formats
 */
export const vertexEmbeddingWire: EmbeddingWire = {
  name: "vertex",
  maxInputs: VERTEX_MAX_INSTANCES,
  acceptsTokens: false,
  encodeRequest: (request) => ({
    instances: request.inputs.map((input) => {
      const one: Record<string, unknown> = { content: input.type === "text" ? input.text : "" }
      if (input.type === "text" && input.taskType !== undefined) one.task_type = input.taskType
      if (input.type === "text" && input.title !== undefined) one.title = input.title
      return one
    }),
    ...(request.dimensions === undefined ? {} : { parameters: { outputDimensionality: request.dimensions } })
  }),
  passthroughBody: (raw) => ({ ...raw }),
  decodeResponse: decodeVertexEmbeddings,
  passthroughUsage: (json, count) => {
    const embeddings = predictionsOf(json, count)
    return embeddings instanceof UpstreamFailed ? embeddings : usageOf(embeddings)
  },
  passthroughAnswer: (text) => text,
  classifyError: classifyGeminiError
}
