/**
 * The OpenAI chat completions wire format (`POST /v1/chat/completions`, spec
 * "Text: chat completions"), both halves.
 *
 * @since 0.1.0
 */
import type { Format, Passthrough } from "../../Format.ts"
import { passthroughBody, usageOnly } from "../../shared/Passthrough.ts"
import { includeCostRequested, openAiChunkCost, upstreamStreamOptions } from "../../shared/StreamCost.ts"
import { answerWithOpenAiUsage, eventWithOpenAiUsage } from "../shared/CacheHitUsage.ts"
import { classifyOpenAiError, encodeOpenAiError } from "../shared/ErrorBody.ts"
import { chatInlineInPlace, chatMediaParam } from "./MediaFields.ts"
import { decodeChatRequest, includeUsageRequested } from "./RequestDecoder.ts"
import { type ChatEncodeOptions, defaultChatEncodeOptions, encodeChatRequest } from "./RequestEncoder.ts"
import { decodeChatResponse, encodeChatResponse } from "./ResponseCodec.ts"
import { type ChatDecodeState, chatStreamDecoder } from "./StreamDecoder.ts"
import { type ChatEncodeState, chatStreamEncoder } from "./StreamEncoder.ts"

export { includeUsageRequested } from "./RequestDecoder.ts"
export { type ChatEncodeOptions, droppedFields, effortForBudget, type ReasoningHistory } from "./RequestEncoder.ts"

/**
 * Chat completions passthrough: the model mapped; a stream asks for usage
 * (`stream_options.include_usage`, platform.openai.com/docs/api-reference/chat/create)
 * and its usage-only chunk (`choices: []`) is kept from a caller that did not
 * ask; the gateway's own `stream_options.include_cost` never reaches the upstream; the held cap goes in `max_completion_tokens` (the field OpenAI keeps;
 * o-series models refuse `max_tokens`) when the caller set neither.
 */
const chatPassthrough: Passthrough = {
  body: (raw, target) => {
    const body = passthroughBody(raw, target, {
      model: true,
      limitFields: ["max_tokens", "max_completion_tokens"],
      cap: "max_completion_tokens",
      store: true
    })
    if (target.stream) body.stream_options = upstreamStreamOptions(raw)
    else if (includeCostRequested(raw)) delete body.stream_options
    return body
  },
  inlineMedia: chatInlineInPlace,
  // DeepSeek's cache hits (a `deepseek` channel, or an `openai` one pointed at DeepSeek) in OpenAI's field too.
  answer: answerWithOpenAiUsage,
  event: eventWithOpenAiUsage,
  wantsStreamUsage: includeUsageRequested,
  wantsStreamCost: includeCostRequested,
  hides: (parts, meta) => meta.includeUsage !== true && usageOnly(parts)
}

/**
 * The chat completions format with the given outbound options (e.g.
 * `{reasoningHistory: "reasoning_content"}`; a `deepseek` channel speaks its
 * own dialect, `formats/deepseek/chat/Format.ts`).
 *
 * @category formats
 */
export const makeOpenAiChatFormat = (options: ChatEncodeOptions): Format<ChatDecodeState, ChatEncodeState> => ({
  name: "openai-chat",
  decodeRequest: decodeChatRequest,
  encodeResponse: encodeChatResponse,
  streamEncoder: chatStreamEncoder,
  encodeError: encodeOpenAiError,
  encodeRequest: (request) => encodeChatRequest(request, options),
  decodeResponse: decodeChatResponse,
  streamDecoder: chatStreamDecoder,
  classifyError: classifyOpenAiError,
  passthrough: chatPassthrough,
  mediaParam: chatMediaParam,
  // The `file` part takes `file_data` or `file_id`, never a URL (platform.openai.com/docs/guides/pdf-files).
  inlinesFiles: () => true,
  withCost: openAiChunkCost
})

/**
 * The chat completions format with the default options (reasoning history
 * dropped and listed in `dropped`).
 *
 * @category formats
 */
export const OpenAiChatFormat: Format<ChatDecodeState, ChatEncodeState> = makeOpenAiChatFormat(
  defaultChatEncodeOptions
)
