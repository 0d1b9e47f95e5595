/**
 * Prompt-size estimates made before the upstream reports usage.
 *
 * @since 0.1.0
 */
import type { Part } from "./Content.ts"
import type { Request } from "./Request.ts"

const encoder = new TextEncoder()

/** Tokens held per image (a high-detail image costs at most about this many tokens on the big vendors). */
const IMAGE_TOKENS = 2000

const partBytes = (part: Part): number => {
  switch (part.type) {
    case "text":
    case "reasoning":
      return encoder.encode(part.text).length
    case "tool-call":
      return encoder.encode(part.name + part.arguments).length
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
  for (const tool of request.tools ?? []) total += encoder.encode(JSON.stringify(tool)).length
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
