/**
 * A messages-format body without another vendor's reasoning tokens, rebuilt
 * in place for an anthropic channel, so every other field reaches it as the
 * caller sent it (a rebuild through the canonical form would keep only what
 * that form models). What changes is what the request encoder changes
 * (`RequestEncoder.ts`): a `thinking` block whose signature, or a
 * `redacted_thinking` block whose data, the gateway wrote `sluice.<origin>.…`
 * for another vendor's token is left out whole (the API refuses a signature
 * it did not mint, and unsigned thinking); and when that leaves thinking asked
 * for in a tool loop whose assistant turn no longer starts with a thinking
 * block, `thinking` becomes `{type: "disabled"}` instead of the API's certain
 * 400 (`toolLoopWithoutThinking`).
 *
 * @since 0.1.0
 */
import { Result } from "effect"
import { decodeRequest } from "./RequestDecoder.ts"
import { toolLoopWithoutThinking } from "./RequestEncoder.ts"

const FOREIGN = /^sluice\.(gemini|openai)\./

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Whether a block carries a token another vendor minted. */
const isForeignBlock = (block: unknown): boolean => {
  if (!isObject(block)) return false
  const token = block.type === "thinking"
    ? block.signature
    : block.type === "redacted_thinking"
    ? block.data
    : undefined
  return typeof token === "string" && FOREIGN.test(token)
}

/**
 * The caller's messages body without the reasoning blocks another vendor
 * minted (see the module doc); every other field as sent. A new object; `raw`
 * is left as it is.
 *
 * @category passthrough
 */
export const anthropicWithoutForeignReasoning = (raw: Record<string, unknown>): Record<string, unknown> => {
  if (!Array.isArray(raw.messages)) return raw
  const messages = raw.messages.map((message) =>
    isObject(message) && Array.isArray(message.content)
      ? { ...message, content: message.content.filter((block) => !isForeignBlock(block)) }
      : message
  )
  const body: Record<string, unknown> = { ...raw, messages }
  const thinking = isObject(raw.thinking) ? raw.thinking.type : undefined
  if (thinking === "enabled" || thinking === "adaptive") {
    const decoded = decodeRequest(body, {})
    if (Result.isSuccess(decoded) && toolLoopWithoutThinking(decoded.success)) body.thinking = { type: "disabled" }
  }
  return body
}
