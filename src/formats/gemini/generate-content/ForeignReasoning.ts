/**
 * A generate-content body without another vendor's reasoning tokens, rebuilt
 * in place for a gemini channel, so every other field reaches it as the
 * caller sent it (a rebuild through the canonical form would keep only what
 * that form models). What is left out is what the request encoder leaves out
 * (`RequestCodec.ts`): a `thoughtSignature` written `sluice.<origin>.…` by
 * the gateway for another vendor's token (Gemini answers "Corrupted thought
 * signature." to one it did not mint) goes, a thought part left with no text
 * goes with it, and for a Gemini 3 model an unsigned function call of the
 * current turn gets the validator-skipping value (`signCurrentTurnCalls`).
 *
 * @since 0.1.0
 */
import { checksCallSignatures } from "../Models.ts"
import type { WireJson } from "./Parts.ts"
import { signCurrentTurnCalls } from "./RequestCodec.ts"

const FOREIGN = /^sluice\.(anthropic|openai)\./

const isObject = (value: unknown): value is WireJson =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** The part without a foreign signature; `undefined` when it was a thought with no text left. */
const partWithout = (part: unknown): unknown => {
  if (!isObject(part)) return part
  const key = typeof part.thoughtSignature === "string"
    ? "thoughtSignature"
    : typeof part.thought_signature === "string"
    ? "thought_signature"
    : undefined
  if (key === undefined || !FOREIGN.test(part[key] as string)) return part
  const { [key]: _signature, ...rest } = part
  return rest.thought === true && (typeof rest.text !== "string" || rest.text === "") ? undefined : rest
}

/**
 * The caller's generate-content body (`raw`, for upstream `model`) without
 * the reasoning tokens another vendor minted (see the module doc); every other
 * field as sent. A new object; `raw` is left as it is.
 *
 * @category passthrough
 */
export const geminiWithoutForeignReasoning = (raw: Record<string, unknown>, model: string): Record<string, unknown> => {
  if (!Array.isArray(raw.contents)) return raw
  const contents = raw.contents.map((content) => {
    if (!isObject(content) || !Array.isArray(content.parts)) return content
    return { ...content, parts: content.parts.map(partWithout).filter((part) => part !== undefined) }
  })
  if (checksCallSignatures(model)) {
    signCurrentTurnCalls(
      contents.filter((content): content is { role: string; parts: Array<WireJson> } =>
        isObject(content) && typeof content.role === "string" && Array.isArray(content.parts)
      )
    )
  }
  return { ...raw, contents }
}
