/**
 * Converse's `stopReason` (SDK `enums.d.ts` `StopReason`) in canonical form.
 *
 * @since 0.1.0
 */
import type { FinishReason } from "../../../canonical/Finish.ts"

/**
 * `end_turn`, `stop_sequence` → stop; `max_tokens`, `model_context_window_exceeded` → length; `tool_use` →
 * tool-calls; `guardrail_intervened`, `content_filtered` → content-filter; `malformed_model_output`,
 * `malformed_tool_use` → error; anything else (or none) → other.
 *
 * @category decoding
 */
export const finishReasonOfStop = (stopReason: string | undefined): FinishReason => {
  switch (stopReason) {
    case "end_turn":
    case "stop_sequence":
      return "stop"
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length"
    case "tool_use":
      return "tool-calls"
    case "guardrail_intervened":
    case "content_filtered":
      return "content-filter"
    case "malformed_model_output":
    case "malformed_tool_use":
      return "error"
    default:
      return "other"
  }
}
