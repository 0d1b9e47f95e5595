/**
 * Facts about Gemini models that more than one wire format needs: which
 * upstream model names are Gemini's (a chat completions channel may be Gemini's
 * OpenAI-compatible endpoint) and which of them refuse unsigned function calls.
 * Source: https://ai.google.dev/gemini-api/docs/thought-signatures.
 *
 * @since 0.1.0
 */

/**
 * The value Gemini documents for a function call it did not sign (a tool loop
 * begun on another model, or a client that dropped the signature): it skips
 * the signature check (thought-signatures page, FAQ "transfer history from
 * another model").
 *
 * @category constants
 */
export const SKIP_SIGNATURE_VALIDATOR = "skip_thought_signature_validator"

const GEMINI_NAME = /^(?:models\/)?gemini-(\d+)/

/**
 * Whether an upstream model name is a Gemini model (`gemini-2.5-flash`,
 * `models/gemini-3-pro-preview`).
 *
 * @category models
 */
export const isGeminiModel = (model: string): boolean => GEMINI_NAME.test(model)

/**
 * Whether an upstream model, by name, refuses unsigned function calls in the
 * current turn: Gemini 3 and later (`gemini-3-pro-preview`, `gemini-3.5-flash`,
 * with or without `models/`) — "When using Gemini 3 models, you must pass back
 * thought signatures during function calling, otherwise you will get a
 * validation error".
 *
 * @category models
 */
export const checksCallSignatures = (model: string): boolean => {
  const major = GEMINI_NAME.exec(model)?.[1]
  return major !== undefined && Number(major) >= 3
}
