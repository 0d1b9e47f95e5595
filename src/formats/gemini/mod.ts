/**
 * The generate-content wire format (Gemini API, `/v1beta/models/{model}:generateContent`
 * and `:streamGenerateContent`): both halves of the `Format` contract.
 *
 * @since 0.1.0
 */
import type { Format } from "../Format.ts"
import { classifyGeminiError, encodeGeminiError } from "./GeminiError.ts"
import { decodeGeminiRequest, encodeGeminiRequest } from "./GeminiRequest.ts"
import { decodeGeminiResponse, encodeGeminiResponse } from "./GeminiResponse.ts"
import {
  type GeminiDecoderState,
  type GeminiEncoderState,
  geminiStreamDecoder,
  geminiStreamEncoder
} from "./GeminiStream.ts"

export { classifyGeminiError, encodeGeminiError, rpcStatusName } from "./GeminiError.ts"
export {
  decodeGeminiRequest,
  encodeGeminiRequest,
  geminiDroppedFields,
  thinkingBudgetForEffort
} from "./GeminiRequest.ts"
export {
  decodeGeminiResponse,
  encodeGeminiResponse,
  finishReasonFromGemini,
  finishReasonToGemini,
  usageFromGemini,
  usageToGemini
} from "./GeminiResponse.ts"
export {
  type GeminiDecoderState,
  type GeminiEncoderState,
  geminiStreamDecoder,
  geminiStreamEncoder
} from "./GeminiStream.ts"

/**
 * The generate-content format. Inbound: `decodeGeminiRequest`,
 * `encodeGeminiResponse`, `geminiStreamEncoder`, `encodeGeminiError`.
 * Outbound: `encodeGeminiRequest` (body without `model`), `decodeGeminiResponse`,
 * `geminiStreamDecoder`, `classifyGeminiError`.
 *
 * @category formats
 */
export const GeminiFormat: Format<GeminiDecoderState, GeminiEncoderState> = {
  name: "gemini",
  decodeRequest: decodeGeminiRequest,
  encodeResponse: encodeGeminiResponse,
  streamEncoder: geminiStreamEncoder,
  encodeError: encodeGeminiError,
  encodeRequest: encodeGeminiRequest,
  decodeResponse: decodeGeminiResponse,
  streamDecoder: geminiStreamDecoder,
  classifyError: classifyGeminiError
}
