/**
 * Prompt-size estimates made before the upstream reports usage.
 *
 * @since 0.1.0
 */
import type { Part } from "./Content.ts"
import type { Request } from "./Request.ts"

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

/** Tokens held per image (a high-detail image costs at most about this many tokens on the big vendors). */
const IMAGE_TOKENS = 2000

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
      return IMAGE_TOKENS
    case "audio":
      return Math.ceil(part.data.length / 4)
    case "file":
      return part.source.kind === "base64" ? Math.ceil(part.source.data.length / 2) : IMAGE_TOKENS
  }
}

/**
 * An upper bound of the prompt's token count, for quota holds: a token is at
 * least one UTF-8 byte, so the byte count of the text bounds it, plus a fixed
 * allowance per message, image and tool definition.
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
