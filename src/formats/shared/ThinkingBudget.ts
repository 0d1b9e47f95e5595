/**
 * Fitting a reasoning budget under the output cap. The caller's cap
 * (`max_completion_tokens`, `max_tokens`, `max_output_tokens`,
 * `maxOutputTokens`) bounds the whole output, reasoning included (spec, "Text:
 * chat completions": `max_completion_tokens` "includes reasoning tokens";
 * Anthropic: `budget_tokens` "must be ≥1024 and less than `max_tokens`",
 * docs.anthropic.com/en/docs/build-with-claude/extended-thinking; Gemini counts
 * thoughts against `maxOutputTokens`), and the quota hold is sized for it. So
 * an encoder never raises the cap to make room for thinking: it shrinks the
 * budget instead, or sends none.
 *
 * @since 0.1.0
 */

/**
 * Tokens kept for the visible answer when a budget must shrink to fit the
 * cap: at most this, and at most half the cap. Sluice's choice.
 *
 * @category constants
 */
export const ANSWER_ROOM_TOKENS = 4096

/**
 * The thinking budget (tokens) to send for `wanted` under an output cap of
 * `cap` tokens, or `undefined` when the cap leaves no room for the vendor's
 * smallest budget (`minimum`; the cap must exceed it) and the budget does not
 * already fit: the encoder then sends no budget (see each encoder for what it
 * sends instead).
 *
 * - A budget the caller named (`explicit`) below the cap is kept as it is; an
 *   effort-derived one is kept only when it leaves `ANSWER_ROOM_TOKENS` for
 *   the answer.
 * - Otherwise the budget is the cap minus the answer's room
 *   (`min(ANSWER_ROOM_TOKENS, floor(cap / 2))`), never below `minimum` and
 *   never above `wanted`.
 *
 * The result is always below `cap`, and at least `minimum` unless the caller
 * named a smaller budget.
 *
 * @category encoding
 */
export const fitThinkingBudget = (
  wanted: number,
  cap: number,
  options: { readonly minimum: number; readonly explicit: boolean }
): number | undefined => {
  if (wanted < cap && (options.explicit || wanted + ANSWER_ROOM_TOKENS <= cap)) return wanted
  if (cap <= options.minimum) return undefined
  const answerRoom = Math.min(ANSWER_ROOM_TOKENS, Math.floor(cap / 2))
  return Math.max(options.minimum, Math.min(wanted, cap - answerRoom))
}
