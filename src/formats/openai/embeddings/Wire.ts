/**
 * OpenAI's embeddings format, `POST /v1/embeddings`
 * (platform.openai.com/docs/api-reference/embeddings/create; the `openai`
 * SDK's `EmbeddingCreateParams` and `CreateEmbeddingResponse`): the request
 * `{model, input, dimensions?, encoding_format?, user?}` where `input` is a
 * string, an array of strings, an array of token ids, or an array of token
 * arrays (at most 2,048 inputs, none empty); the answer `{object: "list",
 * data: [{object: "embedding", index, embedding}], model, usage:
 * {prompt_tokens, total_tokens}}`, each `embedding` an array of floats or,
 * with `encoding_format: "base64"`, Base64 of little-endian float32s.
 *
 * @since 0.1.0
 */
import { Result, Schema } from "effect"
import type { EmbeddingInput, EmbeddingRequest, EmbeddingResponse } from "../../../canonical/Embedding.ts"
import type { Usage } from "../../../canonical/Usage.ts"
import { InvalidRequest, UpstreamFailed } from "../../../errors/GatewayError.ts"
import type { Decoded } from "../../Format.ts"
import { classifyOpenAiError } from "../shared/ErrorBody.ts"
import { invalidAt, makeWireDecoder } from "../../shared/WireDecode.ts"
import type { CallerEmbeddingWire } from "../../embeddings/EmbeddingWire.ts"
import { decodeFloat32Base64, encodeFloat32Base64 } from "../../embeddings/Float32Base64.ts"

/**
 * The most inputs one request may carry: "any array must be 2048 dimensions or
 * less" (`EmbeddingCreateParams.input` in the `openai` SDK).
 *
 * @category constants
 */
export const OPENAI_MAX_EMBEDDING_INPUTS = 2048

const Body = Schema.Struct({
  model: Schema.String,
  input: Schema.Unknown,
  dimensions: Schema.optional(Schema.NullOr(Schema.Int)),
  encoding_format: Schema.optional(Schema.NullOr(Schema.Literals(["float", "base64"]))),
  user: Schema.optional(Schema.NullOr(Schema.String))
})
const decodeBody = makeWireDecoder(Body)

const isTokenId = (value: unknown): value is number =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= 0

/** `input` as canonical inputs, or the first thing wrong with it (named by its path). */
const inputsOf = (input: unknown): Decoded<ReadonlyArray<EmbeddingInput>> => {
  const fail = (path: ReadonlyArray<PropertyKey>, detail: string) => Result.fail(invalidAt(path, detail))
  if (input === undefined || input === null) {
    return Result.fail(new InvalidRequest({ message: "input is missing.", param: "input" }))
  }
  if (typeof input === "string") {
    return input.length === 0
      ? fail(["input"], "Expected a non-empty string.")
      : Result.succeed([{ type: "text", text: input }])
  }
  if (!Array.isArray(input)) {
    return fail(["input"], "Expected a string, an array of strings, an array of token ids or an array of token arrays.")
  }
  if (input.length === 0) return fail(["input"], "Expected at least one input.")
  // An array of token ids is one input (its length is the upstream's to judge, against the model's token limit).
  if (typeof input[0] === "number") {
    const bad = input.findIndex((item) => !isTokenId(item))
    return bad === -1
      ? Result.succeed([{ type: "tokens", tokens: input as Array<number> }])
      : fail(["input", bad], "Expected a token id (a non-negative integer).")
  }
  if (input.length > OPENAI_MAX_EMBEDDING_INPUTS) {
    return fail(
      ["input"],
      `Expected at most ${OPENAI_MAX_EMBEDDING_INPUTS} inputs in one request; this one has ${input.length}.`
    )
  }
  const inputs: Array<EmbeddingInput> = []
  const kind = Array.isArray(input[0]) ? "tokens" : "text"
  for (let index = 0; index < input.length; index++) {
    const item: unknown = input[index]
    if (kind === "text") {
      if (typeof item !== "string") return fail(["input", index], "Expected a string, as the first input is.")
      if (item.length === 0) return fail(["input", index], "Expected a non-empty string.")
      inputs.push({ type: "text", text: item })
    } else {
      if (!Array.isArray(item)) return fail(["input", index], "Expected an array of token ids, as the first input is.")
      if (item.length === 0) return fail(["input", index], "Expected at least one token id.")
      const bad = item.findIndex((token) => !isTokenId(token))
      if (bad !== -1) return fail(["input", index, bad], "Expected a token id (a non-negative integer).")
      inputs.push({ type: "tokens", tokens: item as Array<number> })
    }
  }
  return Result.succeed(inputs)
}

/**
 * A caller's `/v1/embeddings` body as a canonical request, and whether it asked
 * for Base64 vectors. Fails with `InvalidRequest` naming the field: `model`
 * or `input` missing, an empty or ill-typed input, more than 2,048 inputs, a
 * `dimensions` below 1, an `encoding_format` other than `float` or `base64`.
 *
 * @category decoding
 */
export const decodeOpenAiEmbeddingRequest = (
  raw: Record<string, unknown>
): Decoded<{ readonly request: EmbeddingRequest; readonly base64: boolean }> => {
  const body = decodeBody(raw)
  if (Result.isFailure(body)) return Result.fail(body.failure)
  const inputs = inputsOf(raw.input)
  if (Result.isFailure(inputs)) return Result.fail(inputs.failure)
  const dimensions = body.success.dimensions ?? undefined
  if (dimensions !== undefined && dimensions < 1) {
    return Result.fail(invalidAt(["dimensions"], "Expected an integer of at least 1."))
  }
  return Result.succeed({
    request: { model: body.success.model, inputs: inputs.success, dimensions, user: body.success.user ?? undefined },
    base64: body.success.encoding_format === "base64"
  })
}

/**
 * The caller's answer: one `embedding` object per vector (floats, or Base64 of
 * little-endian float32s when `base64`), `model` as the caller named it, and
 * `usage` with `promptTokens` (the upstream's count, or the gateway's estimate
 * when it reported none).
 *
 * @category encoding
 */
export const encodeOpenAiEmbeddings = (
  vectors: ReadonlyArray<ReadonlyArray<number>>,
  promptTokens: number,
  model: string,
  base64: boolean
): Record<string, unknown> => ({
  object: "list",
  data: vectors.map((vector, index) => ({
    object: "embedding",
    index,
    embedding: base64 ? encodeFloat32Base64(vector) : vector
  })),
  model,
  usage: { prompt_tokens: promptTokens, total_tokens: promptTokens }
})

const isFiniteNumber = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value)

/** A vector as the answer carries it: an array of finite numbers, or Base64 float32s. */
const vectorOf = (value: unknown): ReadonlyArray<number> | undefined => {
  if (typeof value === "string") return decodeFloat32Base64(value)
  return Array.isArray(value) && value.every(isFiniteNumber) ? value : undefined
}

const badBody = (message: string) => new UpstreamFailed({ kind: "bad-body", status: 200, message })

/**
 * An upstream's embeddings answer: `data[]` holding exactly `count` vectors
 * (put in `index` order when every item has a distinct in-range `index`), and
 * `usage.prompt_tokens` when it is a non-negative integer.
 *
 * @category decoding
 */
export const decodeOpenAiEmbeddings = (json: unknown, count: number): EmbeddingResponse | UpstreamFailed => {
  if (typeof json !== "object" || json === null || Array.isArray(json)) return badBody("Not an embeddings answer.")
  const record = json as Record<string, unknown>
  const data = record.data
  if (!Array.isArray(data) || data.length !== count) {
    return badBody(`Expected ${count} embeddings in the answer.`)
  }
  const vectors = new Array<ReadonlyArray<number>>(count)
  const byIndex = data.every((item, _, all) =>
    typeof item === "object" && item !== null && Number.isSafeInteger(item.index) && item.index >= 0 &&
    item.index < all.length
  )
  for (let position = 0; position < data.length; position++) {
    const item: unknown = data[position]
    const vector = typeof item === "object" && item !== null
      ? vectorOf((item as Record<string, unknown>).embedding)
      : undefined
    if (vector === undefined) return badBody("An embedding in the answer is not a vector.")
    const slot = byIndex ? (item as { index: number }).index : position
    if (vectors[slot] !== undefined) return badBody("The answer repeats an embedding index.")
    vectors[slot] = vector
  }
  return { vectors, usage: usageOf(record) }
}

/** `usage.prompt_tokens` of an answer, when it is a non-negative integer. */
const usageOf = (record: Record<string, unknown>): Usage | undefined => {
  const usage = record.usage
  const prompt = typeof usage === "object" && usage !== null
    ? (usage as Record<string, unknown>).prompt_tokens
    : undefined
  return Number.isSafeInteger(prompt) && (prompt as number) >= 0
    ? { inputTokens: prompt as number, outputTokens: 0 }
    : undefined
}

/**
 * A passthrough answer's usage, its vectors left as sent: `data[]` must hold
 * `count` items.
 *
 * @category decoding
 */
export const openAiEmbeddingsUsage = (json: unknown, count: number): Usage | undefined | UpstreamFailed => {
  if (typeof json !== "object" || json === null || Array.isArray(json)) return badBody("Not an embeddings answer.")
  const record = json as Record<string, unknown>
  if (!Array.isArray(record.data) || record.data.length !== count) {
    return badBody(`Expected ${count} embeddings in the answer.`)
  }
  return usageOf(record)
}

/**
 * The OpenAI embeddings wire: one call carries up to 2,048 inputs; the
 * translated body asks for `float` vectors (every OpenAI-compatible upstream
 * has them); a same-format body is forwarded with only the model mapped and its
 * answer passed back as received.
 *
 * @category formats
 */
export const openAiEmbeddingWire: CallerEmbeddingWire = {
  name: "openai",
  maxInputs: OPENAI_MAX_EMBEDDING_INPUTS,
  acceptsTokens: true,
  encodeRequest: (request, model) => {
    const allTokens = request.inputs.every((input) => input.type === "tokens")
    const body: Record<string, unknown> = {
      model,
      input: allTokens
        ? request.inputs.map((input) => input.type === "tokens" ? input.tokens : [])
        : request.inputs.map((input) => input.type === "text" ? input.text : ""),
      encoding_format: "float"
    }
    if (request.dimensions !== undefined) body.dimensions = request.dimensions
    if (request.user !== undefined) body.user = request.user
    return body
  },
  passthroughBody: (raw, _inbound, model) => ({ ...raw, model }),
  decodeResponse: decodeOpenAiEmbeddings,
  passthroughUsage: openAiEmbeddingsUsage,
  passthroughAnswer: (text) => text,
  classifyError: classifyOpenAiError
}
