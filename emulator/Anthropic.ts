/**
 * Anthropic Messages for the vendor emulator: `POST /v1/messages`.
 *
 * Wire shapes follow `@anthropic-ai/sdk` 1.12 types (`Message`, `Usage`, `RawMessageStreamEvent`,
 * `ErrorResponse`) and https://docs.anthropic.com/en/api/messages,
 * https://docs.anthropic.com/en/docs/build-with-claude/streaming. Validation mirrors what the real API
 * rejects and the gateway relies on: the `anthropic-version` header, `max_tokens` (required),
 * roles `user`, `assistant` or `system` (a mid-conversation system message, which Claude Code sends and the
 * vendor takes in place), `thinking.budget_tokens` ≥ 1024 and < `max_tokens`,
 * and `temperature` other than 1 together with thinking
 * (https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking), and a `thinking` block
 * whose signature this emulator did not mint for its text (the real API: 400 "Invalid `signature`
 * in `thinking` block", e.g. another vendor's signature or an edited block), or a `redacted_thinking`
 * block whose data it did not mint. With thinking on, a prompt holding `REDACTED_THINKING_TRIGGER` (the
 * test string Anthropic documents) gets a `redacted_thinking` block after the thinking block.
 * Structured output is read from `output_format` or `output_config.format` (`{type: "json_schema", schema}`).
 *
 * @since 0.1.0
 */
import { type Answer, answer, type Prompt, promptTokens, stableHash, type ToolChoice, type ToolSpec } from "./Answer.ts"
import { vendorErrorBody } from "./Faults.ts"
import { argumentFragments } from "./OpenAiChat.ts"
import { eventFrame, jsonReply, type Reply, sseReply } from "./Sse.ts"
import {
  arrayOr,
  isObject,
  type JsonObject,
  numberOr,
  objectOr,
  type RouteContext,
  stopList,
  stringOr
} from "./Wire.ts"

const invalid = (message: string): Reply => jsonReply(vendorErrorBody("anthropic", 400, message), 400)

const imageDescriptor = (source: JsonObject): string =>
  source.type === "url" ? stringOr(source.url) ?? "" : stringOr(source.media_type) ?? "application/octet-stream"

const blockText = (content: unknown): string => {
  if (typeof content === "string") return content
  return arrayOr(content)
    .flatMap((block) => isObject(block) && block.type === "text" ? [stringOr(block.text) ?? ""] : [])
    .join(" ")
}

const anthropicToolChoice = (value: unknown): ToolChoice => {
  const choice = objectOr(value)
  switch (choice.type) {
    case "none":
      return "none"
    case "any":
      return "required"
    case "tool":
      return typeof choice.name === "string" ? { name: choice.name } : "auto"
    default:
      return "auto"
  }
}

const anthropicTools = (value: unknown): ReadonlyArray<ToolSpec> =>
  arrayOr(value).flatMap((tool) =>
    isObject(tool) && typeof tool.name === "string" && tool.input_schema !== undefined
      ? [{ name: tool.name, schema: tool.input_schema }]
      : []
  )

const prompt = (body: JsonObject, messages: ReadonlyArray<unknown>, thinking: boolean): Prompt => {
  const texts: Array<string> = [blockText(body.system)]
  let lastUserText = ""
  let images: Array<string> = []
  let toolResults: Array<string> = []
  for (const message of messages) {
    const item = objectOr(message)
    const blocks = typeof item.content === "string" ? [{ type: "text", text: item.content }] : arrayOr(item.content)
    const messageTexts: Array<string> = []
    const messageImages: Array<string> = []
    const results: Array<string> = []
    for (const block of blocks) {
      if (!isObject(block)) continue
      if (block.type === "text") messageTexts.push(stringOr(block.text) ?? "")
      else if (block.type === "image") messageImages.push(imageDescriptor(objectOr(block.source)))
      else if (block.type === "tool_result") results.push(blockText(block.content))
      else if (block.type === "tool_use") texts.push(JSON.stringify(block.input ?? {}))
      else if (block.type === "thinking") texts.push(stringOr(block.thinking) ?? "")
    }
    texts.push(...messageTexts, ...results)
    // A mid-conversation system message neither ends a tool loop nor is the user's prompt.
    if (item.role === "system") continue
    if (item.role !== "user") {
      toolResults = []
      continue
    }
    toolResults = results
    if (messageTexts.length > 0 || messageImages.length > 0) {
      lastUserText = messageTexts.join(" ")
      images = messageImages
    }
  }
  const format = objectOr(body.output_format ?? objectOr(body.output_config).format)
  return {
    lastUserText,
    images,
    toolResults,
    tools: anthropicTools(body.tools),
    toolChoice: anthropicToolChoice(body.tool_choice),
    reasoning: thinking,
    outputSchema: format.type === "json_schema" ? format.schema ?? { type: "object" } : undefined,
    maxTokens: numberOr(body.max_tokens),
    stop: stopList(body.stop_sequences),
    texts,
    messageCount: messages.length
  }
}

const stopReason = (result: Answer): string => {
  switch (result.finish) {
    case "length":
      return "max_tokens"
    case "tool_calls":
      return "tool_use"
    case "stop_sequence":
      return "stop_sequence"
    case "stop":
      return "end_turn"
  }
}

const usage = (result: Answer): JsonObject => ({
  input_tokens: result.promptTokens - result.cachedTokens - result.cacheWriteTokens,
  cache_creation_input_tokens: result.cacheWriteTokens,
  cache_read_input_tokens: result.cachedTokens,
  cache_creation: { ephemeral_5m_input_tokens: result.cacheWriteTokens, ephemeral_1h_input_tokens: 0 },
  output_tokens: result.outputTokens,
  service_tier: "standard"
})

/**
 * The signature the emulator mints for a thinking text: `sig-<stableHash(text)>`, so a block sent
 * back can be checked against its own text. @category answers
 */
export const thinkingSignature = (thinking: string): string => `sig-${stableHash(thinking)}`

/**
 * The prompt Anthropic documents for testing redacted thinking: with thinking on, the answer then holds a
 * `redacted_thinking` block (docs.anthropic.com, extended thinking, "Thinking redaction"). @category answers
 */
export const REDACTED_THINKING_TRIGGER =
  "ANTHROPIC_MAGIC_STRING_TRIGGER_REDACTED_THINKING_46C9A13E193C177646C7398A98432ECCCE4C1253"

/** The encrypted data the emulator mints for a redacted thinking block of an answer to `prompt`. @category answers */
export const redactedThinkingData = (prompt: string): string => btoa(`redacted-${stableHash(prompt)}`)

/** True when `value` is data `redactedThinkingData` could have produced. */
const isMintedRedactedData = (value: unknown): boolean => {
  if (typeof value !== "string") return false
  try {
    return /^redacted-[0-9a-f]{8}$/.test(atob(value))
  } catch {
    return false
  }
}

/**
 * The first `thinking` block whose signature was not minted for its text, or `redacted_thinking` block whose
 * data was not minted here: its message and block index, and the block's type.
 */
const forgedThinking = (
  messages: ReadonlyArray<unknown>
): { readonly at: string; readonly type: "thinking" | "redacted_thinking" } | undefined => {
  for (const [index, message] of messages.entries()) {
    for (const [position, block] of arrayOr(objectOr(message).content).entries()) {
      if (!isObject(block)) continue
      const at = `${index}.content.${position}`
      if (block.type === "thinking" && block.signature !== thinkingSignature(stringOr(block.thinking) ?? "")) {
        return { at, type: "thinking" }
      }
      if (block.type === "redacted_thinking" && !isMintedRedactedData(block.data)) {
        return { at, type: "redacted_thinking" }
      }
    }
  }
  return undefined
}

/**
 * With thinking on, the index of the final assistant message when it answers with `tool_use` (its
 * `tool_result` blocks follow) but does not start with a `thinking` or `redacted_thinking` block,
 * which the real API rejects (docs.anthropic.com, extended thinking, "Preserving thinking blocks").
 */
const toolLoopWithoutThinking = (messages: ReadonlyArray<unknown>): number | undefined => {
  const index = messages.findLastIndex((message) => objectOr(message).role === "assistant")
  if (index === -1 || index === messages.length - 1) return undefined
  const blocks = arrayOr(objectOr(messages[index]).content).filter(isObject)
  if (!blocks.some((block) => block.type === "tool_use")) return undefined
  const first = blocks[0]?.type
  return first === "thinking" || first === "redacted_thinking" ? undefined : index
}

/** Checks what the real API rejects; returns the error reply or undefined. */
const validate = (context: RouteContext): Reply | undefined => {
  const body = context.body
  if (!context.headers.has("anthropic-version")) return invalid("anthropic-version: header is required")
  if (typeof body.model !== "string") return invalid("model: Field required")
  const maxTokens = numberOr(body.max_tokens)
  if (maxTokens === undefined) return invalid("max_tokens: Field required")
  if (!Array.isArray(body.messages)) return invalid("messages: Field required")
  for (const [index, message] of body.messages.entries()) {
    const role = objectOr(message).role
    if (role !== "user" && role !== "assistant" && role !== "system") {
      return invalid(`messages.${index}.role: Input should be 'user', 'assistant' or 'system'`)
    }
  }
  const forged = forgedThinking(body.messages)
  if (forged?.type === "thinking") return invalid(`messages.${forged.at}: Invalid \`signature\` in \`thinking\` block`)
  if (forged !== undefined) return invalid(`messages.${forged.at}: Invalid \`data\` in \`redacted_thinking\` block`)
  const thinking = objectOr(body.thinking)
  const unthought = thinking.type === "enabled" || thinking.type === "adaptive"
    ? toolLoopWithoutThinking(body.messages)
    : undefined
  if (unthought !== undefined) {
    return invalid(
      `messages.${unthought}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found ` +
        "`tool_use`. When `thinking` is enabled, a final `assistant` message must start with a thinking block " +
        "(preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking " +
        "blocks from previous turns. To avoid this requirement, disable `thinking`."
    )
  }
  if (thinking.type === "enabled") {
    const budget = numberOr(thinking.budget_tokens)
    if (budget === undefined) return invalid("thinking.enabled.budget_tokens: Field required")
    if (budget < 1024) return invalid("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
    if (budget >= maxTokens) return invalid("`max_tokens` must be greater than `thinking.budget_tokens`.")
  }
  if ((thinking.type === "enabled" || thinking.type === "adaptive") && body.temperature !== undefined) {
    if (body.temperature !== 1) {
      return invalid("`temperature` may only be set to 1 when thinking is enabled or in adaptive mode.")
    }
  }
  return undefined
}

/** Handles `POST /v1/messages` (JSON or SSE by `stream`). @category routes */
export const anthropicMessages = (context: RouteContext): Reply => {
  const error = validate(context)
  if (error !== undefined) return error
  const body = context.body
  const thinkingType = objectOr(body.thinking).type
  const thinking = thinkingType === "enabled" || thinkingType === "adaptive"
  const result = answer(prompt(body, arrayOr(body.messages), thinking), context.toolCalls)
  const id = context.ids.next("msg_")
  const toolIds = result.toolCalls.map(() => context.ids.next("toolu_"))
  const signature = result.reasoning === undefined ? "" : thinkingSignature(result.reasoning)
  const content: Array<JsonObject> = []
  if (result.reasoning !== undefined) content.push({ type: "thinking", thinking: result.reasoning, signature })
  const lastUserText = prompt(body, arrayOr(body.messages), thinking).lastUserText
  if (thinking && lastUserText.includes(REDACTED_THINKING_TRIGGER)) {
    content.push({ type: "redacted_thinking", data: redactedThinkingData(lastUserText) })
  }
  if (result.toolCalls.length === 0) content.push({ type: "text", text: result.text })
  result.toolCalls.forEach((call, index) =>
    content.push({ type: "tool_use", id: toolIds[index], name: call.name, input: call.input })
  )
  const message = {
    id,
    type: "message",
    role: "assistant",
    model: context.model,
    content,
    stop_reason: stopReason(result),
    stop_sequence: result.stopSequence ?? null,
    usage: usage(result)
  }
  if (body.stream !== true) return jsonReply(message)

  const frames: Array<string> = [
    eventFrame("message_start", {
      type: "message_start",
      message: {
        ...message,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...usage(result), output_tokens: 1 }
      }
    }),
    eventFrame("ping", { type: "ping" })
  ]
  const delta = (index: number, data: JsonObject) =>
    frames.push(eventFrame("content_block_delta", { type: "content_block_delta", index, delta: data }))
  content.forEach((block, index) => {
    const start = block.type === "thinking"
      ? { type: "thinking", thinking: "", signature: "" }
      : block.type === "redacted_thinking"
      ? block
      : block.type === "text"
      ? { type: "text", text: "" }
      : { ...block, input: {} }
    frames.push(eventFrame("content_block_start", { type: "content_block_start", index, content_block: start }))
    if (block.type === "thinking") {
      for (const word of result.reasoningWords) delta(index, { type: "thinking_delta", thinking: word })
      delta(index, { type: "signature_delta", signature })
    } else if (block.type === "redacted_thinking") {
      // Whole in its content_block_start, with no deltas.
    } else if (block.type === "text") {
      for (const word of result.words) delta(index, { type: "text_delta", text: word })
    } else {
      delta(index, { type: "input_json_delta", partial_json: "" })
      for (const fragment of argumentFragments(JSON.stringify(block.input))) {
        delta(index, { type: "input_json_delta", partial_json: fragment })
      }
    }
    frames.push(eventFrame("content_block_stop", { type: "content_block_stop", index }))
  })
  frames.push(
    eventFrame("message_delta", {
      type: "message_delta",
      delta: { stop_reason: message.stop_reason, stop_sequence: message.stop_sequence },
      usage: {
        input_tokens: result.promptTokens - result.cachedTokens - result.cacheWriteTokens,
        cache_creation_input_tokens: result.cacheWriteTokens,
        cache_read_input_tokens: result.cachedTokens,
        output_tokens: result.outputTokens
      }
    }),
    eventFrame("message_stop", { type: "message_stop" })
  )
  return sseReply(frames)
}

/**
 * Handles `POST /v1/messages/count_tokens` (docs.anthropic.com/en/api/messages-count-tokens; `@anthropic-ai/sdk`
 * `messages.countTokens`): the body is a messages request without `max_tokens`; the answer is
 * `{input_tokens}`, the prompt tokens the same request would report (`Answer.promptTokens` rules). Checks as
 * `/v1/messages` does, but for `max_tokens`.
 *
 * @category routes
 */
export const anthropicCountTokens = (context: RouteContext): Reply => {
  const error = validate({ ...context, body: { max_tokens: 4096, ...context.body } })
  if (error !== undefined) return error
  const body = context.body
  const thinkingType = objectOr(body.thinking).type
  const counted = promptTokens(
    prompt(body, arrayOr(body.messages), thinkingType === "enabled" || thinkingType === "adaptive")
  )
  return jsonReply({ input_tokens: counted.prompt })
}
