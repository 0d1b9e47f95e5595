/**
 * Content parts of the canonical representation: what a message, a response or
 * a tool result can hold, in no vendor's format. Every wire format decodes into
 * these and encodes from them (docs/ARCHITECTURE.md, "Formats and the canonical form").
 *
 * @since 0.1.0
 */

/** Where media bytes come from: a URL (http(s)) or inline Base64 with its media type. */
export type MediaSource =
  | { readonly kind: "url"; readonly url: string }
  | { readonly kind: "base64"; readonly mediaType: string; readonly data: string }

/** Plain text. */
export interface TextPart {
  readonly type: "text"
  readonly text: string
}

/** An image; `detail` is the OpenAI hint (`auto`, `low`, `high`) where one was given. */
export interface ImagePart {
  readonly type: "image"
  readonly source: MediaSource
  readonly detail?: string | undefined
}

/** Audio input; `format` is the container name (`wav`, `mp3`). Data is Base64. */
export interface AudioPart {
  readonly type: "audio"
  readonly data: string
  readonly format: string
}

/** A document or other file (PDF, …). */
export interface FilePart {
  readonly type: "file"
  readonly source: MediaSource
  readonly filename?: string | undefined
}

/**
 * A tool (function) call made by the assistant. `arguments` is the JSON text of
 * the arguments exactly as the model produced it.
 */
export interface ToolCallPart {
  readonly type: "tool-call"
  readonly callId: string
  readonly name: string
  readonly arguments: string
}

/**
 * The result of a tool call, sent back by the caller. `name` is known in some
 * formats only (generate-content needs it; decoders recover it from history).
 */
export interface ToolResultPart {
  readonly type: "tool-result"
  readonly callId: string
  readonly name?: string | undefined
  readonly content: ReadonlyArray<TextPart | ImagePart>
  readonly isError?: boolean | undefined
}

/**
 * The vendor family that minted a reasoning signature or redacted block:
 * `anthropic` (messages `thinking.signature`, `redacted_thinking.data`),
 * `gemini` (generate-content `thoughtSignature`), `openai` (Responses
 * `reasoning.encrypted_content`). Each vendor accepts back only its own.
 */
export type ReasoningOrigin = "anthropic" | "gemini" | "openai"

/**
 * Model reasoning ("thinking"). `signature` is the vendor's opaque integrity
 * token that must be sent back unchanged in later turns; `redacted` holds an
 * encrypted block the vendor returned instead of text. `origin` names the
 * vendor family that minted `signature`/`redacted` (undefined: not known);
 * translators use it so a token only ever goes back to the family that made it
 * (src/formats/shared/ReasoningOrigin.ts).
 */
export interface ReasoningPart {
  readonly type: "reasoning"
  readonly text: string
  readonly signature?: string | undefined
  readonly redacted?: string | undefined
  readonly origin?: ReasoningOrigin | undefined
}

/** Any content part. */
export type Part = TextPart | ImagePart | AudioPart | FilePart | ToolCallPart | ToolResultPart | ReasoningPart

/** The parts an assistant turn can produce (response content). */
export type OutputPart = TextPart | ToolCallPart | ReasoningPart

/** Concatenates the text parts of a list, ignoring every other kind. */
export const textOf = (parts: ReadonlyArray<Part>): string =>
  parts.map((part) => (part.type === "text" ? part.text : "")).join("")
