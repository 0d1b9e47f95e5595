/**
 * The usage an emulator answer reported, read back from the bytes it sent, in
 * the vendor's own terms: OpenAI chat and completions `usage.prompt_tokens` /
 * `completion_tokens` (`prompt_tokens_details.cached_tokens`, or DeepSeek's
 * `prompt_cache_hit_tokens`, `completion_tokens_details.reasoning_tokens`); OpenAI Responses and
 * Anthropic `input_tokens` / `output_tokens` (Anthropic's `message_start` and
 * `message_delta` merged, its cache reads in `cache_read_input_tokens`);
 * Gemini `usageMetadata` (`promptTokenCount`, `candidatesTokenCount` +
 * `thoughtsTokenCount`, `cachedContentTokenCount`); Bedrock Converse `usage`
 * (`inputTokens`, which leaves out cache reads and writes, `outputTokens`,
 * `cacheReadInputTokens`, `cacheWriteInputTokens`), in a stream its `metadata`
 * event; Bedrock InvokeModel the model's own body (Claude's Messages usage,
 * Titan's `inputTextTokenCount`), its stream's chunks decoded, and for the
 * embedding models without usage in the body the `X-Amzn-Bedrock-Input-Token-Count`
 * header; Vertex AI's embeddings the `statistics.token_count` of their
 * predictions. Billing tests compare the gateway's ledger with this, never
 * with the ledger itself.
 *
 * @since 0.1.0
 */
import { framePayload } from "./BedrockWire.ts"
import type { Reply } from "./Sse.ts"
import { isObject, type JsonObject } from "./Wire.ts"

/** What an answer reported, as the vendor counts: tokens. @category models */
export interface ReportedUsage {
  /** Prompt / input tokens as the vendor's field says (Anthropic's excludes cache reads). */
  readonly input: number
  readonly output: number
  /** Anthropic's cache reads and writes; OpenAI's, DeepSeek's and Gemini's cached prompt tokens (part of `input`). */
  readonly cacheRead: number
  readonly cacheWrite: number
  readonly reasoning: number
}

const number = (value: unknown): number | undefined => typeof value === "number" ? value : undefined
const object = (value: unknown): JsonObject => isObject(value) ? value : {}

/** The usage fields of one JSON payload merged into `into` (later payloads win, field by field). */
const absorb = (into: Partial<Record<keyof ReportedUsage, number>>, payload: JsonObject): void => {
  const set = (field: keyof ReportedUsage, value: number | undefined) => {
    if (value !== undefined) into[field] = value
  }
  const gemini = payload.usageMetadata
  if (isObject(gemini)) {
    set("input", number(gemini.promptTokenCount))
    const candidates = number(gemini.candidatesTokenCount)
    const thoughts = number(gemini.thoughtsTokenCount)
    if (candidates !== undefined || thoughts !== undefined) set("output", (candidates ?? 0) + (thoughts ?? 0))
    set("cacheRead", number(gemini.cachedContentTokenCount))
    set("reasoning", thoughts)
  }
  // Vertex AI's `:predict` embeddings: each prediction's `statistics.token_count`.
  if (Array.isArray(payload.predictions)) {
    let tokens = 0
    for (const prediction of payload.predictions) {
      tokens += number(object(object(object(prediction).embeddings).statistics).token_count) ?? 0
    }
    set("input", tokens)
    set("output", 0)
  }
  const usage = isObject(payload.usage)
    ? payload.usage
    : isObject(object(payload.message).usage)
    ? object(payload.message).usage as JsonObject
    : isObject(object(payload.response).usage)
    ? object(payload.response).usage as JsonObject
    : undefined
  set("input", number(payload.inputTextTokenCount))
  if (usage === undefined) return
  set("input", number(usage.prompt_tokens) ?? number(usage.input_tokens) ?? number(usage.inputTokens))
  set("output", number(usage.completion_tokens) ?? number(usage.output_tokens) ?? number(usage.outputTokens))
  set(
    "cacheRead",
    number(usage.cache_read_input_tokens) ?? number(object(usage.prompt_tokens_details).cached_tokens) ??
      number(usage.prompt_cache_hit_tokens) ?? number(object(usage.input_tokens_details).cached_tokens) ??
      number(usage.cacheReadInputTokens)
  )
  set("cacheWrite", number(usage.cache_creation_input_tokens) ?? number(usage.cacheWriteInputTokens))
  set(
    "reasoning",
    number(object(usage.completion_tokens_details).reasoning_tokens) ??
      number(object(usage.output_tokens_details).reasoning_tokens)
  )
}

/**
 * The JSON payloads of a stream frame (`data:` lines, or one element of a JSON-array stream, or a Bedrock
 * event-stream message: its JSON, and for an InvokeModel `chunk` the model's event its `bytes` carry).
 */
const payloadsOf = (frame: string | Uint8Array): Array<JsonObject> => {
  if (typeof frame !== "string") {
    const payload = object(framePayload(frame))
    if (typeof payload.bytes !== "string") return [payload]
    try {
      const bytes = Uint8Array.from(atob(payload.bytes), (char) => char.charCodeAt(0))
      return [object(JSON.parse(new TextDecoder().decode(bytes)))]
    } catch {
      return []
    }
  }
  const texts = frame.includes("data:")
    ? frame.split("\n").filter((line) => line.startsWith("data:")).map((line) => line.slice(5).trim())
    : [frame.trim().replace(/^[[,]\s*/, "").replace(/\s*]$/, "")]
  const payloads: Array<JsonObject> = []
  for (const text of texts) {
    try {
      const parsed: unknown = JSON.parse(text)
      if (isObject(parsed)) payloads.push(parsed)
    } catch {
      // Not JSON (`[DONE]`, a keep-alive): no usage.
    }
  }
  return payloads
}

/**
 * The usage `reply` reported in its first `sent` frames (a stream cut by a
 * fault sent fewer), or `undefined` when it reported none.
 *
 * @category usage
 */
export const reportedUsage = (reply: Reply, sent = Number.POSITIVE_INFINITY): ReportedUsage | undefined => {
  const found: Partial<Record<keyof ReportedUsage, number>> = {}
  if (reply._tag === "Json") {
    if (reply.status >= 400 || !isObject(reply.body)) return undefined
    absorb(found, reply.body)
    const counted = Number(reply.headers?.["x-amzn-bedrock-input-token-count"] ?? Number.NaN)
    if (found.input === undefined && Number.isSafeInteger(counted)) found.input = counted
  } else if (reply._tag === "Events") {
    for (const frame of reply.frames.slice(0, sent)) for (const payload of payloadsOf(frame)) absorb(found, payload)
  } else return undefined
  if (found.input === undefined && found.output === undefined) return undefined
  return {
    input: found.input ?? 0,
    output: found.output ?? 0,
    cacheRead: found.cacheRead ?? 0,
    cacheWrite: found.cacheWrite ?? 0,
    reasoning: found.reasoning ?? 0
  }
}
