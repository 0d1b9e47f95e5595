/**
 * `stop_reason` of the messages format ↔ canonical finish reason. Values from
 * SDK 1.12 `StopReason`: `end_turn`, `max_tokens`, `stop_sequence`,
 * `tool_use`, `pause_turn`, `refusal`, `model_context_window_exceeded`
 * (docs.anthropic.com/en/api/handling-stop-reasons).
 *
 * @since 0.1.0
 */
import type { FinishReason } from "../../../canonical/Finish.ts"

const fromWire: Readonly<Record<string, FinishReason>> = {
  end_turn: "stop",
  stop_sequence: "stop",
  max_tokens: "length",
  model_context_window_exceeded: "length",
  tool_use: "tool-calls",
  refusal: "content-filter",
  pause_turn: "other"
}

/**
 * A wire stop reason → canonical; `null` or an unknown value gives `other`.
 *
 * @category decoding
 */
export const finishReasonFromWire = (stopReason: string | null | undefined): FinishReason =>
  (stopReason === null || stopReason === undefined ? undefined : fromWire[stopReason]) ?? "other"

const toWire: Readonly<Record<FinishReason, string>> = {
  "stop": "end_turn",
  "length": "max_tokens",
  "tool-calls": "tool_use",
  "content-filter": "refusal",
  "error": "end_turn",
  "other": "end_turn"
}

/**
 * Canonical → wire stop reason. The upstream's own word (`rawReason`) is kept
 * when it is a messages-format stop reason meaning the same thing
 * (`pause_turn`, `model_context_window_exceeded`); `stop` becomes
 * `stop_sequence` when a stop sequence is known.
 *
 * @category encoding
 */
export const finishReasonToWire = (
  reason: FinishReason,
  rawReason: string | undefined,
  stopSequence: string | undefined
): string => {
  if (reason === "stop" && (stopSequence !== undefined || rawReason === "stop_sequence")) return "stop_sequence"
  if (rawReason !== undefined && Object.hasOwn(fromWire, rawReason) && fromWire[rawReason] === reason) {
    return rawReason
  }
  return toWire[reason]
}
