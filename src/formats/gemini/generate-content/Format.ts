/**
 * The generate-content wire format (Gemini API, `/v1beta/models/{model}:generateContent`
 * and `:streamGenerateContent`): both halves of the `Format` contract.
 *
 * @since 0.1.0
 */
import type { Format, Passthrough } from "../../Format.ts"
import { passthroughBody } from "../../shared/Passthrough.ts"
import { classifyGeminiError, encodeGeminiError } from "./ErrorBody.ts"
import { geminiWithoutForeignReasoning } from "./ForeignReasoning.ts"
import { geminiInlineInPlace, geminiMediaParam } from "./MediaFields.ts"
import { decodeGeminiRequest, encodeGeminiRequest } from "./RequestCodec.ts"
import { decodeGeminiResponse, encodeGeminiResponse } from "./ResponseCodec.ts"
import {
  type GeminiDecoderState,
  type GeminiEncoderState,
  geminiStreamDecoder,
  geminiStreamEncoder
} from "./StreamCodec.ts"
import { generateContentCost } from "../../shared/StreamCost.ts"

export { classifyGeminiError, encodeGeminiError, rpcStatusName } from "./ErrorBody.ts"
export {
  decodeGeminiRequest,
  encodeGeminiRequest,
  geminiDroppedFields,
  thinkingBudgetForEffort
} from "./RequestCodec.ts"
export {
  decodeGeminiResponse,
  encodeGeminiResponse,
  finishReasonFromGemini,
  finishReasonToGemini,
  usageFromGemini,
  usageToGemini
} from "./ResponseCodec.ts"
export {
  type GeminiDecoderState,
  type GeminiEncoderState,
  geminiStreamDecoder,
  geminiStreamEncoder
} from "./StreamCodec.ts"

/**
 * The generate-content format. Inbound: `decodeGeminiRequest`,
 * `encodeGeminiResponse`, `geminiStreamEncoder`, `encodeGeminiError`.
 * Outbound: `encodeGeminiRequest` (body without `model`), `decodeGeminiResponse`,
 * `geminiStreamDecoder`, `classifyGeminiError`.
 *
 * @category formats
 */
/**
 * Generate-content passthrough: the model travels in the path, so the body is
 * the caller's; the held cap goes in `generationConfig.maxOutputTokens`, or in
 * `generation_config.max_output_tokens` when the caller wrote the snake-case
 * object (the API accepts either spelling, ai.google.dev/api/generate-content).
 */
const geminiPassthrough: Passthrough = {
  body: (raw, target) =>
    passthroughBody(raw, target, {
      model: false,
      limitFields: [
        "generationConfig.maxOutputTokens",
        "generationConfig.max_output_tokens",
        "generation_config.maxOutputTokens",
        "generation_config.max_output_tokens"
      ],
      cap: raw.generation_config !== undefined && raw.generationConfig === undefined
        ? "generation_config.max_output_tokens"
        : "generationConfig.maxOutputTokens"
    }),
  inlineMedia: geminiInlineInPlace,
  withoutForeignReasoning: geminiWithoutForeignReasoning,
  wantsStreamUsage: () => false,
  hides: () => false
}

export const GeminiFormat: Format<GeminiDecoderState, GeminiEncoderState> = {
  name: "gemini",
  decodeRequest: decodeGeminiRequest,
  encodeResponse: encodeGeminiResponse,
  streamEncoder: geminiStreamEncoder,
  encodeError: encodeGeminiError,
  encodeRequest: encodeGeminiRequest,
  decodeResponse: decodeGeminiResponse,
  streamDecoder: geminiStreamDecoder,
  classifyError: classifyGeminiError,
  passthrough: geminiPassthrough,
  mediaParam: geminiMediaParam,
  // `fileData.fileUri` takes Files-API and Cloud Storage URIs; other URLs go inline with the channel's images.
  inlinesFiles: (inlineImages) => inlineImages,
  withCost: generateContentCost
}
