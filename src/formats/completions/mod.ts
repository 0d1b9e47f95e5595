/**
 * The legacy completions wire format (`POST /v1/completions`, spec "Text:
 * legacy completions"), both halves.
 *
 * @since 0.1.0
 */
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
  classifyError: classifyOpenAiError
}
