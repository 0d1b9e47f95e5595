/**
 * The legacy completions wire format (`POST /v1/completions`, spec "Text:
 * legacy completions"), both halves.
 *
 * @since 0.1.0
 */
import { includeUsageRequested } from "../chat/RequestDecoder.ts"
import { includeCostRequested, openAiChunkCost, upstreamStreamOptions } from "../../shared/StreamCost.ts"
import { passthroughBody, plainPassthrough, usageOnly } from "../../shared/Passthrough.ts"
import type { Format } from "../../Format.ts"
import { answerWithOpenAiUsage, eventWithOpenAiUsage } from "../shared/CacheHitUsage.ts"
import { classifyOpenAiError, encodeOpenAiError } from "../shared/ErrorBody.ts"
import { decodeCompletionsRequest, encodeCompletionsRequest } from "./RequestCodec.ts"
import { decodeCompletionsResponse, encodeCompletionsResponse } from "./ResponseCodec.ts"
import {
  type CompletionsDecodeState,
  type CompletionsEncodeState,
  completionsStreamDecoder,
  completionsStreamEncoder
} from "./StreamCodec.ts"

export { completionsDroppedFields } from "./RequestCodec.ts"

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
  // A stream asks for usage (one usage for every prompt of a batch), as in chat completions; the usage-only
  // chunk reaches the caller only when it asked for `stream_options.include_usage`.
  passthrough: {
    ...plainPassthrough({ model: true, limitFields: ["max_tokens"], cap: undefined }),
    body: (raw, target) => {
      const body = passthroughBody(raw, target, { model: true, limitFields: ["max_tokens"], cap: undefined })
      if (target.stream) body.stream_options = upstreamStreamOptions(raw)
      else if (includeCostRequested(raw)) delete body.stream_options
      return body
    },
    // DeepSeek's cache hits (its FIM completion, or an `openai` channel pointed at DeepSeek) in OpenAI's field too.
    answer: answerWithOpenAiUsage,
    event: eventWithOpenAiUsage,
    wantsStreamUsage: includeUsageRequested,
    wantsStreamCost: includeCostRequested,
    hides: (parts, meta) => meta.includeUsage !== true && usageOnly(parts)
  },
  // Text prompts only: no media to name.
  mediaParam: () => undefined,
  inlinesFiles: () => false,
  withCost: openAiChunkCost
}
