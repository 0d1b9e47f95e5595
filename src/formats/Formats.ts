/**
 * Every wire format by name: the formats callers speak, and the outbound-only ones.
 *
 * @since 0.1.0
 */
import { AnthropicFormat } from "./anthropic/messages/Format.ts"
import { CompletionsFormat } from "./openai/completions/Format.ts"
import { ConverseWire } from "./bedrock/converse/Wire.ts"
import type { Format, FormatName, OutboundOnlyName, OutboundOnlyWire, UpstreamWire, WireName } from "./Format.ts"
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

const outboundOnly: Record<OutboundOnlyName, OutboundOnlyWire<unknown>> = {
  "bedrock-converse": ConverseWire as OutboundOnlyWire<unknown>
}

/**
 * The wire called `name`, for an upstream call: the format of that name, or the outbound-only wire.
 *
 * @category formats
 */
export const upstreamWireOf = (name: WireName): UpstreamWire =>
  name === "bedrock-converse" ? outboundOnly[name] : formats[name]
