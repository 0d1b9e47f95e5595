/**
 * Claude on Bedrock through InvokeModel (`POST /model/{modelId}/invoke`) and InvokeModelWithResponseStream
 * (`/invoke-with-response-stream`; docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModel.html,
 * API_runtime_InvokeModelWithResponseStream.html): the messages format, of which it is a dialect (as
 * `formats/deepseek/chat/Format.ts` is of chat completions), with Bedrock's differences
 * (docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages.html; `@anthropic-ai/bedrock-sdk`
 * `client.ts`, which makes the same changes to a Messages body):
 *
 * - the body has `anthropic_version: "bedrock-2023-05-31"` and no `model` (it is in the path) and no `stream` (the
 *   path says it);
 * - the caller's `anthropic-beta` header values travel as the body's `anthropic_beta` array;
 * - the answer is the Messages answer; the stream is event-stream framed (`framing: "aws-event-stream"`): each
 *   `chunk` event's payload `{"bytes": <Base64>}` holds one Messages stream event as JSON, decoded here and read by
 *   the messages stream decoder, and handed to a Messages caller as that SSE event (`passthrough.event`);
 * - errors are Bedrock's (`ErrorBody.ts`), in the HTTP answer and as the stream's exception events.
 *
 * Named `anthropic`, so a `/v1/messages` caller (Claude Code) is passed through with every field it sends.
 *
 * @since 0.1.0
 */
import type { Sse } from "effect/encoding"
import { parseJsonOrUndefined } from "../../../domain/JsonDepth.ts"
import { AnthropicFormat } from "../../anthropic/messages/Format.ts"
import type { DecodeStep, EncodedRequest, Format, Passthrough, StreamDecoder } from "../../Format.ts"
import { classifyBedrockError, streamExceptionFailure } from "../ErrorBody.ts"
import type { Request } from "../../../canonical/Request.ts"
import { UpstreamFailed } from "../../../errors/GatewayError.ts"

/**
 * The `anthropic_version` Bedrock's Claude models take ("must be `bedrock-2023-05-31`", Bedrock user guide, "Anthropic
 * Claude Messages API").
 *
 * @category constants
 */
export const BEDROCK_ANTHROPIC_VERSION = "bedrock-2023-05-31"

/**
 * A Messages body as InvokeModel takes it: `model` and `stream` left out, `anthropic_version` set, and the beta
 * names of `betaHeader` (an `anthropic-beta` header's comma-separated values) added to `anthropic_beta` after any the
 * body already names, each once. A new object.
 *
 * @category encoding
 */
export const invokeBody = (body: Record<string, unknown>, betaHeader?: string | undefined): Record<string, unknown> => {
  const { model: _model, stream: _stream, ...rest } = body
  const given = Array.isArray(rest.anthropic_beta)
    ? rest.anthropic_beta.filter((name): name is string => typeof name === "string")
    : []
  const fromHeader = (betaHeader ?? "").split(",").map((name) => name.trim()).filter((name) => name !== "")
  const betas = [...new Set([...given, ...fromHeader])]
  const { anthropic_beta: _beta, ...withoutBeta } = rest
  return {
    anthropic_version: BEDROCK_ANTHROPIC_VERSION,
    ...withoutBeta,
    ...(betas.length === 0 ? {} : { anthropic_beta: betas })
  }
}

const encodeRequest = (request: Request): EncodedRequest => {
  const encoded = AnthropicFormat.encodeRequest(request)
  return { body: invokeBody(encoded.body), dropped: encoded.dropped }
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const utf8 = new TextDecoder("utf-8", { fatal: true })

/**
 * The Messages stream event a `chunk` event carries (`PayloadPart.bytes`, Base64 in the JSON payload), as an SSE
 * event named by its `type`; `undefined` when the payload is not such a chunk.
 *
 * @category decoding
 */
export const messagesEventOfChunk = (event: Sse.Event): Sse.Event | undefined => {
  const payload = parseJsonOrUndefined(event.data)
  if (!isRecord(payload) || typeof payload.bytes !== "string") return undefined
  let text: string
  try {
    text = utf8.decode(Uint8Array.from(atob(payload.bytes), (char) => char.charCodeAt(0)))
  } catch {
    return undefined
  }
  const inner = parseJsonOrUndefined(text)
  if (!isRecord(inner) || typeof inner.type !== "string") return undefined
  return { _tag: "Event", event: inner.type, id: undefined, data: text }
}

const messages = AnthropicFormat.streamDecoder as StreamDecoder<unknown>

/**
 * InvokeModelWithResponseStream's events → the messages stream decoder's steps: a `chunk` is unwrapped and decoded as
 * its Messages event; an exception event (SDK `ResponseStream`: `internalServerException`,
 * `modelStreamErrorException`, `validationException`, `throttlingException`, `modelTimeoutException`,
 * `serviceUnavailableException`) fails with its kind; other events are skipped.
 *
 * @category decoding
 */
export const invokeStreamDecoder: StreamDecoder<unknown> = {
  initial: messages.initial,
  step: (state, event): DecodeStep<unknown> => {
    if (event.event !== "chunk") {
      return /Exception$/i.test(event.event) ? streamExceptionFailure(event.event, event.data) : [state, []]
    }
    const inner = messagesEventOfChunk(event)
    if (inner === undefined) {
      return new UpstreamFailed({ kind: "bad-body", status: 200, message: "A Bedrock stream chunk was unreadable." })
    }
    return messages.step(state, inner)
  },
  flush: messages.flush,
  complete: messages.complete
}

const passthrough: Passthrough = {
  ...AnthropicFormat.passthrough,
  body: (raw, target) => invokeBody(AnthropicFormat.passthrough.body(raw, target), target.headers?.["anthropic-beta"]),
  event: (event) => event.event === "chunk" ? messagesEventOfChunk(event) : undefined
}

/**
 * The messages format as a `bedrock` channel with `bedrock_api: invoke` speaks it to an Anthropic model.
 *
 * @category formats
 */
export const AnthropicInvokeFormat: Format<unknown, unknown> = {
  ...(AnthropicFormat as Format<unknown, unknown>),
  framing: "aws-event-stream",
  encodeRequest,
  streamDecoder: invokeStreamDecoder,
  classifyError: classifyBedrockError,
  // Claude on Bedrock takes images and documents as Base64 only (Bedrock user guide, Claude Messages: `source.type`
  // `base64`): URL files are downloaded.
  inlinesFiles: () => true,
  passthrough
}
