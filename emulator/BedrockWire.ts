/**
 * Amazon Bedrock Runtime's wire for the vendor emulator: the path prefix it is served under, its error replies, the
 * binary event-stream frames of its streaming operations, and what a model id names.
 *
 * - Errors: an HTTP status, the header `x-amzn-ErrorType: <Exception>:http://internal.amazon.com/coral/com.amazon.bedrock/`
 *   and the body `{"message": "…"}` (the header form as Bedrock sends it, quoted in
 *   github.com/aws-samples/amazon-bedrock-client-for-mac/issues/112; the statuses are those of
 *   `@aws-sdk/client-bedrock-runtime` 3.1164's error shapes: ValidationException, ConflictException and
 *   ServiceQuotaExceededException 400, AccessDeniedException 403, ResourceNotFoundException 404,
 *   ModelTimeoutException 408, ModelErrorException and ModelStreamErrorException 424, ThrottlingException and
 *   ModelNotReadyException 429, InternalServerException 500, ServiceUnavailableException 503).
 * - Streams (`application/vnd.amazon.eventstream`): one message per event, encoded with `@smithy/eventstream-codec`,
 *   headers `:message-type` `event`, `:event-type` (the union member: `messageStart`, `contentBlockDelta`, `chunk`, …)
 *   and `:content-type` `application/json`; an error inside a stream is a message with `:message-type` `exception`
 *   and `:exception-type` the lower-camel member name (`throttlingException`), body `{"message": "…"}` (the SDK's
 *   `ConverseStreamOutput` / `ResponseStream` unions). Bedrock pads every event's JSON with a `"p"` field of
 *   letters and digits of varying length (seen on the wire: `{"bytes": "…", "p": "abcdefghijklmnopqrstuvwxy"}`); the
 *   emulator does too, with a length that depends on the event's position, so clients must ignore it.
 *
 * @since 0.1.0
 */
import type { Reply } from "./Sse.ts"
import { jsonReply } from "./Sse.ts"

/** The path prefix Bedrock Runtime is served under: a channel's base URL is `<emulator>/bedrock`. @category routing */
export const BEDROCK_PREFIX = "/bedrock"

/** The content type of Bedrock's streams. @category encoding */
export const EVENT_STREAM_CONTENT_TYPE = "application/vnd.amazon.eventstream"

/** The exceptions Bedrock Runtime answers, by the name its `x-amzn-ErrorType` header carries. @category models */
export type BedrockException =
  | "ValidationException"
  | "ConflictException"
  | "ServiceQuotaExceededException"
  | "AccessDeniedException"
  | "ResourceNotFoundException"
  | "ModelTimeoutException"
  | "ModelErrorException"
  | "ModelStreamErrorException"
  | "ThrottlingException"
  | "ModelNotReadyException"
  | "InternalServerException"
  | "ServiceUnavailableException"
  | "UnrecognizedClientException"
  | "InvalidSignatureException"
  | "MissingAuthenticationTokenException"

/** Each exception's HTTP status (the SDK's error shapes; the three authentication ones are AWS's common 403s). */
const STATUS_OF: Readonly<Record<BedrockException, number>> = {
  ValidationException: 400,
  ConflictException: 400,
  ServiceQuotaExceededException: 400,
  AccessDeniedException: 403,
  ResourceNotFoundException: 404,
  ModelTimeoutException: 408,
  ModelErrorException: 424,
  ModelStreamErrorException: 424,
  ThrottlingException: 429,
  ModelNotReadyException: 429,
  InternalServerException: 500,
  ServiceUnavailableException: 503,
  UnrecognizedClientException: 403,
  InvalidSignatureException: 403,
  MissingAuthenticationTokenException: 403
}

/** True when `name` is an exception Bedrock Runtime answers. @category guards */
export const isBedrockException = (name: unknown): name is BedrockException =>
  typeof name === "string" && Object.hasOwn(STATUS_OF, name)

/** The HTTP status Bedrock answers with `exception`. @category errors */
export const bedrockStatusOf = (exception: BedrockException): number => STATUS_OF[exception]

/**
 * The exception a bare HTTP status stands for (a fault that names only a status): 400 ValidationException,
 * 403 AccessDeniedException, 404 ResourceNotFoundException, 408 ModelTimeoutException, 424 ModelErrorException,
 * 429 ThrottlingException, 503 ServiceUnavailableException, any other 5xx InternalServerException, any other 4xx
 * ValidationException.
 *
 * @category errors
 */
export const bedrockExceptionOf = (status: number): BedrockException => {
  switch (status) {
    case 403:
      return "AccessDeniedException"
    case 404:
      return "ResourceNotFoundException"
    case 408:
      return "ModelTimeoutException"
    case 424:
      return "ModelErrorException"
    case 429:
      return "ThrottlingException"
    case 503:
      return "ServiceUnavailableException"
    default:
      return status >= 500 ? "InternalServerException" : "ValidationException"
  }
}

/**
 * The exception a status stands for inside a stream, where only the stream union's members can come
 * (`ConverseStreamOutput` / `ResponseStream`): 400 ValidationException, 408 ModelTimeoutException, 424
 * ModelStreamErrorException, 429 ThrottlingException, 503 ServiceUnavailableException, any other 5xx
 * InternalServerException, any other status ModelStreamErrorException.
 *
 * @category errors
 */
export const bedrockStreamExceptionOf = (status: number): BedrockException => {
  switch (status) {
    case 400:
      return "ValidationException"
    case 408:
      return "ModelTimeoutException"
    case 429:
      return "ThrottlingException"
    case 503:
      return "ServiceUnavailableException"
    default:
      return status >= 500 ? "InternalServerException" : "ModelStreamErrorException"
  }
}

/** Bedrock's message for a status when a fault names none. @category errors */
export const defaultBedrockMessage = (status: number): string => {
  switch (status) {
    case 408:
      return "Model has timed out in processing the request. Try your request again."
    case 424:
      return "The model returned an error while processing the request."
    case 429:
      return "Too many requests, please wait before trying again."
    case 503:
      return "Bedrock is unable to process your request."
    default:
      return status >= 500
        ? "The server encountered an internal error while processing the request."
        : "The request is invalid."
  }
}

/** The `x-amzn-ErrorType` header value for `exception`. @category errors */
export const errorTypeHeader = (exception: BedrockException): string =>
  `${exception}:http://internal.amazon.com/coral/com.amazon.bedrock/`

/**
 * Bedrock's error reply: `exception`'s status (or `status` when given), `x-amzn-ErrorType`, and `{message}` (or a
 * fault's own `body`).
 *
 * @category errors
 */
export const bedrockError = (exception: BedrockException, message: string, status?: number, body?: unknown): Reply =>
  jsonReply(body ?? { message }, status ?? bedrockStatusOf(exception), {
    "x-amzn-errortype": errorTypeHeader(exception)
  })

/** The message Bedrock gives with a ValidationException for an id that names no model it serves. @category errors */
export const INVALID_MODEL_MESSAGE = "The provided model identifier is invalid."

/** Providers whose models Bedrock Runtime serves under `<provider>.<model>` ids. */
const PROVIDERS = [
  "anthropic",
  "amazon",
  "meta",
  "mistral",
  "cohere",
  "ai21",
  "deepseek",
  "openai",
  "qwen",
  "writer",
  "twelvelabs",
  "stability",
  "luma",
  "moonshot",
  "google",
  "minimax",
  "nvidia"
]

/**
 * A model id as Bedrock reads it: a base model id (`anthropic.claude-sonnet-4-5-20250929-v1:0`), an inference profile
 * id with a geography prefix (`us.`, `eu.`, `apac.`, `global.`, `jp.`, `au.`, `ca.`, `us-gov.`), or an ARN
 * (`arn:aws:bedrock:<region>:<account>:…/<id>`, read for its last segment).
 */
const MODEL_ID = new RegExp(
  `^(?:(?:us|eu|apac|global|jp|au|ca|us-gov)\\.)?(${PROVIDERS.join("|")})\\.[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`
)

/** What a model id names: its provider and the id with any ARN and geography prefix removed. @category models */
export interface BedrockModel {
  readonly provider: string
  /** The base model id (`anthropic.claude-…`), without an inference profile's geography prefix. */
  readonly base: string
}

/**
 * The model `id` (URL-decoded from the path) names, or `undefined` for an id Bedrock would refuse
 * (`INVALID_MODEL_MESSAGE`). At most 2,048 characters, as the API's `modelId` pattern allows.
 *
 * @category models
 */
export const bedrockModelOf = (id: string): BedrockModel | undefined => {
  if (id.length === 0 || id.length > 2048) return undefined
  const last = id.startsWith("arn:") ? id.slice(id.lastIndexOf("/") + 1) : id
  const found = MODEL_ID.exec(last)
  if (found === null) return undefined
  const base = last.slice(last.indexOf(`${found[1]}.`))
  return { provider: found[1], base }
}

/** True for Bedrock's text embedding models (Titan Text Embeddings, Cohere Embed), which Converse refuses. @category models */
export const isEmbeddingModel = (model: BedrockModel): boolean =>
  /^amazon\.titan-embed-/.test(model.base) || /^cohere\.embed-/.test(model.base)

/** The message Converse gives for a model that is not a text or chat model. @category errors */
export const CONVERSE_UNSUPPORTED_MESSAGE =
  "This action doesn't support the model that you provided. Try again with a supported text or chat model."

const PADDING = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

/** The `"p"` padding of the `index`-th event of a stream: 1 to 40 characters, as Bedrock's vary. @category encoding */
export const padding = (index: number): string => PADDING.slice(0, 1 + (index * 7) % 40)

/** What encodes event-stream messages (the subset of `@smithy/eventstream-codec`'s `EventStreamCodec` used here). */
interface Encoder {
  readonly encode: (
    message: { headers: Record<string, { type: "string"; value: string }>; body: Uint8Array }
  ) => Uint8Array
}

let encoder: Promise<Encoder> | undefined

/** `@smithy/eventstream-codec`, loaded on first use (the emulator starts without it). */
const loadEncoder = (): Promise<Encoder> =>
  encoder ??= Promise.all([import("@smithy/eventstream-codec"), import("@smithy/util-utf8")]).then(
    ([{ EventStreamCodec }, { toUtf8, fromUtf8 }]) => new EventStreamCodec(toUtf8, fromUtf8)
  )

/** Builds the binary frames of one Bedrock stream. @category encoding */
export interface FrameWriter {
  /** An `event` message of `eventType` carrying `payload` (padded with `"p"`). */
  readonly event: (eventType: string, payload: Record<string, unknown>) => Uint8Array<ArrayBuffer>
  /** An `exception` message: `exception` as its lower-camel `:exception-type`, body `{message}`. */
  readonly exception: (exception: BedrockException, message: string) => Uint8Array<ArrayBuffer>
}

const utf8 = new TextEncoder()

const stringHeader = (value: string) => ({ type: "string" as const, value })

/** A frame writer over the loaded codec; its events are padded by their position in the stream. @category encoding */
export const frameWriter = async (): Promise<FrameWriter> => {
  const codec = await loadEncoder()
  let index = 0
  const encode = (headers: Record<string, { type: "string"; value: string }>, body: unknown) =>
    new Uint8Array(codec.encode({ headers, body: utf8.encode(JSON.stringify(body)) }))
  return {
    event: (eventType, payload) =>
      encode({
        ":event-type": stringHeader(eventType),
        ":content-type": stringHeader("application/json"),
        ":message-type": stringHeader("event")
      }, { ...payload, p: padding(index++) }),
    exception: (exception, message) =>
      encode({
        ":exception-type": stringHeader(exception.charAt(0).toLowerCase() + exception.slice(1)),
        ":content-type": stringHeader("application/json"),
        ":message-type": stringHeader("exception")
      }, { message })
  }
}

/**
 * The payload JSON of one encoded event-stream message (its bytes between the headers and the trailing CRC), or
 * `undefined` when `frame` is not a whole message. For reading back what the emulator itself sent.
 *
 * @category encoding
 */
export const framePayload = (frame: Uint8Array): unknown => {
  if (frame.length < 16) return undefined
  const view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength)
  const total = view.getUint32(0)
  const headers = view.getUint32(4)
  if (total !== frame.length || 12 + headers > total - 4) return undefined
  try {
    return JSON.parse(new TextDecoder().decode(frame.subarray(12 + headers, total - 4)))
  } catch {
    return undefined
  }
}

/** Base64 of UTF-8 `text` (an InvokeModel stream chunk's `bytes`). @category encoding */
export const base64Utf8 = (text: string): string => {
  let binary = ""
  for (const byte of utf8.encode(text)) binary += String.fromCharCode(byte)
  return btoa(binary)
}
