/**
 * Canonical stream parts → messages-format SSE events for the caller, in the
 * sequence `@anthropic-ai/sdk`'s `MessageStream` accumulates (SDK 1.12
 * `RawMessageStreamEvent`; docs.anthropic.com/en/docs/build-with-claude/streaming):
 * `message_start`, `ping`, per block `content_block_start` / `_delta` /
 * `_stop`, `message_delta`, `message_stop`. Every event's `event:` name equals
 * its data's `type`. Wire block indexes count from 0 in the order blocks
 * open, as the SDK indexes its content array by them.
 *
 * @since 0.1.0
 */
import type { Sse } from "effect/encoding"
import type { StreamPart } from "../../../canonical/StreamPart.ts"
import type { Usage } from "../../../canonical/Usage.ts"
import type { Problem, ResponseMeta, StreamEncoder } from "../../Format.ts"
import { streamPartForClient } from "../../shared/ReasoningOrigin.ts"
import { encodeError } from "./ErrorBody.ts"
import { finishReasonToWire } from "./StopReason.ts"
import { usageToWire } from "./Usage.ts"

/**
 * How a canonical block stands on the wire: `pending` for a reasoning block
 * whose start waits for its first content (a `RedactedReasoning` opens a
 * `redacted_thinking` block, anything else a `thinking` block), `open` with
 * its wire index, or `closed`.
 *
 * @category models
 */
export type WireBlock =
  | { readonly status: "pending" }
  | { readonly status: "open"; readonly wireIndex: number; readonly redacted: boolean }
  | { readonly status: "closed" }

/**
 * The encoder's state, copied on every change.
 *
 * @category models
 */
export interface StreamEncoderState {
  readonly meta: ResponseMeta
  readonly started: boolean
  readonly finished: boolean
  readonly nextWireIndex: number
  readonly blocks: Readonly<Record<number, WireBlock>>
  /** Usage from the last `UsageUpdate`. */
  readonly usage: Usage | undefined
}

const sse = (data: { readonly type: string } & Record<string, unknown>): Sse.Event => ({
  _tag: "Event",
  event: data.type,
  id: undefined,
  data: JSON.stringify(data)
})

type Step = readonly [StreamEncoderState, ReadonlyArray<Sse.Event>]

const startEvents = (state: StreamEncoderState): Step => {
  if (state.started) return [state, []]
  return [{ ...state, started: true }, [
    sse({
      type: "message_start",
      message: {
        id: state.meta.id,
        type: "message",
        role: "assistant",
        model: state.meta.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: state.meta.promptTokensEstimate ?? 0, output_tokens: 0 }
      }
    }),
    sse({ type: "ping" })
  ]]
}

/** Opens canonical block `index` on the wire with `contentBlock`. */
const open = (
  state: StreamEncoderState,
  index: number,
  contentBlock: Record<string, unknown>,
  redacted = false
): Step => {
  const wireIndex = state.nextWireIndex
  return [
    {
      ...state,
      nextWireIndex: wireIndex + 1,
      blocks: { ...state.blocks, [index]: { status: "open", wireIndex, redacted } }
    },
    [sse({ type: "content_block_start", index: wireIndex, content_block: contentBlock })]
  ]
}

const EMPTY_THINKING = { type: "thinking", thinking: "", signature: "" }

/**
 * The wire index of an open block, opening it first when it is pending (as
 * `thinking`) or unknown (as `fallback`, for a delta that came without its
 * `BlockStart`). Undefined for a closed block.
 */
const ensureOpen = (
  state: StreamEncoderState,
  index: number,
  fallback: Record<string, unknown>
): readonly [StreamEncoderState, ReadonlyArray<Sse.Event>, { wireIndex: number; redacted: boolean } | undefined] => {
  const block = state.blocks[index]
  if (block?.status === "open") return [state, [], block]
  if (block?.status === "closed") return [state, [], undefined]
  const [next, events] = open(state, index, block?.status === "pending" ? EMPTY_THINKING : fallback)
  const opened = next.blocks[index]
  return [next, events, opened?.status === "open" ? opened : undefined]
}

const delta = (
  state: StreamEncoderState,
  index: number,
  fallback: Record<string, unknown>,
  body: Record<string, unknown>
): Step => {
  const [next, events, block] = ensureOpen(state, index, fallback)
  if (block === undefined || block.redacted) return [next, events]
  return [next, [...events, sse({ type: "content_block_delta", index: block.wireIndex, delta: body })]]
}

const stop = (state: StreamEncoderState, index: number): Step => {
  const block = state.blocks[index]
  if (block?.status === "closed") return [state, []]
  const [opened, events] = block?.status === "open" ? [state, []] as Step : open(state, index, EMPTY_THINKING)
  const current = opened.blocks[index]
  if (current?.status !== "open") return [opened, events]
  return [
    { ...opened, blocks: { ...opened.blocks, [index]: { status: "closed" } } },
    [...events, sse({ type: "content_block_stop", index: current.wireIndex })]
  ]
}

const stopAll = (state: StreamEncoderState): Step =>
  Object.entries(state.blocks)
    .filter(([, block]) => block.status !== "closed")
    .map(([index]) => Number(index))
    .reduce<Step>(([current, events], index) => {
      const [next, more] = stop(current, index)
      return [next, [...events, ...more]]
    }, [state, []])

const finishEvents = (
  state: StreamEncoderState,
  stopReason: string,
  stopSequence: string | undefined,
  usage: Usage
): Step => {
  const [closed, events] = stopAll(state)
  const wire = usageToWire(usage)
  return [{ ...closed, finished: true }, [
    ...events,
    sse({
      type: "message_delta",
      delta: { stop_reason: stopReason, stop_sequence: stopSequence ?? null },
      usage: {
        output_tokens: wire.output_tokens,
        input_tokens: wire.input_tokens,
        cache_read_input_tokens: wire.cache_read_input_tokens,
        cache_creation_input_tokens: wire.cache_creation_input_tokens,
        ...(wire.output_tokens_details === undefined ? {} : { output_tokens_details: wire.output_tokens_details })
      }
    })
  ]]
}

const translate = (state: StreamEncoderState, part: StreamPart): Step => {
  switch (part._tag) {
    case "ResponseStart":
      return [state, []]
    case "BlockStart":
      switch (part.block.type) {
        case "text":
          return open(state, part.index, { type: "text", text: "" })
        case "reasoning":
          return [{ ...state, blocks: { ...state.blocks, [part.index]: { status: "pending" } } }, []]
        case "tool-call":
          return open(state, part.index, { type: "tool_use", id: part.block.callId, name: part.block.name, input: {} })
      }
      return [state, []]
    case "TextDelta":
      return delta(state, part.index, { type: "text", text: "" }, { type: "text_delta", text: part.text })
    case "ReasoningDelta":
      return delta(state, part.index, EMPTY_THINKING, { type: "thinking_delta", thinking: part.text })
    case "ReasoningSignature":
      return delta(state, part.index, EMPTY_THINKING, { type: "signature_delta", signature: part.signature })
    case "RedactedReasoning": {
      const block = state.blocks[part.index]
      if (block !== undefined && block.status !== "pending") return [state, []]
      return open(state, part.index, { type: "redacted_thinking", data: part.data }, true)
    }
    case "ToolInputDelta":
      return delta(state, part.index, { type: "tool_use", id: "", name: "", input: {} }, {
        type: "input_json_delta",
        partial_json: part.json
      })
    case "BlockStop":
      return stop(state, part.index)
    case "UsageUpdate":
      return [{ ...state, usage: part.usage }, []]
    case "Finish":
      if (state.finished) return [state, []]
      return finishEvents(
        state,
        finishReasonToWire(part.reason, part.rawReason, part.stopSequence),
        part.stopSequence,
        part.usage
      )
  }
}

/**
 * One canonical part → the next state and SSE events. `message_start` and
 * `ping` come before anything else; a reasoning block's start waits for its
 * first content so a `RedactedReasoning` can open it as `redacted_thinking`
 * (a `RedactedReasoning` after reasoning text is not sent); a signature or
 * redacted data another vendor minted is written as `sluice.<origin>.<token>`
 * (`ReasoningOrigin.ts`); `UsageUpdate` is
 * remembered; `Finish` closes open blocks and writes `message_delta` with the
 * stop reason and usage (`input_tokens` excluding cached tokens).
 *
 * @category encoding
 */
export const step = (state: StreamEncoderState, part: StreamPart): Step => {
  const [started, intro] = startEvents(state)
  const [next, events] = translate(started, streamPartForClient(part, "anthropic"))
  return [next, [...intro, ...events]]
}

/**
 * The normal end: `message_stop`, preceded by `message_start` if nothing was
 * sent yet and by a `message_delta` (`end_turn`, last known usage) if no
 * `Finish` came.
 *
 * @category encoding
 */
export const end = (state: StreamEncoderState): ReadonlyArray<Sse.Event> => {
  const [started, intro] = startEvents(state)
  const [, closing] = started.finished
    ? [started, []] as Step
    : finishEvents(started, "end_turn", undefined, started.usage ?? { inputTokens: 0, outputTokens: 0 })
  return [...intro, ...closing, sse({ type: "message_stop" })]
}

/**
 * A failure mid-stream: one `error` event with the body of `encodeError`
 * (`{type: "error", error: {type, message, param, code}}`), never `message_stop`.
 *
 * @category encoding
 */
export const fail = (_state: StreamEncoderState, problem: Problem): ReadonlyArray<Sse.Event> => [
  sse(encodeError(problem))
]

/**
 * The messages-format stream encoder.
 *
 * @category encoding
 */
export const streamEncoder: StreamEncoder<StreamEncoderState> = {
  initial: (meta) => ({ meta, started: false, finished: false, nextWireIndex: 0, blocks: {}, usage: undefined }),
  step,
  end,
  fail
}
