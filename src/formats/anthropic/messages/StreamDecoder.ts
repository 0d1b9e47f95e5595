/**
 * Upstream messages-format SSE events → canonical stream parts. Event names
 * and payloads: SDK 1.12 `RawMessageStreamEvent` and
 * docs.anthropic.com/en/docs/build-with-claude/streaming (`message_start`,
 * `content_block_start` / `_delta` / `_stop`, `message_delta`,
 * `message_stop`, `ping`, `error`).
 *
 * @since 0.1.0
 */
import { Result } from "effect"
import type { Sse } from "effect/encoding"
import type { FinishReason } from "../../../canonical/Finish.ts"
import type { StreamPart } from "../../../canonical/StreamPart.ts"
import { UpstreamFailed } from "../../../errors/GatewayError.ts"
import type { DecodeStep, StreamDecoder } from "../../Format.ts"
import { kindOfErrorBody } from "./ErrorBody.ts"
import {
  ContentBlockDeltaEvent,
  ContentBlockStartEvent,
  ContentBlockStopEvent,
  MessageDeltaEvent,
  MessageStartEvent,
  OUTPUT_BLOCK_TYPES,
  OutputBlock
} from "./ResponseSchema.ts"
import { finishReasonFromWire } from "./StopReason.ts"
import { usageFromWire } from "./Usage.ts"
import { wireDecoder } from "./WireDecoder.ts"

/**
 * The decoder's state: wire block index → canonical index for the blocks
 * carried, the canonical blocks still open, raw usage counters, the stop
 * reason and whether `message_stop` has been seen. Copied on every change.
 *
 * @category models
 */
export interface StreamDecoderState {
  readonly indexes: Readonly<Record<number, number>>
  readonly nextIndex: number
  readonly open: ReadonlyArray<number>
  readonly id: string
  readonly model: string
  readonly inputTokens: number
  readonly outputTokens: number
  readonly cacheRead: number | undefined
  readonly cacheCreation: number | undefined
  readonly thinkingTokens: number | undefined
  readonly stopReason: string | undefined
  readonly stopSequence: string | undefined
  readonly done: boolean
}

const initial = (): StreamDecoderState => ({
  indexes: {},
  nextIndex: 0,
  open: [],
  id: "",
  model: "",
  inputTokens: 0,
  outputTokens: 0,
  cacheRead: undefined,
  cacheCreation: undefined,
  thinkingTokens: undefined,
  stopReason: undefined,
  stopSequence: undefined,
  done: false
})

const usageOf = (state: StreamDecoderState) =>
  usageFromWire({
    input_tokens: state.inputTokens,
    output_tokens: state.outputTokens,
    cache_read_input_tokens: state.cacheRead,
    cache_creation_input_tokens: state.cacheCreation,
    output_tokens_details: state.thinkingTokens === undefined ? undefined : { thinking_tokens: state.thinkingTokens }
  })

const usageUpdate = (state: StreamDecoderState): StreamPart => ({ _tag: "UsageUpdate", usage: usageOf(state) })

const decodeStart = wireDecoder(MessageStartEvent)
const decodeBlockStart = wireDecoder(ContentBlockStartEvent)
const decodeBlock = wireDecoder(OutputBlock)
const decodeDelta = wireDecoder(ContentBlockDeltaEvent)
const decodeStop = wireDecoder(ContentBlockStopEvent)
const decodeMessageDelta = wireDecoder(MessageDeltaEvent)

const KNOWN_EVENTS: ReadonlySet<string> = new Set([
  "message_start",
  "content_block_start",
  "content_block_delta",
  "content_block_stop",
  "message_delta",
  "message_stop",
  "ping",
  "error"
])

const badEvent = (name: string, detail: string) =>
  new UpstreamFailed({
    kind: "bad-body",
    status: 200,
    message: `The upstream ${name} event could not be read: ${detail}`
  })

/** Usage counters of `message_start` or `message_delta`; each may be absent or `null`. */
interface PartialUsage {
  readonly input_tokens?: number | null | undefined
  readonly output_tokens?: number | null | undefined
  readonly cache_read_input_tokens?: number | null | undefined
  readonly cache_creation_input_tokens?: number | null | undefined
  readonly output_tokens_details?: { readonly thinking_tokens: number } | null | undefined
}

/** Overwrites the counters present in a (cumulative) usage object. */
const withUsage = (state: StreamDecoderState, usage: PartialUsage | undefined): StreamDecoderState => {
  if (usage === undefined) return state
  return {
    ...state,
    inputTokens: usage.input_tokens ?? state.inputTokens,
    outputTokens: usage.output_tokens ?? state.outputTokens,
    cacheRead: usage.cache_read_input_tokens ?? state.cacheRead,
    cacheCreation: usage.cache_creation_input_tokens ?? state.cacheCreation,
    thinkingTokens: usage.output_tokens_details?.thinking_tokens ?? state.thinkingTokens
  }
}

const blockStartParts = (index: number, block: OutputBlock): ReadonlyArray<StreamPart> => {
  switch (block.type) {
    case "text":
      return [
        { _tag: "BlockStart", index, block: { type: "text" } },
        ...(block.text === "" ? [] : [{ _tag: "TextDelta" as const, index, text: block.text }])
      ]
    case "thinking":
      return [
        { _tag: "BlockStart", index, block: { type: "reasoning" } },
        ...(block.thinking === "" ? [] : [{ _tag: "ReasoningDelta" as const, index, text: block.thinking }]),
        ...(typeof block.signature === "string" && block.signature !== ""
          ? [{ _tag: "ReasoningSignature" as const, index, signature: block.signature, origin: "anthropic" as const }]
          : [])
      ]
    case "redacted_thinking":
      return [
        { _tag: "BlockStart", index, block: { type: "reasoning" } },
        { _tag: "RedactedReasoning", index, data: block.data, origin: "anthropic" }
      ]
    case "tool_use": {
      const input = block.input
      const hasInput = typeof input === "object" && input !== null && Object.keys(input).length > 0
      return [
        { _tag: "BlockStart", index, block: { type: "tool-call", callId: block.id, name: block.name } },
        ...(hasInput ? [{ _tag: "ToolInputDelta" as const, index, json: JSON.stringify(input) }] : [])
      ]
    }
  }
}

const deltaPart = (index: number, delta: typeof ContentBlockDeltaEvent.Type["delta"]): ReadonlyArray<StreamPart> => {
  switch (delta.type) {
    case "text_delta":
      return delta.text === undefined || delta.text === "" ? [] : [{ _tag: "TextDelta", index, text: delta.text }]
    case "input_json_delta":
      return delta.partial_json === undefined || delta.partial_json === ""
        ? []
        : [{ _tag: "ToolInputDelta", index, json: delta.partial_json }]
    case "thinking_delta":
      return delta.thinking === undefined || delta.thinking === ""
        ? []
        : [{ _tag: "ReasoningDelta", index, text: delta.thinking }]
    case "signature_delta":
      return delta.signature === undefined
        ? []
        : [{ _tag: "ReasoningSignature", index, signature: delta.signature, origin: "anthropic" }]
    default:
      return []
  }
}

const parseData = (data: string): unknown => {
  try {
    return JSON.parse(data)
  } catch {
    return undefined
  }
}

/** The event name: the SSE `event:` field, or the payload's `type` when the frame has no name. */
const eventName = (event: Sse.Event, payload: unknown): string => {
  if (event.event !== "message") return event.event
  const type = typeof payload === "object" && payload !== null
    ? (payload as { readonly type?: unknown }).type
    : undefined
  return typeof type === "string" ? type : "message"
}

/**
 * One upstream SSE event → the next state and canonical parts, or an
 * `UpstreamFailed` for an in-band `error` event (`overloaded_error` and
 * `api_error` → server, `rate_limit_error` → throttled, others → rejected;
 * see `kindOfErrorBody`) or an unreadable known event (`bad-body`).
 * Unknown events are skipped; blocks of unknown types (server tool use and
 * results) are skipped with their deltas; wire block indexes are renumbered
 * from 0 in order; `citations_delta` is ignored. Signatures and redacted
 * data get origin `anthropic`. Status is 200: the HTTP status of the stream
 * itself.
 *
 * @category decoding
 */
export const step = (state: StreamDecoderState, event: Sse.Event): DecodeStep<StreamDecoderState> => {
  if (event.event !== "message" && !KNOWN_EVENTS.has(event.event)) return [state, []]
  const payload = parseData(event.data)
  const name = eventName(event, payload)
  if (!KNOWN_EVENTS.has(name)) return [state, []]
  if (payload === undefined && name !== "ping" && name !== "message_stop") {
    return badEvent(name, "the data is not JSON")
  }
  switch (name) {
    case "message_start": {
      const decoded = decodeStart(payload)
      if (Result.isFailure(decoded)) return badEvent(name, decoded.failure.message)
      const message = decoded.success.message
      const next = withUsage({ ...state, id: message.id, model: message.model }, message.usage ?? undefined)
      return [next, [{ _tag: "ResponseStart", id: message.id, model: message.model, created: 0 }, usageUpdate(next)]]
    }
    case "content_block_start": {
      const decoded = decodeBlockStart(payload)
      if (Result.isFailure(decoded)) return badEvent(name, decoded.failure.message)
      const raw = decoded.success.content_block
      const type = typeof raw === "object" && raw !== null ? (raw as { readonly type?: unknown }).type : undefined
      if (typeof type === "string" && !OUTPUT_BLOCK_TYPES.has(type)) return [state, []]
      const block = decodeBlock(raw, ["content_block"])
      if (Result.isFailure(block)) return badEvent(name, block.failure.message)
      const index = state.nextIndex
      const next: StreamDecoderState = {
        ...state,
        indexes: { ...state.indexes, [decoded.success.index]: index },
        nextIndex: index + 1,
        open: [...state.open, index]
      }
      return [next, blockStartParts(index, block.success)]
    }
    case "content_block_delta": {
      const decoded = decodeDelta(payload)
      if (Result.isFailure(decoded)) return badEvent(name, decoded.failure.message)
      const index = state.indexes[decoded.success.index]
      return index === undefined ? [state, []] : [state, deltaPart(index, decoded.success.delta)]
    }
    case "content_block_stop": {
      const decoded = decodeStop(payload)
      if (Result.isFailure(decoded)) return badEvent(name, decoded.failure.message)
      const index = state.indexes[decoded.success.index]
      if (index === undefined || !state.open.includes(index)) return [state, []]
      return [{ ...state, open: state.open.filter((open) => open !== index) }, [{ _tag: "BlockStop", index }]]
    }
    case "message_delta": {
      const decoded = decodeMessageDelta(payload)
      if (Result.isFailure(decoded)) return badEvent(name, decoded.failure.message)
      const { delta, usage } = decoded.success
      const next = withUsage({
        ...state,
        stopReason: delta.stop_reason ?? state.stopReason,
        stopSequence: delta.stop_sequence ?? state.stopSequence
      }, usage)
      // `message_delta` comes once, at the end, with the output count: the final usage.
      return [next, [{ _tag: "UsageUpdate", usage: usageOf(next), final: true }]]
    }
    case "message_stop":
      return [{ ...state, done: true }, []]
    case "error": {
      const { kind, message } = kindOfErrorBody(payload)
      return new UpstreamFailed({ kind, status: 200, message })
    }
    default:
      return [state, []]
  }
}

/**
 * The parts due when the body ends after `message_stop`: a `BlockStop` for
 * any block left open, then `Finish` with the mapped reason, the raw
 * `stop_reason`, the stop sequence and the final usage.
 *
 * @category decoding
 */
export const flush = (state: StreamDecoderState): ReadonlyArray<StreamPart> => {
  const reason: FinishReason = finishReasonFromWire(state.stopReason)
  return [
    ...state.open.map((index): StreamPart => ({ _tag: "BlockStop", index })),
    {
      _tag: "Finish",
      reason,
      ...(state.stopReason === undefined ? {} : { rawReason: state.stopReason }),
      ...(state.stopSequence === undefined ? {} : { stopSequence: state.stopSequence }),
      usage: usageOf(state)
    }
  ]
}

/**
 * The messages-format stream decoder; `complete` is true once
 * `message_stop` has been seen.
 *
 * @category decoding
 */
export const streamDecoder: StreamDecoder<StreamDecoderState> = {
  initial,
  step,
  flush,
  complete: (state) => state.done
}
