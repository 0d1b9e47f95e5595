/**
 * The legacy completions wire format (`POST /v1/completions`, spec "Text:
 * legacy completions"), both halves.
 *
 * @since 0.1.0
 */
import { includeUsageRequested } from "../openai-chat/ChatRequestDecode.ts"
import { plainPassthrough } from "../Passthrough.ts"
import type { Format } from "../Format.ts"
import { classifyOpenAiError, encodeOpenAiError } from "../openai-shared/OpenAiError.ts"
import { decodeCompletionsRequest, encodeCompletionsRequest } from "./CompletionsRequest.ts"
import { decodeCompletionsResponse, encodeCompletionsResponse } from "./CompletionsResponse.ts"
import {
  type CompletionsDecodeState,
  type CompletionsEncodeState,
  completionsStreamDecoder,
  completionsStreamEncoder
} from "./CompletionsStream.ts"

export { completionsDroppedFields } from "./CompletionsRequest.ts"

/**
 * The legacy completions format.
 *
 * @category formats
 */
export const CompletionsFormat: Format<CompletionsDecodeState, CompletionsEncodeState> = {
  name: "completions",
  decodeRequest: decodeCompletionsRequest,
  encodeResponse: encodeCompletionsResponse,
  streamEncoder: completionsStreamEncoder,
  encodeError: encodeOpenAiError,
  encodeRequest: encodeCompletionsRequest,
  decodeResponse: decodeCompletionsResponse,
  streamDecoder: completionsStreamDecoder,
  classifyError: classifyOpenAiError,
  // No cap is added: the completions API defaults `max_tokens` to 16
  // (platform.openai.com/docs/api-reference/completions/create), below any hold.
  passthrough: {
    ...plainPassthrough({ model: true, limitFields: ["max_tokens"], cap: undefined }),
    // `stream_options.include_usage` as in chat completions: a translated stream ends with a usage chunk.
    wantsStreamUsage: includeUsageRequested
  },
  // Text prompts only: no media to name.
  mediaParam: () => undefined,
  inlinesFiles: () => false
}
