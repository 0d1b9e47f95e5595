/**
 * Embeddings on Bedrock through InvokeModel (`POST /model/{modelId}/invoke`), in each model family's own body, chosen
 * by the mapped model id (`EmbeddingAdapter.ts`):
 *
 * - Amazon Titan Text Embeddings (`amazon.titan-embed-text-v2:0`, and v1;
 *   docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-titan-embed-text.html): one text a call,
 *   `{inputText, dimensions?, normalize}` → `{embedding: [float], inputTextTokenCount}`. A batch of inputs is served
 *   by one call per input (at most 4 in flight, `relay/embeddings/EmbeddingAttempt.ts`), its usage the calls' counts added up.
 *   `dimensions` (v2: 1024, 512 or 256) is sent as asked; `normalize: true`, as OpenAI's vectors are normalized.
 * - Cohere Embed (`cohere.embed-english-v3`, `cohere.embed-multilingual-v3`, `cohere.embed-v4:0`;
 *   docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-embed.html): up to 96 texts a call, `{texts,
 *   input_type, output_dimension? (v4)}` → `{embeddings: [[float]] or {float: [[float]]}, id, response_type, texts}`.
 *   `input_type` from the first input's generate-content `taskType` (`RETRIEVAL_QUERY` → `search_query`,
 *   `CLASSIFICATION` → `classification`, `CLUSTERING` → `clustering`, else `search_document`). Its body carries no
 *   token count: the input tokens are InvokeModel's `X-Amzn-Bedrock-Input-Token-Count` answer header (Bedrock sends
 *   the counts of an InvokeModel call in its headers; LiteLLM's Bedrock handler bills from them), and without it the
 *   call is billed by the gateway's prompt estimate (as any embedding answer without usage).
 *
 * Neither is a caller's format (no passthrough); token-array inputs cannot be sent. Errors are Bedrock's
 * (`ErrorBody.ts`).
 *
 * @since 0.1.0
 */
import type { EmbeddingRequest, EmbeddingResponse } from "../../../canonical/Embedding.ts"
import { UpstreamFailed } from "../../../errors/GatewayError.ts"
import type { EmbeddingWire } from "../../embeddings/EmbeddingWire.ts"
import { classifyBedrockError } from "../ErrorBody.ts"

/** Cohere Embed's most texts a call ("maximum number of texts per call is 96", Bedrock user guide). @category constants */
export const COHERE_MAX_TEXTS = 96

const badBody = (message: string) => new UpstreamFailed({ kind: "bad-body", status: 200, message })

const isVector = (value: unknown): value is ReadonlyArray<number> =>
  Array.isArray(value) && value.length > 0 && value.every((item) => typeof item === "number" && Number.isFinite(item))

/**
 * The input tokens InvokeModel reports in its `X-Amzn-Bedrock-Input-Token-Count` answer header (a decimal count), for
 * a body that has none (Cohere's); `undefined` without a whole count there.
 */
const headerUsage = (headers: Readonly<Record<string, string>> | undefined): EmbeddingResponse["usage"] => {
  const text = headers?.["x-amzn-bedrock-input-token-count"]?.trim()
  if (text === undefined || !/^\d{1,9}$/.test(text)) return undefined
  return { inputTokens: Number(text), outputTokens: 0 }
}

const textsOf = (request: EmbeddingRequest): Array<string> =>
  request.inputs.map((input) => input.type === "text" ? input.text : "")

/**
 * Titan Text Embeddings: one input a call.
 *
 * @category formats
 */
export const titanEmbeddingWire: EmbeddingWire = {
  name: "bedrock-titan",
  maxInputs: 1,
  acceptsTokens: false,
  encodeRequest: (request) => ({
    inputText: textsOf(request)[0] ?? "",
    ...(request.dimensions === undefined ? {} : { dimensions: request.dimensions }),
    normalize: true
  }),
  decodeResponse: (json, count): EmbeddingResponse | UpstreamFailed => {
    if (count !== 1 || typeof json !== "object" || json === null || Array.isArray(json)) {
      return badBody("Not a Titan embeddings answer.")
    }
    const record = json as Record<string, unknown>
    if (!isVector(record.embedding)) return badBody("A Titan embeddings answer held no vector.")
    const tokens = record.inputTextTokenCount
    return {
      vectors: [record.embedding],
      usage: Number.isSafeInteger(tokens) && (tokens as number) >= 0
        ? { inputTokens: tokens as number, outputTokens: 0 }
        : undefined
    }
  },
  classifyError: classifyBedrockError
}

const COHERE_INPUT_TYPES: Readonly<Record<string, string>> = {
  RETRIEVAL_QUERY: "search_query",
  RETRIEVAL_DOCUMENT: "search_document",
  CLASSIFICATION: "classification",
  CLUSTERING: "clustering"
}

/**
 * Cohere Embed: up to `COHERE_MAX_TEXTS` inputs a call.
 *
 * @category formats
 */
export const cohereEmbeddingWire: EmbeddingWire = {
  name: "bedrock-cohere",
  maxInputs: COHERE_MAX_TEXTS,
  acceptsTokens: false,
  encodeRequest: (request, model) => {
    const first = request.inputs[0]
    const taskType = first?.type === "text" ? first.taskType : undefined
    return {
      texts: textsOf(request),
      input_type: (taskType === undefined ? undefined : COHERE_INPUT_TYPES[taskType]) ?? "search_document",
      ...(request.dimensions === undefined || !model.includes("embed-v4")
        ? {}
        : { output_dimension: request.dimensions })
    }
  },
  decodeResponse: (json, count, headers): EmbeddingResponse | UpstreamFailed => {
    if (typeof json !== "object" || json === null || Array.isArray(json)) {
      return badBody("Not a Cohere embeddings answer.")
    }
    const embeddings = (json as Record<string, unknown>).embeddings
    // `embeddings_floats` answers a list; `embeddings_by_type` an object whose `float` is the list.
    const list = Array.isArray(embeddings)
      ? embeddings
      : typeof embeddings === "object" && embeddings !== null
      ? (embeddings as Record<string, unknown>).float
      : undefined
    if (!Array.isArray(list) || list.length !== count || !list.every(isVector)) {
      return badBody(`Expected ${count} embeddings in the answer.`)
    }
    return { vectors: list, usage: headerUsage(headers) }
  },
  classifyError: classifyBedrockError
}
