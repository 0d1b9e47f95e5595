/**
 * Gemini thought signatures on chat completions tool calls. Chat has no field
 * for a reasoning token, but Gemini 3 refuses a tool loop whose function calls
 * come back unsigned. Gemini's own OpenAI-compatible endpoint carries the
 * signature of a call on the call itself, as
 * `tool_calls[].extra_content.google.thought_signature`
 * (https://ai.google.dev/gemini-api/docs/thought-signatures, "OpenAI
 * compatibility"), and clients built for that endpoint send it back; Sluice
 * uses the same field, so a chat client's Gemini tool loop works unchanged.
 *
 * Canonically the signature a Gemini call carried is a signature-only reasoning
 * part (empty text, origin `gemini`) right before the tool-call part (see
 * `gemini/GeminiParts.ts`); only such a part becomes `extra_content`. Reading
 * follows `ReasoningOrigin.ts` with `gemini` as the field's family: a plain
 * token is Gemini's, a `sluice.<origin>.<token>` names its origin.
 *
 * @since 0.1.0
 */
import type { Part, ReasoningPart, ToolCallPart } from "../../../canonical/Content.ts"
import { reasoningFromClient } from "../../shared/ReasoningOrigin.ts"

/**
 * The `extra_content` of a tool call that carries `signature`.
 *
 * @category encoding
 */
export const extraContentFor = (signature: string): Record<string, unknown> => ({
  google: { thought_signature: signature }
})

/**
 * The Gemini signature in a tool call's `extra_content`, if any (a non-empty
 * string at `google.thought_signature`; anything else is ignored).
 *
 * @category decoding
 */
export const signatureOfExtraContent = (extraContent: unknown): string | undefined => {
  if (typeof extraContent !== "object" || extraContent === null) return undefined
  const google = (extraContent as Record<string, unknown>).google
  if (typeof google !== "object" || google === null) return undefined
  const signature = (google as Record<string, unknown>).thought_signature
  return typeof signature === "string" && signature !== "" ? signature : undefined
}

/**
 * The canonical part a tool call's `extra_content` signature stands for: a
 * signature-only reasoning part, to be placed right before the call.
 *
 * @category decoding
 */
export const signaturePartOf = (extraContent: unknown): ReasoningPart | undefined => {
  const signature = signatureOfExtraContent(extraContent)
  return signature === undefined ? undefined : reasoningFromClient("", { signature }, "gemini")
}

/**
 * Whether a part is what a Gemini call's signature is canonically: a
 * signature-only reasoning part of origin `gemini`.
 *
 * @category models
 */
export const isCallSignature = (part: Part): part is ReasoningPart & { readonly signature: string } =>
  part.type === "reasoning" && part.text === "" && part.signature !== undefined && part.origin === "gemini"

/**
 * The Gemini signature of each tool-call part of `parts`: the signature of a
 * call-signature part (`isCallSignature`) immediately before it.
 *
 * @category encoding
 */
export const callSignatures = (parts: ReadonlyArray<Part>): ReadonlyMap<ToolCallPart, string> => {
  const signatures = new Map<ToolCallPart, string>()
  for (let index = 1; index < parts.length; index++) {
    const part = parts[index]
    const before = parts[index - 1]
    if (part.type === "tool-call" && isCallSignature(before)) signatures.set(part, before.signature)
  }
  return signatures
}

/**
 * A canonical tool call as a chat `tool_calls` entry (`{id, type: "function",
 * function: {name, arguments}}`), with `extra_content` when it carries a
 * Gemini signature.
 *
 * @category encoding
 */
export const chatToolCall = (call: ToolCallPart, signature: string | undefined): Record<string, unknown> => ({
  id: call.callId,
  type: "function",
  function: { name: call.name, arguments: call.arguments },
  ...(signature === undefined ? {} : { extra_content: extraContentFor(signature) })
})
