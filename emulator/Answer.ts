/**
 * Deterministic answer generation for the vendor emulator: every vendor route
 * reduces its request to a vendor-neutral `Prompt`, and `answer` turns that into
 * the same `Answer` whatever the wire format. The rules (documented in
 * `Emulator.ts` as well):
 *
 * - Text: `Echo: <text of the last user message>` (at most 64 words of it).
 * - Images in the last user message: the text begins `I see N image(s) [<desc>, …]`
 *   where each desc is the image URL (http/https) or its media type (data URI / base64).
 * - Tools present, tool choice not `none`, last message not a tool result: one call
 *   of the named tool (else the first) with arguments sampled from its JSON Schema;
 *   two calls (tools[0] and tools[1] when there are two, else the same tool twice)
 *   when the last user text contains the word `parallel`. The last user text may name the call instead:
 *   `tool:<name> {json}` calls that offered tool with those arguments (`directedCall`).
 *   That is the `automatic` mode (`ToolCallMode`, the default); in the `asked` mode (the demo's) a call is made
 *   only when the last user text names one (`tool:<name> {json}`) or tool choice requires one (a named tool,
 *   `required`, Anthropic's and Bedrock's `any`, Gemini's `ANY`), and the answer is text otherwise.
 * - After tool results: `Tool result: <result texts joined by " | ">`.
 * - Structured output: the text is a JSON object sampled from the schema.
 * - Reasoning when asked: `Thinking about: <last user text>`.
 * - Stop sequences cut the text before the first one found; max tokens cut the text
 *   after that many words (finish `length`).
 * - Tokens: prompt = ceil(characters of all text / 4) + 3 per message; cached = half of
 *   that when any text contains the word `cached`, else written to the cache = half of it
 *   when any text contains the word `cachewrite` (only the messages format reports
 *   writes, as `cache_creation_input_tokens`); output = words of text + words of
 *   reasoning + ceil(characters of tool arguments / 4) per call.
 *
 * @since 0.1.0
 */

/** A function tool offered by the caller: its name and JSON Schema for arguments. @category models */
export interface ToolSpec {
  readonly name: string
  readonly schema: unknown
}

/** Tool choice, vendor-neutral: `auto`, `none`, `required` or a named tool. @category models */
export type ToolChoice = "auto" | "none" | "required" | { readonly name: string }

/**
 * When tools offered with tool choice `auto` get a call: `automatic` (the default, which every test relies on)
 * calls one whenever tools are offered; `asked` calls one only when the last user text asks for it
 * (`tool:<name> {json}`) or tool choice requires one (a named tool, `required`), and answers in text otherwise, so
 * an agent pointed at the emulator gets an answer it can stop on. Every vendor wire answers through `answer`, so
 * all of them follow the same mode.
 *
 * @category models
 */
export type ToolCallMode = "automatic" | "asked"

/** What a vendor route extracts from its request before answering. @category models */
export interface Prompt {
  /** Joined text parts of the last user message ("" when none). */
  readonly lastUserText: string
  /** Image descriptors (URL or media type) found in the last user message. */
  readonly images: ReadonlyArray<string>
  /** Texts of the trailing tool results, when the conversation ends with them; else empty. */
  readonly toolResults: ReadonlyArray<string>
  readonly tools: ReadonlyArray<ToolSpec>
  readonly toolChoice: ToolChoice
  readonly reasoning: boolean
  /** JSON Schema of the structured output, when asked. */
  readonly outputSchema: unknown | undefined
  /** Maximum visible output tokens (words), when the format sets one. */
  readonly maxTokens: number | undefined
  readonly stop: ReadonlyArray<string>
  /** All text of the request (system, messages, tool results, arguments), for prompt token counting. */
  readonly texts: ReadonlyArray<string>
  readonly messageCount: number
}

/** One tool call of the answer; `arguments` is compact JSON of `input`. @category models */
export interface ToolCall {
  readonly name: string
  readonly input: Record<string, unknown>
  readonly arguments: string
}

/** Why generation ended, vendor-neutral. @category models */
export type AnswerFinish = "stop" | "length" | "tool_calls" | "stop_sequence"

/** The generated answer, shared by every vendor route. @category models */
export interface Answer {
  readonly reasoning: string | undefined
  /** Reasoning split into word deltas (each word keeps its trailing space). */
  readonly reasoningWords: ReadonlyArray<string>
  readonly text: string
  /** Text split into word deltas (each word keeps its trailing space). */
  readonly words: ReadonlyArray<string>
  readonly toolCalls: ReadonlyArray<ToolCall>
  readonly finish: AnswerFinish
  /** The stop sequence that ended the text, when `finish` is `stop_sequence`. */
  readonly stopSequence: string | undefined
  readonly promptTokens: number
  readonly cachedTokens: number
  /** Prompt tokens written to the cache (part of `promptTokens`, apart from `cachedTokens`). */
  readonly cacheWriteTokens: number
  /** All output tokens, reasoning included. */
  readonly outputTokens: number
  readonly reasoningTokens: number
}

const maxEchoWords = 64

/** Splits text into word deltas, each keeping its trailing whitespace; concatenation gives back the text. @category utils */
export const splitWords = (text: string): ReadonlyArray<string> => text.match(/\S+\s*|\s+/g) ?? []

const firstWords = (text: string, count: number): string => splitWords(text).slice(0, count).join("").trimEnd()

const mentionsCached = (texts: ReadonlyArray<string>): boolean => texts.some((text) => /\bcached\b/i.test(text))

/** Prompt, cached and cache-written tokens of a prompt (see module doc). @category answers */
export const promptTokens = (
  prompt: Prompt
): { readonly prompt: number; readonly cached: number; readonly written: number } => {
  let characters = 0
  for (const text of prompt.texts) characters += text.length
  const total = Math.ceil(characters / 4) + 3 * prompt.messageCount
  const cached = mentionsCached(prompt.texts) ? Math.floor(total / 2) : 0
  const written = cached === 0 && prompt.texts.some((text) => /\bcachewrite\b/i.test(text)) ? Math.floor(total / 2) : 0
  return { prompt: total, cached, written }
}

const typeOf = (schema: Record<string, unknown>): string | undefined => {
  const type = schema.type
  if (typeof type === "string") return type.toLowerCase()
  if (Array.isArray(type)) {
    const first = type.find((t) => typeof t === "string" && t.toLowerCase() !== "null")
    return typeof first === "string" ? first.toLowerCase() : "null"
  }
  if (schema.properties !== undefined) return "object"
  if (schema.items !== undefined) return "array"
  return undefined
}

/**
 * A sample value for a JSON Schema (or Gemini OpenAPI schema with upper-case types):
 * string → "sample", number/integer → 1, boolean → true, enum → first value, const → it,
 * arrays → one sampled item, objects → the `required` properties (all when none are required),
 * anyOf/oneOf → first branch. Unknown shapes give `null`.
 *
 * @category answers
 */
export const sampleFromSchema = (schema: unknown, depth = 0): unknown => {
  if (depth > 8 || typeof schema !== "object" || schema === null) return null
  const node = schema as Record<string, unknown>
  if (Array.isArray(node.enum) && node.enum.length > 0) return node.enum[0]
  if ("const" in node) return node.const
  for (const key of ["anyOf", "oneOf", "allOf"]) {
    const branches = node[key]
    if (Array.isArray(branches) && branches.length > 0) return sampleFromSchema(branches[0], depth + 1)
  }
  switch (typeOf(node)) {
    case "string":
      return "sample"
    case "number":
    case "integer":
      return 1
    case "boolean":
      return true
    case "array":
      return [sampleFromSchema(node.items, depth + 1)]
    case "object": {
      const properties = typeof node.properties === "object" && node.properties !== null
        ? node.properties as Record<string, unknown>
        : {}
      const required = Array.isArray(node.required) ? node.required.filter((r) => typeof r === "string") : []
      const names = required.length > 0 ? required : Object.keys(properties)
      const value: Record<string, unknown> = {}
      for (const name of names) value[name] = sampleFromSchema(properties[name], depth + 1)
      return value
    }
    default:
      return null
  }
}

/** A stable short hash (FNV-1a, 32 bits, hex) used for signatures and encrypted content. @category utils */
export const stableHash = (text: string): string => {
  let hash = 0x811c9dc5
  for (let index = 0; index < text.length; index++) {
    hash ^= text.charCodeAt(index)
    hash = Math.imul(hash, 0x01000193)
  }
  return (hash >>> 0).toString(16).padStart(8, "0")
}

const sampleArguments = (tool: ToolSpec): Record<string, unknown> => {
  const value = sampleFromSchema(tool.schema)
  return typeof value === "object" && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : {}
}

/**
 * The tool call a prompt asks for in words: `tool:<name> {json}` in the last user text, naming an offered tool,
 * with a JSON object of arguments (the longest `{…}` after the name that parses; `{}` when none does). Coding
 * agents' tests use it to have the emulator call the agent's own shell or file tool with real arguments.
 *
 * @category answers
 */
export const directedCall = (prompt: Prompt): ToolCall | undefined => {
  const found = /\btool:([A-Za-z0-9_.-]+)/.exec(prompt.lastUserText)
  if (found === null) return undefined
  const tool = prompt.tools.find((candidate) => candidate.name === found[1])
  if (tool === undefined) return undefined
  const rest = prompt.lastUserText.slice(found.index + found[0].length)
  const open = rest.indexOf("{")
  let input: Record<string, unknown> = {}
  if (open >= 0) {
    for (let close = rest.lastIndexOf("}"); close > open; close = rest.lastIndexOf("}", close - 1)) {
      try {
        const parsed: unknown = JSON.parse(rest.slice(open, close + 1))
        if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) {
          input = parsed as Record<string, unknown>
          break
        }
      } catch {
        // Not JSON up to this brace: try the one before.
      }
    }
  }
  return { name: tool.name, input, arguments: JSON.stringify(input) }
}

const toolCallsFor = (prompt: Prompt, mode: ToolCallMode): ReadonlyArray<ToolCall> => {
  if (prompt.tools.length === 0 || prompt.toolChoice === "none" || prompt.toolResults.length > 0) return []
  const choice = prompt.toolChoice
  const directed = typeof choice === "object" ? undefined : directedCall(prompt)
  if (directed !== undefined) return [directed]
  // Asked for nothing and free to answer in text: an agent's turn ends here.
  if (mode === "asked" && choice === "auto") return []
  const named = typeof choice === "object" ? prompt.tools.find((tool) => tool.name === choice.name) : undefined
  const first = named ?? prompt.tools[0]
  const chosen = /\bparallel\b/i.test(prompt.lastUserText)
    ? [first, named ?? prompt.tools[Math.min(1, prompt.tools.length - 1)]]
    : [first]
  return chosen.map((tool) => {
    const input = sampleArguments(tool)
    return { name: tool.name, input, arguments: JSON.stringify(input) }
  })
}

const baseText = (prompt: Prompt): string => {
  if (prompt.toolResults.length > 0) return `Tool result: ${prompt.toolResults.join(" | ")}`
  if (prompt.outputSchema !== undefined) {
    // Spaced JSON (`{ "a": 1, "b": "sample" }`) so it streams word by word and stays valid JSON.
    return JSON.stringify(sampleFromSchema(prompt.outputSchema), null, 1).replace(/\n\s*/g, " ")
  }
  const echo = `Echo: ${firstWords(prompt.lastUserText, maxEchoWords)}`.trimEnd()
  return prompt.images.length > 0
    ? `I see ${prompt.images.length} image(s) [${prompt.images.join(", ")}] ${echo}`
    : echo
}

const countWords = (text: string): number => text.split(/\s+/).filter((word) => word.length > 0).length

/**
 * Builds the deterministic answer for a prompt (rules in the module doc); `toolCalls` says when offered tools get a
 * call (`ToolCallMode`, default `automatic`).
 *
 * @category answers
 */
export const answer = (prompt: Prompt, toolCalls: ToolCallMode = "automatic"): Answer => {
  const tokens = promptTokens(prompt)
  const reasoning = prompt.reasoning ? `Thinking about: ${firstWords(prompt.lastUserText, maxEchoWords)}` : undefined
  const reasoningWords = reasoning === undefined ? [] : splitWords(reasoning)
  const reasoningTokens = reasoning === undefined ? 0 : countWords(reasoning)
  const calls = toolCallsFor(prompt, toolCalls)
  if (calls.length > 0) {
    const callTokens = calls.reduce((sum, call) => sum + Math.ceil(call.arguments.length / 4), 0)
    return {
      reasoning,
      reasoningWords,
      text: "",
      words: [],
      toolCalls: calls,
      finish: "tool_calls",
      stopSequence: undefined,
      promptTokens: tokens.prompt,
      cachedTokens: tokens.cached,
      cacheWriteTokens: tokens.written,
      outputTokens: callTokens + reasoningTokens,
      reasoningTokens
    }
  }
  let text = baseText(prompt)
  let finish: AnswerFinish = "stop"
  let stopSequence: string | undefined
  let cutAt = -1
  for (const stop of prompt.stop) {
    const index = stop.length > 0 ? text.indexOf(stop) : -1
    if (index >= 0 && (cutAt < 0 || index < cutAt)) {
      cutAt = index
      stopSequence = stop
    }
  }
  if (cutAt >= 0) {
    text = text.slice(0, cutAt)
    finish = "stop_sequence"
  }
  let words = splitWords(text)
  if (prompt.maxTokens !== undefined && countWords(text) > prompt.maxTokens) {
    words = splitWords(firstWords(text, Math.max(0, prompt.maxTokens)))
    text = words.join("")
    finish = "length"
    stopSequence = undefined
  }
  return {
    reasoning,
    reasoningWords,
    text,
    words,
    toolCalls: [],
    finish,
    stopSequence,
    promptTokens: tokens.prompt,
    cachedTokens: tokens.cached,
    cacheWriteTokens: tokens.written,
    outputTokens: countWords(text) + reasoningTokens,
    reasoningTokens
  }
}
