/**
 * DeepSeek's API for the vendor emulator, served under the path prefix `/deepseek` (a gateway channel of type
 * `deepseek` has `base_url: <emulator>/deepseek`, a base URL with a path): `POST /deepseek/chat/completions` and
 * `POST /deepseek/v1/chat/completions` (DeepSeek takes both: "The v1 here has NO relationship with the model's
 * version", api-docs.deepseek.com), and `POST /deepseek/beta/completions`, its FIM completion
 * (api-docs.deepseek.com/api/create-completion). Bearer keys and errors in the OpenAI shape, as DeepSeek's
 * (`{error: {message, type, param, code}}`, api-docs.deepseek.com/quick_start/error_codes).
 *
 * What differs from the emulator's OpenAI chat (`OpenAiChat.ts`), as DeepSeek documents it:
 * - Usage: `prompt_cache_hit_tokens` and `prompt_cache_miss_tokens` (their sum is `prompt_tokens`) and
 *   `completion_tokens_details.reasoning_tokens`; no `prompt_tokens_details`
 *   (api-docs.deepseek.com/api/create-chat-completion, "usage").
 * - The context cache (api-docs.deepseek.com/guides/kv_cache): a request whose first messages repeat those of an
 *   earlier request to the same model hits the cache for the prompt tokens of those messages (the emulator's
 *   count, without DeepSeek's 64-token storage units), so the second call of a tool loop reports hits; the word
 *   `cached` still makes at least half of a prompt a hit, as on the other vendors.
 * - Thinking mode (api-docs.deepseek.com/guides/thinking_mode): on for `thinking: {type: "enabled"}`, for a model
 *   whose name holds `reasoner`, and for a `reasoning_effort` other than `none` unless `thinking.type` is
 *   `disabled` (DeepSeek's newer models think by default; the emulator's other model names do not, so that a plain
 *   request stays plain). Its chain of thought is `reasoning_content` on the message and on stream deltas (with `content:
 *   null` beside it, and `reasoning_content: null` beside the answer's deltas). In thinking mode an assistant
 *   message with `tool_calls` must carry `reasoning_content` back ("For turns that do perform tool calls, the
 *   reasoning_content must be fully passed back"): without it the request is DeepSeek's 400, "Missing
 *   `reasoning_content` field in the assistant message at message index N"; outside tool turns a
 *   `reasoning_content` sent back is ignored.
 * - Roles `system`, `user`, `assistant` and `tool` only (a `developer` message is DeepSeek's 400, "unknown variant
 *   `developer`"); user content parts of type `text` only (DeepSeek's chat takes no image, audio or file: an
 *   `image_url` part is its 400, "unknown variant `image_url`, expected `text`").
 * - One choice; `max_tokens` is the output cap (a `max_completion_tokens` is not read).
 *
 * @since 0.1.0
 */
import { type Answer, answer, promptTokens } from "./Answer.ts"
import { argumentFragments, chatPrompt, openAiFinish } from "./OpenAiChat.ts"
import { legacyCompletionsWith } from "./OpenAiCompletions.ts"
import { dataFrame, jsonReply, type Reply, sseReply } from "./Sse.ts"
import { arrayOr, type JsonObject, numberOr, objectOr, type PromptCache, type RouteContext, stringOr } from "./Wire.ts"

/** The path prefix DeepSeek is served under. @category routing */
export const DEEPSEEK_PREFIX = "/deepseek"

/** DeepSeek's message roles (api-docs.deepseek.com/api/create-chat-completion, `messages`). */
const ROLES: ReadonlyArray<string> = ["system", "user", "assistant", "tool"]

/**
 * DeepSeek's error body: `{error: {message, type, param: null, code}}`, the type and the code both
 * `invalid_request_error` for a request it refuses.
 *
 * @category encoding
 */
export const deepseekError = (message: string, status = 400): Reply =>
  jsonReply({ error: { message, type: "invalid_request_error", param: null, code: "invalid_request_error" } }, status)

const deserialize = (detail: string): Reply =>
  deepseekError(`Failed to deserialize the JSON body into the target type: ${detail} at line 1 column 1`)

/**
 * DeepSeek's usage object for an answer whose prompt hit the cache for `hits` tokens.
 *
 * @category encoding
 */
export const deepseekUsage = (result: Answer, hits: number = result.cachedTokens): JsonObject => ({
  prompt_tokens: result.promptTokens,
  completion_tokens: result.outputTokens,
  total_tokens: result.promptTokens + result.outputTokens,
  prompt_cache_hit_tokens: hits,
  prompt_cache_miss_tokens: result.promptTokens - hits,
  completion_tokens_details: { reasoning_tokens: result.reasoningTokens }
})

/**
 * Whether a chat body asks for DeepSeek's thinking mode (see the module's rules).
 *
 * @category readers
 */
export const thinkingMode = (body: JsonObject): boolean => {
  const toggle = stringOr(objectOr(body.thinking).type)
  if (toggle === "enabled") return true
  if (toggle === "disabled") return false
  const effort = stringOr(body.reasoning_effort)
  return /reasoner/.test(stringOr(body.model) ?? "") || (effort !== undefined && effort !== "none")
}

/** The first thing DeepSeek refuses in `messages`, as its reply, or `undefined`. */
const messagesProblem = (messages: ReadonlyArray<unknown>, thinking: boolean): Reply | undefined => {
  for (const [index, item] of messages.entries()) {
    const message = objectOr(item)
    const role = stringOr(message.role)
    if (role === undefined || !ROLES.includes(role)) {
      return deserialize(
        `messages[${index}].role: unknown variant \`${role ?? ""}\`, expected one of \`system\`, \`user\`, ` +
          "`assistant`, `tool`"
      )
    }
    if (role === "user" && Array.isArray(message.content)) {
      const other = message.content.find((part) => objectOr(part).type !== "text")
      if (other !== undefined) {
        return deserialize(`messages[${index}]: unknown variant \`${String(objectOr(other).type)}\`, expected \`text\``)
      }
    }
    const calls = arrayOr(message.tool_calls)
    if (thinking && role === "assistant" && calls.length > 0 && typeof message.reasoning_content !== "string") {
      return deepseekError(
        `Missing \`reasoning_content\` field in the assistant message at message index ${index}. For more ` +
          "information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls"
      )
    }
  }
  return undefined
}

/**
 * The prompt tokens the context cache holds for `messages`: those of the longest run of first messages an earlier
 * request to `model` began with; every prefix of this request is remembered.
 */
const cacheHits = (
  cache: PromptCache | undefined,
  body: JsonObject,
  model: string,
  messages: ReadonlyArray<unknown>
): number => {
  if (cache === undefined) return 0
  const keys = messages.map((_, index) => `${model}\u0000${JSON.stringify(messages.slice(0, index + 1))}`)
  const longest = keys.findLastIndex((key) => cache.seen.has(key))
  if (cache.seen.size + keys.length > cache.limit) cache.seen.clear()
  for (const key of keys) cache.seen.add(key)
  return longest < 0 ? 0 : promptTokens(chatPrompt(body, messages.slice(0, longest + 1))).prompt
}

/** Handles `POST /deepseek/chat/completions` and `POST /deepseek/v1/chat/completions`. @category routes */
export const deepseekChat = (context: RouteContext): Reply => {
  const body = context.body
  if (typeof body.model !== "string") return deserialize("missing field `model`")
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    return deepseekError("Invalid request: messages must be a non-empty array")
  }
  const thinking = thinkingMode(body)
  const problem = messagesProblem(body.messages, thinking)
  if (problem !== undefined) return problem
  const result = answer({
    ...chatPrompt(body, body.messages),
    reasoning: thinking,
    maxTokens: numberOr(body.max_tokens)
  }, context.toolCalls)
  const hits = Math.min(
    result.promptTokens,
    Math.max(result.cachedTokens, cacheHits(context.prompts, body, context.model, body.messages))
  )
  const usage = deepseekUsage(result, hits)
  const id = context.ids.next("")
  const callIds = result.toolCalls.map(() => context.ids.next("call_"))
  const base = { id, created: context.created, model: context.model, system_fingerprint: "fp_emulator" }
  if (body.stream !== true) {
    const message: JsonObject = { role: "assistant", content: result.toolCalls.length > 0 ? "" : result.text }
    if (thinking) message.reasoning_content = result.reasoning ?? ""
    if (result.toolCalls.length > 0) {
      message.tool_calls = result.toolCalls.map((call, index) => ({
        index,
        id: callIds[index],
        type: "function",
        function: { name: call.name, arguments: call.arguments }
      }))
    }
    return jsonReply({
      ...base,
      object: "chat.completion",
      choices: [{ index: 0, message, logprobs: null, finish_reason: openAiFinish(result) }],
      usage
    })
  }
  const includeUsage = objectOr(body.stream_options).include_usage === true
  const chunkBase = { ...base, object: "chat.completion.chunk", ...(includeUsage ? { usage: null } : {}) }
  const chunk = (delta: JsonObject, finishReason: string | null = null) =>
    dataFrame({ ...chunkBase, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }] })
  const frames: Array<string> = [
    chunk(thinking ? { role: "assistant", content: null, reasoning_content: "" } : { role: "assistant", content: "" })
  ]
  for (const word of result.reasoningWords) frames.push(chunk({ content: null, reasoning_content: word }))
  for (const word of result.words) {
    frames.push(chunk(thinking ? { content: word, reasoning_content: null } : { content: word }))
  }
  result.toolCalls.forEach((call, index) => {
    frames.push(chunk({
      tool_calls: [{ index, id: callIds[index], type: "function", function: { name: call.name, arguments: "" } }]
    }))
    for (const fragment of argumentFragments(call.arguments)) {
      frames.push(chunk({ tool_calls: [{ index, function: { arguments: fragment } }] }))
    }
  })
  frames.push(chunk({ content: "" }, openAiFinish(result)))
  if (includeUsage) frames.push(dataFrame({ ...chunkBase, choices: [], usage }))
  frames.push(dataFrame("[DONE]"))
  return sseReply(frames)
}

/**
 * Handles `POST /deepseek/beta/completions`: DeepSeek's FIM completion, answered as the emulator's legacy
 * completions (`prompt`, `max_tokens`, `stop`, `echo`, streams) with DeepSeek's usage. A `suffix` is taken and
 * not read.
 *
 * @category routes
 */
export const deepseekFim: (context: RouteContext) => Reply = legacyCompletionsWith((result) => deepseekUsage(result))
