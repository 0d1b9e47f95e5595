/**
 * Stream translators of the generate-content format. The vendor streams
 * (`:streamGenerateContent?alt=sse`) one whole `GenerateContentResponse` per
 * SSE `data:` line, with no end marker; the chunk that carries `finishReason`
 * (with the final `usageMetadata`) is the last. There are no blocks on the
 * wire: the decoder synthesizes canonical blocks, the encoder flattens them.
 *
 * Sources: @google/genai 3.1.0 `Models.generateContentStream` and its SSE
 * reader (`processStreamResponse`, `throwIfStreamErrorChunk`, dist/index.mjs);
 * ai.google.dev/api/generate-content ("streamGenerateContent");
 * ai.google.dev/gemini-api/docs/thought-signatures.
 *
 * @since 0.1.0
 */
import { Result, Schema } from "effect"
import type { Sse } from "effect/encoding"
import type { BlockKind, StreamPart } from "../../../canonical/StreamPart.ts"
import { emptyUsage, type Usage } from "../../../canonical/Usage.ts"
import { UpstreamFailed } from "../../../errors/GatewayError.ts"
import type { DecodeStep, Problem, ResponseMeta, StreamDecoder, StreamEncoder } from "../../Format.ts"
import { streamPartForClient } from "../../shared/ReasoningOrigin.ts"
import { classifyGeminiError, encodeGeminiStreamError, readGeminiError } from "./ErrorBody.ts"
import { callIdFor, parseArguments, type WireJson, type WirePart } from "./Parts.ts"
import {
  finishReasonFromGemini,
  finishReasonToGemini,
  negligibleSafetyRatings,
  usageFromGemini,
  usageToGemini,
  WireResponse
} from "./ResponseCodec.ts"

// ---------------------------------------------------------------------------
// upstream chunks → canonical parts

/**
 * Decoder state: the open text or reasoning block, the next block index and
 * call ordinal, the last usage seen, the finish reason once seen.
 *
 * @category models
 */
export interface GeminiDecoderState {
  readonly started: boolean
  readonly open: { readonly index: number; readonly kind: "text" | "reasoning" } | undefined
  readonly nextIndex: number
  readonly nextCall: number
  readonly hasToolCalls: boolean
  readonly usage: Usage
  readonly finishRaw: string | undefined
  readonly finished: boolean
  readonly blocked: boolean
}

const decodeChunk = Schema.decodeUnknownExit(WireResponse)

const parseJson = (text: string): Result.Result<unknown, void> => {
  try {
    return Result.succeed(JSON.parse(text))
  } catch {
    return Result.failVoid
  }
}

const badChunk = (detail: string) =>
  new UpstreamFailed({ kind: "bad-body", status: 200, message: `A stream chunk could not be read: ${detail}` })

/** Mutable only while one step runs; never escapes it. */
interface Builder {
  state: GeminiDecoderState
  readonly out: Array<StreamPart>
}

const close = (builder: Builder) => {
  const open = builder.state.open
  if (open === undefined) return
  builder.out.push({ _tag: "BlockStop", index: open.index })
  builder.state = { ...builder.state, open: undefined }
}

const openBlock = (builder: Builder, block: BlockKind): number => {
  close(builder)
  const index = builder.state.nextIndex
  builder.out.push({ _tag: "BlockStart", index, block })
  const kind = block.type === "tool-call" ? undefined : { index, kind: block.type }
  builder.state = { ...builder.state, nextIndex: index + 1, open: kind }
  return index
}

const ensureOpen = (builder: Builder, kind: "text" | "reasoning"): number =>
  builder.state.open?.kind === kind ? builder.state.open.index : openBlock(builder, { type: kind })

const decodePart = (builder: Builder, part: WirePart) => {
  if (part.thought === true && part.functionCall === undefined) {
    const index = ensureOpen(builder, "reasoning")
    if (part.text !== undefined && part.text !== "") {
      builder.out.push({ _tag: "ReasoningDelta", index, text: part.text })
    }
    if (part.thoughtSignature !== undefined) {
      builder.out.push({ _tag: "ReasoningSignature", index, signature: part.thoughtSignature, origin: "gemini" })
      close(builder)
    }
    return
  }
  if (part.thoughtSignature !== undefined) {
    const index = openBlock(builder, { type: "reasoning" })
    builder.out.push({ _tag: "ReasoningSignature", index, signature: part.thoughtSignature, origin: "gemini" })
    close(builder)
  }
  if (part.functionCall !== undefined) {
    const call = part.functionCall
    const callId = callIdFor(call.id, call.name, builder.state.nextCall)
    const index = openBlock(builder, { type: "tool-call", callId, name: call.name })
    builder.out.push({ _tag: "ToolInputDelta", index, json: JSON.stringify(call.args ?? {}) })
    builder.out.push({ _tag: "BlockStop", index })
    builder.state = { ...builder.state, nextCall: builder.state.nextCall + 1, hasToolCalls: true }
    return
  }
  if (part.text !== undefined && part.text !== "") {
    const index = ensureOpen(builder, "text")
    builder.out.push({ _tag: "TextDelta", index, text: part.text })
  }
  // inlineData / fileData output (image generation) is not canonical stream content
}

/**
 * One SSE event → canonical parts. An `{"error": …}` chunk is an in-band
 * failure classified like an HTTP error (`classifyGeminiError`); unreadable
 * JSON is a `bad-body` failure.
 *
 * @category decoding
 */
export const stepGeminiDecoder = (state: GeminiDecoderState, event: Sse.Event): DecodeStep<GeminiDecoderState> => {
  const parsed = parseJson(event.data)
  if (Result.isFailure(parsed)) return badChunk("it is not JSON")
  const error = readGeminiError(parsed.success)
  if (error !== undefined) {
    const status = error.code ?? 500
    const { kind, message } = classifyGeminiError(status, event.data)
    return new UpstreamFailed({ kind, status, message })
  }
  const decoded = decodeChunk(parsed.success)
  if (decoded._tag === "Failure") return badChunk("it is not a generate-content response")
  const chunk = decoded.value
  const builder: Builder = { state, out: [] }
  if (!state.started) {
    builder.out.push({ _tag: "ResponseStart", id: chunk.responseId ?? "", model: chunk.modelVersion ?? "", created: 0 })
    builder.state = { ...builder.state, started: true }
  }
  const candidate = chunk.candidates?.[0]
  for (const part of candidate?.content?.parts ?? []) decodePart(builder, part)
  if (chunk.usageMetadata !== undefined) {
    builder.state = { ...builder.state, usage: usageFromGemini(chunk.usageMetadata) }
  }
  if (candidate?.finishReason !== undefined) {
    builder.state = { ...builder.state, finishRaw: candidate.finishReason, finished: true }
  } else if (candidate === undefined && chunk.promptFeedback?.blockReason !== undefined) {
    builder.state = { ...builder.state, finishRaw: chunk.promptFeedback.blockReason, finished: true, blocked: true }
  }
  // The usage so far, final on the chunk that finishes (generate-content has no end marker after it).
  if (chunk.usageMetadata !== undefined) {
    builder.out.push(
      builder.state.finished
        ? { _tag: "UsageUpdate", usage: builder.state.usage, final: true }
        : { _tag: "UsageUpdate", usage: builder.state.usage }
    )
  }
  return [builder.state, builder.out]
}

/**
 * Closes the open block and emits `Finish` with the last usage seen.
 *
 * @category decoding
 */
export const flushGeminiDecoder = (state: GeminiDecoderState): ReadonlyArray<StreamPart> => {
  const builder: Builder = { state, out: [] }
  close(builder)
  const reason = state.blocked ? "content-filter" : finishReasonFromGemini(state.finishRaw, state.hasToolCalls)
  builder.out.push({
    _tag: "Finish",
    reason,
    ...(state.finishRaw !== undefined ? { rawReason: state.finishRaw } : {}),
    usage: state.usage
  })
  return builder.out
}

/**
 * Upstream `streamGenerateContent?alt=sse` events → canonical parts.
 * Consecutive text parts form one text block, consecutive thought parts one
 * reasoning block (a signed thought part ends it), each `functionCall` one
 * tool-call block whose whole JSON arguments are one `ToolInputDelta`; a
 * signature on a non-thought part is a signature-only reasoning block before
 * it; signatures get origin `gemini`. `complete` is true once a chunk with `finishReason` (or a prompt
 * `blockReason`) has been seen: the format has no end marker.
 *
 * @category decoding
 */
export const geminiStreamDecoder: StreamDecoder<GeminiDecoderState> = {
  initial: () => ({
    started: false,
    open: undefined,
    nextIndex: 0,
    nextCall: 0,
    hasToolCalls: false,
    usage: emptyUsage,
    finishRaw: undefined,
    finished: false,
    blocked: false
  }),
  step: stepGeminiDecoder,
  flush: flushGeminiDecoder,
  complete: (state) => state.finished
}

// ---------------------------------------------------------------------------
// canonical parts → caller chunks

/**
 * Encoder state: block kinds by index, reasoning blocks that had text, the
 * buffered JSON of open tool calls, a signature waiting for the next part, the
 * last usage seen.
 *
 * @category models
 */
export interface GeminiEncoderState {
  readonly meta: ResponseMeta
  readonly blocks: ReadonlyMap<number, BlockKind>
  readonly reasoningWithText: ReadonlySet<number>
  readonly toolInput: ReadonlyMap<number, string>
  readonly pendingSignature: string | undefined
  readonly usage: Usage | undefined
}

const signatureAlone = (signature: string): WireJson => ({ text: "", thought: true, thoughtSignature: signature })

const chunkEvent = (state: GeminiEncoderState, parts: ReadonlyArray<WireJson>, finish?: WireJson): Sse.Event => ({
  _tag: "Event",
  event: "message",
  id: undefined,
  data: JSON.stringify({
    candidates: [{ content: { role: "model", parts }, ...finish, index: 0 }],
    ...(state.usage !== undefined ? { usageMetadata: usageToGemini(state.usage) } : {}),
    modelVersion: state.meta.model,
    responseId: state.meta.id
  })
})

/** Puts the pending signature on `part`, or (`alone`) sends it first as its own thought part. */
const withPending = (state: GeminiEncoderState, part: WireJson, alone: boolean): ReadonlyArray<WireJson> => {
  const pending = state.pendingSignature
  if (pending === undefined) return [part]
  return alone ? [signatureAlone(pending), part] : [{ ...part, thoughtSignature: pending }]
}

const withMap = <K, V>(map: ReadonlyMap<K, V>, key: K, value: V): ReadonlyMap<K, V> => new Map(map).set(key, value)

const withoutKey = <K, V>(map: ReadonlyMap<K, V>, key: K): ReadonlyMap<K, V> => {
  const copy = new Map(map)
  copy.delete(key)
  return copy
}

/**
 * One canonical part → zero or one chunk. Text and reasoning deltas are sent
 * as they come; a tool call is buffered until its `BlockStop` and sent as one
 * whole `functionCall` part (the vendor never splits one). A signature on a
 * reasoning block with text is sent as an empty signed thought part closing
 * it; a signature-only block's signature rides on the next text or function
 * call part. Another vendor's signature is written as
 * `sluice.<origin>.<token>` (`ReasoningOrigin.ts`). `Finish` → the last chunk
 * with `finishReason`, `safetyRatings` and full `usageMetadata`.
 * `RedactedReasoning` has no wire form and is skipped.
 *
 * @category encoding
 */
export const stepGeminiEncoder = (
  state: GeminiEncoderState,
  streamPart: StreamPart
): readonly [GeminiEncoderState, ReadonlyArray<Sse.Event>] => {
  const part = streamPartForClient(streamPart, "gemini")
  switch (part._tag) {
    case "ResponseStart":
    case "RedactedReasoning":
      return [state, []]
    case "BlockStart": {
      const next = { ...state, blocks: withMap(state.blocks, part.index, part.block) }
      return part.block.type === "tool-call" ? [{ ...next, toolInput: withMap(next.toolInput, part.index, "") }, []] : [
        next,
        []
      ]
    }
    case "TextDelta": {
      if (part.text === "" && state.pendingSignature === undefined) return [state, []]
      const parts = withPending(state, { text: part.text }, false)
      return [{ ...state, pendingSignature: undefined }, [chunkEvent(state, parts)]]
    }
    case "ReasoningDelta": {
      const parts = withPending(state, { text: part.text, thought: true }, true)
      const next = {
        ...state,
        pendingSignature: undefined,
        reasoningWithText: new Set(state.reasoningWithText).add(part.index)
      }
      return [next, [chunkEvent(state, parts)]]
    }
    case "ReasoningSignature": {
      if (state.reasoningWithText.has(part.index)) {
        return [state, [chunkEvent(state, [signatureAlone(part.signature)])]]
      }
      const flushed = state.pendingSignature !== undefined
        ? [chunkEvent(state, [signatureAlone(state.pendingSignature)])]
        : []
      return [{ ...state, pendingSignature: part.signature }, flushed]
    }
    case "ToolInputDelta": {
      const buffered = state.toolInput.get(part.index)
      if (buffered === undefined) return [state, []]
      return [{ ...state, toolInput: withMap(state.toolInput, part.index, buffered + part.json) }, []]
    }
    case "BlockStop": {
      const block = state.blocks.get(part.index)
      const next = { ...state, blocks: withoutKey(state.blocks, part.index) }
      if (block?.type !== "tool-call") return [next, []]
      const call = {
        functionCall: {
          name: block.name,
          args: parseArguments(state.toolInput.get(part.index) ?? ""),
          id: block.callId
        }
      }
      const parts = withPending(state, call, false)
      return [
        { ...next, toolInput: withoutKey(state.toolInput, part.index), pendingSignature: undefined },
        [chunkEvent(next, parts)]
      ]
    }
    case "UsageUpdate":
      return [{ ...state, usage: part.usage }, []]
    case "Finish": {
      const next = { ...state, usage: part.usage, pendingSignature: undefined }
      const parts = state.pendingSignature !== undefined ? [signatureAlone(state.pendingSignature)] : [{ text: "" }]
      const finish = {
        finishReason: finishReasonToGemini(part.reason, part.rawReason),
        safetyRatings: negligibleSafetyRatings
      }
      return [next, [chunkEvent(next, parts, finish)]]
    }
  }
}

/**
 * Canonical parts → the caller's `streamGenerateContent` SSE events, one
 * `GenerateContentResponse` chunk each (`modelVersion` = the model asked for,
 * `responseId` = the gateway's id). `end` writes nothing (the format has no end
 * marker); `fail` writes `data: {"error": {code: <HTTP status>, message,
 * status: <RPC status name>}}`, which `@google/genai` raises as an `ApiError`.
 *
 * @category encoding
 */
export const geminiStreamEncoder: StreamEncoder<GeminiEncoderState> = {
  initial: (meta) => ({
    meta,
    blocks: new Map(),
    reasoningWithText: new Set(),
    toolInput: new Map(),
    pendingSignature: undefined,
    usage: undefined
  }),
  step: stepGeminiEncoder,
  end: () => [],
  fail: (_state: GeminiEncoderState, problem: Problem) => [{
    _tag: "Event",
    event: "message",
    id: undefined,
    data: JSON.stringify(encodeGeminiStreamError(problem))
  }]
}
