/**
 * Inbound half, streams: canonical `StreamPart`s → OpenAI Responses SSE events,
 * as `client.responses.stream()` / `responses.create({stream: true})` of the
 * official SDK reads them (event types and fields from the SDK types
 * `ResponseStreamEvent`, `ResponseCreatedEvent`, `ResponseInProgressEvent`,
 * `ResponseOutputItemAddedEvent`, `ResponseContentPartAddedEvent`,
 * `ResponseTextDeltaEvent`, `ResponseTextDoneEvent`,
 * `ResponseReasoningSummaryPartAddedEvent`,
 * `ResponseReasoningSummaryTextDeltaEvent`,
 * `ResponseFunctionCallArgumentsDeltaEvent`,
 * `ResponseFunctionCallArgumentsDoneEvent`, `ResponseOutputItemDoneEvent`,
 * `ResponseCompletedEvent`, `ResponseIncompleteEvent`, `ResponseErrorEvent` in
 * `openai@7.57.0`; spec "Events", responses format).
 *
 * Every event's `event:` line is its `type`, and `sequence_number` counts from
 * 0. The sequence: `response.created` and `response.in_progress` (status
 * `in_progress`, empty output); per block `response.output_item.added`, its
 * deltas and `…done` events, `response.output_item.done`; at `Finish`
 * `response.completed` (or `response.incomplete` / `response.failed`) carrying
 * the whole response with every output item and the usage. There is no end
 * marker after it. With `meta.obfuscate` (the caller did not send
 * `stream_options.include_obfuscation: false`), the text, reasoning summary
 * and argument delta events carry an `obfuscation` padding, as OpenAI's do
 * (`Obfuscation.ts`).
 * A call of one of the caller's custom (freeform) tools (`tools[i].type: "custom"`, offered to a translated
 * upstream as a function with one string argument) becomes a `custom_tool_call` item: its JSON arguments are
 * gathered and its raw input sent whole at the call's end (`response.custom_tool_call_input.delta` and `.done`).
 * A signature another vendor minted becomes `encrypted_content` written as
 * `sluice.<origin>.<token>`, and redacted reasoning (Anthropic's encrypted
 * thinking) a reasoning item whose `encrypted_content` is
 * `sluice.<origin>.redacted.<data>` (`ReasoningOrigin.ts`), so a client's next
 * turn carries it back.
 *
 * @since 0.1.0
 */
import type { Sse } from "effect/encoding"
import type { BlockKind, StreamPart } from "../../../canonical/StreamPart.ts"
import { emptyUsage, type Usage } from "../../../canonical/Usage.ts"
import type { Problem, ResponseMeta, StreamEncoder } from "../../Format.ts"
import { redactedToken, streamPartForClient } from "../../shared/ReasoningOrigin.ts"
import {
  customToolCallItem,
  customToolNames,
  freeformInput,
  functionCallItem,
  messageItem,
  type OutputItem,
  outputText,
  reasoningItem,
  responseObject
} from "./ResponseCodec.ts"
import { itemId, statusOfFinish } from "./WireSchema.ts"
import { obfuscationFor } from "../shared/Obfuscation.ts"

/** An open output item, by canonical block index. */
interface Block {
  readonly kind: BlockKind["type"]
  readonly outputIndex: number
  readonly itemId: string
  readonly text: string
  readonly callId: string
  readonly name: string
  readonly signature: string | undefined
  /** Reasoning only: whether `response.reasoning_summary_part.added` was written. */
  readonly summaryOpen: boolean
  /** Tool calls only: a call of one of the caller's custom tools (its input is sent whole when the call ends). */
  readonly custom: boolean
}

/**
 * The encoder's state: the response metadata, the next `sequence_number`,
 * the open blocks, the finished output items (by output index) and whether the
 * response was started or finished.
 *
 * @category models
 */
export interface ResponsesEncoderState {
  readonly meta: ResponseMeta
  readonly sequence: number
  readonly started: boolean
  readonly finished: boolean
  readonly blocks: ReadonlyMap<number, Block>
  readonly output: ReadonlyArray<OutputItem>
  readonly nextOutputIndex: number
  readonly usage: Usage
  /** The caller's custom (freeform) tools, by name (`customToolNames`). */
  readonly customTools: ReadonlySet<string>
}

/** Collects the events of one step, numbering them. Owned by a single `step` call. */
class Writer {
  readonly events: Array<Sse.Event> = []
  constructor(public sequence: number) {}

  write(type: string, fields: Record<string, unknown>): void {
    const data = JSON.stringify({ type, ...fields, sequence_number: this.sequence })
    this.sequence += 1
    this.events.push({ _tag: "Event", event: type, id: undefined, data })
  }
}

/** A delta event's `obfuscation` field when `meta.obfuscate` (`Obfuscation.ts`), else nothing. */
const padding = (meta: ResponseMeta, delta: string): Record<string, string> =>
  meta.obfuscate === true ? { obfuscation: obfuscationFor(delta) } : {}

const start = (state: ResponsesEncoderState, writer: Writer): ResponsesEncoderState => {
  if (state.started) return state
  const response = responseObject(state.meta, "in_progress", [])
  writer.write("response.created", { response })
  writer.write("response.in_progress", { response })
  return { ...state, started: true }
}

const withBlock = (state: ResponsesEncoderState, index: number, block: Block | undefined): ResponsesEncoderState => {
  const blocks = new Map(state.blocks)
  if (block === undefined) blocks.delete(index)
  else blocks.set(index, block)
  return { ...state, blocks }
}

const openBlock = (
  state: ResponsesEncoderState,
  index: number,
  kind: BlockKind,
  writer: Writer
): ResponsesEncoderState => {
  if (state.blocks.has(index)) return state
  const outputIndex = state.nextOutputIndex
  const custom = kind.type === "tool-call" && state.customTools.has(kind.name)
  const prefix = kind.type === "text" ? "msg" : kind.type === "reasoning" ? "rs" : custom ? "ctc" : "fc"
  const block: Block = {
    kind: kind.type,
    outputIndex,
    itemId: itemId(prefix, state.meta.id, outputIndex),
    text: "",
    callId: kind.type === "tool-call" ? kind.callId : "",
    name: kind.type === "tool-call" ? kind.name : "",
    signature: undefined,
    summaryOpen: false,
    custom
  }
  switch (kind.type) {
    case "text":
      writer.write("response.output_item.added", {
        output_index: outputIndex,
        item: messageItem(block.itemId, "in_progress", [])
      })
      writer.write("response.content_part.added", {
        item_id: block.itemId,
        output_index: outputIndex,
        content_index: 0,
        part: outputText("")
      })
      break
    case "reasoning":
      writer.write("response.output_item.added", {
        output_index: outputIndex,
        item: { id: block.itemId, type: "reasoning", summary: [] }
      })
      break
    case "tool-call":
      writer.write("response.output_item.added", {
        output_index: outputIndex,
        item: custom
          ? customToolCallItem(block.itemId, block.callId, block.name, "", "in_progress")
          : functionCallItem(block.itemId, block.callId, block.name, "", "in_progress")
      })
      break
  }
  return withBlock({ ...state, nextOutputIndex: outputIndex + 1 }, index, block)
}

/** The block at `index`, opened as `kind` first when a delta arrives without its `BlockStart`. */
const ensureBlock = (
  state: ResponsesEncoderState,
  index: number,
  kind: BlockKind,
  writer: Writer
): readonly [ResponsesEncoderState, Block] => {
  const opened = openBlock(state, index, kind, writer)
  return [opened, opened.blocks.get(index) as Block]
}

const closeBlock = (state: ResponsesEncoderState, index: number, writer: Writer): ResponsesEncoderState => {
  const block = state.blocks.get(index)
  if (block === undefined) return state
  const location = { item_id: block.itemId, output_index: block.outputIndex }
  let item: OutputItem
  switch (block.kind) {
    case "text":
      writer.write("response.output_text.done", { ...location, content_index: 0, text: block.text, logprobs: [] })
      writer.write("response.content_part.done", { ...location, content_index: 0, part: outputText(block.text) })
      item = messageItem(block.itemId, "completed", [outputText(block.text)])
      break
    case "reasoning":
      if (block.summaryOpen) {
        const part = { type: "summary_text", text: block.text }
        writer.write("response.reasoning_summary_text.done", { ...location, summary_index: 0, text: block.text })
        writer.write("response.reasoning_summary_part.done", { ...location, summary_index: 0, part })
      }
      item = reasoningItem(block.itemId, block.summaryOpen ? block.text : "", block.signature)
      break
    case "tool-call":
      if (block.custom) {
        // The translated upstream streamed JSON arguments; the caller gets the freeform input whole.
        const input = freeformInput(block.text)
        writer.write("response.custom_tool_call_input.delta", {
          ...location,
          delta: input,
          ...padding(state.meta, input)
        })
        writer.write("response.custom_tool_call_input.done", { ...location, input })
        item = customToolCallItem(block.itemId, block.callId, block.name, block.text, "completed")
        break
      }
      writer.write("response.function_call_arguments.done", { ...location, arguments: block.text })
      item = functionCallItem(block.itemId, block.callId, block.name, block.text, "completed")
      break
  }
  writer.write("response.output_item.done", { output_index: block.outputIndex, item })
  const output = [...state.output]
  output[block.outputIndex] = item
  return withBlock({ ...state, output }, index, undefined)
}

const text = (
  state: ResponsesEncoderState,
  index: number,
  delta: string,
  writer: Writer
): ResponsesEncoderState => {
  const [opened, block] = ensureBlock(state, index, { type: "text" }, writer)
  writer.write("response.output_text.delta", {
    item_id: block.itemId,
    output_index: block.outputIndex,
    content_index: 0,
    delta,
    logprobs: [],
    ...padding(state.meta, delta)
  })
  return withBlock(opened, index, { ...block, text: block.text + delta })
}

const reasoning = (
  state: ResponsesEncoderState,
  index: number,
  delta: string,
  writer: Writer
): ResponsesEncoderState => {
  const [opened, block] = ensureBlock(state, index, { type: "reasoning" }, writer)
  const location = { item_id: block.itemId, output_index: block.outputIndex, summary_index: 0 }
  if (!block.summaryOpen) {
    writer.write("response.reasoning_summary_part.added", { ...location, part: { type: "summary_text", text: "" } })
  }
  writer.write("response.reasoning_summary_text.delta", { ...location, delta, ...padding(state.meta, delta) })
  return withBlock(opened, index, { ...block, text: block.text + delta, summaryOpen: true })
}

const toolInput = (
  state: ResponsesEncoderState,
  index: number,
  delta: string,
  writer: Writer
): ResponsesEncoderState => {
  const block = state.blocks.get(index)
  if (block === undefined || block.kind !== "tool-call") return state
  if (block.custom) return withBlock(state, index, { ...block, text: block.text + delta })
  writer.write("response.function_call_arguments.delta", {
    item_id: block.itemId,
    output_index: block.outputIndex,
    delta,
    ...padding(state.meta, delta)
  })
  return withBlock(state, index, { ...block, text: block.text + delta })
}

const finish = (
  state: ResponsesEncoderState,
  part: Extract<StreamPart, { _tag: "Finish" }>,
  writer: Writer
): ResponsesEncoderState => {
  const closed = [...state.blocks.keys()].sort((a, b) => a - b)
    .reduce((current, index) => closeBlock(current, index, writer), state)
  const { status, incompleteReason } = statusOfFinish(part.reason)
  const response = responseObject(state.meta, status, closed.output.filter((item) => item !== undefined), {
    incompleteReason,
    usage: part.usage,
    ...(status === "failed" ? { error: { code: "server_error", message: "The upstream failed." } } : {})
  })
  const type = status === "completed"
    ? "response.completed"
    : status === "incomplete"
    ? "response.incomplete"
    : "response.failed"
  writer.write(type, { response })
  return { ...closed, finished: true, usage: part.usage }
}

const apply = (state: ResponsesEncoderState, part: StreamPart, writer: Writer): ResponsesEncoderState => {
  switch (part._tag) {
    case "ResponseStart":
      return state
    case "BlockStart":
      return openBlock(state, part.index, part.block, writer)
    case "TextDelta":
      return text(state, part.index, part.text, writer)
    case "ReasoningDelta":
      return reasoning(state, part.index, part.text, writer)
    case "ReasoningSignature": {
      const [opened, block] = ensureBlock(state, part.index, { type: "reasoning" }, writer)
      return withBlock(opened, part.index, { ...block, signature: part.signature })
    }
    case "RedactedReasoning": {
      // `data` is already `redactedToken`'s form (see `step`).
      const [opened, block] = ensureBlock(state, part.index, { type: "reasoning" }, writer)
      return withBlock(opened, part.index, { ...block, signature: part.data })
    }
    case "ToolInputDelta":
      return toolInput(state, part.index, part.json, writer)
    case "BlockStop":
      return closeBlock(state, part.index, writer)
    case "UsageUpdate":
      return { ...state, usage: part.usage }
    case "Finish":
      return finish(state, part, writer)
  }
}

/**
 * Canonical parts → Responses SSE events. `step` starts the response on the
 * first part (whatever it is; the upstream's own id and model are replaced by
 * `meta`'s), writes nothing once the response is finished, and is pure.
 * `end` writes nothing (a Responses stream ends with its terminal
 * `response.*` event). `fail` writes one `error` event
 * `{type: "error", code, message, param, sequence_number}` and never
 * `response.completed`.
 *
 * @category encoding
 */
export const responsesStreamEncoder: StreamEncoder<ResponsesEncoderState> = {
  initial: (meta) => ({
    meta,
    sequence: 0,
    started: false,
    finished: false,
    blocks: new Map(),
    output: [],
    nextOutputIndex: 0,
    usage: emptyUsage,
    customTools: customToolNames(meta.request)
  }),
  step: (state, part) => {
    if (state.finished) return [state, []]
    const writer = new Writer(state.sequence)
    const prepared = part._tag === "RedactedReasoning"
      ? { ...part, data: redactedToken(part.data, part.origin) }
      : streamPartForClient(part, "openai")
    const next = apply(start(state, writer), prepared, writer)
    return [{ ...next, sequence: writer.sequence }, writer.events]
  },
  end: () => [],
  fail: (state: ResponsesEncoderState, problem: Problem) => {
    const writer = new Writer(state.sequence)
    writer.write("error", { code: problem.code, message: problem.message, param: problem.param })
    return writer.events
  }
}
