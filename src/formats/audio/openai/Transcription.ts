/**
 * OpenAI's transcription and translation requests on the upstream
 * (`POST /v1/audio/transcriptions`, `/v1/audio/translations`,
 * platform.openai.com/docs/api-reference/audio/createTranscription): the
 * caller's form passed on with the upstream's model, and the `usage` its
 * answer (or its stream's `transcript.text.done` event) reports.
 *
 * @since 0.1.0
 */
import { parseJsonOrUndefined } from "../../../domain/JsonDepth.ts"
import type { ReportedUsage } from "../AudioWire.ts"

/**
 * The upstream form of a transcription: every field of `form` but `model` and each of `strip`, then `model`.
 *
 * @category encoding
 */
export const openAiTranscriptionForm = (form: FormData, model: string, strip: ReadonlyArray<string>): FormData => {
  const sent = new FormData()
  const stripped = new Set(strip)
  for (const [name, value] of form.entries()) {
    if (name !== "model" && !stripped.has(name)) sent.append(name, value)
  }
  sent.set("model", model)
  return sent
}

/**
 * The data of a streamed transcription's `transcript.text.done` event (which
 * carries the usage), when `text` is such a stream
 * (platform.openai.com/docs/api-reference/audio/transcript-text-done-event).
 */
const streamedDone = (text: string): string | undefined => {
  if (!text.startsWith("data:") && !text.startsWith("event:")) return undefined
  for (const line of text.split("\n").reverse()) {
    if (!line.startsWith("data:")) continue
    const data = line.slice(5).trim()
    const event = parseJsonOrUndefined(data) as { type?: unknown } | null | undefined
    if (event?.type === "transcript.text.done") return data
  }
  return undefined
}

/**
 * The `usage` a transcription answer reports, if JSON with one (nested at most `MAX_JSON_DEPTH`); `duration` of
 * verbose_json counts as seconds; a streamed answer's `transcript.text.done` event is read for it.
 *
 * @category decoding
 */
export const transcriptionUsage = (text: string): ReportedUsage => {
  const parsed = parseJsonOrUndefined(streamedDone(text) ?? text)
  if (typeof parsed !== "object" || parsed === null) return {}
  const answer = parsed as Record<string, unknown>
  const usage = answer.usage as Record<string, unknown> | undefined
  const finite = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value) && value >= 0
  if (typeof usage === "object" && usage !== null) {
    if (usage.type === "duration" && finite(usage.seconds)) return { seconds: usage.seconds }
    if (usage.type === "tokens" && finite(usage.input_tokens) && finite(usage.output_tokens)) {
      return { tokens: { inputTokens: Math.trunc(usage.input_tokens), outputTokens: Math.trunc(usage.output_tokens) } }
    }
  }
  return finite(answer.duration) ? { seconds: answer.duration } : {}
}
