/**
 * OpenAI legacy Completions for the vendor emulator: `POST /v1/completions`.
 *
 * Wire shapes follow the `openai` SDK 7.57 types (`Completion`, `CompletionChoice`, `CompletionUsage`)
 * and https://platform.openai.com/docs/api-reference/completions. `prompt` may be a string, an array
 * of strings (one choice per prompt, `index` in order), or token arrays (their numbers are read as
 * text). `max_tokens` defaults to 16 as in the real API; `echo: true` prepends the prompt; `stop`
 * cuts the text. Streams end with `data: [DONE]`; a usage chunk with `choices: []` precedes it when
 * `stream_options.include_usage` is true.
 *
 * @since 0.1.0
 */
import { type Answer, answer } from "./Answer.ts"
import { vendorErrorBody } from "./Faults.ts"
import { openAiUsage } from "./OpenAiChat.ts"
import { dataFrame, jsonReply, type Reply, sseReply } from "./Sse.ts"
import { arrayOr, type JsonObject, numberOr, objectOr, type RouteContext, stopList } from "./Wire.ts"

/** The prompts of a legacy request, as texts. */
const prompts = (value: unknown): ReadonlyArray<string> | undefined => {
  if (typeof value === "string") return [value]
  if (!Array.isArray(value) || value.length === 0) return undefined
  if (value.every((item) => typeof item === "number")) return [value.join(" ")]
  if (value.every((item) => typeof item === "string")) return value
  if (value.every(Array.isArray)) return value.map((tokens) => arrayOr(tokens).join(" "))
  return undefined
}

const finishReason = (result: Answer): string => result.finish === "length" ? "length" : "stop"

/**
 * A legacy completions handler whose answers report usage as `usageOf` says (OpenAI's `CompletionUsage` for
 * `POST /v1/completions`; DeepSeek's FIM completions report DeepSeek's fields, `DeepSeek.ts`).
 *
 * @category routes
 */
export const legacyCompletionsWith = (usageOf: (result: Answer) => JsonObject) => (context: RouteContext): Reply => {
  const body = context.body
  if (typeof body.model !== "string") {
    return jsonReply(vendorErrorBody("openai", 400, "you must provide a model parameter"), 400)
  }
  const texts = prompts(body.prompt)
  if (texts === undefined) {
    return jsonReply(vendorErrorBody("openai", 400, "'prompt' must be a string or an array of strings.", "prompt"), 400)
  }
  const echo = body.echo === true
  const results = texts.map((text) => {
    const result = answer({
      lastUserText: text,
      images: [],
      toolResults: [],
      tools: [],
      toolChoice: "none",
      reasoning: false,
      outputSchema: undefined,
      maxTokens: numberOr(body.max_tokens) ?? 16,
      stop: stopList(body.stop),
      texts: [text],
      messageCount: 1
    })
    return { prompt: text, result, text: (echo ? text : "") + result.text }
  })
  const usage = results.reduce<Answer | undefined>(
    (sum, { result }) =>
      sum === undefined ? result : {
        ...sum,
        promptTokens: sum.promptTokens + result.promptTokens,
        cachedTokens: sum.cachedTokens + result.cachedTokens,
        cacheWriteTokens: sum.cacheWriteTokens + result.cacheWriteTokens,
        outputTokens: sum.outputTokens + result.outputTokens
      },
    undefined
  )
  const id = context.ids.next("cmpl-")
  const base = { id, object: "text_completion", created: context.created, model: context.model }
  if (body.stream !== true) {
    return jsonReply({
      ...base,
      choices: results.map(({ result, text }, index) => ({
        text,
        index,
        logprobs: null,
        finish_reason: finishReason(result)
      })),
      usage: usage === undefined ? undefined : usageOf(usage)
    })
  }
  const includeUsage = objectOr(body.stream_options).include_usage === true
  const chunk = (index: number, text: string, finish: string | null): string => {
    const data: JsonObject = { ...base, choices: [{ text, index, logprobs: null, finish_reason: finish }] }
    if (includeUsage) data.usage = null
    return dataFrame(data)
  }
  const frames: Array<string> = []
  results.forEach(({ prompt, result }, index) => {
    if (echo) frames.push(chunk(index, prompt, null))
    for (const word of result.words) frames.push(chunk(index, word, null))
    frames.push(chunk(index, "", finishReason(result)))
  })
  if (includeUsage && usage !== undefined) frames.push(dataFrame({ ...base, choices: [], usage: usageOf(usage) }))
  frames.push(dataFrame("[DONE]"))
  return sseReply(frames)
}

/** Handles `POST /v1/completions` (JSON or SSE by `stream`). @category routes */
export const legacyCompletions: (context: RouteContext) => Reply = legacyCompletionsWith(openAiUsage)
