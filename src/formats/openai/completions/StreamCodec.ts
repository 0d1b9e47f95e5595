/**
 * Legacy completions streams: `text_completion` chunks as `data:` events,
 * ended by `data: [DONE]` (openai@7.57.0 `Completions.create` streams
 * `Completion` objects; usage arrives on a `choices: []` chunk when
 * `stream_options.include_usage` is set). One canonical text block, index 0.
 *
 * @since 0.1.0
 */
import { Predicate } from "effect"
import type { Sse } from "effect/encoding"
import type { StreamPart } from "../../../canonical/StreamPart.ts"
import { emptyUsage, type Usage } from "../../../canonical/Usage.ts"
import type { DecodeStep, Problem, ResponseMeta, StreamDecoder, StreamEncoder } from "../../Format.ts"
import { encodeOpenAiError } from "../shared/ErrorBody.ts"
import {
  badBody,
  dataEvent,
  decodeFinishReason,
  decodeUsage,
  doneEvent,
  encodeCompletionFinishReason,
  encodeUsage,
  inBandFailure,
  numberOrUndefined,
  parseJson,
  stringOrUndefined
} from "../chat/WireSchema.ts"

/**
 * Decoder state: whether `ResponseStart` was sent, whether the text block is
 * open, the last `finish_reason` and usage, and whether `[DONE]` arrived.
 *
 * @category models
 */
export interface CompletionsDecodeState {
  readonly started: boolean
  readonly textOpen: boolean
  readonly finishReason: string | undefined
  readonly usage: Usage | undefined
  readonly done: boolean
}

/**
 * One upstream event → next state and parts: the first chunk gives
 * `ResponseStart`, the first non-empty `choices[0].text` opens text block 0,
 * `finish_reason` closes it, usage gives `UsageUpdate`; `[DONE]` completes;
 * `{"error": {...}}` is an in-band failure; non-JSON data is `bad-body`.
 *
 * @category decoding
 */
export const stepCompletionsDecoder = (
  state: CompletionsDecodeState,
  event: Sse.Event
): DecodeStep<CompletionsDecodeState> => {
  if (state.done) return [state, []]
  const data = event.data.trim()
  if (data === "[DONE]") return [{ ...state, done: true }, []]
  if (data === "") return [state, []]
  const chunk = parseJson(data)
  if (!Predicate.isObject(chunk)) return badBody("An upstream stream event is not a JSON object.")
  if (chunk.error !== undefined && chunk.error !== null) return inBandFailure(chunk.error)
  let next = state
  const parts: Array<StreamPart> = []
  if (!next.started) {
    parts.push({
      _tag: "ResponseStart",
      id: stringOrUndefined(chunk.id) ?? "",
      model: stringOrUndefined(chunk.model) ?? "",
      created: numberOrUndefined(chunk.created) ?? 0
    })
    next = { ...next, started: true }
  }
  const choice = Array.isArray(chunk.choices)
    ? chunk.choices.find((candidate) => Predicate.isObject(candidate) && (candidate.index ?? 0) === 0)
    : undefined
  if (Predicate.isObject(choice)) {
    const text = stringOrUndefined(choice.text)
    if (text !== undefined && text !== "") {
      if (!next.textOpen) {
        parts.push({ _tag: "BlockStart", index: 0, block: { type: "text" } })
        next = { ...next, textOpen: true }
      }
      parts.push({ _tag: "TextDelta", index: 0, text })
    }
    const finishReason = stringOrUndefined(choice.finish_reason)
    if (finishReason !== undefined) {
      if (next.textOpen) parts.push({ _tag: "BlockStop", index: 0 })
      next = { ...next, textOpen: false, finishReason }
    }
  }
  const usage = decodeUsage(chunk.usage)
  if (usage !== undefined) {
    next = { ...next, usage }
    // Usage after a finish_reason is the final usage.
    parts.push(
      next.finishReason === undefined ? { _tag: "UsageUpdate", usage } : { _tag: "UsageUpdate", usage, final: true }
    )
  }
  return [next, parts]
}

/**
 * The legacy completions stream decoder; `complete` only after `[DONE]`;
 * `flush` closes the text block if still open, then `Finish`.
 *
 * @category decoding
 */
export const completionsStreamDecoder: StreamDecoder<CompletionsDecodeState> = {
  initial: () => ({ started: false, textOpen: false, finishReason: undefined, usage: undefined, done: false }),
  step: stepCompletionsDecoder,
  flush: (state) => [
    ...(state.textOpen ? [{ _tag: "BlockStop" as const, index: 0 }] : []),
    {
      _tag: "Finish",
      reason: decodeFinishReason(state.finishReason),
      ...(state.finishReason === undefined ? {} : { rawReason: state.finishReason }),
      usage: state.usage ?? emptyUsage
    }
  ],
  complete: (state) => state.done
}

/**
 * Encoder state: the meta only.
 *
 * @category models
 */
export interface CompletionsEncodeState {
  readonly meta: ResponseMeta
}

const chunk = (meta: ResponseMeta, text: string, finishReason: string | null): Sse.Event =>
  dataEvent({
    id: meta.id,
    object: "text_completion",
    created: meta.created,
    model: meta.model,
    choices: [{ index: 0, text, logprobs: null, finish_reason: finishReason }]
  })

/**
 * The legacy completions stream encoder: text → a chunk with that `text`;
 * `Finish` → a chunk with empty text and `finish_reason`, then, when
 * `meta.includeUsage`, a `choices: []` chunk with the usage; `end` →
 * `[DONE]`; `fail` → one `{"error": {...}}` event, no `[DONE]`. Reasoning and
 * tool calls cannot be expressed by this format and are not sent.
 *
 * @category encoding
 */
export const completionsStreamEncoder: StreamEncoder<CompletionsEncodeState> = {
  initial: (meta) => ({ meta }),
  step: (state, part) => {
    const meta = state.meta
    switch (part._tag) {
      case "TextDelta":
        return [state, [chunk(meta, part.text, null)]]
      case "Finish": {
        const events = [chunk(meta, "", encodeCompletionFinishReason(part.reason))]
        if (meta.includeUsage === true) {
          events.push(dataEvent({
            id: meta.id,
            object: "text_completion",
            created: meta.created,
            model: meta.model,
            choices: [],
            usage: encodeUsage(part.usage)
          }))
        }
        return [state, events]
      }
      default:
        return [state, []]
    }
  },
  end: () => [doneEvent],
  fail: (_state, problem: Problem) => [dataEvent(encodeOpenAiError(problem))]
}
