/**
 * Bedrock Runtime's Converse and ConverseStream for the vendor emulator: `POST /bedrock/model/{modelId}/converse` and
 * `…/converse-stream` (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html,
 * API_runtime_ConverseStream.html; shapes as `@aws-sdk/client-bedrock-runtime` 3.1164 models them).
 *
 * Request: `messages` (`role` `user` | `assistant`, content blocks that each hold exactly one of `text`, `image`
 * {format png|jpeg|gif|webp, source.bytes base64}, `document` {format, name, source}, `video`, `toolUse`
 * {toolUseId, name, input}, `toolResult` {toolUseId, content [{text}|{json}|{image}|{document}], status},
 * `reasoningContent` {reasoningText {text, signature}} | {redactedContent}, `cachePoint` {type: "default"},
 * `guardContent`), `system` (`text`, `cachePoint`, `guardContent`), `inferenceConfig` (maxTokens ≥ 1, temperature and
 * topP in [0, 1], stopSequences at most 4), `toolConfig` (`tools[]` of `toolSpec` {name, description,
 * inputSchema.json} or `cachePoint`; `toolChoice` `auto` | `any` | `tool` {name}) and
 * `additionalModelRequestFields` (Claude's `thinking` {type enabled|adaptive, budget_tokens ≥ 1024 and below
 * maxTokens}, or `reasoning_config` / `reasoningConfig` {type: "enabled"} of the other reasoning models). Bedrock's
 * refusals are ValidationExceptions (400): a conversation that does not start with a user message or does not
 * alternate roles, a block with no or several members, `toolUse` / `toolResult` blocks without `toolConfig`, an
 * out-of-range inference parameter, an embedding model ("This action doesn't support the model…"); Claude's own
 * refusals come prefixed "The model returned the following errors: ", as Bedrock relays them (a `reasoningContent`
 * signature the emulator did not mint for its text, a thinking budget out of range).
 *
 * Answer (the emulator's rules, `Answer.ts`): `{output: {message: {role: "assistant", content}}, stopReason
 * (end_turn | tool_use | max_tokens | stop_sequence), usage {inputTokens, outputTokens, totalTokens,
 * cacheReadInputTokens, cacheWriteInputTokens}, metrics {latencyMs}}`; content holds a `reasoningContent` block
 * first when reasoning was asked (signature `sig-<hash>` of its text, as the Anthropic route mints), then `text` or
 * `toolUse` blocks (`toolUseId` `tooluse_emu…`). `inputTokens` leaves out cache reads and writes and `totalTokens`
 * counts them (docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html); the cache fields are sent only
 * when the request has a cache point or its text names `cached` / `cachewrite` (the other vendors' triggers).
 * `metrics.latencyMs` is `10 × (1 + output tokens)`, deterministic.
 *
 * Prompt caching by cache point: the request's content up to its last `cachePoint` (tools, then system, then
 * messages, in that order) is a prefix; its tokens (the emulator's count of the prefix's text and messages) are
 * written to the cache the first time the model sees that prefix (`cacheWriteInputTokens`) and read from it on later
 * requests (`cacheReadInputTokens`). No minimum prefix size and no expiry (real caches need 1,024+ tokens and expire
 * after five minutes): tests stay small.
 *
 * The stream sends `messageStart` {role}, per block `contentBlockStart` (tool use only: {start: {toolUse:
 * {toolUseId, name}}}), `contentBlockDelta` ({text} one word each; {reasoningContent: {text}} then
 * {reasoningContent: {signature}}; {toolUse: {input}} in JSON fragments) and `contentBlockStop`, then `messageStop`
 * {stopReason} and `metadata` {usage, metrics}, each event with its `contentBlockIndex` where it has one.
 *
 * @since 0.1.0
 */
import { type Answer, answer, type Prompt, promptTokens, type ToolChoice, type ToolSpec } from "./Answer.ts"
import { thinkingSignature } from "./Anthropic.ts"
import {
  bedrockError,
  type BedrockModel,
  bedrockModelOf,
  CONVERSE_UNSUPPORTED_MESSAGE,
  EVENT_STREAM_CONTENT_TYPE,
  frameWriter,
  INVALID_MODEL_MESSAGE,
  isEmbeddingModel
} from "./BedrockWire.ts"
import { argumentFragments } from "./OpenAiChat.ts"
import { jsonReply, type Reply } from "./Sse.ts"
import { arrayOr, isObject, type JsonObject, numberOr, objectOr, type RouteContext, stringOr } from "./Wire.ts"

const invalid = (message: string): Reply => bedrockError("ValidationException", message)

/** Claude's refusals as Bedrock relays them. */
const modelRefusal = (message: string): Reply => invalid(`The model returned the following errors: ${message}`)

/** A Smithy-style constraint refusal (`1 validation error detected: Value … at '…' failed to satisfy constraint: …`). */
const constraint = (value: unknown, at: string, rule: string): Reply =>
  invalid(
    `1 validation error detected: Value '${String(JSON.stringify(value) ?? "null").slice(0, 200)}' at '${at}' ` +
      `failed to satisfy constraint: ${rule}`
  )

const CONTENT_MEMBERS: ReadonlySet<string> = new Set([
  "text",
  "image",
  "document",
  "video",
  "audio",
  "toolUse",
  "toolResult",
  "guardContent",
  "cachePoint",
  "reasoningContent",
  "citationsContent",
  "searchResult"
])

const SYSTEM_MEMBERS: ReadonlySet<string> = new Set(["text", "guardContent", "cachePoint"])

const IMAGE_FORMATS: ReadonlySet<string> = new Set(["png", "jpeg", "gif", "webp"])

const DOCUMENT_FORMATS: ReadonlySet<string> = new Set(["pdf", "csv", "doc", "docx", "xls", "xlsx", "html", "txt", "md"])

/** The one member a union value holds, or a refusal naming `at`. */
const memberOf = (
  value: unknown,
  members: ReadonlySet<string>,
  at: string
): { readonly name: string; readonly value: unknown } | Reply => {
  const keys = isObject(value) ? Object.keys(value) : []
  if (keys.length !== 1 || !members.has(keys[0])) {
    return invalid(`The ${at} field must contain exactly one of the supported members: ${[...members].join(", ")}.`)
  }
  return { name: keys[0], value: (value as JsonObject)[keys[0]] }
}

const isReply = (value: unknown): value is Reply => isObject(value) && typeof value._tag === "string"

/** The text a `toolResult`'s content carries (`text` as is, `json` as compact JSON). */
const toolResultText = (content: unknown): string =>
  arrayOr(content).flatMap((item) => {
    const block = objectOr(item)
    if (typeof block.text === "string") return [block.text]
    if (block.json !== undefined) return [JSON.stringify(block.json)]
    return []
  }).join(" ")

/** What a Converse request reduces to, before the answer. */
interface ConversePrompt {
  readonly prompt: Prompt
  /** The texts and message count of the content before the last cache point, and the prefix's key; or undefined. */
  readonly cachePrefix:
    | { readonly texts: ReadonlyArray<string>; readonly messages: number; readonly key: string }
    | undefined
}

const reasoningAsked = (fields: JsonObject): boolean => {
  const thinking = stringOr(objectOr(fields.thinking).type)
  const config = stringOr(objectOr(fields.reasoning_config ?? fields.reasoningConfig).type)
  return thinking === "enabled" || thinking === "adaptive" || config === "enabled"
}

const toolChoiceOf = (value: unknown): ToolChoice | Reply => {
  if (value === undefined) return "auto"
  const member = memberOf(value, new Set(["auto", "any", "tool"]), "toolConfig.toolChoice")
  if (isReply(member)) return member
  if (member.name === "auto") return "auto"
  if (member.name === "any") return "required"
  const name = stringOr(objectOr(member.value).name)
  return name === undefined ? constraint(null, "toolConfig.toolChoice.tool.name", "Member must not be null") : { name }
}

/** Reads and checks a Converse body (see the module doc); a refusal as a `Reply`. */
const readConverse = (body: JsonObject, model: BedrockModel): ConversePrompt | Reply => {
  if (!Array.isArray(body.messages)) return constraint(null, "messages", "Member must not be null")
  const messages = body.messages
  if (messages.length === 0 || objectOr(messages[0]).role !== "user") {
    return invalid(
      "A conversation must start with a user message. Try again with a conversation that starts with a user message."
    )
  }
  const texts: Array<string> = []
  const pushText = (text: string) => {
    texts.push(text)
  }
  let cachePrefix: ConversePrompt["cachePrefix"]
  const prefixItems: Array<unknown> = []
  const markCachePoint = (messageCount: number) => {
    cachePrefix = {
      texts: [...texts],
      messages: messageCount,
      key: `${model.base}\u0000${JSON.stringify(prefixItems)}`
    }
  }

  const toolConfig = body.toolConfig
  const tools: Array<ToolSpec> = []
  let toolChoice: ToolChoice = "auto"
  if (toolConfig !== undefined) {
    if (!isObject(toolConfig) || !Array.isArray(toolConfig.tools) || toolConfig.tools.length === 0) {
      return constraint(null, "toolConfig.tools", "Member must have length greater than or equal to 1")
    }
    for (const [index, tool] of toolConfig.tools.entries()) {
      const member = memberOf(tool, new Set(["toolSpec", "systemTool", "cachePoint"]), `toolConfig.tools.${index}`)
      if (isReply(member)) return member
      if (member.name === "cachePoint") {
        markCachePoint(0)
        continue
      }
      prefixItems.push(tool)
      if (member.name !== "toolSpec") continue
      const spec = objectOr(member.value)
      if (typeof spec.name !== "string" || !/^[a-zA-Z0-9_-]{1,64}$/.test(spec.name)) {
        return constraint(
          spec.name ?? null,
          `toolConfig.tools.${index}.member.toolSpec.name`,
          "Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+"
        )
      }
      const schema = objectOr(spec.inputSchema)
      if (schema.json === undefined) {
        return constraint(null, `toolConfig.tools.${index}.member.toolSpec.inputSchema`, "Member must not be null")
      }
      tools.push({ name: spec.name, schema: schema.json })
    }
    const choice = toolChoiceOf(toolConfig.toolChoice)
    if (isReply(choice)) return choice
    toolChoice = choice
  }

  for (const [index, item] of arrayOr(body.system).entries()) {
    const member = memberOf(item, SYSTEM_MEMBERS, `system.${index}`)
    if (isReply(member)) return member
    if (member.name === "cachePoint") {
      markCachePoint(0)
      continue
    }
    prefixItems.push(item)
    if (member.name === "text") pushText(stringOr(member.value) ?? "")
  }

  const fields = objectOr(body.additionalModelRequestFields)
  const reasoning = reasoningAsked(fields)
  let lastUserText = ""
  let images: Array<string> = []
  let toolResults: Array<string> = []
  let usesTools = false
  for (const [index, raw] of messages.entries()) {
    const message = objectOr(raw)
    const role = message.role
    if (role !== "user" && role !== "assistant") {
      return constraint(
        role ?? null,
        `messages.${index}.member.role`,
        "Member must satisfy enum value set: [user, assistant]"
      )
    }
    if (index > 0 && objectOr(messages[index - 1]).role === role) {
      return invalid(
        "A conversation must alternate between user and assistant roles. Make sure the conversation alternates " +
          "between user and assistant roles and try again."
      )
    }
    if (!Array.isArray(message.content) || message.content.length === 0) {
      return constraint(message.content ?? null, `messages.${index}.member.content`, "Member must not be null")
    }
    const messageTexts: Array<string> = []
    const messageImages: Array<string> = []
    const results: Array<string> = []
    for (const [position, block] of message.content.entries()) {
      const at = `messages.${index}.content.${position}`
      const member = memberOf(block, CONTENT_MEMBERS, `content.${position} of message ${index}`)
      if (isReply(member)) return member
      if (member.name === "cachePoint") {
        markCachePoint(index + 1)
        continue
      }
      prefixItems.push(block)
      const value = objectOr(member.value)
      switch (member.name) {
        case "text":
          messageTexts.push(stringOr(member.value) ?? "")
          pushText(stringOr(member.value) ?? "")
          break
        case "image": {
          const format = stringOr(value.format) ?? ""
          if (!IMAGE_FORMATS.has(format)) {
            return constraint(
              value.format ?? null,
              `${at}.member.image.format`,
              "Member must satisfy enum value set: [png, jpeg, gif, webp]"
            )
          }
          const source = objectOr(value.source)
          if (typeof source.bytes !== "string" && !isObject(source.s3Location)) {
            return invalid(`The image source at ${at} must contain bytes or an s3Location.`)
          }
          messageImages.push(`image/${format}`)
          break
        }
        case "document": {
          const format = stringOr(value.format)
          if (format !== undefined && !DOCUMENT_FORMATS.has(format)) {
            return constraint(
              format,
              `${at}.member.document.format`,
              "Member must satisfy enum value set: [pdf, csv, doc, docx, xls, xlsx, html, txt, md]"
            )
          }
          if (typeof value.name !== "string") {
            return constraint(null, `${at}.member.document.name`, "Member must not be null")
          }
          pushText(value.name)
          const text = stringOr(objectOr(value.source).text)
          if (text !== undefined) pushText(text)
          break
        }
        case "toolUse":
          usesTools = true
          if (typeof value.toolUseId !== "string" || typeof value.name !== "string") {
            return constraint(null, `${at}.member.toolUse.toolUseId`, "Member must not be null")
          }
          pushText(JSON.stringify(value.input ?? {}))
          break
        case "toolResult":
          usesTools = true
          if (typeof value.toolUseId !== "string") {
            return constraint(null, `${at}.member.toolResult.toolUseId`, "Member must not be null")
          }
          results.push(toolResultText(value.content))
          pushText(toolResultText(value.content))
          break
        case "reasoningContent": {
          const text = objectOr(value.reasoningText)
          if (text.text !== undefined) {
            const thought = stringOr(text.text) ?? ""
            if (model.provider === "anthropic" && text.signature !== thinkingSignature(thought)) {
              return modelRefusal(`messages.${index}.content.${position}: Invalid \`signature\` in \`thinking\` block`)
            }
            pushText(thought)
          }
          break
        }
      }
    }
    if (role === "assistant") {
      toolResults = []
      continue
    }
    toolResults = results
    if (messageTexts.length > 0 || messageImages.length > 0) {
      lastUserText = messageTexts.join(" ")
      images = messageImages
    }
  }
  if (usesTools && toolConfig === undefined) {
    return invalid("The toolConfig field must be defined when using toolUse and toolResult content blocks.")
  }

  const inference = objectOr(body.inferenceConfig)
  const maxTokens = inference.maxTokens
  if (maxTokens !== undefined && (!Number.isSafeInteger(maxTokens) || (maxTokens as number) < 1)) {
    return constraint(maxTokens, "inferenceConfig.maxTokens", "Member must have value greater than or equal to 1")
  }
  for (const name of ["temperature", "topP"]) {
    const value = inference[name]
    if (value !== undefined && (typeof value !== "number" || value < 0 || value > 1)) {
      return constraint(value, `inferenceConfig.${name}`, "Member must have value less than or equal to 1")
    }
  }
  const stops = inference.stopSequences
  if (stops !== undefined && (!Array.isArray(stops) || stops.length > 4 || stops.some((s) => typeof s !== "string"))) {
    return constraint(stops, "inferenceConfig.stopSequences", "Member must have length less than or equal to 4")
  }
  if (model.provider === "anthropic" && stringOr(objectOr(fields.thinking).type) === "enabled") {
    const budget = numberOr(objectOr(fields.thinking).budget_tokens)
    if (budget === undefined) return modelRefusal("thinking.enabled.budget_tokens: Field required")
    if (budget < 1024) {
      return modelRefusal("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
    }
    if (maxTokens !== undefined && budget >= (maxTokens as number)) {
      return modelRefusal("`max_tokens` must be greater than `thinking.budget_tokens`.")
    }
  }
  return {
    prompt: {
      lastUserText,
      images,
      toolResults,
      tools,
      toolChoice,
      reasoning,
      outputSchema: undefined,
      maxTokens: numberOr(maxTokens),
      stop: arrayOr(stops).filter((stop): stop is string => typeof stop === "string"),
      texts,
      messageCount: messages.length
    },
    cachePrefix
  }
}

const stopReasonOf = (result: Answer): string => {
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

/** Cache reads and writes of one request: by cache point when it has one, else the word triggers of `Answer.ts`. */
const cacheUse = (
  context: RouteContext,
  read: ConversePrompt,
  result: Answer
): { readonly read: number; readonly written: number; readonly reported: boolean } => {
  const prefix = read.cachePrefix
  if (prefix === undefined) {
    const reported = result.cachedTokens > 0 || result.cacheWriteTokens > 0
    return { read: result.cachedTokens, written: result.cacheWriteTokens, reported }
  }
  const tokens = Math.min(
    result.promptTokens,
    promptTokens({ ...read.prompt, texts: prefix.texts, messageCount: prefix.messages }).prompt
  )
  const seen = context.prompts?.seen
  if (seen === undefined || tokens === 0) return { read: 0, written: 0, reported: true }
  if (seen.has(prefix.key)) return { read: tokens, written: 0, reported: true }
  if (seen.size >= (context.prompts?.limit ?? 0)) seen.clear()
  seen.add(prefix.key)
  return { read: 0, written: tokens, reported: true }
}

/** The `usage` object of an answer. */
const usageOf = (result: Answer, cache: ReturnType<typeof cacheUse>): JsonObject => {
  const input = result.promptTokens - cache.read - cache.written
  return {
    inputTokens: input,
    outputTokens: result.outputTokens,
    totalTokens: result.promptTokens + result.outputTokens,
    ...(cache.reported ? { cacheReadInputTokens: cache.read, cacheWriteInputTokens: cache.written } : {})
  }
}

/** The model a Converse path names, or the refusal for one Converse does not serve. */
const converseModel = (context: RouteContext): BedrockModel | Reply => {
  const model = bedrockModelOf(context.model)
  if (model === undefined) return invalid(INVALID_MODEL_MESSAGE)
  if (isEmbeddingModel(model)) return invalid(CONVERSE_UNSUPPORTED_MESSAGE)
  return model
}

/**
 * Handles Converse (`stream` false: a JSON answer) and ConverseStream (`stream` true: event-stream frames), as the
 * module doc describes.
 *
 * @category routes
 */
export const bedrockConverse = async (context: RouteContext, stream: boolean): Promise<Reply> => {
  const model = converseModel(context)
  if (isReply(model)) return model
  const read = readConverse(context.body, model)
  if (isReply(read)) return read
  const result = answer(read.prompt, context.toolCalls)
  const cache = cacheUse(context, read, result)
  const usage = usageOf(result, cache)
  const metrics = { latencyMs: 10 * (1 + result.outputTokens) }
  const stopReason = stopReasonOf(result)
  const toolIds = result.toolCalls.map(() => context.ids.next("tooluse_"))
  const signature = result.reasoning === undefined ? "" : thinkingSignature(result.reasoning)
  const content: Array<JsonObject> = []
  if (result.reasoning !== undefined) {
    content.push({ reasoningContent: { reasoningText: { text: result.reasoning, signature } } })
  }
  if (result.toolCalls.length === 0) content.push({ text: result.text })
  result.toolCalls.forEach((call, index) =>
    content.push({ toolUse: { toolUseId: toolIds[index], name: call.name, input: call.input } })
  )
  if (!stream) {
    return jsonReply({ output: { message: { role: "assistant", content } }, stopReason, usage, metrics })
  }
  const writer = await frameWriter()
  const frames: Array<Uint8Array<ArrayBuffer>> = [writer.event("messageStart", { role: "assistant" })]
  content.forEach((block, contentBlockIndex) => {
    const delta = (value: JsonObject) =>
      frames.push(writer.event("contentBlockDelta", { contentBlockIndex, delta: value }))
    if (block.reasoningContent !== undefined) {
      for (const word of result.reasoningWords) delta({ reasoningContent: { text: word } })
      delta({ reasoningContent: { signature } })
    } else if (block.text !== undefined) {
      for (const word of result.words) delta({ text: word })
    } else {
      const use = objectOr(block.toolUse)
      frames.push(writer.event("contentBlockStart", {
        contentBlockIndex,
        start: { toolUse: { toolUseId: use.toolUseId, name: use.name } }
      }))
      for (const fragment of argumentFragments(JSON.stringify(use.input))) delta({ toolUse: { input: fragment } })
    }
    frames.push(writer.event("contentBlockStop", { contentBlockIndex }))
  })
  frames.push(writer.event("messageStop", { stopReason }), writer.event("metadata", { usage, metrics }))
  return { _tag: "Events", contentType: EVENT_STREAM_CONTENT_TYPE, frames }
}
