/**
 * Prompt-size estimates made before the upstream reports usage.
 *
 * @since 0.1.0
 */
import type { Part } from "./Content.ts"
import type { Request } from "./Request.ts"

/**
 * Output tokens assumed when a request names no output limit: the quota hold's
 * default (`settings.default_max_tokens`) and the `max_tokens` the messages
 * format gets when the caller sent none (the field is required there), so
 * both paths, passthrough and translated, send what the hold was sized for.
 * Sluice's choice.
 *
 * @category estimates
 */
export const DEFAULT_OUTPUT_TOKENS = 4096

/**
 * The UTF-8 length of `text` in bytes, counted without encoding it: what
 * `new TextEncoder().encode(text).length` gives (a lone surrogate counts 3,
 * as the U+FFFD it is encoded as).
 *
 * @category estimates
 */
export const utf8Length = (text: string): number => {
  let bytes = text.length
  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index)
    if (unit < 0x80) continue
    if (unit < 0x800) bytes += 1
    else if (unit >= 0xd800 && unit < 0xdc00 && index + 1 < text.length) {
      const low = text.charCodeAt(index + 1)
      // A surrogate pair: 2 units, 4 bytes.
      if (low >= 0xdc00 && low < 0xe000) {
        bytes += 2
        index++
      } else bytes += 2
    } else bytes += 2
  }
  return bytes
}

/**
 * Tokens held per image or file, whatever its source (a high-detail image
 * costs at most about this many tokens on the big vendors; a file's rendered
 * pages are not known from its bytes).
 */
const MEDIA_TOKENS = 2000

/**
 * The byte length of Base64 `data` once decoded, without decoding it.
 *
 * @category estimates
 */
export const base64ByteLength = (data: string): number =>
  Math.max(0, Math.floor((data.length * 3) / 4) - (data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0))

const partBytes = (part: Part): number => {
  switch (part.type) {
    case "text":
    case "reasoning":
      return utf8Length(part.text)
    case "tool-call":
      return utf8Length(part.name) + utf8Length(part.arguments)
    case "tool-result":
      return part.content.reduce((sum, inner) => sum + partBytes(inner), 0)
    case "image":
      return MEDIA_TOKENS
    case "audio":
      return Math.ceil(part.data.length / 4)
    case "file":
      // Inline content may be text read a token per byte, on top of the allowance a URL file gets,
      // so inlining a downloaded file never lowers the bound.
      return MEDIA_TOKENS + (part.source.kind === "base64" ? base64ByteLength(part.source.data) : 0)
  }
}

/**
 * An upper bound of the prompt's token count, for quota holds: a token is at
 * least one UTF-8 byte, so the byte count of the text bounds it, plus a fixed
 * allowance per message, image, file and tool definition; an inline file
 * adds the byte count of its decoded content.
 *
 * @category estimates
 */
export const promptTokensUpperBound = (request: Request): number => {
  let total = 8
  for (const message of request.messages) {
    total += 8
    for (const part of message.content) total += partBytes(part)
  }
  for (const tool of request.tools ?? []) total += utf8Length(JSON.stringify(tool))
  return total
}

/**
 * A typical prompt token count (about four characters a token), for formats
 * that announce usage before the upstream reports it and for billing a stream
 * that broke before its usage arrived.
 *
 * @category estimates
 */
export const promptTokensTypical = (request: Request): number => {
  let characters = 0
  for (const message of request.messages) {
    for (const part of message.content) {
      if (part.type === "text" || part.type === "reasoning") characters += part.text.length
      else if (part.type === "tool-call") characters += part.arguments.length + part.name.length
      else if (part.type === "tool-result") {
        for (const inner of part.content) if (inner.type === "text") characters += inner.text.length
      }
    }
  }
  return Math.ceil(characters / 4) + 3 * request.messages.length
}

/**
 * The tokens the quota hold must grow by once `inlined` (the request with its
 * downloads inline, from `MediaFetcher.prepare`) replaces `original`: the
 * difference of their upper bounds, never negative.
 *
 * @category estimates
 */
export const extraHoldTokens = (original: Request, inlined: Request): number =>
  Math.max(0, promptTokensUpperBound(inlined) - promptTokensUpperBound(original))
