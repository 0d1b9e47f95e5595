/**
 * Encodes canonical stream parts as `chat.completion.chunk` SSE events for a
 * caller (spec "Chat completion chunk", "Events"; openai@7.57.0
 * `ChatCompletionChunk`). Every chunk carries `id`, `created` and `model` from
 * the `ResponseMeta`.
 *
 * @since 0.1.0
 */
import type { Sse } from "effect/encoding"
import type { StreamPart } from "../../../canonical/StreamPart.ts"
import type { Usage } from "../../../canonical/Usage.ts"
import type { Problem, ResponseMeta, StreamEncoder } from "../../Format.ts"
import { obfuscationFor } from "../shared/Obfuscation.ts"
import { encodeOpenAiError } from "../shared/ErrorBody.ts"
import { extraContentFor } from "./CallSignatures.ts"
import { dataEvent, doneEvent, encodeChatFinishReason, encodeUsage } from "./WireSchema.ts"

/**
 * Encoder state: the meta, whether the first (role) chunk was sent, the chat
 * ordinal of each tool-call block (canonical index → `tool_calls[].index`,
 * numbered from 0 in order of appearance) and the last usage seen.
 *
 * @category models
 */
export interface ChatEncodeState {
  readonly meta: ResponseMeta
  readonly started: boolean
  readonly toolOrdinals: ReadonlyMap<number, number>
  readonly usage: Usage | undefined
  /** The open reasoning block and whether it had text (a signature-only block signs the next call). */
  readonly reasoning?: { readonly index: number; readonly hasText: boolean } | undefined
  /** A Gemini signature waiting for the tool call right after its signature-only block. */
  readonly callSignature?: string | undefined
}

const chunk = (
  meta: ResponseMeta,
  delta: Record<string, unknown>,
  finishReason: string | null = null
): Sse.Event =>
  dataEvent({
    id: meta.id,
    object: "chat.completion.chunk",
    created: meta.created,
    model: meta.model,
    choices: [{ index: 0, delta, finish_reason: finishReason }]
  })

/** A chunk carrying `text` in `delta`, padded with `obfuscation` when `meta.obfuscate` (`Obfuscation.ts`). */
const deltaChunk = (meta: ResponseMeta, delta: Record<string, unknown>, text: string): Sse.Event =>
  meta.obfuscate === true
    ? dataEvent({
      id: meta.id,
      object: "chat.completion.chunk",
      created: meta.created,
      model: meta.model,
      choices: [{ index: 0, delta, finish_reason: null }],
      obfuscation: obfuscationFor(text)
    })
    : chunk(meta, delta)

const roleChunk = (meta: ResponseMeta): Sse.Event => chunk(meta, { role: "assistant", content: "" })

const contentEvents = (
  state: ChatEncodeState,
  part: StreamPart
): readonly [ChatEncodeState, ReadonlyArray<Sse.Event>] => {
  const meta = state.meta
  switch (part._tag) {
    case "ResponseStart":
      return [state, []]
    case "BlockStart": {
      if (part.block.type !== "tool-call") {
        const reasoning = part.block.type === "reasoning" ? { index: part.index, hasText: false } : undefined
        return [{ ...state, reasoning, callSignature: undefined }, []]
      }
      const ordinal = state.toolOrdinals.size
      const signature = state.callSignature
      return [
        {
          ...state,
          toolOrdinals: new Map(state.toolOrdinals).set(part.index, ordinal),
          reasoning: undefined,
          callSignature: undefined
        },
        [chunk(meta, {
          tool_calls: [{
            index: ordinal,
            id: part.block.callId,
            type: "function",
            function: { name: part.block.name, arguments: "" },
            ...(signature === undefined ? {} : { extra_content: extraContentFor(signature) })
          }]
        })]
      ]
    }
    case "TextDelta":
      return [state, [deltaChunk(meta, { content: part.text }, part.text)]]
    case "ReasoningDelta":
      return [
        state.reasoning?.index === part.index && !state.reasoning.hasText
          ? { ...state, reasoning: { index: part.index, hasText: true } }
          : state,
        [deltaChunk(meta, { reasoning_content: part.text }, part.text)]
      ]
    case "ToolInputDelta": {
      const ordinal = state.toolOrdinals.get(part.index)
      if (ordinal === undefined) return [state, []]
      return [state, [
        deltaChunk(meta, { tool_calls: [{ index: ordinal, function: { arguments: part.json } }] }, part.json)
      ]]
    }
    case "UsageUpdate":
      return [{ ...state, usage: part.usage }, []]
    case "Finish": {
      const events = [chunk(meta, {}, encodeChatFinishReason(part.reason))]
      if (meta.includeUsage === true) {
        events.push(dataEvent({
          id: meta.id,
          object: "chat.completion.chunk",
          created: meta.created,
          model: meta.model,
          choices: [],
          usage: encodeUsage(part.usage)
        }))
      }
      return [{ ...state, usage: part.usage }, events]
    }
    case "ReasoningSignature":
      return part.origin === "gemini" && state.reasoning?.index === part.index && !state.reasoning.hasText
        ? [{ ...state, callSignature: part.signature }, []]
        : [state, []]
    case "RedactedReasoning":
    case "BlockStop":
      return [state, []]
  }
}

/**
 * One canonical part → chunks. The first part (normally `ResponseStart`)
 * sends `{role: "assistant", content: ""}`; text → `content`; reasoning →
 * `reasoning_content`; a tool-call `BlockStart` → a `tool_calls` entry with
 * id, type, name and empty arguments; `ToolInputDelta` → an arguments
 * fragment at that call's ordinal (text, reasoning and argument chunks carry
 * an `obfuscation` padding when `meta.obfuscate`); `Finish` → an empty delta with
 * `finish_reason`, then, when `meta.includeUsage`, a `choices: []` chunk with
 * the usage. Reasoning signatures and redacted reasoning have no chat field
 * and are not sent, but for the signature of a Gemini call (a signature-only
 * reasoning block right before a tool call), which goes on that call's first
 * chunk as `extra_content.google.thought_signature` (`CallSignatures.ts`).
 *
 * @category encoding
 */
export const stepChatEncoder = (
  state: ChatEncodeState,
  part: StreamPart
): readonly [ChatEncodeState, ReadonlyArray<Sse.Event>] => {
  if (state.started) return contentEvents(state, part)
  const [next, events] = contentEvents({ ...state, started: true }, part)
  return [next, [roleChunk(state.meta), ...events]]
}

/**
 * The chat completions stream encoder: ends with `data: [DONE]`; a failure is
 * one `data: {"error": {message, type, param, code}}` event and no `[DONE]`.
 *
 * @category encoding
 */
export const chatStreamEncoder: StreamEncoder<ChatEncodeState> = {
  initial: (meta) => ({ meta, started: false, toolOrdinals: new Map(), usage: undefined }),
  step: stepChatEncoder,
  end: () => [doneEvent],
  fail: (_state, problem: Problem) => [dataEvent(encodeOpenAiError(problem))]
}
