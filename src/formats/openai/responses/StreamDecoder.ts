/**
 * Outbound half, streams: an upstream's OpenAI Responses SSE events →
 * canonical `StreamPart`s (event types and fields from the SDK types
 * `ResponseStreamEvent` and its members in `openai@7.57.0`; API reference
 * platform.openai.com/docs/api-reference/responses-streaming).
 *
 * - `response.created` → `ResponseStart` (`response.id`, `model`, `created_at`).
 * - `response.output_item.added` opens a block for `message` (text),
 *   `reasoning` and `function_call` items; canonical block indexes count from 0
 *   in order of appearance, whatever the `output_index`. Other item types
 *   (hosted tools) open no block and their events are skipped.
 * - `response.output_text.delta` and `response.refusal.delta` → `TextDelta`;
 *   `response.reasoning_summary_text.delta` and `response.reasoning_text.delta`
 *   → `ReasoningDelta` (a new summary part is separated from the previous one
 *   by a blank line, as `decodeResponsesResponse` joins summaries);
 *   `response.function_call_arguments.delta` → `ToolInputDelta`.
 * - `response.output_item.done` → `BlockStop`, preceded by the item's text or
 *   arguments when no delta carried them, and for reasoning by
 *   `ReasoningSignature` (origin `openai`) when the item has `encrypted_content`.
 * - `response.completed` / `response.incomplete` → `BlockStop` for any block
 *   still open, `UsageUpdate`, `Finish`; the stream is then complete.
 * - `response.failed` and `error` events → `UpstreamFailed` (kind from the
 *   error code, see `failureKindOfCode`).
 * - Unknown event types are skipped.
 *
 * @since 0.1.0
 */
import type { Sse } from "effect/encoding"
import { Result, Schema } from "effect"
import type { StreamPart } from "../../../canonical/StreamPart.ts"
import { emptyUsage } from "../../../canonical/Usage.ts"
import { UpstreamFailed } from "../../../errors/GatewayError.ts"
import type { DecodeStep, StreamDecoder } from "../../Format.ts"
import { makeWireDecoder } from "../../shared/WireDecode.ts"
import { failureKindOfCode } from "./ResponseCodec.ts"
import { finishOfStatus, usageFromWire } from "./WireSchema.ts"

/** What the decoder remembers of one output item that opened a block. */
interface OpenItem {
  readonly index: number
  readonly kind: "text" | "reasoning" | "tool-call"
  /** Whether a delta carried content (otherwise `output_item.done` supplies it). */
  readonly sawDelta: boolean
  /** Reasoning: the summary part the last delta belonged to. */
  readonly summaryIndex: number
  readonly closed: boolean
}

/**
 * The decoder's state: items by `output_index`, the next canonical block
 * index, whether a `function_call` was seen, and whether the terminal event
 * arrived.
 *
 * @category models
 */
export interface ResponsesDecoderState {
  readonly items: ReadonlyMap<number, OpenItem>
  readonly nextIndex: number
  readonly sawToolCall: boolean
  readonly done: boolean
}

const Envelope = Schema.Struct({ type: Schema.String })
const Item = Schema.Struct({
  type: Schema.String,
  call_id: Schema.optional(Schema.NullOr(Schema.String)),
  name: Schema.optional(Schema.NullOr(Schema.String)),
  arguments: Schema.optional(Schema.NullOr(Schema.String)),
  encrypted_content: Schema.optional(Schema.NullOr(Schema.String)),
  content: Schema.optional(Schema.NullOr(Schema.Array(Schema.Struct({
    type: Schema.String,
    text: Schema.optional(Schema.String),
    refusal: Schema.optional(Schema.String)
  })))),
  summary: Schema.optional(Schema.NullOr(Schema.Array(Schema.Struct({ text: Schema.String }))))
})
const ItemEvent = Schema.Struct({ output_index: Schema.Int, item: Item })
const DeltaEvent = Schema.Struct({
  output_index: Schema.Int,
  delta: Schema.String,
  summary_index: Schema.optional(Schema.Int)
})
const LifecycleEvent = Schema.Struct({
  response: Schema.Struct({
    id: Schema.String,
    model: Schema.String,
    created_at: Schema.optional(Schema.NullOr(Schema.Finite)),
    status: Schema.optional(Schema.NullOr(Schema.String)),
    incomplete_details: Schema.optional(Schema.NullOr(Schema.Struct({
      reason: Schema.optional(Schema.NullOr(Schema.String))
    }))),
    error: Schema.optional(Schema.NullOr(Schema.Struct({
      code: Schema.optional(Schema.NullOr(Schema.String)),
      message: Schema.optional(Schema.NullOr(Schema.String))
    }))),
    usage: Schema.optional(Schema.NullOr(Schema.Unknown))
  })
})
const ErrorFields = Schema.Struct({
  code: Schema.optional(Schema.NullOr(Schema.String)),
  message: Schema.optional(Schema.NullOr(Schema.String))
})
const ErrorEvent = Schema.Struct({
  code: Schema.optional(Schema.NullOr(Schema.String)),
  message: Schema.optional(Schema.NullOr(Schema.String)),
  error: Schema.optional(Schema.NullOr(ErrorFields))
})

const decoders = {
  envelope: makeWireDecoder(Envelope),
  item: makeWireDecoder(ItemEvent),
  delta: makeWireDecoder(DeltaEvent),
  lifecycle: makeWireDecoder(LifecycleEvent),
  error: makeWireDecoder(ErrorEvent)
}

type Step = DecodeStep<ResponsesDecoderState>

const badEvent = (type: string, detail: string): UpstreamFailed =>
  new UpstreamFailed({ kind: "bad-body", status: 200, message: `Unreadable upstream event ${type}: ${detail}` })

const withItem = (state: ResponsesDecoderState, outputIndex: number, item: OpenItem): ResponsesDecoderState => {
  const items = new Map(state.items)
  items.set(outputIndex, item)
  return { ...state, items }
}

const blockKindOf = (type: string): OpenItem["kind"] | undefined =>
  type === "message" ? "text" : type === "reasoning" ? "reasoning" : type === "function_call" ? "tool-call" : undefined

const itemAdded = (state: ResponsesDecoderState, event: typeof ItemEvent.Type): Step => {
  const kind = blockKindOf(event.item.type)
  if (kind === undefined || state.items.has(event.output_index)) return [state, []]
  const index = state.nextIndex
  const item: OpenItem = { index, kind, sawDelta: false, summaryIndex: 0, closed: false }
  const next = { ...withItem(state, event.output_index, item), nextIndex: index + 1 }
  if (kind !== "tool-call") return [next, [{ _tag: "BlockStart", index, block: { type: kind } }]]
  const start: StreamPart = {
    _tag: "BlockStart",
    index,
    block: { type: "tool-call", callId: event.item.call_id ?? "", name: event.item.name ?? "" }
  }
  const initial = event.item.arguments ?? ""
  return [
    {
      ...next,
      sawToolCall: true,
      items: new Map(next.items).set(event.output_index, { ...item, sawDelta: initial !== "" })
    },
    initial === "" ? [start] : [start, { _tag: "ToolInputDelta", index, json: initial }]
  ]
}

const delta = (state: ResponsesDecoderState, type: string, event: typeof DeltaEvent.Type): Step => {
  const item = state.items.get(event.output_index)
  if (item === undefined || item.closed) return [state, []]
  switch (type) {
    case "response.output_text.delta":
    case "response.refusal.delta":
      return item.kind === "text"
        ? [withItem(state, event.output_index, { ...item, sawDelta: true }), [{
          _tag: "TextDelta",
          index: item.index,
          text: event.delta
        }]]
        : [state, []]
    case "response.reasoning_summary_text.delta":
    case "response.reasoning_text.delta": {
      if (item.kind !== "reasoning") return [state, []]
      const summaryIndex = event.summary_index ?? item.summaryIndex
      const separator = item.sawDelta && summaryIndex !== item.summaryIndex ? "\n\n" : ""
      return [
        withItem(state, event.output_index, { ...item, sawDelta: true, summaryIndex }),
        [{ _tag: "ReasoningDelta", index: item.index, text: separator + event.delta }]
      ]
    }
    default:
      return item.kind === "tool-call"
        ? [withItem(state, event.output_index, { ...item, sawDelta: true }), [{
          _tag: "ToolInputDelta",
          index: item.index,
          json: event.delta
        }]]
        : [state, []]
  }
}

/** The content an `output_item.done` item holds, for items whose deltas never came. */
const contentOf = (item: typeof Item.Type, kind: OpenItem["kind"], index: number): ReadonlyArray<StreamPart> => {
  switch (kind) {
    case "text": {
      const text = (item.content ?? []).map((part) => part.text ?? part.refusal ?? "").join("")
      return text === "" ? [] : [{ _tag: "TextDelta", index, text }]
    }
    case "reasoning": {
      const text = (item.summary ?? []).map((part) => part.text).join("\n\n")
      return text === "" ? [] : [{ _tag: "ReasoningDelta", index, text }]
    }
    case "tool-call": {
      const json = item.arguments ?? ""
      return json === "" ? [] : [{ _tag: "ToolInputDelta", index, json }]
    }
  }
}

const itemDone = (state: ResponsesDecoderState, event: typeof ItemEvent.Type): Step => {
  const item = state.items.get(event.output_index)
  if (item === undefined || item.closed) return [state, []]
  const parts: Array<StreamPart> = item.sawDelta ? [] : [...contentOf(event.item, item.kind, item.index)]
  if (item.kind === "reasoning" && typeof event.item.encrypted_content === "string") {
    parts.push({
      _tag: "ReasoningSignature",
      index: item.index,
      signature: event.item.encrypted_content,
      origin: "openai"
    })
  }
  parts.push({ _tag: "BlockStop", index: item.index })
  return [withItem(state, event.output_index, { ...item, closed: true }), parts]
}

const terminal = (state: ResponsesDecoderState, event: typeof LifecycleEvent.Type): Step => {
  const open = [...state.items.values()].filter((item) => !item.closed).sort((a, b) => a.index - b.index)
  const usage = usageFromWire(event.response.usage) ?? emptyUsage
  const incompleteReason = event.response.incomplete_details?.reason ?? undefined
  const status = event.response.status ?? undefined
  const reason = finishOfStatus(status, incompleteReason, state.sawToolCall)
  const parts: Array<StreamPart> = [
    ...open.map((item): StreamPart => ({ _tag: "BlockStop", index: item.index })),
    { _tag: "UsageUpdate", usage, final: true },
    {
      _tag: "Finish",
      reason,
      ...(status === "incomplete" && incompleteReason !== undefined ? { rawReason: incompleteReason } : {}),
      usage
    }
  ]
  const items = new Map([...state.items].map(([key, item]) => [key, { ...item, closed: true }]))
  return [{ ...state, items, done: true }, parts]
}

const failure = (code: string | null | undefined, message: string | null | undefined): UpstreamFailed =>
  new UpstreamFailed({
    kind: failureKindOfCode(code),
    status: 200,
    message: message ?? "The upstream stream reported an error."
  })

// The event types `step` reads; frames named otherwise are skipped without being parsed.
const known: Record<string, true> = {
  "response.created": true,
  "response.output_item.added": true,
  "response.output_item.done": true,
  "response.output_text.delta": true,
  "response.refusal.delta": true,
  "response.reasoning_summary_text.delta": true,
  "response.reasoning_text.delta": true,
  "response.function_call_arguments.delta": true,
  "response.completed": true,
  "response.incomplete": true,
  "response.failed": true,
  "error": true
}

const step = (state: ResponsesDecoderState, frame: Sse.Event): Step => {
  // Frames are named after their type; unnamed ones (`message`) are read to find it.
  const named = Object.hasOwn(known, frame.event)
  if (!named && frame.event !== "message") return [state, []]
  let data: unknown
  try {
    data = JSON.parse(frame.data)
  } catch {
    return named ? badEvent(frame.event, "not JSON") : [state, []]
  }
  const envelope = decoders.envelope(data)
  const type = Result.isSuccess(envelope) ? envelope.success.type : frame.event
  const read = <A>(decode: (input: unknown) => Result.Result<A, { readonly message: string }>) => {
    const decoded = decode(data)
    return Result.isSuccess(decoded) ? decoded.success : badEvent(type, decoded.failure.message)
  }
  switch (type) {
    case "response.created": {
      const event = read(decoders.lifecycle)
      if (event instanceof UpstreamFailed) return event
      const response = event.response
      return [state, [{
        _tag: "ResponseStart",
        id: response.id,
        model: response.model,
        created: response.created_at ?? 0
      }]]
    }
    case "response.output_item.added": {
      const event = read(decoders.item)
      return event instanceof UpstreamFailed ? event : itemAdded(state, event)
    }
    case "response.output_item.done": {
      const event = read(decoders.item)
      return event instanceof UpstreamFailed ? event : itemDone(state, event)
    }
    case "response.output_text.delta":
    case "response.refusal.delta":
    case "response.reasoning_summary_text.delta":
    case "response.reasoning_text.delta":
    case "response.function_call_arguments.delta": {
      const event = read(decoders.delta)
      return event instanceof UpstreamFailed ? event : delta(state, type, event)
    }
    case "response.completed":
    case "response.incomplete": {
      const event = read(decoders.lifecycle)
      return event instanceof UpstreamFailed ? event : terminal(state, event)
    }
    case "response.failed": {
      const event = read(decoders.lifecycle)
      if (event instanceof UpstreamFailed) return event
      return failure(event.response.error?.code, event.response.error?.message)
    }
    case "error": {
      const event = read(decoders.error)
      if (event instanceof UpstreamFailed) return event
      return failure(event.error?.code ?? event.code, event.error?.message ?? event.message)
    }
    default:
      return [state, []]
  }
}

/**
 * Responses SSE events → canonical parts. `complete` is true once
 * `response.completed` or `response.incomplete` arrived; `flush` adds nothing
 * (the terminal event already produced `Finish`). A frame that is not JSON, or
 * a known event without its required fields, is a `bad-body` failure.
 *
 * @category decoding
 */
export const responsesStreamDecoder: StreamDecoder<ResponsesDecoderState> = {
  initial: () => ({ items: new Map(), nextIndex: 0, sawToolCall: false, done: false }),
  step,
  flush: () => [],
  complete: (state) => state.done
}
