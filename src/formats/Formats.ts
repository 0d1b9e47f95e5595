/**
 * Every wire format by name.
 *
 * @since 0.1.0
 */
import { AnthropicFormat } from "./anthropic/messages/Format.ts"
import { CompletionsFormat } from "./openai/completions/Format.ts"
import type { Format, FormatName } from "./Format.ts"
import { GeminiFormat } from "./gemini/generate-content/Format.ts"
import { OpenAiChatFormat } from "./openai/chat/Format.ts"
import { OpenAiResponsesFormat } from "./openai/responses/Format.ts"

// The stream states are private to each format; callers only thread them
// through, so the registry erases them.
const erase = <DS, ES>(format: Format<DS, ES>): Format<unknown, unknown> =>
  format as unknown as Format<unknown, unknown>

const formats: Record<FormatName, Format<unknown, unknown>> = {
  "openai-chat": erase(OpenAiChatFormat),
  "openai-responses": erase(OpenAiResponsesFormat),
  "anthropic": erase(AnthropicFormat),
  "gemini": erase(GeminiFormat),
  "completions": erase(CompletionsFormat)
}

/**
 * The format called `name`.
 *
 * @category formats
 */
export const formatOf = (name: FormatName): Format<unknown, unknown> => formats[name]
