/**
 * Every format's namer of media fields, by format name (see `MediaLocation.ts`).
 * Legacy completions take text prompts only, so they hold no media.
 *
 * @since 0.1.0
 */
import { anthropicMediaParam } from "./anthropic/MediaFields.ts"
import type { FormatName } from "./Format.ts"
import { geminiMediaParam } from "./gemini/GeminiMediaFields.ts"
import type { MediaLocation, MediaParam } from "./MediaLocation.ts"
import { chatMediaParam } from "./openai-chat/ChatMediaFields.ts"
import { responsesMediaParam } from "./openai-responses/ResponsesMediaFields.ts"

const params: Readonly<Record<FormatName, MediaParam>> = {
  "openai-chat": chatMediaParam,
  "openai-responses": responsesMediaParam,
  anthropic: anthropicMediaParam,
  gemini: geminiMediaParam,
  completions: () => undefined
}

/**
 * The field of the caller's `body`, sent in format `format`, that holds the
 * canonical media item at `location` (`messages[3].content[1].image_url.url`),
 * or `undefined` when it cannot be told.
 *
 * @category naming
 */
export const mediaParam = (format: FormatName, body: unknown, location: MediaLocation): string | undefined =>
  params[format](body, location)
