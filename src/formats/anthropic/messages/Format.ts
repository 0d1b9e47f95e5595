/**
 * The messages format (Anthropic Messages API wire format, `POST
 * /v1/messages`; spec "Text: messages format"): both halves of the `Format`
 * contract, assembled from one file per concern.
 *
 * @since 0.1.0
 */
import { plainPassthrough } from "../../shared/Passthrough.ts"
import type { Format } from "../../Format.ts"
import { classifyError, encodeError } from "./ErrorBody.ts"
import { anthropicWithoutForeignReasoning } from "./ForeignReasoning.ts"
import { anthropicInlineInPlace, anthropicMediaParam } from "./MediaFields.ts"
import { decodeRequest } from "./RequestDecoder.ts"
import { encodeRequest } from "./RequestEncoder.ts"
import { decodeResponse, encodeResponse } from "./ResponseCodec.ts"
import { streamDecoder, type StreamDecoderState } from "./StreamDecoder.ts"
import { streamEncoder, type StreamEncoderState } from "./StreamEncoder.ts"
import { messagesCost } from "../../shared/StreamCost.ts"

export { DEFAULT_MAX_TOKENS, THINKING_BUDGET_BY_EFFORT } from "./RequestEncoder.ts"

/**
 * The messages format. Inbound: `decodeRequest`, `encodeResponse`,
 * `streamEncoder`, `encodeError`. Outbound: `encodeRequest`,
 * `decodeResponse`, `streamDecoder`, `classifyError`.
 *
 * @category formats
 */
export const AnthropicFormat: Format<StreamDecoderState, StreamEncoderState> = {
  name: "anthropic",
  decodeRequest,
  encodeResponse,
  streamEncoder,
  encodeError,
  encodeRequest,
  decodeResponse,
  streamDecoder,
  classifyError,
  // `max_tokens` is required by the format: a caller that sent none gets the cap the hold was sized for.
  passthrough: {
    ...plainPassthrough({
      model: true,
      limitFields: ["max_tokens"],
      cap: "max_tokens",
      inlineMedia: anthropicInlineInPlace
    }),
    withoutForeignReasoning: anthropicWithoutForeignReasoning
  },
  mediaParam: anthropicMediaParam,
  // A `document` block takes a `url` source.
  inlinesFiles: () => false,
  withCost: messagesCost
}
