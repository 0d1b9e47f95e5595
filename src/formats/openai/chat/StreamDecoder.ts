/**
 * Decodes an upstream's `chat.completion.chunk` SSE events (spec "Chat
 * completion chunk"; openai@7.57.0 `ChatCompletionChunk`) into canonical
 * stream parts. Chat has no block events, so blocks are synthesized: a run of
 * reasoning (`delta.reasoning_content`, DeepSeek, or `delta.reasoning`), a run
 * of text (`delta.content`, `delta.refusal`) and each tool call (by
 * `delta.tool_calls[].index`) is one canonical block; a new kind of content
 * closes the block before it; a call whose first chunk carries Gemini's
 * signature in `extra_content` (Gemini's OpenAI-compatible endpoint,
 * `CallSignatures.ts`) comes after a signature-only reasoning block. Works on
 * raw upstream events, so the gateway can also meter a passthrough stream with it.
 *
 * @since 0.1.0
 */
import { Predicate } from "effect"
import type { Sse } from "effect/encoding"
import type { BlockKind, StreamPart } from "../../../canonical/StreamPart.ts"
import { emptyUsage, type Usage } from "../../../canonical/Usage.ts"
import type { DecodeStep, StreamDecoder } from "../../Format.ts"
import { signatureOfExtraContent } from "./CallSignatures.ts"
import {
  badBody,
  decodeFinishReason,
  decodeUsage,
  inBandFailure,
  numberOrUndefined,
  parseJson,
  stringOrUndefined
} from "./WireSchema.ts"

/** The block being written: its canonical index and, for a tool call, its chat ordinal. */
interface OpenBlock {
  readonly kind: "text" | "reasoning" | "tool-call"
  readonly index: number
  readonly ordinal?: number | undefined
}

/**
 * Decoder state: whether `ResponseStart` was sent, the next canonical block
 * index, the open block, the tool calls seen (chat ordinal → canonical index
 * and call id), the last `finish_reason`, the last usage, and whether
 * `[DONE]` arrived.
 *
 * @category models
 */
export interface ChatDecodeState {
  readonly started: boolean
  readonly nextIndex: number
  readonly open: OpenBlock | undefined
  readonly tools: ReadonlyMap<number, { readonly index: number; readonly callId: string }>
  readonly finishReason: string | undefined
  readonly usage: Usage | undefined
  readonly done: boolean
}

const initial = (): ChatDecodeState => ({
  started: false,
  nextIndex: 0,
  open: undefined,
  tools: new Map(),
  finishReason: undefined,
  usage: undefined,
  done: false
})

/** Accumulates state and parts while one chunk is read (local to `step`). */
interface Work {
  state: ChatDecodeState
  readonly parts: Array<StreamPart>
}

const close = (work: Work): void => {
  if (work.state.open === undefined) return
  work.parts.push({ _tag: "BlockStop", index: work.state.open.index })
  work.state = { ...work.state, open: undefined }
}

const openBlock = (work: Work, block: BlockKind, ordinal?: number): number => {
  close(work)
  const index = work.state.nextIndex
  work.parts.push({ _tag: "BlockStart", index, block })
  work.state = {
    ...work.state,
    nextIndex: index + 1,
    open: { kind: block.type, index, ...(ordinal === undefined ? {} : { ordinal }) }
  }
  return index
}

/** The index of the open text or reasoning block, opening one if needed. */
const ensure = (work: Work, kind: "text" | "reasoning"): number =>
  work.state.open?.kind === kind ? work.state.open.index : openBlock(work, { type: kind })

const readToolCall = (work: Work, call: Record<string, unknown>, position: number): void => {
  const ordinal = numberOrUndefined(call.index) ?? position
  const callFunction = Predicate.isObject(call.function) ? call.function : {}
  const id = stringOrUndefined(call.id)
  const fragment = stringOrUndefined(callFunction.arguments) ?? ""
  const known = work.state.tools.get(ordinal)
  let index: number
  if (known !== undefined && (id === undefined || id === "" || id === known.callId)) {
    // A fragment of a call already started. Upstreams that interleave calls
    // may send it after the block was closed; it keeps the block's index.
    index = known.index
  } else {
    // Gemini's OpenAI-compatible endpoint signs a call on its first chunk (see `CallSignatures.ts`).
    const signature = signatureOfExtraContent(call.extra_content)
    if (signature !== undefined) {
      const signed = openBlock(work, { type: "reasoning" })
      work.parts.push({ _tag: "ReasoningSignature", index: signed, signature, origin: "gemini" })
      close(work)
    }
    const callId = id ?? `call_${ordinal}`
    index = openBlock(work, { type: "tool-call", callId, name: stringOrUndefined(callFunction.name) ?? "" }, ordinal)
    work.state = { ...work.state, tools: new Map(work.state.tools).set(ordinal, { index, callId }) }
  }
  if (fragment !== "") work.parts.push({ _tag: "ToolInputDelta", index, json: fragment })
}

const readChoice = (work: Work, choice: Record<string, unknown>): void => {
  const delta = Predicate.isObject(choice.delta) ? choice.delta : {}
  const reasoning = stringOrUndefined(delta.reasoning_content) ?? stringOrUndefined(delta.reasoning)
  if (reasoning !== undefined && reasoning !== "") {
    work.parts.push({ _tag: "ReasoningDelta", index: ensure(work, "reasoning"), text: reasoning })
  }
  const content = stringOrUndefined(delta.content)
  if (content !== undefined && content !== "") {
    work.parts.push({ _tag: "TextDelta", index: ensure(work, "text"), text: content })
  }
  const refusal = stringOrUndefined(delta.refusal)
  if (refusal !== undefined && refusal !== "") {
    work.parts.push({ _tag: "TextDelta", index: ensure(work, "text"), text: refusal })
  }
  if (Array.isArray(delta.tool_calls)) {
    delta.tool_calls.forEach((call, position) => {
      if (Predicate.isObject(call)) readToolCall(work, call, position)
    })
  }
  const finishReason = stringOrUndefined(choice.finish_reason)
  if (finishReason !== undefined) {
    close(work)
    work.state = { ...work.state, finishReason }
  }
}

/**
 * One upstream SSE event → next state and canonical parts. `[DONE]` marks the
 * stream complete; an `{"error": {...}}` payload is an in-band failure
 * (`inBandFailure`); data that is not JSON is a `bad-body` failure; a chunk
 * with usage (the `choices: []` usage chunk, or any chunk carrying it) gives a
 * `UsageUpdate` (final once a `finish_reason` came); a chunk before the first with choices that has neither
 * (Azure's `prompt_filter_results` chunk) gives nothing. Only choice 0 is read. Events after `[DONE]` are ignored.
 *
 * @category decoding
 */
export const stepChatDecoder = (state: ChatDecodeState, event: Sse.Event): DecodeStep<ChatDecodeState> => {
  if (state.done) return [state, []]
  const data = event.data.trim()
  if (data === "[DONE]") return [{ ...state, done: true }, []]
  if (data === "") return [state, []]
  const chunk = parseJson(data)
  if (!Predicate.isObject(chunk)) return badBody("An upstream stream event is not a JSON object.")
  if (chunk.error !== undefined && chunk.error !== null) return inBandFailure(chunk.error)
  // A chunk before the answer with no choices and no usage (Azure's first chunk: only `prompt_filter_results`,
  // with empty `id` and `model`) starts nothing: the answer's id and model come from the next one.
  if (!state.started && Array.isArray(chunk.choices) && chunk.choices.length === 0 && chunk.usage == null) {
    return [state, []]
  }
  const work: Work = { state, parts: [] }
  if (!state.started) {
    work.parts.push({
      _tag: "ResponseStart",
      id: stringOrUndefined(chunk.id) ?? "",
      model: stringOrUndefined(chunk.model) ?? "",
      created: numberOrUndefined(chunk.created) ?? 0
    })
    work.state = { ...work.state, started: true }
  }
  if (Array.isArray(chunk.choices)) {
    for (const choice of chunk.choices) {
      if (Predicate.isObject(choice) && (choice.index ?? 0) === 0) {
        readChoice(work, choice)
        break
      }
    }
  }
  const usage = decodeUsage(chunk.usage)
  if (usage !== undefined) {
    work.state = { ...work.state, usage }
    // Usage after a finish_reason (the `choices: []` usage chunk, or the finishing chunk carrying it) is final.
    work.parts.push(
      work.state.finishReason === undefined
        ? { _tag: "UsageUpdate", usage }
        : { _tag: "UsageUpdate", usage, final: true }
    )
  }
  return [work.state, work.parts]
}

/**
 * At the end of a complete stream: the `BlockStop` of a block still open,
 * then `Finish` with the remembered `finish_reason` (`other` when none came)
 * and the last usage (zeros when none came).
 *
 * @category decoding
 */
export const flushChatDecoder = (state: ChatDecodeState): ReadonlyArray<StreamPart> => {
  const parts: Array<StreamPart> = []
  if (state.open !== undefined) parts.push({ _tag: "BlockStop", index: state.open.index })
  parts.push({
    _tag: "Finish",
    reason: decodeFinishReason(state.finishReason),
    ...(state.finishReason === undefined ? {} : { rawReason: state.finishReason }),
    usage: state.usage ?? emptyUsage
  })
  return parts
}

/**
 * The chat completions stream decoder; `complete` only after `data: [DONE]`.
 *
 * @category decoding
 */
export const chatStreamDecoder: StreamDecoder<ChatDecodeState> = {
  initial,
  step: stepChatDecoder,
  flush: flushChatDecoder,
  complete: (state) => state.done
}
