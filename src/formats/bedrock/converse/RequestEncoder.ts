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
import { isForeignReasoning } from "../../shared/ReasoningOrigin.ts"

type Block = Record<string, unknown>

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

/** The conversation's turns: `tool` messages as user turns, consecutive turns of one role merged (Converse alternates). */
const messagesOf = (messages: ReadonlyArray<Message>): Array<Block> => {
  const documents = { count: 0 }
  const turns: Array<{ role: "user" | "assistant"; content: Array<Block> }> = []
  for (const message of messages) {
    if (message.role === "system") continue
    const role = message.role === "assistant" ? "assistant" : "user"
    const content = message.content.flatMap((part) => {
      const block = blockOf(part, documents)
      return block === undefined ? [] : [block]
    })
    if (content.length === 0) continue
    const last = turns[turns.length - 1]
    if (last !== undefined && last.role === role) last.content.push(...content)
    else turns.push({ role, content })
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

const systemOf = (messages: ReadonlyArray<Message>): Array<Block> =>
  messages.filter((message) => message.role === "system").flatMap((message) =>
    message.content.flatMap((part) => part.type === "text" && part.text !== "" ? [{ text: part.text }] : [])
  )

const toolConfigOf = (request: Request): Block | undefined => {
  const tools = (request.tools ?? []).flatMap((tool) =>
    tool.type !== "function" ? [] : [{
      toolSpec: {
        name: tool.name,
        ...(tool.description === undefined || tool.description === "" ? {} : { description: tool.description }),
        inputSchema: { json: tool.parameters }
      }
    }]
  )
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
 * field for), `user`, `store`, `include`, `verbosity`.
 *
 * @category encoding
 */
export const droppedFields = (request: Request): ReadonlyArray<string> =>
  droppedWith(request, additionalFieldsOf(request))

const droppedWith = (request: Request, additional: AdditionalFields): ReadonlyArray<string> => {
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
    ["verbosity", request.verbosity !== undefined]
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
 * JSON text); `metadata` → `requestMetadata` (the entries it takes); Anthropic-only fields in `additionalModelRequestFields`. `dropped`
 * lists what could not be carried (`droppedFields`).
 *
 * @category encoding
 */
export const encodeConverseRequest = (request: Request): EncodedRequest => {
  const system = systemOf(request.messages)
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
  const toolConfig = toolConfigOf(request)
  const format = request.responseFormat
  const requestMetadata = requestMetadataOf(request.metadata)
  const body: Record<string, unknown> = {
    messages: messagesOf(request.messages),
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
