/**
 * The OpenAI Responses wire format (`POST /v1/responses`; spec "Text:
 * responses format"; API reference platform.openai.com/docs/api-reference/responses),
 * both halves of the `Format` contract.
 *
 * @since 0.1.0
 */
import { classifyOpenAiError, encodeOpenAiError } from "../shared/ErrorBody.ts"
import { plainPassthrough } from "../../shared/Passthrough.ts"
import type { Format } from "../../Format.ts"
import { withoutForeignReasoning } from "./History.ts"
import { responsesInlineInPlace, responsesMediaParam } from "./MediaFields.ts"
import { decodeResponsesRequest } from "./RequestDecoder.ts"
import { encodeResponsesRequest } from "./RequestEncoder.ts"
import { decodeResponsesResponse, encodeResponsesResponse } from "./ResponseCodec.ts"
import { type ResponsesDecoderState, responsesStreamDecoder } from "./StreamDecoder.ts"
import { type ResponsesEncoderState, responsesStreamEncoder } from "./StreamEncoder.ts"
import { responsesCost } from "../../shared/StreamCost.ts"

/**
 * The Responses format. Inbound: `decodeRequest` (caller body → canonical),
 * `encodeResponse` (canonical → `Response` object), `streamEncoder`
 * (canonical parts → `response.*` SSE events), `encodeError` (the OpenAI error
 * envelope). Outbound: `encodeRequest` (canonical → upstream body, with the
 * dropped fields), `decodeResponse`, `streamDecoder`, `classifyError`
 * (OpenAI error classification, `insufficient_quota` → quota).
 *
 * @category formats
 */
export const OpenAiResponsesFormat: Format<ResponsesDecoderState, ResponsesEncoderState> = {
  name: "openai-responses",
  decodeRequest: decodeResponsesRequest,
  encodeResponse: encodeResponsesResponse,
  streamEncoder: responsesStreamEncoder,
  encodeError: encodeOpenAiError,
  encodeRequest: encodeResponsesRequest,
  decodeResponse: decodeResponsesResponse,
  streamDecoder: responsesStreamDecoder,
  classifyError: classifyOpenAiError,
  passthrough: {
    ...plainPassthrough({
      model: true,
      limitFields: ["max_output_tokens"],
      cap: "max_output_tokens",
      store: true,
      inlineMedia: responsesInlineInPlace
    }),
    withoutForeignReasoning
  },
  mediaParam: responsesMediaParam,
  // `input_file` takes `file_url`.
  inlinesFiles: () => false,
  withCost: responsesCost
}

export { droppedFields } from "./RequestEncoder.ts"
export { withHistory } from "./History.ts"
