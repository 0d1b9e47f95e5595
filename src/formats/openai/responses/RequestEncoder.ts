/**
 * Outbound half, requests: canonical `Request` → an OpenAI Responses body for
 * `POST /v1/responses` (API reference: platform.openai.com/docs/api-reference/responses/create;
 * shapes from the SDK types `ResponseCreateParamsBase`, `EasyInputMessage`,
 * `ResponseInputText`, `ResponseInputImage`, `ResponseInputFile`,
 * `ResponseOutputText`, `ResponseFunctionToolCall`,
 * `ResponseInputItem.FunctionCallOutput`, `ResponseReasoningItem`,
 * `FunctionTool`, `ToolChoiceFunction`, `ResponseTextConfig`,
 * `Shared.Reasoning` in `openai@7.57.0`).
 *
 * Decisions:
 * - System messages become `instructions` (joined with a blank line) when they
 *   all stand before every other message, hold text only and none is a
 *   developer message; otherwise every system message stays in place as a
 *   `system` or `developer` message item.
 * - Reasoning parts are sent back as `reasoning` items only when they carry a
 *   signature (`encrypted_content`) that OpenAI minted (or of unknown origin):
 *   without one OpenAI cannot use them, and it refuses another vendor's
 *   (`ReasoningOrigin.ts`), so such parts are left out.
 * - `store`, `include`, `text.verbosity` and `stream_options.include_obfuscation`
 *   (a stream's) are written from the canonical fields when set.
 * - What the format cannot express is listed by `droppedFields`.
 *
 * @since 0.1.0
 */
import type { ImagePart, Part, TextPart, ToolResultPart } from "../../../canonical/Content.ts"
import type { Message, ReasoningConfig, Request, ResponseFormat, Tool, ToolChoice } from "../../../canonical/Request.ts"
import type { EncodedRequest } from "../../Format.ts"
import { hasCacheBreakpoints } from "../../shared/CacheBreakpoints.ts"
import { isForeignReasoning } from "../../shared/ReasoningOrigin.ts"
import { effortOfBudget, referenceOf } from "./WireSchema.ts"

type Json = Record<string, unknown>

const isDropped = {
  stopSequences: (request: Request) => (request.stopSequences?.length ?? 0) > 0,
  // OpenAI caches prompt prefixes on its own (no breakpoints in the Responses body).
  cache: (request: Request) => hasCacheBreakpoints(request),
  topK: (request: Request) => request.topK !== undefined,
  seed: (request: Request) => request.seed !== undefined,
  presencePenalty: (request: Request) => request.presencePenalty !== undefined,
  frequencyPenalty: (request: Request) => request.frequencyPenalty !== undefined,
  "reasoning.budgetTokens": (request: Request) =>
    request.reasoning?.budgetTokens !== undefined && request.reasoning.effort !== undefined,
  "tools.builtin": (request: Request) =>
    (request.tools ?? []).some((tool) => tool.type === "builtin" && tool.format !== "openai-responses"),
  "messages.content.audio": (request: Request) => someMessagePart(request, (part) => part.type === "audio"),
  "messages.content.reasoning": (request: Request) =>
    someMessagePart(request, (part) => part.type === "reasoning" && part.signature === undefined),
  "messages.content.reasoning.redacted": (request: Request) =>
    someMessagePart(request, (part) => part.type === "reasoning" && part.redacted !== undefined),
  "messages.content.reasoning.foreignSignature": (request: Request) =>
    someMessagePart(request, (part) => isForeignReasoning(part, "openai")),
  "messages.content.tool-result.isError": (request: Request) =>
    someMessagePart(request, (part) => part.type === "tool-result" && part.isError !== undefined),
  "messages.content.misplaced": (request: Request) =>
    request.messages.some((message) => message.content.some((part) => !fitsRole(message.role, part)))
} satisfies Record<string, (request: Request) => boolean>

const someMessagePart = (request: Request, test: (part: Part) => boolean): boolean =>
  request.messages.some((message) => message.content.some(test))

const fitsRole = (role: Message["role"], part: Part): boolean => {
  switch (role) {
    case "system":
    case "user":
      return part.type === "text" || part.type === "image" || part.type === "file" || part.type === "audio"
    case "assistant":
      return part.type === "text" || part.type === "tool-call" || part.type === "reasoning"
    case "tool":
      return part.type === "tool-result"
  }
}

/**
 * The canonical fields `encodeResponsesRequest` cannot express in a Responses
 * body and leaves out of it, by name: `stopSequences`, `topK`, `seed`,
 * `presencePenalty`, `frequencyPenalty` (no Responses parameter);
 * `reasoning.budgetTokens` when an effort is also set (a budget alone becomes
 * the nearest effort); `cache` (prompt-cache breakpoints: OpenAI caches
 * prefixes implicitly); `tools.builtin` of another format; audio input
 * (`messages.content.audio`, not an input content type in `EasyInputMessage`);
 * reasoning without a signature (`messages.content.reasoning`); redacted
 * reasoning (`messages.content.reasoning.redacted`); reasoning whose signature
 * another vendor minted (`messages.content.reasoning.foreignSignature`, the
 * whole reasoning item is left out); a tool result's
 * `isError` (`messages.content.tool-result.isError`); parts a role cannot hold
 * (`messages.content.misplaced`, e.g. a tool call in a user message).
 *
 * @category encoding
 */
export const droppedFields = (request: Request): ReadonlyArray<string> =>
  Object.entries(isDropped).filter(([, test]) => test(request)).map(([name]) => name)

const inputPart = (part: Part): Json | undefined => {
  switch (part.type) {
    case "text":
      return { type: "input_text", text: part.text }
    case "image":
      return { type: "input_image", image_url: referenceOf(part.source), detail: part.detail ?? "auto" }
    case "file":
      return part.source.kind === "url"
        ? { type: "input_file", file_url: part.source.url, ...(part.filename ? { filename: part.filename } : {}) }
        : {
          type: "input_file",
          file_data: referenceOf(part.source),
          ...(part.filename ? { filename: part.filename } : {})
        }
    default:
      return undefined
  }
}

const inputMessage = (role: "user" | "system" | "developer", content: ReadonlyArray<Part>): Json => ({
  type: "message",
  role,
  content: content.flatMap((part) => inputPart(part) ?? [])
})

const toolOutput = (part: ToolResultPart): Json => {
  const single = part.content.length === 1 ? part.content[0] : undefined
  const output = single?.type === "text"
    ? single.text
    : part.content.map((content: TextPart | ImagePart) => inputPart(content))
  return { type: "function_call_output", call_id: part.callId, output }
}

const assistantItems = (content: ReadonlyArray<Part>): Array<Json> => {
  const items: Array<Json> = []
  let texts: Array<Json> = []
  const flush = () => {
    if (texts.length > 0) items.push({ type: "message", role: "assistant", content: texts })
    texts = []
  }
  for (const part of content) {
    switch (part.type) {
      case "text":
        texts.push({ type: "output_text", text: part.text, annotations: [] })
        break
      case "tool-call":
        flush()
        items.push({ type: "function_call", call_id: part.callId, name: part.name, arguments: part.arguments })
        break
      case "reasoning":
        if (part.signature === undefined || isForeignReasoning(part, "openai")) break
        flush()
        items.push({
          type: "reasoning",
          summary: part.text === "" ? [] : [{ type: "summary_text", text: part.text }],
          encrypted_content: part.signature
        })
        break
    }
  }
  flush()
  return items
}

/** The leading system messages, when they can all become `instructions`; otherwise `undefined`. */
const instructionsOf = (messages: ReadonlyArray<Message>): string | undefined => {
  const leading = messages.findIndex((message) => message.role !== "system")
  const count = leading === -1 ? messages.length : leading
  if (count === 0) return undefined
  const head = messages.slice(0, count)
  const laterSystem = messages.slice(count).some((message) => message.role === "system")
  const plain = head.every((message) =>
    message.developer !== true && message.content.every((part) => part.type === "text")
  )
  if (laterSystem || !plain) return undefined
  return head.map((message) => message.content.map((part) => (part.type === "text" ? part.text : "")).join(""))
    .join("\n\n")
}

const inputItems = (messages: ReadonlyArray<Message>): Array<Json> =>
  messages.flatMap((message): Array<Json> => {
    switch (message.role) {
      case "system":
        return [inputMessage(message.developer === true ? "developer" : "system", message.content)]
      case "user":
        return [inputMessage("user", message.content)]
      case "assistant":
        return assistantItems(message.content)
      case "tool":
        return message.content.flatMap((part) => (part.type === "tool-result" ? [toolOutput(part)] : []))
    }
  })

const toolOf = (tool: Tool): Json | undefined => {
  if (tool.type === "builtin") return tool.format === "openai-responses" ? { ...tool.definition } : undefined
  return {
    type: "function",
    name: tool.name,
    ...(tool.description === undefined ? {} : { description: tool.description }),
    parameters: tool.parameters,
    ...(tool.strict === undefined ? {} : { strict: tool.strict })
  }
}

const toolChoiceOf = (choice: ToolChoice): unknown =>
  choice.type === "tool" ? { type: "function", name: choice.name } : choice.type

const formatOf = (format: ResponseFormat): Json =>
  format.type === "json_schema"
    ? {
      type: "json_schema",
      name: format.name,
      schema: format.schema,
      ...(format.strict === undefined ? {} : { strict: format.strict }),
      ...(format.description === undefined ? {} : { description: format.description })
    }
    : { type: format.type }

const reasoningOf = (reasoning: ReasoningConfig): Json | undefined => {
  const effort = reasoning.effort ??
    (reasoning.enabled === false
      ? "none"
      : reasoning.budgetTokens === undefined
      ? undefined
      : effortOfBudget(reasoning.budgetTokens))
  const body: Json = {
    ...(effort === undefined ? {} : { effort }),
    ...(reasoning.includeThoughts === true ? { summary: "auto" } : {})
  }
  return Object.keys(body).length === 0 ? undefined : body
}

const optional = (key: string, value: unknown): Json => (value === undefined ? {} : { [key]: value })

/** `text`: the output format and the verbosity, when either is set. */
const textOf = (request: Request): Json | undefined =>
  request.responseFormat === undefined && request.verbosity === undefined ? undefined : {
    ...optional("format", request.responseFormat === undefined ? undefined : formatOf(request.responseFormat)),
    ...optional("verbosity", request.verbosity)
  }

/**
 * Canonical request → Responses request body, plus the names of the canonical
 * fields left out (`droppedFields`). The model is written as given (the
 * caller has already mapped it). Pure.
 *
 * @category encoding
 */
export const encodeResponsesRequest = (request: Request): EncodedRequest => {
  const instructions = instructionsOf(request.messages)
  const messages = instructions === undefined
    ? request.messages
    : request.messages.filter((message) => message.role !== "system")
  const tools = request.tools?.flatMap((tool) => toolOf(tool) ?? [])
  const body: Json = {
    model: request.model,
    input: inputItems(messages),
    ...optional("instructions", instructions),
    ...optional("tools", tools !== undefined && tools.length > 0 ? tools : undefined),
    ...optional("tool_choice", request.toolChoice === undefined ? undefined : toolChoiceOf(request.toolChoice)),
    ...optional("parallel_tool_calls", request.parallelToolCalls),
    ...optional("max_output_tokens", request.maxOutputTokens),
    ...optional("temperature", request.temperature),
    ...optional("top_p", request.topP),
    ...optional("text", textOf(request)),
    ...optional("reasoning", request.reasoning === undefined ? undefined : reasoningOf(request.reasoning)),
    ...optional("user", request.user),
    ...optional("metadata", request.metadata),
    ...optional("store", request.store),
    ...optional("include", request.include),
    ...(request.stream ? { stream: true } : {}),
    ...(request.stream && request.includeObfuscation !== undefined
      ? { stream_options: { include_obfuscation: request.includeObfuscation } }
      : {})
  }
  return { body, dropped: droppedFields(request) }
}
