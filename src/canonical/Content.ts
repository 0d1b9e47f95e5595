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

/**
 * A prompt-cache breakpoint on the element that carries it: the prompt up to and including that element (tools, then
 * system, then messages, in that order) may be cached by the upstream, as Anthropic's `cache_control` marks it
 * (docs.anthropic.com/en/docs/build-with-claude/prompt-caching) and Bedrock Converse's `cachePoint` follows it.
 * `ttl` is how long the entry lives (`5m`, the vendors' default, or `1h`), absent when the caller named none. Only
 * formats with explicit breakpoints read or write it (messages, Converse); the others cache by prefix on their own
 * and list `cache` as dropped.
 */
export interface CacheBreakpoint {
  readonly ttl?: "5m" | "1h" | undefined
}

/** Plain text; `cache` marks a prompt-cache breakpoint after it (`CacheBreakpoint`). */
export interface TextPart {
  readonly type: "text"
  readonly text: string
  readonly cache?: CacheBreakpoint | undefined
}

/** An image; `detail` is the OpenAI hint (`auto`, `low`, `high`) where one was given; `cache` as on `TextPart`. */
export interface ImagePart {
  readonly type: "image"
  readonly source: MediaSource
  readonly detail?: string | undefined
  readonly cache?: CacheBreakpoint | undefined
}

/** Audio input; `format` is the container name (`wav`, `mp3`). Data is Base64. */
export interface AudioPart {
  readonly type: "audio"
  readonly data: string
  readonly format: string
}

/** A document or other file (PDF, …); `cache` as on `TextPart`. */
export interface FilePart {
  readonly type: "file"
  readonly source: MediaSource
  readonly filename?: string | undefined
  readonly cache?: CacheBreakpoint | undefined
}

/**
 * A tool (function) call made by the assistant. `arguments` is the JSON text of
 * the arguments exactly as the model produced it; `cache` as on `TextPart`.
 */
export interface ToolCallPart {
  readonly type: "tool-call"
  readonly callId: string
  readonly name: string
  readonly arguments: string
  readonly cache?: CacheBreakpoint | undefined
}

/**
 * The result of a tool call, sent back by the caller. `name` is known in some
 * formats only (generate-content needs it; decoders recover it from history). `cache` as on `TextPart` (its
 * `content` parts may carry their own).
 */
export interface ToolResultPart {
  readonly type: "tool-result"
  readonly callId: string
  readonly name?: string | undefined
  readonly content: ReadonlyArray<TextPart | ImagePart>
  readonly isError?: boolean | undefined
  readonly cache?: CacheBreakpoint | undefined
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
