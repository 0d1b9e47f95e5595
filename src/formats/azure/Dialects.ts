/**
 * Azure OpenAI's dialects of the OpenAI wires (`azure` channels, `Adapter.dialects`): chat completions, Responses
 * (v1 API only) and legacy completions, each the registry's format with Azure's error classification
 * (`ErrorBody.ts`: the content filter's 400 is a refusal with code `content_filter`).
 *
 * What Azure adds to the answers needs no reading of its own: `finish_reason: "content_filter"` (a choice the
 * filter cut) is already the canonical `content-filter` finish of the chat and completions decoders; the
 * `prompt_filter_results` / `content_filter_results` annotations (learn.microsoft.com/azure/ai-foundry/openai/
 * concepts/content-filter, "Annotations") reach a caller of the same format as they came and are dropped in a
 * translation; the stream's first chunk, which carries only `prompt_filter_results` with empty `choices`, `id`
 * and `model`, starts nothing in the chat stream decoder (`openai/chat/StreamDecoder.ts`).
 *
 * @since 0.1.0
 */
import type { Format } from "../Format.ts"
import { formatOf } from "../Formats.ts"
import { classifyAzureError } from "./ErrorBody.ts"

/**
 * The chat completions format as an `azure` channel speaks it.
 *
 * @category formats
 */
export const AzureChatFormat: Format<unknown, unknown> = {
  ...formatOf("openai-chat"),
  classifyError: classifyAzureError
}

/**
 * The Responses format as an `azure` channel on the v1 API speaks it.
 *
 * @category formats
 */
export const AzureResponsesFormat: Format<unknown, unknown> = {
  ...formatOf("openai-responses"),
  classifyError: classifyAzureError
}

/**
 * The legacy completions format as an `azure` channel speaks it.
 *
 * @category formats
 */
export const AzureCompletionsFormat: Format<unknown, unknown> = {
  ...formatOf("completions"),
  classifyError: classifyAzureError
}
