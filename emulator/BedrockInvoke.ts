/**
 * Bedrock Runtime's InvokeModel and InvokeModelWithResponseStream for the vendor emulator:
 * `POST /bedrock/model/{modelId}/invoke` and `…/invoke-with-response-stream`
 * (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModel.html), the body being the model's own.
 *
 * - Anthropic models (`anthropic.*`, and inference profiles such as `us.anthropic.*`): the Messages body of
 *   docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages-request-response.html,
 *   with `anthropic_version` required (`"bedrock-2023-05-31"`, or an Anthropic API version date as
 *   `@anthropic-ai/bedrock-sdk` 1.x sends it) and no `model` or `stream` (the model is the path's, the
 *   operation says whether it streams). Bedrock checks the body against the model's schema and refuses any other
 *   key: "Malformed input request: #: extraneous key [stream] is not permitted, please reformat your input and try
 *   again." (one `#: …` clause per key, as github.com/sigoden/aichat/issues/543 and
 *   github.com/stanfordnlp/dspy/issues/365 quote it). The keys taken: `anthropic_version`, `anthropic_beta` (an array
 *   of strings), `max_tokens`, `messages`, `system`, `stop_sequences`, `temperature`, `top_p`, `top_k`, `tools`,
 *   `tool_choice`, `thinking`, `output_config`, `metadata`. The answer is the Anthropic route's (`Anthropic.ts`: same texts, tool
 *   calls, thinking and its signatures, cache fields); its refusals become ValidationExceptions carrying Claude's
 *   message. The stream is `chunk` events whose payload is `{bytes: <base64 of one Anthropic stream event's JSON>}`
 *   (no `ping`), the `message_stop` event carrying `amazon-bedrock-invocationMetrics` {inputTokenCount,
 *   outputTokenCount, invocationLatency, firstByteLatency} (milliseconds). The answer's headers:
 *   `X-Amzn-Bedrock-Input-Token-Count`, `X-Amzn-Bedrock-Output-Token-Count`, `X-Amzn-Bedrock-Invocation-Latency`
 *   (InvokeModel), `X-Amzn-Bedrock-Content-Type: application/json` (the stream).
 * - Titan Text Embeddings (`amazon.titan-embed-text-v2:0`, and `-v1`): `inputText` (required), v2 also `dimensions`
 *   (1024 default, 512 or 256), `normalize` (default true) and `embeddingTypes` (`float`, `binary`); answer
 *   `{embedding, inputTextTokenCount}` (and `embeddingsByType` when `embeddingTypes` is sent), 1536 values on v1
 *   (docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-titan-embed-text.html).
 * - Cohere Embed (`cohere.embed-english-v3`, `cohere.embed-multilingual-v3`): `texts` (1 to 96, each at most 2,048
 *   characters) and `input_type` (`search_document`, `search_query`, `classification`, `clustering`) required,
 *   `truncate` (`NONE`, `START`, `END`), `embedding_types` (`float`, `int8`, `uint8`, `binary`, `ubinary`); answer
 *   `{embeddings, id, response_type, texts}`: `embeddings_floats` with an array per text, or `embeddings_by_type`
 *   with one array per asked type; 1024 values
 *   (docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-embed.html).
 *
 * Vectors are `Embeddings.embeddingVector(model base id, text, dimensions)`; tokens `max(1, ceil(characters / 4))`
 * per text (in `X-Amzn-Bedrock-Input-Token-Count`, and Titan's `inputTextTokenCount`). An embedding model on the
 * streaming operation is Bedrock's ValidationException "The model is unsupported for streaming."; other providers'
 * model bodies (Llama, Mistral, Titan Text, …) are not emulated: a ValidationException says so.
 *
 * @since 0.1.0
 */
import { anthropicMessages } from "./Anthropic.ts"
import {
  base64Utf8,
  bedrockError,
  type BedrockModel,
  bedrockModelOf,
  EVENT_STREAM_CONTENT_TYPE,
  frameWriter,
  INVALID_MODEL_MESSAGE
} from "./BedrockWire.ts"
import { embeddingVector } from "./Embeddings.ts"
import { jsonReply, type Reply } from "./Sse.ts"
import { type JsonObject, numberOr, objectOr, type RouteContext, stringOr } from "./Wire.ts"

const invalid = (message: string): Reply => bedrockError("ValidationException", message)

/** Bedrock's schema refusal: one `#…: <problem>` clause per problem. */
const malformed = (problems: ReadonlyArray<string>): Reply =>
  invalid(`Malformed input request: ${problems.join("")}, please reformat your input and try again.`)

/** The `#: extraneous key [k] is not permitted` clauses of `body`'s keys outside `allowed`. */
const extraneous = (body: JsonObject, allowed: ReadonlySet<string>): Array<string> =>
  Object.keys(body).filter((key) => !allowed.has(key)).map((key) =>
    `#: extraneous key [${key.slice(0, 200)}] is not permitted`
  )

/** The `anthropic_version` Bedrock takes. @category models */
export const BEDROCK_ANTHROPIC_VERSION = "bedrock-2023-05-31"

/**
 * Whether Bedrock takes `value` as `anthropic_version`: `bedrock-2023-05-31` (AWS's documented value), or an Anthropic
 * API version date (`2023-06-01`, `2026-10-21`), which `@anthropic-ai/bedrock-sdk` 1.x sends there: it moves the
 * base SDK's `anthropic-version` header into the body (its `client.ts`, "Bedrock takes the API version from the body").
 */
const isAnthropicVersion = (value: unknown): boolean =>
  value === BEDROCK_ANTHROPIC_VERSION || (typeof value === "string" && /^20\d{2}-\d{2}-\d{2}$/.test(value))

const ANTHROPIC_KEYS: ReadonlySet<string> = new Set([
  "anthropic_version",
  "anthropic_beta",
  "max_tokens",
  "messages",
  "system",
  "stop_sequences",
  "temperature",
  "top_p",
  "top_k",
  "tools",
  "tool_choice",
  "thinking",
  "output_config",
  // Bedrock's Claude schema takes `metadata` with `user_id` (what Claude Code sends): it refuses only other keys
  // inside it ("metadata.tags: Extra inputs are not permitted", github.com/BerriAI/litellm/issues/30629).
  "metadata"
])

const tokensOf = (text: string): number => Math.max(1, Math.ceil(text.length / 4))

/** The token count headers of an answer. */
const countHeaders = (input: number, output: number | undefined, latency: number): Record<string, string> => ({
  "x-amzn-bedrock-input-token-count": String(input),
  ...(output === undefined ? {} : { "x-amzn-bedrock-output-token-count": String(output) }),
  "x-amzn-bedrock-invocation-latency": String(latency)
})

/** Claude on InvokeModel: the schema checks, then the Anthropic route's answer in Bedrock's framing. */
const invokeAnthropic = async (context: RouteContext, stream: boolean): Promise<Reply> => {
  const body = context.body
  const problems = extraneous(body, ANTHROPIC_KEYS)
  if (body.anthropic_version === undefined) problems.unshift("#: required key [anthropic_version] not found")
  else if (!isAnthropicVersion(body.anthropic_version)) {
    problems.unshift(
      `#/anthropic_version: ${String(JSON.stringify(body.anthropic_version)).slice(0, 200)} is not a valid enum value`
    )
  }
  if (body.max_tokens === undefined) problems.push("#: required key [max_tokens] not found")
  if (body.messages === undefined) problems.push("#: required key [messages] not found")
  const betas = body.anthropic_beta
  if (betas !== undefined && (!Array.isArray(betas) || betas.some((beta) => typeof beta !== "string"))) {
    problems.push("#/anthropic_beta: expected type: JSONArray of strings")
  }
  if (problems.length > 0) return malformed(problems)
  const headers = new Headers({ "anthropic-version": "2023-06-01" })
  const reply = anthropicMessages({ ...context, headers, body: { ...body, model: context.model, stream } })
  if (reply._tag === "Json") {
    if (reply.status >= 400) {
      return invalid(stringOr(objectOr(objectOr(reply.body).error).message) ?? "The request is invalid.")
    }
    const usage = objectOr(objectOr(reply.body).usage)
    const output = numberOr(usage.output_tokens) ?? 0
    return jsonReply(reply.body, 200, {
      ...countHeaders(numberOr(usage.input_tokens) ?? 0, output, 10 * (1 + output))
    })
  }
  if (reply._tag !== "Events") return reply
  const events = reply.frames.flatMap((frame) => {
    const line = String(frame).split("\n").find((text) => text.startsWith("data: "))
    if (line === undefined) return []
    const event = JSON.parse(line.slice(6)) as JsonObject
    return event.type === "ping" ? [] : [event]
  })
  let input = 0
  let output = 0
  for (const event of events) {
    const usage = objectOr(event.type === "message_start" ? objectOr(event.message).usage : event.usage)
    input = numberOr(usage.input_tokens) ?? input
    output = numberOr(usage.output_tokens) ?? output
  }
  const writer = await frameWriter()
  const frames = events.map((event) => {
    const sent = event.type === "message_stop"
      ? {
        ...event,
        "amazon-bedrock-invocationMetrics": {
          inputTokenCount: input,
          outputTokenCount: output,
          invocationLatency: 10 * (1 + output),
          firstByteLatency: 10
        }
      }
      : event
    return writer.event("chunk", { bytes: base64Utf8(JSON.stringify(sent)) })
  })
  return {
    _tag: "Events",
    contentType: EVENT_STREAM_CONTENT_TYPE,
    frames,
    headers: { "x-amzn-bedrock-content-type": "application/json" }
  }
}

const TITAN_V2_KEYS: ReadonlySet<string> = new Set(["inputText", "dimensions", "normalize", "embeddingTypes"])
const TITAN_V1_KEYS: ReadonlySet<string> = new Set(["inputText"])

/** Titan Text Embeddings (v2 and v1). */
const invokeTitan = (model: BedrockModel, body: JsonObject): Reply => {
  const v1 = model.base.startsWith("amazon.titan-embed-text-v1")
  const problems = extraneous(body, v1 ? TITAN_V1_KEYS : TITAN_V2_KEYS)
  if (typeof body.inputText !== "string") {
    problems.unshift(
      body.inputText === undefined ? "#: required key [inputText] not found" : "#/inputText: expected type: String"
    )
  } else if (body.inputText.length === 0) problems.unshift("#/inputText: expected minLength: 1, actual: 0")
  const dimensions = body.dimensions ?? (v1 ? 1536 : 1024)
  if (!v1 && dimensions !== 1024 && dimensions !== 512 && dimensions !== 256) {
    problems.push(`#/dimensions: ${String(JSON.stringify(dimensions)).slice(0, 50)} is not a valid enum value`)
  }
  if (body.normalize !== undefined && typeof body.normalize !== "boolean") {
    problems.push("#/normalize: expected type: Boolean")
  }
  const types = body.embeddingTypes
  if (types !== undefined && (!Array.isArray(types) || types.some((type) => type !== "float" && type !== "binary"))) {
    problems.push("#/embeddingTypes: expected an array of 'float' or 'binary'")
  }
  if (problems.length > 0) return malformed(problems)
  const text = body.inputText as string
  const vector = embeddingVector(model.base, text, dimensions as number)
  const tokens = tokensOf(text)
  const byType = Array.isArray(types)
    ? {
      embeddingsByType: Object.fromEntries(types.map((type) => [type, type === "float" ? vector : binaryOf(vector)]))
    }
    : {}
  return jsonReply(
    { embedding: vector, inputTextTokenCount: tokens, ...byType },
    200,
    countHeaders(tokens, undefined, 10)
  )
}

/** 1 for a positive value, else 0 (Titan's `binary` embedding). */
const binaryOf = (vector: ReadonlyArray<number>): Array<number> => vector.map((value) => value > 0 ? 1 : 0)

const COHERE_KEYS: ReadonlySet<string> = new Set(["texts", "input_type", "truncate", "embedding_types"])
const COHERE_INPUT_TYPES: ReadonlySet<string> = new Set([
  "search_document",
  "search_query",
  "classification",
  "clustering"
])
const COHERE_TYPES: ReadonlySet<string> = new Set(["float", "int8", "uint8", "binary", "ubinary"])
const COHERE_DIMENSIONS = 1024

/** Sign bits packed eight to a byte, most significant first; `binary` as signed bytes (`ubinary` − 128). */
const packedBits = (vector: ReadonlyArray<number>, signed: boolean): Array<number> => {
  const bytes: Array<number> = []
  for (let start = 0; start < vector.length; start += 8) {
    let byte = 0
    for (let bit = 0; bit < 8; bit++) byte = (byte << 1) | ((vector[start + bit] ?? 0) > 0 ? 1 : 0)
    bytes.push(signed ? byte - 128 : byte)
  }
  return bytes
}

/** One vector in Cohere's embedding type `type`. */
const cohereTyped = (vector: ReadonlyArray<number>, type: string): Array<number> => {
  switch (type) {
    case "int8":
      return vector.map((value) => Math.max(-128, Math.min(127, Math.round(value * 127))))
    case "uint8":
      return vector.map((value) => Math.max(0, Math.min(255, Math.round((value + 1) * 127.5))))
    case "binary":
      return packedBits(vector, true)
    case "ubinary":
      return packedBits(vector, false)
    default:
      return [...vector]
  }
}

/** Cohere Embed v3. */
const invokeCohere = (context: RouteContext, model: BedrockModel, body: JsonObject): Reply => {
  const problems = extraneous(body, COHERE_KEYS)
  const texts = body.texts
  if (texts === undefined) problems.push("#: required key [texts] not found")
  else if (!Array.isArray(texts) || texts.length === 0 || texts.length > 96) {
    problems.push("#/texts: expected an array of 1 to 96 strings")
  } else if (texts.some((text) => typeof text !== "string" || text.length > 2048)) {
    problems.push("#/texts: expected strings of at most 2048 characters")
  }
  if (body.input_type === undefined) problems.push("#: required key [input_type] not found")
  else if (!COHERE_INPUT_TYPES.has(String(body.input_type))) {
    problems.push(`#/input_type: ${String(JSON.stringify(body.input_type)).slice(0, 50)} is not a valid enum value`)
  }
  if (body.truncate !== undefined && !["NONE", "START", "END"].includes(String(body.truncate))) {
    problems.push(`#/truncate: ${String(JSON.stringify(body.truncate)).slice(0, 50)} is not a valid enum value`)
  }
  const types = body.embedding_types
  if (types !== undefined && (!Array.isArray(types) || types.some((type) => !COHERE_TYPES.has(String(type))))) {
    problems.push("#/embedding_types: expected an array of float, int8, uint8, binary or ubinary")
  }
  if (problems.length > 0) return malformed(problems)
  const inputs = texts as Array<string>
  const vectors = inputs.map((text) => embeddingVector(model.base, text, COHERE_DIMENSIONS))
  const tokens = inputs.reduce((sum, text) => sum + tokensOf(text), 0)
  const embeddings = Array.isArray(types)
    ? Object.fromEntries(
      (types as Array<string>).map((type) => [type, vectors.map((vector) => cohereTyped(vector, type))])
    )
    : vectors
  return jsonReply(
    {
      embeddings,
      id: context.ids.next("embed-"),
      response_type: Array.isArray(types) ? "embeddings_by_type" : "embeddings_floats",
      texts: inputs
    },
    200,
    countHeaders(tokens, undefined, 10)
  )
}

/**
 * Handles InvokeModel (`stream` false) and InvokeModelWithResponseStream (`stream` true) for the models the module
 * doc lists.
 *
 * @category routes
 */
export const bedrockInvoke = (context: RouteContext, stream: boolean): Reply | Promise<Reply> => {
  const model = bedrockModelOf(context.model)
  if (model === undefined) return invalid(INVALID_MODEL_MESSAGE)
  if (model.provider === "anthropic") return invokeAnthropic(context, stream)
  const titan = model.base.startsWith("amazon.titan-embed-text-")
  const cohere = /^cohere\.embed-(english|multilingual)-v3/.test(model.base)
  if ((titan || cohere) && stream) return invalid("The model is unsupported for streaming.")
  if (titan) return invokeTitan(model, context.body)
  if (cohere) return invokeCohere(context, model, context.body)
  return invalid(`The emulator does not serve InvokeModel bodies for ${model.base}; use Converse for this model.`)
}
