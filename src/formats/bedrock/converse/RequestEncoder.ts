/**
 * The canonical request as a Bedrock Converse body (`POST /model/{modelId}/converse` and `/converse-stream`; the model
 * id is in the path, so the body has none). Field names and shapes from the API reference
 * (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html) and the SDK's types
 * (`@aws-sdk/client-bedrock-runtime` `models_0.d.ts`: `Message`, `ContentBlock`, `SystemContentBlock`,
 * `InferenceConfiguration`, `ToolConfiguration`, `ReasoningContentBlock`, `OutputConfig`; `enums.d.ts`:
 * `ImageFormat`, `DocumentFormat`). Binary fields (`image.source.bytes`, `document.source.bytes`,
 * `reasoningContent.redactedContent`) are Base64 text in the JSON wire, as the SDK's serializer writes blobs.
 *
 * @since 0.1.0
 */
import type { FilePart, ImagePart, MediaSource, Part, ReasoningPart, TextPart } from "../../../canonical/Content.ts"
import { parseDataUri } from "../../../canonical/DataUri.ts"
import type { Message, Request } from "../../../canonical/Request.ts"
import { parseJsonOrUndefined } from "../../../domain/JsonDepth.ts"
import { encodeRequest as encodeMessagesRequest } from "../../anthropic/messages/RequestEncoder.ts"
import type { EncodedRequest } from "../../Format.ts"
import { cacheOfPart, keptCacheBreakpoints, ttlField } from "../../shared/CacheBreakpoints.ts"
import { isForeignReasoning } from "../../shared/ReasoningOrigin.ts"

type Block = Record<string, unknown>

/**
 * Where a Bedrock model takes `cachePoint` blocks (docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html,
 * "Supported models, Regions, and limits"): Claude 3.5 Haiku, 3.7 Sonnet and the Claude 4 family in `system`, message
 * `content` and `toolConfig.tools`; Amazon Nova in `system` and message `content` only. Any other model refuses a cache
 * point outright ("You invoked an unsupported model or your request did not allow prompt caching",
 * github.com/BerriAI/litellm/pull/39210), so it gets none. Claude 3 Haiku, Sonnet and Opus, 3.5 Sonnet (only ever in
 * preview), Claude 2 and Instant are among those.
 *
 * @category predicates
 */
export const cachePointFields = (modelId: string): { readonly content: boolean; readonly tools: boolean } => {
  if (isAnthropicModel(modelId)) {
    const old = /anthropic\.claude-(?:v2|instant|3-(?:opus|sonnet|haiku)|3-5-sonnet)/.test(modelId)
    return { content: !old, tools: !old }
  }
  return /amazon\.nova-/.test(modelId) ? { content: true, tools: false } : { content: false, tools: false }
}

/** The breakpoints this request sends as `cachePoint` blocks: the kept ones (`keptCacheBreakpoints`) the model takes. */
interface CachePlan {
  readonly kept: ReadonlySet<object>
  readonly content: boolean
  readonly tools: boolean
}

const cachePlanOf = (request: Request): CachePlan => ({
  kept: keptCacheBreakpoints(request).kept,
  ...cachePointFields(request.model)
})

/** `{cachePoint: {type: "default", ttl?}}` (SDK `CachePointBlock`: `type` `default`, optional `ttl` `5m` | `1h`). */
const cachePoint = (cache: { readonly ttl?: "5m" | "1h" | undefined }): Block => ({
  cachePoint: { type: "default", ...ttlField(cache) }
})

/**
 * The breakpoint that follows `part` in Converse, if one is sent: its own, or (a tool result, whose inner blocks cannot
 * hold a cache point) the last kept one of its content.
 */
const breakpointAfter = (part: Part, plan: CachePlan): Block | undefined => {
  if (!plan.content) return undefined
  const own = cacheOfPart(part)
  if (own !== undefined && plan.kept.has(part)) return cachePoint(own)
  if (part.type !== "tool-result") return undefined
  const inner = part.content.findLast((item) => item.cache !== undefined && plan.kept.has(item))
  return inner?.cache === undefined ? undefined : cachePoint(inner.cache)
}

/**
 * `blocks` with `point` appended, when there is one and something before it to cache (a cache point never opens a
 * list, nor follows another).
 */
const pushPoint = (blocks: Array<Block>, point: Block | undefined): void => {
  const last = blocks.at(-1)
  if (point !== undefined && last !== undefined && last.cachePoint === undefined) blocks.push(point)
}

/**
 * Whether a Bedrock model id or inference profile serves an Anthropic model (`anthropic.claude-…`,
 * `us.anthropic.claude-…`, an ARN holding either).
 *
 * @category predicates
 */
export const isAnthropicModel = (modelId: string): boolean => modelId.includes("anthropic.")

/**
 * Converse's image formats by media type (SDK `ImageFormat`: `gif`, `jpeg`, `png`, `webp`).
 *
 * @category constants
 */
export const IMAGE_FORMATS: Readonly<Record<string, string>> = {
  "image/gif": "gif",
  "image/jpeg": "jpeg",
  "image/jpg": "jpeg",
  "image/png": "png",
  "image/webp": "webp"
}

/**
 * Converse's document formats by media type (SDK `DocumentFormat`: `csv`, `doc`, `docx`, `html`, `md`, `pdf`, `txt`,
 * `xls`, `xlsx`).
 *
 * @category constants
 */
export const DOCUMENT_FORMATS: Readonly<Record<string, string>> = {
  "application/pdf": "pdf",
  "text/csv": "csv",
  "application/msword": "doc",
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
  "text/html": "html",
  "text/markdown": "md",
  "text/plain": "txt",
  "application/vnd.ms-excel": "xls",
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx"
}

/** A URL source that is really a Base64 `data:` URI becomes a Base64 source. */
const normalize = (source: MediaSource): MediaSource => {
  if (source.kind !== "url") return source
  const inline = parseDataUri(source.url)
  return inline === undefined ? source : { kind: "base64", mediaType: inline.mediaType, data: inline.data }
}

const imageBlock = (part: ImagePart): Block | undefined => {
  const source = normalize(part.source)
  if (source.kind !== "base64") return undefined
  const format = IMAGE_FORMATS[source.mediaType.toLowerCase()]
  return format === undefined ? undefined : { image: { format, source: { bytes: source.data } } }
}

/**
 * A document's `name`: "The name can only contain alphanumeric characters, whitespace characters, hyphens,
 * parentheses, and square brackets" and no consecutive whitespace (API reference, `DocumentBlock`); the file name
 * without its extension, other characters as `-`, or `document-{n}`.
 */
const documentName = (filename: string | undefined, index: number): string => {
  const stem = (filename ?? "").replace(/\.[^.]*$/, "").replace(/[^A-Za-z0-9\s\-()[\]]/g, "-").replace(/\s+/g, " ")
    .trim().slice(0, 200)
  return stem === "" ? `document-${index + 1}` : stem
}

const documentBlock = (part: FilePart, index: number): Block | undefined => {
  const source = normalize(part.source)
  if (source.kind !== "base64") return undefined
  const mediaType = source.mediaType.toLowerCase()
  if (mediaType.startsWith("image/")) return imageBlock({ type: "image", source })
  const format = DOCUMENT_FORMATS[mediaType]
  return format === undefined
    ? undefined
    : { document: { format, name: documentName(part.filename, index), source: { bytes: source.data } } }
}

/** Reasoning Converse can take back: Anthropic's (Claude on Bedrock mints it) or of no known origin, signed or redacted. */
const reasoningBlock = (part: ReasoningPart): Block | undefined => {
  if (isForeignReasoning(part, "anthropic")) return undefined
  if (part.redacted !== undefined) return { reasoningContent: { redactedContent: part.redacted } }
  if (part.signature === undefined || part.signature === "") return undefined
  return { reasoningContent: { reasoningText: { text: part.text, signature: part.signature } } }
}

const parseInput = (text: string): unknown => {
  const parsed = parseJsonOrUndefined(text.trim() === "" ? "{}" : text)
  return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? parsed : undefined
}

/**
 * Converse refuses a text block that is empty or blank ("text content blocks must be non-empty", a ValidationException,
 * github.com/NousResearch/hermes-agent/pull/55093), so such text is left out.
 */
const textBlock = (part: TextPart): Block | undefined => part.text.trim() === "" ? undefined : { text: part.text }

/**
 * The text of a tool result that holds nothing Converse can carry (a tool that returned nothing): `toolResult.content`
 * must hold a block and a text block must not be blank. Sluice's choice of words.
 *
 * @category constants
 */
export const EMPTY_TOOL_RESULT = "(empty result)"

/** One canonical part → one content block, or nothing when Converse cannot carry it (see `droppedFields`). */
const blockOf = (part: Part, documents: { count: number }): Block | undefined => {
  switch (part.type) {
    case "text":
      return textBlock(part)
    case "image":
      return imageBlock(part)
    case "file":
      return documentBlock(part, documents.count++)
    case "audio":
      return undefined
    case "reasoning":
      return reasoningBlock(part)
    case "tool-call": {
      const input = parseInput(part.arguments)
      return input === undefined ? undefined : { toolUse: { toolUseId: part.callId, name: part.name, input } }
    }
    case "tool-result": {
      const content = part.content.flatMap((item) => {
        const block = item.type === "text" ? textBlock(item) : imageBlock(item)
        return block === undefined ? [] : [block]
      })
      return {
        toolResult: {
          toolUseId: part.callId,
          content: content.length === 0 ? [{ text: EMPTY_TOOL_RESULT }] : content,
          ...(part.isError === true ? { status: "error" } : {})
        }
      }
    }
  }
}

/**
 * The conversation's turns: `tool` messages as user turns, consecutive turns of one role merged (Converse alternates);
 * a kept breakpoint becomes a `cachePoint` block after its block (after the block before it when its own is left out).
 */
const messagesOf = (messages: ReadonlyArray<Message>, plan: CachePlan): Array<Block> => {
  const documents = { count: 0 }
  const turns: Array<{ role: "user" | "assistant"; content: Array<Block> }> = []
  for (const message of messages) {
    if (message.role === "system") continue
    const role = message.role === "assistant" ? "assistant" : "user"
    const last = turns.at(-1)
    const merged = last !== undefined && last.role === role
    const content: Array<Block> = merged ? last.content : []
    for (const part of message.content) {
      const block = blockOf(part, documents)
      if (block !== undefined) content.push(block)
      pushPoint(content, breakpointAfter(part, plan))
    }
    if (!merged && content.length > 0) turns.push({ role, content })
  }
  return turns
}

/**
 * What Bedrock takes in `requestMetadata`: keys and values of letters, digits, whitespace and `:_@$#=/+,-.`, keys 1 to
 * 256 characters and values up to 256 (Bedrock's validation message, "Map value must satisfy … regex pattern:
 * [a-zA-Z0-9\s:_@$#=/+,-.]{0,256}", quoted in github.com/agentgateway/agentgateway/issues/1737); one entry outside it
 * fails the whole call, so such entries are left out.
 */
const METADATA_KEY = /^[a-zA-Z0-9\s:_@$#=/+,.-]{1,256}$/
const METADATA_VALUE = /^[a-zA-Z0-9\s:_@$#=/+,.-]{0,256}$/

const requestMetadataOf = (metadata: Request["metadata"]): Record<string, string> =>
  Object.fromEntries(
    Object.entries(metadata ?? {}).filter(([key, value]) => METADATA_KEY.test(key) && METADATA_VALUE.test(value))
  )

/** System messages' text → `system` text blocks, a `cachePoint` after each with a kept breakpoint. */
const systemOf = (messages: ReadonlyArray<Message>, plan: CachePlan): Array<Block> => {
  const blocks: Array<Block> = []
  for (const message of messages) {
    if (message.role !== "system") continue
    for (const part of message.content) {
      if (part.type !== "text") continue
      if (part.text !== "") blocks.push({ text: part.text })
      pushPoint(blocks, breakpointAfter(part, plan))
    }
  }
  return blocks
}

const toolConfigOf = (request: Request, plan: CachePlan): Block | undefined => {
  const tools: Array<Block> = []
  for (const tool of request.tools ?? []) {
    if (tool.type !== "function") continue
    tools.push({
      toolSpec: {
        name: tool.name,
        ...(tool.description === undefined || tool.description === "" ? {} : { description: tool.description }),
        inputSchema: { json: tool.parameters }
      }
    })
    if (plan.tools && tool.cache !== undefined && plan.kept.has(tool)) pushPoint(tools, cachePoint(tool.cache))
  }
  if (tools.length === 0) return undefined
  const choice = request.toolChoice
  const toolChoice = choice === undefined || choice.type === "none"
    ? undefined
    : choice.type === "auto"
    ? { auto: {} }
    : choice.type === "required"
    ? { any: {} }
    : { tool: { name: choice.name } }
  return { tools, ...(toolChoice === undefined ? {} : { toolChoice }) }
}

/**
 * What Converse has no field for but an Anthropic model takes in its own body (`additionalModelRequestFields`, "Additional
 * inference parameters that the model supports", API reference): the Messages API's `thinking` (planned by the
 * messages encoder's rule, so a budget is fitted under the output cap as it would be there) and `top_k`
 * (docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages.html). Empty for other
 * models.
 */
interface AdditionalFields {
  readonly fields: Block
  /** Claude's thinking is on (enabled or adaptive). */
  readonly thinkingOn: boolean
  /** The output cap the thinking budget was fitted under (the messages encoder's `max_tokens`). */
  readonly cap: number | undefined
  /** An effort level the messages encoder would send as `output_config.effort` (Converse has no field for it). */
  readonly effortDropped: boolean
}

const additionalFieldsOf = (request: Request): AdditionalFields => {
  if (!isAnthropicModel(request.model)) return { fields: {}, thinkingOn: false, cap: undefined, effortDropped: false }
  const messages = encodeMessagesRequest(request).body
  const thinking = messages.thinking as { readonly type?: unknown } | undefined
  const thinkingOn = thinking !== undefined && thinking.type !== "disabled"
  const outputConfig = messages.output_config as { readonly effort?: unknown } | undefined
  return {
    fields: {
      ...(thinking === undefined ? {} : { thinking }),
      ...(request.topK === undefined || thinkingOn ? {} : { top_k: request.topK })
    },
    thinkingOn,
    cap: typeof messages.max_tokens === "number" ? messages.max_tokens : undefined,
    effortDropped: outputConfig?.effort !== undefined
  }
}

/**
 * The canonical fields Converse cannot carry for `request` (each named once): `image.url` (a URL image left un-inlined:
 * Converse takes bytes only), `image.format`, `file` (a URL file or a type Converse has no document format for),
 * `audio`, `reasoning.foreignSignature`, `reasoning.unsigned` (reasoning text without a signature: Converse takes back
 * only signed reasoning), `toolCall.arguments` (not a JSON object), `tools.builtin`, `toolChoice.none` (Converse has no
 * such choice: the tools are sent, no choice with them), `parallelToolCalls`, `seed`, `presencePenalty`,
 * `frequencyPenalty`, `responseFormat.json_object`, `metadata` (an entry Bedrock's `requestMetadata` refuses), `topK` (a model other than Anthropic's, or with thinking on),
 * `reasoning` (a model other than Anthropic's), `reasoning.effort` (Claude's `output_config.effort`, which Converse has no
 * field for), `user`, `store`, `include`, `verbosity`, `cache` (prompt-cache breakpoints for a model that takes no cache
 * point, `cachePointFields`), `cache.tools` (a breakpoint on a tool for a model that takes cache points only in system
 * and messages: Nova), `cache.overLimit` (breakpoints beyond the four sent, `keptCacheBreakpoints`).
 *
 * @category encoding
 */
export const droppedFields = (request: Request): ReadonlyArray<string> =>
  droppedWith(request, additionalFieldsOf(request))

const droppedWith = (request: Request, additional: AdditionalFields): ReadonlyArray<string> => {
  const breakpoints = keptCacheBreakpoints(request)
  const cacheFields = cachePointFields(request.model)
  const toolMarked = (request.tools ?? []).some((tool) => tool.type === "function" && tool.cache !== undefined)
  const parts = request.messages.flatMap((message) => message.content)
  const nested = parts.flatMap((part) => part.type === "tool-result" ? part.content : [])
  const images = [...parts, ...nested].filter((part): part is ImagePart => part.type === "image")
  const anthropic = isAnthropicModel(request.model)
  const thinkingOn = additional.thinkingOn
  const checks: ReadonlyArray<readonly [string, boolean]> = [
    ["image.url", images.some((part) => normalize(part.source).kind === "url")],
    ["image.format", images.some((part) => imageBlock(part) === undefined && normalize(part.source).kind !== "url")],
    ["file", parts.some((part) => part.type === "file" && documentBlock(part, 0) === undefined)],
    ["audio", parts.some((part) => part.type === "audio")],
    ["reasoning.foreignSignature", parts.some((part) => isForeignReasoning(part, "anthropic"))],
    [
      "reasoning.unsigned",
      parts.some((part) =>
        part.type === "reasoning" && !isForeignReasoning(part, "anthropic") && reasoningBlock(part) === undefined &&
        part.text !== ""
      )
    ],
    ["toolCall.arguments", parts.some((part) => part.type === "tool-call" && parseInput(part.arguments) === undefined)],
    ["tools.builtin", (request.tools ?? []).some((tool) => tool.type === "builtin")],
    ["toolChoice.none", request.toolChoice?.type === "none"],
    ["parallelToolCalls", request.parallelToolCalls !== undefined],
    ["seed", request.seed !== undefined],
    ["presencePenalty", request.presencePenalty !== undefined],
    ["frequencyPenalty", request.frequencyPenalty !== undefined],
    ["responseFormat.json_object", request.responseFormat?.type === "json_object"],
    ["topK", request.topK !== undefined && (!anthropic || thinkingOn)],
    ["reasoning", request.reasoning !== undefined && !anthropic],
    ["reasoning.effort", additional.effortDropped],
    ["user", request.user !== undefined],
    [
      "metadata",
      Object.keys(requestMetadataOf(request.metadata)).length < Object.keys(request.metadata ?? {}).length
    ],
    ["store", request.store !== undefined],
    ["include", request.include !== undefined && request.include.length > 0],
    ["verbosity", request.verbosity !== undefined],
    ["cache", !cacheFields.content && breakpoints.kept.size > 0],
    ["cache.tools", cacheFields.content && !cacheFields.tools && toolMarked],
    ["cache.overLimit", cacheFields.content && breakpoints.overLimit > 0]
  ]
  return checks.filter(([, dropped]) => dropped).map(([name]) => name)
}

/**
 * Encodes a canonical request as a Converse body: system messages → `system` text blocks; `tool` messages → user
 * turns of `toolResult` blocks (`status: "error"` for an error result); consecutive turns of one role merged; images
 * and documents as Base64 `bytes` (URL media must have been made inline: a Bedrock channel inlines images by default);
 * tool calls → `toolUse` with `input` parsed from the arguments; reasoning → `reasoningContent` (`reasoningText` with
 * its `signature`, or `redactedContent`) when Anthropic-minted or of unknown origin; `inferenceConfig` from
 * `maxOutputTokens`, `temperature`, `topP`, `stopSequences` (`temperature`/`topP` left out with Claude's thinking on,
 * which refuses them); function tools → `toolConfig` (`auto` → `{auto}`, `required` → `{any}`, a named tool →
 * `{tool: {name}}`); a JSON-schema response format → `outputConfig.textFormat` (`type: "json_schema"`, the schema as
 * JSON text); `metadata` → `requestMetadata` (the entries it takes); Anthropic-only fields in `additionalModelRequestFields`;
 * prompt-cache breakpoints (at most four, the last ones: `keptCacheBreakpoints`) → a `cachePoint` block (`type:
 * "default"`, `ttl` when given) right after the marked block in `system`, in a message's `content` (after a tool
 * result whose content holds one) and in `toolConfig.tools`, where the model takes them (`cachePointFields`). `dropped`
 * lists what could not be carried (`droppedFields`).
 *
 * @category encoding
 */
export const encodeConverseRequest = (request: Request): EncodedRequest => {
  const plan = cachePlanOf(request)
  const system = systemOf(request.messages, plan)
  const additional = additionalFieldsOf(request)
  const inferenceConfig = {
    // With thinking on, the cap its budget was fitted under is sent even when the request named none.
    ...(request.maxOutputTokens !== undefined
      ? { maxTokens: request.maxOutputTokens }
      : additional.thinkingOn && additional.cap !== undefined
      ? { maxTokens: additional.cap }
      : {}),
    ...(request.temperature === undefined || additional.thinkingOn ? {} : { temperature: request.temperature }),
    ...(request.topP === undefined || additional.thinkingOn ? {} : { topP: request.topP }),
    ...(request.stopSequences === undefined || request.stopSequences.length === 0
      ? {}
      : { stopSequences: [...request.stopSequences] })
  }
  const toolConfig = toolConfigOf(request, plan)
  const format = request.responseFormat
  const requestMetadata = requestMetadataOf(request.metadata)
  const body: Record<string, unknown> = {
    messages: messagesOf(request.messages, plan),
    ...(system.length === 0 ? {} : { system }),
    ...(Object.keys(inferenceConfig).length === 0 ? {} : { inferenceConfig }),
    ...(toolConfig === undefined ? {} : { toolConfig }),
    ...(format?.type === "json_schema"
      ? {
        outputConfig: {
          textFormat: {
            type: "json_schema",
            structure: {
              jsonSchema: {
                schema: JSON.stringify(format.schema),
                name: format.name,
                ...(format.description === undefined ? {} : { description: format.description })
              }
            }
          }
        }
      }
      : {}),
    ...(Object.keys(additional.fields).length === 0 ? {} : { additionalModelRequestFields: additional.fields }),
    ...(Object.keys(requestMetadata).length === 0 ? {} : { requestMetadata })
  }
  return { body, dropped: droppedWith(request, additional) }
}
