/**
 * Encodes a canonical `Request` as an OpenAI chat completions body for an
 * upstream (openai@7.57.0 `ChatCompletionCreateParamsBase`). What chat cannot
 * express is dropped and named in `EncodedRequest.dropped` by `droppedFields`,
 * the one place that decides it.
 *
 * @since 0.1.0
 */
import { toDataUri } from "../../../canonical/DataUri.ts"
import type { MediaSource, Part, ToolCallPart, ToolResultPart } from "../../../canonical/Content.ts"
import type { Message, ReasoningConfig, ReasoningEffort, Request, Tool } from "../../../canonical/Request.ts"
import type { EncodedRequest } from "../../Format.ts"
import { checksCallSignatures, isGeminiModel, SKIP_SIGNATURE_VALIDATOR } from "../../gemini/Models.ts"
import { callSignatures, chatToolCall, extraContentFor, isCallSignature } from "./CallSignatures.ts"
import { hasCacheBreakpoints } from "../../shared/CacheBreakpoints.ts"

/**
 * How reasoning text in assistant history is sent:
 * - `drop` (default): not sent. Plain OpenAI never returns reasoning text,
 *   and some compatible upstreams reject an unknown `reasoning_content`
 *   message property with 400;
 * - `reasoning_content`: sent as every assistant message's `reasoning_content`;
 * - `tool-turns` (DeepSeek): sent as `reasoning_content` on an assistant message
 *   with tool calls, always (`""` when it has no reasoning text), and not sent on
 *   the others. DeepSeek's thinking mode refuses with 400 a tool-call turn whose
 *   `reasoning_content` is not passed back, and ignores it on other turns
 *   (api-docs.deepseek.com/guides/thinking_mode, "Tool Calls").
 * Signatures and redacted reasoning are never sent (chat has no field for them).
 *
 * @category models
 */
export type ReasoningHistory = "drop" | "reasoning_content" | "tool-turns"

/**
 * Options of the chat request encoder.
 *
 * @category models
 */
export interface ChatEncodeOptions {
  readonly reasoningHistory: ReasoningHistory
}

/**
 * The default: reasoning history dropped.
 *
 * @category models
 */
export const defaultChatEncodeOptions: ChatEncodeOptions = { reasoningHistory: "drop" }

/**
 * A reasoning token budget → the nearest `reasoning_effort`: up to 1024 tokens
 * `low`, up to 8192 `medium`, above `high`.
 *
 * @category encoding
 */
export const effortForBudget = (budgetTokens: number): ReasoningEffort =>
  budgetTokens <= 1024 ? "low" : budgetTokens <= 8192 ? "medium" : "high"

const reasoningEffortOf = (reasoning: ReasoningConfig | undefined): ReasoningEffort | undefined => {
  if (reasoning === undefined) return undefined
  if (reasoning.effort !== undefined) return reasoning.effort
  if (reasoning.enabled === false) return undefined
  if (reasoning.budgetTokens !== undefined) return effortForBudget(reasoning.budgetTokens)
  return undefined
}

const messageParts = (request: Request): ReadonlyArray<readonly [Message["role"], Part, Message]> =>
  request.messages.flatMap((message) => message.content.map((part) => [message.role, part, message] as const))

/**
 * The canonical fields `request` uses that chat cannot express, by name:
 * `topK`; `include` (Responses' extra output data: chat has no such list); `cache` (prompt-cache
 * breakpoints: OpenAI caches prefixes implicitly); `reasoning.budgetTokens` (approximated by an effort, see
 * `effortForBudget`); `reasoning.enabled` when false without an effort (no
 * `reasoning_effort` is sent: `none` is refused by models that predate it and
 * by non-reasoning models); `reasoning.includeThoughts`; `tools.builtin`
 * (built-in tools of another format); `messages.reasoning` (reasoning history,
 * unless `reasoningHistory` is `reasoning_content`, or, with `tool-turns`, the
 * reasoning of an assistant message without tool calls); `messages.reasoning.signature`;
 * `messages.reasoning.redacted`; `messages.tool-result.isError`;
 * `messages.tool-result.image` (tool messages hold text only);
 * `messages.system.media` (system messages hold text only);
 * `messages.assistant.media` (assistant messages hold text, reasoning and tool
 * calls only); `messages.<role>.tool-call` (a tool call outside an assistant
 * turn); `messages.tool.other` (a tool turn part that is not a tool result);
 * `messages.file.url` (chat files are inline data or OpenAI file ids only).
 *
 * @category encoding
 */
export const droppedFields = (
  request: Request,
  options: ChatEncodeOptions = defaultChatEncodeOptions
): ReadonlyArray<string> => {
  const dropped = new Set<string>()
  if (request.topK !== undefined) dropped.add("topK")
  if (request.include !== undefined) dropped.add("include")
  // OpenAI caches prompt prefixes on its own (no breakpoints in the chat body).
  if (hasCacheBreakpoints(request)) dropped.add("cache")
  const reasoning = request.reasoning
  if (reasoning?.budgetTokens !== undefined) dropped.add("reasoning.budgetTokens")
  if (reasoning?.enabled === false && reasoning.effort === undefined) dropped.add("reasoning.enabled")
  if (reasoning?.includeThoughts !== undefined) dropped.add("reasoning.includeThoughts")
  if (request.tools?.some((tool) => tool.type === "builtin" && tool.format !== "openai-chat")) {
    dropped.add("tools.builtin")
  }
  const keptReasoning = (message: Message): boolean =>
    message.role === "assistant" &&
    (options.reasoningHistory === "reasoning_content" ||
      (options.reasoningHistory === "tool-turns" && message.content.some((part) => part.type === "tool-call")))
  for (const [role, part, message] of messageParts(request)) {
    if (role === "tool" && part.type !== "tool-result") {
      dropped.add("messages.tool.other")
      continue
    }
    switch (part.type) {
      case "reasoning":
        if (!keptReasoning(message)) dropped.add("messages.reasoning")
        // A Gemini model's call signature travels as the call's `extra_content` (see `assistantMessage`).
        if (part.signature !== undefined && !(isGeminiModel(request.model) && isCallSignature(part))) {
          dropped.add("messages.reasoning.signature")
        }
        if (part.redacted !== undefined) dropped.add("messages.reasoning.redacted")
        break
      case "tool-result":
        if (part.isError !== undefined) dropped.add("messages.tool-result.isError")
        if (part.content.some((item) => item.type === "image")) dropped.add("messages.tool-result.image")
        break
      case "tool-call":
        if (role !== "assistant") dropped.add(`messages.${role}.tool-call`)
        break
      case "image":
      case "audio":
      case "file":
        if (role === "system") dropped.add("messages.system.media")
        else if (role === "assistant") dropped.add("messages.assistant.media")
        else if (part.type === "file" && part.source.kind === "url") dropped.add("messages.file.url")
        break
      case "text":
        break
    }
  }
  return [...dropped]
}

const imageUrl = (source: MediaSource): string =>
  source.kind === "url" ? source.url : toDataUri(source.mediaType, source.data)

/** A user-side content part, or `undefined` when chat cannot carry it. */
const userContentPart = (part: Part): Record<string, unknown> | undefined => {
  switch (part.type) {
    case "text":
      return { type: "text", text: part.text }
    case "image":
      return {
        type: "image_url",
        image_url: { url: imageUrl(part.source), ...(part.detail === undefined ? {} : { detail: part.detail }) }
      }
    case "audio":
      return { type: "input_audio", input_audio: { data: part.data, format: part.format } }
    case "file":
      return part.source.kind === "url" ? undefined : {
        type: "file",
        file: {
          file_data: toDataUri(part.source.mediaType, part.source.data),
          ...(part.filename === undefined ? {} : { filename: part.filename })
        }
      }
    default:
      return undefined
  }
}

/** Text parts as a string when there is exactly one, else as an array of text parts. */
const textContent = (texts: ReadonlyArray<string>): string | ReadonlyArray<Record<string, unknown>> =>
  texts.length === 1 ? texts[0] : texts.map((text) => ({ type: "text", text }))

const toolMessage = (part: ToolResultPart): Record<string, unknown> => ({
  role: "tool",
  tool_call_id: part.callId,
  content: textContent(part.content.flatMap((item) => (item.type === "text" ? [item.text] : [])))
})

/**
 * An assistant message. For a Gemini model (a channel on Gemini's
 * OpenAI-compatible endpoint), a call's Gemini signature goes on the call as
 * `extra_content` (`CallSignatures.ts`); any other upstream never sees one.
 */
const assistantMessage = (
  parts: ReadonlyArray<Part>,
  options: ChatEncodeOptions,
  gemini: boolean
): Record<string, unknown> => {
  const texts = parts.flatMap((part) => (part.type === "text" ? [part.text] : []))
  const calls = parts.flatMap((part) => (part.type === "tool-call" ? [part] : []))
  const signatures = gemini ? callSignatures(parts) : new Map<ToolCallPart, string>()
  const reasoning = parts.flatMap((part) => (part.type === "reasoning" && part.text !== "" ? [part.text] : []))
  return {
    role: "assistant",
    content: texts.length === 0 ? (calls.length > 0 ? null : "") : textContent(texts),
    ...((options.reasoningHistory === "reasoning_content" && reasoning.length > 0) ||
        (options.reasoningHistory === "tool-turns" && calls.length > 0)
      ? { reasoning_content: reasoning.join("") }
      : {}),
    ...(calls.length === 0 ? {} : {
      tool_calls: calls.map((call) => chatToolCall(call, signatures.get(call)))
    })
  }
}

/**
 * For a Gemini 3 model, gives the first call of every assistant message after
 * the last user message (the current turn, which Gemini 3 checks) that has no
 * signature `SKIP_SIGNATURE_VALIDATOR`, as `encodeGeminiRequest` does.
 */
const signCurrentTurnCalls = (messages: ReadonlyArray<Record<string, unknown>>) => {
  const lastUser = messages.findLastIndex((message) => message.role === "user")
  for (const message of messages.slice(lastUser + 1)) {
    const calls = message.tool_calls
    if (message.role !== "assistant" || !Array.isArray(calls) || calls.length === 0) continue
    if (calls[0].extra_content === undefined) {
      calls[0] = { ...calls[0], extra_content: extraContentFor(SKIP_SIGNATURE_VALIDATOR) }
    }
  }
}

/**
 * One canonical message → chat messages. Tool results become one `tool`
 * message each, wherever they stood; the remaining parts keep the role.
 */
const chatMessages = (
  message: Message,
  options: ChatEncodeOptions,
  gemini: boolean
): ReadonlyArray<Record<string, unknown>> => {
  const results = message.content.flatMap((part) => (part.type === "tool-result" ? [toolMessage(part)] : []))
  const rest = message.content.filter((part) => part.type !== "tool-result")
  if (message.role === "tool" || (rest.length === 0 && results.length > 0)) return results
  switch (message.role) {
    case "system":
      return [{
        role: message.developer === true ? "developer" : "system",
        content: textContent(rest.flatMap((part) => (part.type === "text" ? [part.text] : [])))
      }, ...results]
    case "assistant":
      return [...results, assistantMessage(rest, options, gemini)]
    case "user": {
      const parts = rest.flatMap((part) => {
        const encoded = userContentPart(part)
        return encoded === undefined ? [] : [encoded]
      })
      const onlyText = parts.length === 1 && parts[0].type === "text"
      return [...results, { role: "user", content: onlyText ? parts[0].text : parts }]
    }
  }
}

const chatTool = (tool: Tool): ReadonlyArray<Record<string, unknown>> => {
  if (tool.type === "builtin") return tool.format === "openai-chat" ? [tool.definition] : []
  return [{
    type: "function",
    function: {
      name: tool.name,
      ...(tool.description === undefined ? {} : { description: tool.description }),
      parameters: tool.parameters,
      ...(tool.strict === undefined ? {} : { strict: tool.strict })
    }
  }]
}

const defined = (entries: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(entries).filter(([, value]) => value !== undefined))

/**
 * Canonical `Request` → chat completions body and the dropped field names.
 * `maxOutputTokens` is sent as `max_completion_tokens` (OpenAI deprecated
 * `max_tokens` for it; o-series models refuse `max_tokens`); stop sequences
 * always as an array; `store` and `verbosity` as they are; a stream asks for
 * usage (`stream_options: {include_usage: true}`) so it can be metered, with
 * the caller's `include_obfuscation` beside it. For a
 * Gemini model (`isGeminiModel`: the channel is Gemini's OpenAI-compatible
 * endpoint) a call's Gemini signature rides on the call as `extra_content`,
 * and for Gemini 3 an unsigned call of the current turn gets
 * `SKIP_SIGNATURE_VALIDATOR`, as on a gemini channel.
 *
 * @category encoding
 */
export const encodeChatRequest = (
  request: Request,
  options: ChatEncodeOptions = defaultChatEncodeOptions
): EncodedRequest => {
  const tools = request.tools?.flatMap(chatTool)
  const toolChoice = request.toolChoice
  const format = request.responseFormat
  const gemini = isGeminiModel(request.model)
  const messages = request.messages.flatMap((message) => chatMessages(message, options, gemini))
  if (checksCallSignatures(request.model)) signCurrentTurnCalls(messages)
  const body = defined({
    model: request.model,
    messages,
    tools: tools === undefined || tools.length === 0 ? undefined : tools,
    tool_choice: toolChoice === undefined
      ? undefined
      : toolChoice.type === "tool"
      ? { type: "function", function: { name: toolChoice.name } }
      : toolChoice.type,
    parallel_tool_calls: request.parallelToolCalls,
    max_completion_tokens: request.maxOutputTokens,
    temperature: request.temperature,
    top_p: request.topP,
    stop: request.stopSequences,
    seed: request.seed,
    presence_penalty: request.presencePenalty,
    frequency_penalty: request.frequencyPenalty,
    response_format: format === undefined ? undefined : format.type === "json_schema"
      ? {
        type: "json_schema",
        json_schema: defined({
          name: format.name,
          description: format.description,
          schema: format.schema,
          strict: format.strict
        })
      }
      : { type: format.type },
    reasoning_effort: reasoningEffortOf(request.reasoning),
    user: request.user,
    metadata: request.metadata,
    store: request.store,
    verbosity: request.verbosity,
    stream: request.stream ? true : undefined,
    stream_options: request.stream
      ? defined({ include_usage: true, include_obfuscation: request.includeObfuscation })
      : undefined
  })
  return { body, dropped: droppedFields(request, options) }
}
