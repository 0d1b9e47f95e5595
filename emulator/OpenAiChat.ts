/**
 * OpenAI Chat Completions for the vendor emulator: `POST /v1/chat/completions`.
 *
 * Wire shapes follow the `openai` SDK 7.57 types (`ChatCompletion`, `ChatCompletionChunk`,
 * `CompletionUsage`) and https://platform.openai.com/docs/api-reference/chat. Reasoning is
 * returned DeepSeek-style as `reasoning_content` on the message / delta when `reasoning_effort`
 * is set and not `none` (https://api-docs.deepseek.com/guides/reasoning_model).
 * `n` choices are produced (default 1), the same answer at each `index`, streamed one choice after
 * another; usage counts the prompt once and the output of every choice, as the real API does.
 *
 * Asked for a `gemini-3…` model, it answers as Gemini's OpenAI-compatible endpoint does
 * (https://ai.google.dev/gemini-api/docs/thought-signatures, "OpenAI compatibility"): the first tool
 * call of an answer carries a thought signature in `extra_content.google.thought_signature` (on its
 * first stream chunk), and a request whose current turn (after the last user message) holds an
 * assistant message whose first tool call has no signature is refused with Gemini's 400
 * (`[{"error": {code, message, status}}]`); the validator-skipping values are accepted.
 *
 * @since 0.1.0
 */
import { type Answer, answer, type Prompt, type ToolChoice, type ToolSpec } from "./Answer.ts"
import { dataFrame, jsonReply, type Reply, sseReply } from "./Sse.ts"
import {
  arrayOr,
  describeImageUrl,
  isObject,
  type JsonObject,
  numberOr,
  objectOr,
  type RouteContext,
  stopList,
  stringOr
} from "./Wire.ts"
import { vendorErrorBody } from "./Faults.ts"
import { chatContentProblem } from "./RequestChecks.ts"
import {
  checksCallSignatures,
  isMintedThoughtSignature,
  thoughtSignatureFor,
  validatorSkippingSignatures
} from "./Gemini.ts"
import { chatParamProblem } from "./OpenAiParams.ts"

/** The signature of a Gemini call, as `extra_content.google.thought_signature` holds it. */
const callSignatureOf = (call: unknown): unknown =>
  objectOr(objectOr(objectOr(call).extra_content).google).thought_signature

/**
 * Gemini 3's check of the current turn (after the last user message): the first assistant message whose first
 * tool call has no signature (`missing`) or one Gemini did not mint (`corrupted`), with its position.
 */
const unsignedCall = (
  messages: ReadonlyArray<unknown>
): { readonly problem: "missing" | "corrupted"; readonly position: number } | undefined => {
  const lastUser = messages.findLastIndex((message) => objectOr(message).role === "user")
  for (let index = lastUser + 1; index < messages.length; index++) {
    const message = objectOr(messages[index])
    const first = arrayOr(message.tool_calls)[0]
    if (message.role !== "assistant" || first === undefined) continue
    const signature = callSignatureOf(first)
    if (signature === undefined) return { problem: "missing", position: index + 1 }
    if (!isMintedThoughtSignature(signature) && !validatorSkippingSignatures.includes(String(signature))) {
      return { problem: "corrupted", position: index + 1 }
    }
  }
  return undefined
}

const roles = new Set(["system", "developer", "user", "assistant", "tool", "function"])

/** Text of a chat `content` (string or parts); image parts go to `images` when given. */
const contentText = (content: unknown, images?: Array<string>): string => {
  if (typeof content === "string") return content
  const texts: Array<string> = []
  for (const part of arrayOr(content)) {
    if (!isObject(part)) continue
    if (part.type === "text" || part.type === "input_text") texts.push(stringOr(part.text) ?? "")
    else if (part.type === "image_url" && images !== undefined) {
      const url = stringOr(objectOr(part.image_url).url)
      if (url !== undefined) images.push(describeImageUrl(url))
    }
  }
  return texts.join(" ")
}

const chatToolChoice = (value: unknown): ToolChoice => {
  if (value === "none" || value === "required" || value === "auto") return value
  if (isObject(value)) {
    const name = stringOr(objectOr(value.function).name)
    if (name !== undefined) return { name }
  }
  return "auto"
}

/** Tools of an OpenAI-style request (`{type: "function", function: {name, parameters}}`). @category readers */
export const chatTools = (value: unknown): ReadonlyArray<ToolSpec> =>
  arrayOr(value).flatMap((tool) => {
    if (!isObject(tool) || tool.type !== "function") return []
    const fn = objectOr(tool.function)
    const name = stringOr(fn.name)
    return name === undefined ? [] : [{ name, schema: fn.parameters ?? { type: "object", properties: {} } }]
  })

const outputSchema = (format: unknown): unknown => {
  if (!isObject(format)) return undefined
  if (format.type === "json_schema") return objectOr(format.json_schema).schema ?? { type: "object" }
  if (format.type === "json_object") return { type: "object", properties: { answer: { type: "string" } } }
  return undefined
}

/**
 * The vendor-neutral prompt of a chat completions request (`body`'s settings over `messages`), shared with the
 * DeepSeek routes (`DeepSeek.ts`). Reasoning is asked by `reasoning_effort` other than `none`.
 *
 * @category readers
 */
export const chatPrompt = (body: JsonObject, messages: ReadonlyArray<unknown>): Prompt => {
  const texts: Array<string> = []
  let lastUserText = ""
  let images: Array<string> = []
  let toolResults: Array<string> = []
  for (const message of messages) {
    const item = objectOr(message)
    const messageImages: Array<string> = []
    const text = contentText(item.content, messageImages)
    texts.push(text)
    for (const call of arrayOr(item.tool_calls)) texts.push(stringOr(objectOr(objectOr(call).function).arguments) ?? "")
    if (item.role === "tool" || item.role === "function") {
      toolResults.push(text)
      continue
    }
    toolResults = []
    if (item.role === "user") {
      lastUserText = text
      images = messageImages
    }
  }
  const effort = stringOr(body.reasoning_effort)
  return {
    lastUserText,
    images,
    toolResults,
    tools: chatTools(body.tools),
    toolChoice: chatToolChoice(body.tool_choice),
    reasoning: effort !== undefined && effort !== "none",
    outputSchema: outputSchema(body.response_format),
    maxTokens: numberOr(body.max_completion_tokens) ?? numberOr(body.max_tokens),
    stop: stopList(body.stop),
    texts,
    messageCount: messages.length
  }
}

/** OpenAI `finish_reason` for an answer. @category encoding */
export const openAiFinish = (result: Answer): string =>
  result.finish === "length" ? "length" : result.finish === "tool_calls" ? "tool_calls" : "stop"

/** OpenAI `CompletionUsage` for an answer (chat and legacy completions). @category encoding */
export const openAiUsage = (result: Answer): JsonObject => ({
  prompt_tokens: result.promptTokens,
  completion_tokens: result.outputTokens,
  total_tokens: result.promptTokens + result.outputTokens,
  prompt_tokens_details: { cached_tokens: result.cachedTokens, audio_tokens: 0 },
  completion_tokens_details: {
    reasoning_tokens: result.reasoningTokens,
    audio_tokens: 0,
    accepted_prediction_tokens: 0,
    rejected_prediction_tokens: 0
  }
})

/** Splits tool-call arguments into small fragments, as vendors stream them. @category encoding */
export const argumentFragments = (json: string, size = 8): ReadonlyArray<string> => {
  const fragments: Array<string> = []
  for (let index = 0; index < json.length; index += size) fragments.push(json.slice(index, index + size))
  return fragments
}

const invalid = (message: string, param: string | undefined): Reply =>
  jsonReply(vendorErrorBody("openai", 400, message, param), 400)

/** Handles `POST /v1/chat/completions` (JSON or SSE by `stream`). @category routes */
export const chatCompletions = (context: RouteContext): Reply => {
  const body = context.body
  if (typeof body.model !== "string") return invalid("you must provide a model parameter", undefined)
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    return invalid("Invalid 'messages': empty array. Expected an array with minimum length 1.", "messages")
  }
  for (const [index, message] of body.messages.entries()) {
    if (!isObject(message) || typeof message.role !== "string" || !roles.has(message.role)) {
      return invalid(`Invalid value for 'messages[${index}].role'.`, `messages[${index}].role`)
    }
  }
  const problem = chatParamProblem(body)
  if (problem !== undefined) return invalid(problem.message, problem.param)
  const contentProblem = chatContentProblem(body.messages)
  if (contentProblem !== undefined) return invalid(contentProblem.message, contentProblem.param)
  const gemini3 = checksCallSignatures(context.model)
  const unsigned = gemini3 ? unsignedCall(body.messages) : undefined
  if (unsigned !== undefined) {
    const message = unsigned.problem === "corrupted"
      ? "Corrupted thought signature."
      : "Function call is missing a thought_signature in functionCall parts. This is required for tools to work " +
        "correctly, and missing thought_signature may lead to degraded model performance. Additional data, " +
        `function call \`default_api\` , position ${unsigned.position}. please refer to ` +
        "https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
    return jsonReply([{ error: { code: 400, message, status: "INVALID_ARGUMENT" } }], 400)
  }
  const result = answer(chatPrompt(body, body.messages), context.toolCalls)
  const id = context.ids.next("chatcmpl-")
  const callIds = result.toolCalls.map(() => context.ids.next("call_"))
  /** Gemini 3 signs the first call of an answer. */
  const signed = (index: number): JsonObject =>
    gemini3 && index === 0
      ? { extra_content: { google: { thought_signature: thoughtSignatureFor(result.toolCalls[0].arguments) } } }
      : {}
  const base = { id, created: context.created, model: context.model, system_fingerprint: "fp_emulator" }
  const n = Math.max(1, Math.floor(numberOr(body.n) ?? 1))
  const usage = openAiUsage({
    ...result,
    outputTokens: result.outputTokens * n,
    reasoningTokens: result.reasoningTokens * n
  })
  const indexes = Array.from({ length: n }, (_, index) => index)
  if (body.stream !== true) {
    const message: JsonObject = {
      role: "assistant",
      content: result.toolCalls.length > 0 ? null : result.text,
      refusal: null,
      annotations: []
    }
    if (result.reasoning !== undefined) message.reasoning_content = result.reasoning
    if (result.toolCalls.length > 0) {
      message.tool_calls = result.toolCalls.map((call, index) => ({
        id: callIds[index],
        type: "function",
        function: { name: call.name, arguments: call.arguments },
        ...signed(index)
      }))
    }
    return jsonReply({
      ...base,
      object: "chat.completion",
      choices: indexes.map((index) => ({ index, message, logprobs: null, finish_reason: openAiFinish(result) })),
      usage,
      service_tier: "default"
    })
  }
  const includeUsage = objectOr(body.stream_options).include_usage === true
  const chunkBase = includeUsage
    ? { ...base, object: "chat.completion.chunk", usage: null }
    : { ...base, object: "chat.completion.chunk" }
  const frames: Array<string> = []
  for (const choice of indexes) {
    const chunk = (delta: JsonObject, finishReason: string | null = null) =>
      dataFrame({ ...chunkBase, choices: [{ index: choice, delta, logprobs: null, finish_reason: finishReason }] })
    frames.push(chunk({ role: "assistant", content: "" }))
    for (const word of result.reasoningWords) frames.push(chunk({ reasoning_content: word }))
    for (const word of result.words) frames.push(chunk({ content: word }))
    result.toolCalls.forEach((call, index) => {
      frames.push(chunk({
        tool_calls: [{
          index,
          id: callIds[index],
          type: "function",
          function: { name: call.name, arguments: "" },
          ...signed(index)
        }]
      }))
      for (const fragment of argumentFragments(call.arguments)) {
        frames.push(chunk({ tool_calls: [{ index, function: { arguments: fragment } }] }))
      }
    })
    frames.push(chunk({}, openAiFinish(result)))
  }
  if (includeUsage) frames.push(dataFrame({ ...chunkBase, choices: [], usage }))
  frames.push(dataFrame("[DONE]"))
  return sseReply(frames)
}
