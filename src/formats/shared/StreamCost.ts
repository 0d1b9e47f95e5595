/**
 * A stream's cost in the caller's final usage: when the caller asks
 * (`stream_options.include_cost: true` on chat and completions, or the request
 * header `x-sluice-include-cost: 1` on every format), the usage object of the
 * event that carries the answer's final usage gets `cost`, the charge in USD
 * (a number, as OpenRouter's usage accounting puts it: openrouter.ai/docs,
 * "Usage Accounting"). Each format says which of its events that is; every
 * other event passes unchanged.
 *
 * @since 0.1.0
 */
import type { Sse } from "effect/encoding"
import { Predicate } from "effect"

/** The JSON object of `data`, or `undefined` when it is not one. */
const objectOf = (data: string): Record<string, unknown> | undefined => {
  try {
    const parsed: unknown = JSON.parse(data)
    return Predicate.isObject(parsed) && !Array.isArray(parsed) ? parsed as Record<string, unknown> : undefined
  } catch {
    return undefined
  }
}

/**
 * `event` with `cost` set in the usage object found by `usageOf` in its JSON
 * data, or `undefined` when the event carries none (its data is not JSON, or
 * `usageOf` finds no object). `hint` is a substring every carrying event has,
 * so that other events are not parsed.
 *
 * @category stream cost
 */
export const withUsageCost = (
  event: Sse.Event,
  cost: number,
  hint: string,
  usageOf: (body: Record<string, unknown>, event: Sse.Event) => unknown
): Sse.Event | undefined => {
  if (!event.data.includes(hint)) return undefined
  const body = objectOf(event.data)
  if (body === undefined) return undefined
  const usage = usageOf(body, event)
  if (!Predicate.isObject(usage) || Array.isArray(usage)) return undefined
  ;(usage as Record<string, unknown>).cost = cost
  return { ...event, data: JSON.stringify(body) }
}

/**
 * Chat completions and legacy completions: the chunk with a `usage` object
 * (the usage chunk after the finish).
 *
 * @category stream cost
 */
export const openAiChunkCost = (event: Sse.Event, cost: number): Sse.Event | undefined =>
  withUsageCost(event, cost, `"usage"`, (body) => body.usage)

/**
 * Whether a chat or completions caller asked for the cost in its stream
 * (`stream_options.include_cost: true`, a Sluice extension as OpenRouter's
 * `usage.include`).
 *
 * @category stream cost
 */
export const includeCostRequested = (body: unknown): boolean =>
  Predicate.isObject(body) && Predicate.isObject(body.stream_options) && body.stream_options.include_cost === true

/**
 * `stream_options` for the upstream: the caller's, without the gateway's own
 * `include_cost`, with `include_usage` switched on.
 *
 * @category stream cost
 */
export const upstreamStreamOptions = (raw: Record<string, unknown>): Record<string, unknown> => {
  const options = Predicate.isObject(raw.stream_options) ? raw.stream_options as Record<string, unknown> : {}
  const { include_cost: _cost, ...rest } = options
  return { ...rest, include_usage: true }
}

/**
 * Messages: `message_delta`, whose `usage` is the answer's final usage
 * (docs.anthropic.com/en/docs/build-with-claude/streaming).
 *
 * @category stream cost
 */
export const messagesCost = (event: Sse.Event, cost: number): Sse.Event | undefined =>
  withUsageCost(event, cost, `"message_delta"`, (body) => body.type === "message_delta" ? body.usage : undefined)

const RESPONSES_TERMINAL: ReadonlySet<unknown> = new Set([
  "response.completed",
  "response.incomplete",
  "response.failed"
])

/**
 * Responses: `response.completed` / `.incomplete` / `.failed`, in `response.usage`
 * (platform.openai.com/docs/api-reference/responses-streaming).
 *
 * @category stream cost
 */
export const responsesCost = (event: Sse.Event, cost: number): Sse.Event | undefined =>
  withUsageCost(
    event,
    cost,
    `"response.`,
    (body) =>
      RESPONSES_TERMINAL.has(body.type) && Predicate.isObject(body.response)
        ? (body.response as Record<string, unknown>).usage
        : undefined
  )

/**
 * Generate-content: `usageMetadata` of the chunk that finishes (a candidate's
 * `finishReason`, or a blocked prompt's `promptFeedback.blockReason`).
 *
 * @category stream cost
 */
export const generateContentCost = (event: Sse.Event, cost: number): Sse.Event | undefined =>
  withUsageCost(event, cost, `"usageMetadata"`, (body) => {
    const candidates = Array.isArray(body.candidates) ? body.candidates : []
    const first: unknown = candidates[0]
    const finished = (Predicate.isObject(first) && typeof first.finishReason === "string") ||
      (Predicate.isObject(body.promptFeedback) && body.promptFeedback.blockReason !== undefined)
    return finished ? body.usageMetadata : undefined
  })
