/**
 * The OpenAI chat completions wire format (`POST /v1/chat/completions`, spec
 * "Text: chat completions"), both halves.
 *
 * @since 0.1.0
 */
import type { Format } from "../Format.ts"
import { classifyOpenAiError, encodeOpenAiError } from "../openai-shared/OpenAiError.ts"
import { decodeChatRequest } from "./ChatRequestDecode.ts"
import { type ChatEncodeOptions, defaultChatEncodeOptions, encodeChatRequest } from "./ChatRequestEncode.ts"
import { decodeChatResponse, encodeChatResponse } from "./ChatResponse.ts"
import { type ChatDecodeState, chatStreamDecoder } from "./ChatStreamDecoder.ts"
import { type ChatEncodeState, chatStreamEncoder } from "./ChatStreamEncoder.ts"

export { includeUsageRequested } from "./ChatRequestDecode.ts"
export { type ChatEncodeOptions, droppedFields, effortForBudget, type ReasoningHistory } from "./ChatRequestEncode.ts"

/**
 * The chat completions format with the given outbound options (e.g.
 * `{reasoningHistory: "reasoning_content"}` for a DeepSeek channel, which
 * needs reasoning text back in later turns).
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
  classifyError: classifyOpenAiError
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
