/**
 * A ConverseStream answer's events (`ConverseStreamOutput`: `messageStart`, `contentBlockStart`, `contentBlockDelta`,
 * `contentBlockStop`, `messageStop`, `metadata`, and the exception events; API_runtime_ConverseStream.html "Response
 * Syntax"; SDK `models_0.d.ts`) → canonical stream parts. Each event arrives as one event-stream message whose
 * `:event-type` names it and whose payload is the event's members as JSON (`{"contentBlockIndex":0,"delta":{"text":
 * "Hi"}}`), read by `upstreams/transport/EventStreamEvents.ts`.
 *
 * A text or reasoning block has no `contentBlockStart` (only a tool use does: `start.toolUse` with `toolUseId` and
 * `name`), so a block is opened by the first event naming its `contentBlockIndex`. `messageStop` carries the stop
 * reason; `metadata`, after it, the usage: the answer's final usage, and the stream's end marker (`complete`).
 *
 * @since 0.1.0
 */
import type { Sse } from "effect/encoding"
import type { BlockKind, StreamPart } from "../../../canonical/StreamPart.ts"
import type { Usage } from "../../../canonical/Usage.ts"
import { parseJsonOrUndefined } from "../../../domain/JsonDepth.ts"
import { UpstreamFailed } from "../../../errors/GatewayError.ts"
import type { DecodeStep, StreamDecoder } from "../../Format.ts"
import { bareErrorType, BEDROCK_ERROR_KINDS, streamExceptionFailure } from "../ErrorBody.ts"
import { finishReasonOfStop } from "./StopReason.ts"
import { usageFromConverse } from "./Usage.ts"

/** The decoder's state between events. @category models */
export interface ConverseStreamState {
  /** Canonical index and kind of each wire `contentBlockIndex` seen. */
  readonly blocks: Readonly<Record<number, { readonly index: number; readonly kind: BlockKind["type"] }>>
  readonly nextIndex: number
  /** Canonical indexes of the blocks still open. */
  readonly open: ReadonlyArray<number>
  readonly started: boolean
  readonly stopReason: string | undefined
  readonly usage: Usage | undefined
  /** `metadata` has been seen. */
  readonly done: boolean
}

const initial = (): ConverseStreamState => ({
  blocks: {},
  nextIndex: 0,
  open: [],
  started: false,
  stopReason: undefined,
  usage: undefined,
  done: false
})

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const badEvent = (name: string, why: string) =>
  new UpstreamFailed({
    kind: "bad-body",
    status: 200,
    message: `A Converse stream's ${name} event was unreadable (${why}).`
  })

const KNOWN_EVENTS: ReadonlySet<string> = new Set([
  "messageStart",
  "contentBlockStart",
  "contentBlockDelta",
  "contentBlockStop",
  "messageStop",
  "metadata"
])

/** An exception event's name, or an error frame's code: a type Bedrock's errors list, or any `…Exception`. */
const isException = (name: string): boolean => {
  const bare = bareErrorType(name)
  return bare !== undefined && (BEDROCK_ERROR_KINDS[bare] !== undefined || bare.endsWith("Exception"))
}

const blockIndexOf = (payload: Record<string, unknown>): number | undefined => {
  const index = payload.contentBlockIndex
  return typeof index === "number" && Number.isSafeInteger(index) && index >= 0 ? index : undefined
}

/** The state with wire block `wire` opened as `kind` (when not yet seen), and the parts that opened it. */
const opened = (
  state: ConverseStreamState,
  wire: number,
  block: BlockKind
): readonly [ConverseStreamState, number, ReadonlyArray<StreamPart>] => {
  const seen = state.blocks[wire]
  if (seen !== undefined) return [state, seen.index, []]
  const index = state.nextIndex
  const next: ConverseStreamState = {
    ...state,
    blocks: { ...state.blocks, [wire]: { index, kind: block.type } },
    nextIndex: index + 1,
    open: [...state.open, index]
  }
  return [next, index, [{ _tag: "BlockStart", index, block }]]
}

const deltaStep = (state: ConverseStreamState, payload: Record<string, unknown>): DecodeStep<ConverseStreamState> => {
  const wire = blockIndexOf(payload)
  const delta = payload.delta
  if (wire === undefined || !isRecord(delta)) return badEvent("contentBlockDelta", "no contentBlockIndex or delta")
  if (typeof delta.text === "string") {
    const [next, index, start] = opened(state, wire, { type: "text" })
    return [next, [...start, { _tag: "TextDelta", index, text: delta.text }]]
  }
  if (isRecord(delta.toolUse)) {
    const seen = state.blocks[wire]
    const input = delta.toolUse.input
    if (seen === undefined || seen.kind !== "tool-call" || typeof input !== "string") return [state, []]
    return [state, [{ _tag: "ToolInputDelta", index: seen.index, json: input }]]
  }
  if (isRecord(delta.reasoningContent)) {
    const reasoning = delta.reasoningContent
    const [next, index, start] = opened(state, wire, { type: "reasoning" })
    if (typeof reasoning.text === "string") {
      return [next, [...start, { _tag: "ReasoningDelta", index, text: reasoning.text }]]
    }
    if (typeof reasoning.signature === "string") {
      return [next, [...start, {
        _tag: "ReasoningSignature",
        index,
        signature: reasoning.signature,
        origin: "anthropic"
      }]]
    }
    if (typeof reasoning.redactedContent === "string") {
      return [next, [...start, {
        _tag: "RedactedReasoning",
        index,
        data: reasoning.redactedContent,
        origin: "anthropic"
      }]]
    }
    return [next, start]
  }
  // Citations, tool-result and image deltas have no canonical part.
  return [state, []]
}

/**
 * One upstream event → the next state and canonical parts, or an `UpstreamFailed` for an exception event (its kind by
 * type, `ErrorBody.ts`) or a known event that cannot be read (`bad-body`). Unknown events are skipped; wire block
 * indexes are renumbered from 0 in order of appearance; reasoning signatures and redacted data get origin
 * `anthropic`.
 *
 * @category decoding
 */
export const step = (state: ConverseStreamState, event: Sse.Event): DecodeStep<ConverseStreamState> => {
  if (!KNOWN_EVENTS.has(event.event)) {
    return isException(event.event) ? streamExceptionFailure(event.event, event.data) : [state, []]
  }
  const payload = parseJsonOrUndefined(event.data)
  if (!isRecord(payload)) return badEvent(event.event, "the payload is not a JSON object")
  switch (event.event) {
    case "messageStart":
      return state.started
        ? [state, []]
        : [{ ...state, started: true }, [{ _tag: "ResponseStart", id: "", model: "", created: 0 }]]
    case "contentBlockStart": {
      const wire = blockIndexOf(payload)
      const start = payload.start
      if (wire === undefined || !isRecord(start)) return badEvent(event.event, "no contentBlockIndex or start")
      const use = start.toolUse
      if (!isRecord(use)) return [state, []]
      if (typeof use.toolUseId !== "string" || typeof use.name !== "string") {
        return badEvent(event.event, "a toolUse without toolUseId or name")
      }
      const [next, , parts] = opened(state, wire, { type: "tool-call", callId: use.toolUseId, name: use.name })
      return [next, parts]
    }
    case "contentBlockDelta":
      return deltaStep(state, payload)
    case "contentBlockStop": {
      const wire = blockIndexOf(payload)
      if (wire === undefined) return badEvent(event.event, "no contentBlockIndex")
      const seen = state.blocks[wire]
      if (seen === undefined || !state.open.includes(seen.index)) return [state, []]
      return [{ ...state, open: state.open.filter((index) => index !== seen.index) }, [{
        _tag: "BlockStop",
        index: seen.index
      }]]
    }
    case "messageStop":
      return [{ ...state, stopReason: typeof payload.stopReason === "string" ? payload.stopReason : undefined }, []]
    case "metadata": {
      const usage = usageFromConverse(payload.usage)
      if (usage === undefined) return badEvent(event.event, "no usage")
      return [{ ...state, usage, done: true }, [{ _tag: "UsageUpdate", usage, final: true }]]
    }
    default:
      return [state, []]
  }
}

/**
 * The parts due when the body ends after `metadata`: a `BlockStop` for any block left open, then `Finish` with the
 * mapped stop reason, the raw one, and the usage.
 *
 * @category decoding
 */
export const flush = (state: ConverseStreamState): ReadonlyArray<StreamPart> => [
  ...state.open.map((index): StreamPart => ({ _tag: "BlockStop", index })),
  {
    _tag: "Finish",
    reason: finishReasonOfStop(state.stopReason),
    ...(state.stopReason === undefined ? {} : { rawReason: state.stopReason }),
    usage: state.usage ?? { inputTokens: 0, outputTokens: 0 }
  }
]

/**
 * The ConverseStream decoder; `complete` once `metadata` (the usage, Converse's last event) has been seen.
 *
 * @category decoding
 */
export const converseStreamDecoder: StreamDecoder<ConverseStreamState> = {
  initial,
  step,
  flush,
  complete: (state) => state.done
}
