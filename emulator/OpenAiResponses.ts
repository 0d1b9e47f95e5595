/**
 * OpenAI Responses API for the vendor emulator: `POST /v1/responses` and `POST /v1/responses/compact`.
 *
 * Wire shapes follow the `openai` SDK 7.57 types (`Response`, `ResponseOutputItem`, `ResponseUsage`,
 * `ResponseStreamEvent`, `CompactedResponse`, `ResponseCompactionItem`) and
 * https://platform.openai.com/docs/api-reference/responses-streaming. Every stream event has an
 * `event:` line equal to its `data.type` and a `sequence_number` counting from 0.
 * Simplifications: the reasoning item always carries its summary and `encrypted_content` when
 * reasoning is asked (the real API gates them on `reasoning.summary` and
 * `include: ["reasoning.encrypted_content"]`); there are no stop sequences in this API.
 * Compact returns the input's user messages followed by one `compaction` item, as the SDK documents.
 * Custom (freeform) tools (`{type: "custom", name, format}`, Codex's `apply_patch`) are called with a
 * `custom_tool_call` item whose `input` is the text (`tool:<name> {"input": "…"}` in the prompt gives it), streamed
 * as `response.custom_tool_call_input.delta` / `.done`; `custom_tool_call` and `custom_tool_call_output` input items
 * are read back as a call and its result.
 *
 * @since 0.1.0
 */
import { type Answer, answer, type Prompt, stableHash, type ToolChoice, type ToolSpec } from "./Answer.ts"
import { vendorErrorBody } from "./Faults.ts"
import { responsesInputProblem } from "./RequestChecks.ts"
import { argumentFragments } from "./OpenAiChat.ts"
import { eventFrame, jsonReply, type Reply, sseReply } from "./Sse.ts"
import {
  arrayOr,
  describeImageUrl,
  isObject,
  type JsonObject,
  numberOr,
  objectOr,
  type RouteContext,
  stringOr
} from "./Wire.ts"
import { responsesParamProblem } from "./OpenAiParams.ts"

interface InputMessage {
  readonly role: string
  readonly text: string
  readonly images: ReadonlyArray<string>
}

/** Normalised input items: messages, function calls and function call outputs. */
type InputItem =
  | ({ readonly kind: "message" } & InputMessage)
  | { readonly kind: "call"; readonly arguments: string }
  | { readonly kind: "output"; readonly text: string }

const messageOf = (role: string, content: unknown): InputMessage => {
  if (typeof content === "string") return { role, text: content, images: [] }
  const texts: Array<string> = []
  const images: Array<string> = []
  for (const part of arrayOr(content)) {
    if (!isObject(part)) continue
    if (part.type === "input_text" || part.type === "output_text" || part.type === "text") {
      texts.push(stringOr(part.text) ?? "")
    } else if (part.type === "input_image") {
      const url = stringOr(part.image_url)
      images.push(url !== undefined ? describeImageUrl(url) : stringOr(part.file_id) ?? "image")
    }
  }
  return { role, text: texts.join(" "), images }
}

const outputText = (output: unknown): string => typeof output === "string" ? output : messageOf("tool", output).text

const inputItems = (input: unknown): ReadonlyArray<InputItem> => {
  if (typeof input === "string") return [{ kind: "message", role: "user", text: input, images: [] }]
  return arrayOr(input).flatMap((raw): ReadonlyArray<InputItem> => {
    if (!isObject(raw)) return []
    if (raw.type === "function_call") return [{ kind: "call", arguments: stringOr(raw.arguments) ?? "" }]
    if (raw.type === "custom_tool_call") return [{ kind: "call", arguments: stringOr(raw.input) ?? "" }]
    if (raw.type === "function_call_output" || raw.type === "custom_tool_call_output") {
      return [{ kind: "output", text: outputText(raw.output) }]
    }
    if ((raw.type === undefined || raw.type === "message") && typeof raw.role === "string") {
      return [{ kind: "message", ...messageOf(raw.role, raw.content) }]
    }
    return []
  })
}

/** A custom (freeform) tool's call carries one text `input`: sampled as that one string argument. */
const freeformSchema = { type: "object", properties: { input: { type: "string" } }, required: ["input"] }

const responsesTools = (value: unknown): ReadonlyArray<ToolSpec> =>
  arrayOr(value).flatMap((tool) =>
    isObject(tool) && tool.type === "function" && typeof tool.name === "string"
      ? [{ name: tool.name, schema: tool.parameters ?? { type: "object", properties: {} } }]
      : isObject(tool) && tool.type === "custom" && typeof tool.name === "string"
      ? [{ name: tool.name, schema: freeformSchema }]
      : []
  )

/** The names of the custom (freeform) tools of a request. */
const customTools = (value: unknown): ReadonlySet<string> =>
  new Set(
    arrayOr(value).flatMap((tool) =>
      isObject(tool) && tool.type === "custom" && typeof tool.name === "string" ? [tool.name] : []
    )
  )

const responsesToolChoice = (value: unknown): ToolChoice => {
  if (value === "none" || value === "required" || value === "auto") return value
  if (isObject(value) && value.type === "function" && typeof value.name === "string") return { name: value.name }
  return "auto"
}

const reasoningAsked = (body: JsonObject): boolean => {
  const effort = objectOr(body.reasoning).effort
  return typeof effort === "string" && effort !== "none"
}

const prompt = (body: JsonObject, items: ReadonlyArray<InputItem>): Prompt => {
  const texts: Array<string> = [stringOr(body.instructions) ?? ""]
  let lastUserText = ""
  let images: ReadonlyArray<string> = []
  let toolResults: Array<string> = []
  let messageCount = 0
  for (const item of items) {
    switch (item.kind) {
      case "call":
        texts.push(item.arguments)
        toolResults = []
        break
      case "output":
        texts.push(item.text)
        toolResults.push(item.text)
        break
      case "message":
        texts.push(item.text)
        messageCount++
        toolResults = []
        if (item.role === "user") {
          lastUserText = item.text
          images = item.images
        }
    }
  }
  const format = objectOr(objectOr(body.text).format)
  return {
    lastUserText,
    images,
    toolResults,
    tools: responsesTools(body.tools),
    toolChoice: responsesToolChoice(body.tool_choice),
    reasoning: reasoningAsked(body),
    outputSchema: format.type === "json_schema"
      ? format.schema ?? { type: "object" }
      : format.type === "json_object"
      ? { type: "object", properties: { answer: { type: "string" } } }
      : undefined,
    maxTokens: numberOr(body.max_output_tokens),
    stop: [],
    texts,
    messageCount
  }
}

/** Responses `ResponseUsage` for an answer. @category encoding */
const responsesUsage = (result: Answer): JsonObject => ({
  input_tokens: result.promptTokens,
  input_tokens_details: { cached_tokens: result.cachedTokens },
  output_tokens: result.outputTokens,
  output_tokens_details: { reasoning_tokens: result.reasoningTokens },
  total_tokens: result.promptTokens + result.outputTokens
})

const invalid = (message: string, param: string | undefined): Reply =>
  jsonReply(vendorErrorBody("openai", 400, message, param), 400)

/** Handles `POST /v1/responses` (JSON or SSE by `stream`). @category routes */
export const createResponse = (context: RouteContext): Reply => {
  const body = context.body
  if (typeof body.model !== "string") return invalid("Missing required parameter: 'model'.", "model")
  if (body.input === undefined) return invalid("Missing required parameter: 'input'.", "input")
  const problem = responsesParamProblem(body) ?? responsesInputProblem(body)
  if (problem !== undefined) return invalid(problem.message, problem.param)
  const result = answer(prompt(body, inputItems(body.input)), context.toolCalls)
  const id = context.ids.next("resp_")
  const output: Array<JsonObject> = []
  if (result.reasoning !== undefined) {
    output.push({
      id: context.ids.next("rs_"),
      type: "reasoning",
      summary: [{ type: "summary_text", text: result.reasoning }],
      encrypted_content: btoa(`enc-${stableHash(result.reasoning)}`)
    })
  }
  const status = result.finish === "length" ? "incomplete" : "completed"
  if (result.toolCalls.length === 0) {
    output.push({
      id: context.ids.next("msg_"),
      type: "message",
      status,
      role: "assistant",
      content: [{ type: "output_text", text: result.text, annotations: [], logprobs: [] }]
    })
  }
  const custom = customTools(body.tools)
  for (const call of result.toolCalls) {
    if (custom.has(call.name)) {
      output.push({
        id: context.ids.next("ctc_"),
        type: "custom_tool_call",
        status: "completed",
        call_id: context.ids.next("call_"),
        name: call.name,
        input: typeof call.input.input === "string" ? call.input.input : call.arguments
      })
      continue
    }
    output.push({
      id: context.ids.next("fc_"),
      type: "function_call",
      status: "completed",
      arguments: call.arguments,
      call_id: context.ids.next("call_"),
      name: call.name
    })
  }
  const reasoning = objectOr(body.reasoning)
  const response = (state: "in_progress" | "completed" | "incomplete", items: ReadonlyArray<JsonObject>) => ({
    id,
    object: "response",
    created_at: context.created,
    status: state,
    background: false,
    error: null,
    incomplete_details: state === "incomplete" ? { reason: "max_output_tokens" } : null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    model: context.model,
    output: items,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    reasoning: { effort: reasoning.effort ?? null, summary: reasoning.summary ?? null },
    store: body.store ?? true,
    temperature: body.temperature ?? 1,
    text: body.text ?? { format: { type: "text" } },
    tool_choice: body.tool_choice ?? "auto",
    tools: body.tools ?? [],
    top_p: body.top_p ?? 1,
    truncation: "disabled",
    usage: state === "in_progress" ? null : responsesUsage(result),
    user: null,
    metadata: body.metadata ?? {}
  })
  if (body.stream !== true) return jsonReply(response(status, output))

  const frames: Array<string> = []
  const emit = (type: string, data: JsonObject) =>
    frames.push(eventFrame(type, { type, sequence_number: frames.length, ...data }))
  emit("response.created", { response: response("in_progress", []) })
  emit("response.in_progress", { response: response("in_progress", []) })
  output.forEach((item, output_index) => {
    const item_id = item.id as string
    if (item.type === "reasoning") {
      const text = result.reasoning ?? ""
      emit("response.output_item.added", { output_index, item: { ...item, summary: [], encrypted_content: null } })
      const summaryPart = { item_id, output_index, summary_index: 0 }
      emit("response.reasoning_summary_part.added", { ...summaryPart, part: { type: "summary_text", text: "" } })
      for (const word of result.reasoningWords) {
        emit("response.reasoning_summary_text.delta", { ...summaryPart, delta: word })
      }
      emit("response.reasoning_summary_text.done", { ...summaryPart, text })
      emit("response.reasoning_summary_part.done", { ...summaryPart, part: { type: "summary_text", text } })
    } else if (item.type === "message") {
      emit("response.output_item.added", { output_index, item: { ...item, status: "in_progress", content: [] } })
      const partPlace = { item_id, output_index, content_index: 0 }
      emit("response.content_part.added", {
        ...partPlace,
        part: { type: "output_text", text: "", annotations: [], logprobs: [] }
      })
      for (const word of result.words) emit("response.output_text.delta", { ...partPlace, delta: word, logprobs: [] })
      emit("response.output_text.done", { ...partPlace, text: result.text, logprobs: [] })
      emit("response.content_part.done", { ...partPlace, part: (item.content as ReadonlyArray<JsonObject>)[0] })
    } else if (item.type === "custom_tool_call") {
      emit("response.output_item.added", { output_index, item: { ...item, status: "in_progress", input: "" } })
      emit("response.custom_tool_call_input.delta", { item_id, output_index, delta: item.input })
      emit("response.custom_tool_call_input.done", { item_id, output_index, input: item.input })
    } else {
      emit("response.output_item.added", { output_index, item: { ...item, status: "in_progress", arguments: "" } })
      for (const fragment of argumentFragments(item.arguments as string)) {
        emit("response.function_call_arguments.delta", { item_id, output_index, delta: fragment })
      }
      emit("response.function_call_arguments.done", {
        item_id,
        output_index,
        name: item.name,
        arguments: item.arguments
      })
    }
    emit("response.output_item.done", { output_index, item })
  })
  emit(status === "incomplete" ? "response.incomplete" : "response.completed", { response: response(status, output) })
  return sseReply(frames)
}

/** Handles `POST /v1/responses/compact`: user messages kept, the rest folded into one `compaction` item. @category routes */
export const compactResponse = (context: RouteContext): Reply => {
  const body = context.body
  if (typeof body.model !== "string") return invalid("Missing required parameter: 'model'.", "model")
  const items = inputItems(body.input)
  const user = items.flatMap((item) =>
    item.kind === "message" && item.role === "user"
      ? [{
        id: context.ids.next("msg_"),
        type: "message",
        status: "completed",
        role: "user",
        content: [{ type: "input_text", text: item.text }]
      }]
      : []
  )
  const folded = JSON.stringify(body.input ?? null)
  const result = answer({
    ...prompt(body, items),
    tools: [],
    outputSchema: undefined,
    reasoning: false,
    maxTokens: undefined
  })
  return jsonReply({
    id: context.ids.next("resp_"),
    object: "response.compaction",
    created_at: context.created,
    output: [...user, {
      id: context.ids.next("cmp_"),
      type: "compaction",
      encrypted_content: btoa(`cmp-${stableHash(folded)}`)
    }],
    usage: responsesUsage({ ...result, outputTokens: Math.ceil(folded.length / 16), reasoningTokens: 0 })
  })
}
