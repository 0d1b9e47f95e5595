/**
 * The usage of one Realtime response, read from its `response.done` event (`response.usage`: `input_tokens`,
 * `output_tokens`, `input_token_details {text_tokens, audio_tokens, image_tokens, cached_tokens,
 * cached_tokens_details {text_tokens, audio_tokens, image_tokens}}`, `output_token_details {text_tokens,
 * audio_tokens}`; `RealtimeResponseUsage` in the `openai` package's `resources/realtime/realtime.ts`). The event
 * comes from a vendor: every field is checked, anything not a non-negative safe integer counts as absent (0), and
 * a `cached_tokens` total without its details is counted as cached text.
 *
 * @since 0.3.0
 */
import type { RealtimeTokens } from "../../domain/Pricing.ts"

const object = (value: unknown): Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : {}

const tokens = (value: unknown): number =>
  typeof value === "number" && Number.isSafeInteger(value) && value > 0 ? value : 0

/**
 * The token counts of a `response.done` event's `response.usage`; `undefined` when the event carries no usage
 * object at all.
 *
 * @category decoding
 */
export const realtimeUsageOf = (event: Record<string, unknown>): RealtimeTokens | undefined => {
  const usage = object(event.response).usage
  if (typeof usage !== "object" || usage === null || Array.isArray(usage)) return undefined
  const fields = usage as Record<string, unknown>
  const input = object(fields.input_token_details)
  const cached = object(input.cached_tokens_details)
  const output = object(fields.output_token_details)
  const hasCachedDetails = Object.keys(cached).length > 0
  return {
    inputTokens: tokens(fields.input_tokens),
    outputTokens: tokens(fields.output_tokens),
    textInput: tokens(input.text_tokens),
    audioInput: tokens(input.audio_tokens),
    imageInput: tokens(input.image_tokens),
    cachedText: hasCachedDetails ? tokens(cached.text_tokens) : tokens(input.cached_tokens),
    cachedAudio: tokens(cached.audio_tokens),
    cachedImage: tokens(cached.image_tokens),
    textOutput: tokens(output.text_tokens),
    audioOutput: tokens(output.audio_tokens)
  }
}

/**
 * The tokens billed for a response cut before its `response.done` (the socket ended while it ran), from the deltas
 * it had sent: text output ⌈characters / 4⌉ of its text and transcript deltas, audio output one token per 2,400
 * bytes of PCM16 (50 ms at 24 kHz), input none (the vendor reported none). See docs/BILLING.md, "Realtime sessions".
 *
 * @category billing
 */
export const cutTokens = (textCharacters: number, audioBytes: number): RealtimeTokens => {
  const textOutput = Math.ceil(textCharacters / 4)
  const audioOutput = Math.ceil(audioBytes / 2400)
  return {
    inputTokens: 0,
    outputTokens: textOutput + audioOutput,
    textInput: 0,
    audioInput: 0,
    imageInput: 0,
    cachedText: 0,
    cachedAudio: 0,
    cachedImage: 0,
    textOutput,
    audioOutput
  }
}
