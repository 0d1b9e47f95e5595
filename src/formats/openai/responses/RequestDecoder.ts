/**
 * Inbound half, requests: a caller's `POST /v1/responses` body → canonical
 * `Request` (spec "Text: responses format"; field shapes from the SDK types
 * `ResponseCreateParamsBase`, `ResponseInputItem`, `EasyInputMessage`,
 * `ResponseInputText`, `ResponseInputImage`, `ResponseInputFile`,
 * `ResponseInputAudio`, `ResponseFunctionToolCall`,
 * `ResponseInputItem.FunctionCallOutput`, `ResponseReasoningItem`,
 * `FunctionTool`, `ToolChoiceFunction`, `ResponseTextConfig`,
 * `Shared.Reasoning` in `openai@7.57.0`).
 *
 * Decisions:
 * - `input` may be a string (one user message) or a list of items; an absent
 *   `input` is an empty conversation (the route may add stored history for
 *   `previous_response_id`).
 * - `instructions` becomes a system message placed first.
 * - Consecutive assistant items (`message` with role `assistant`,
 *   `function_call`, `reasoning`) merge into one assistant message, and
 *   consecutive `function_call_output` items into one tool message; a tool
 *   result's `name` is recovered from the `function_call` with the same
 *   `call_id` earlier in the input.
 * - A `reasoning` item becomes a reasoning part: its summaries joined with a
 *   blank line (or, when it has none, its `content` texts), `encrypted_content`
 *   as the signature: `sluice.<origin>.<token>` names another vendor's token
 *   (as the gateway wrote it), `sluice.<origin>.redacted.<data>` is redacted
 *   data, any other value is OpenAI's; an empty one is none
 *   (`ReasoningOrigin.ts`). Its `id` is not kept (the canonical form has
 *   no place).
 * - What only a Responses upstream can take is kept out of the canonical
 *   messages and listed as `Request.untranslatable` (a same-format channel
 *   gets it as sent; a translation is refused naming it): references to
 *   objects stored at OpenAI (`item_reference` items, `file_id` on images and
 *   files), items and content parts of other types (`computer_call_output`,
 *   `mcp_approval_response`, files in a `function_call_output`, …), and
 *   `tool_choice` forms other than `auto` / `none` / `required` /
 *   `{type: "function" | "custom", name}` (hosted-tool, `allowed_tools` and MCP
 *   choices), and new values of known fields (a message role, reasoning effort
 *   or summary, tool choice, text format type or verbosity the decoder does
 *   not model; `NewValues.ts`).
 * - Replayed hosted tool calls (`web_search_call`, `file_search_call`,
 *   `code_interpreter_call`, `image_generation_call`, `mcp_call`,
 *   `mcp_list_tools`) are records of what the vendor ran, whose outcome the
 *   following message carries: left out of the canonical messages, so a
 *   translation drops them, and a same-format channel gets them as sent.
 * - A `function_call_output` needs its `call_id` (optional in the SDK type,
 *   but without it the result cannot be paired with its call).
 * - `store`, `include`, `text.verbosity` and `stream_options.include_obfuscation`
 *   are carried (canonical `store`, `include`, `verbosity`,
 *   `includeObfuscation`), so a translated request keeps them where the target
 *   can say them.
 * - Ignored on purpose: `previous_response_id`, `truncation`,
 *   `service_tier`, `background`, `conversation`, `prompt`, `prompt_cache_key`,
 *   `safety_identifier`, `top_logprobs`, `max_tool_calls` (not canonical; the
 *   route reads `store` and `previous_response_id` itself).
 *
 * @since 0.1.0
 */
import { Result, Schema } from "effect"
import type {
  ImagePart,
  Part,
  ReasoningPart,
  TextPart,
  ToolCallPart,
  ToolResultPart
} from "../../../canonical/Content.ts"
import type {
  Message,
  ReasoningConfig,
  Request,
  ResponseFormat,
  Tool,
  ToolChoice,
  Untranslatable
} from "../../../canonical/Request.ts"
import { safeVendorText } from "../../../domain/Redact.ts"
import { InvalidRequest } from "../../../errors/GatewayError.ts"
import type { Decoded } from "../../Format.ts"
import { reasoningFromOpaqueToken } from "../../shared/ReasoningOrigin.ts"
import { makeWireDecoder, rebase } from "../../shared/WireDecode.ts"
import { setAsideNewValues, type ValuePosition, withNewValues } from "../../shared/NewValues.ts"
import { effortFromWire, mediaSourceOf } from "./WireSchema.ts"

const Body = Schema.Struct({
  model: Schema.String,
  input: Schema.optional(Schema.NullOr(Schema.Union([Schema.String, Schema.Array(Schema.Unknown)]))),
  instructions: Schema.optional(Schema.NullOr(Schema.String)),
  tools: Schema.optional(Schema.NullOr(Schema.Array(Schema.Unknown))),
  tool_choice: Schema.optional(Schema.NullOr(Schema.Unknown)),
  parallel_tool_calls: Schema.optional(Schema.NullOr(Schema.Boolean)),
  max_output_tokens: Schema.optional(Schema.NullOr(Schema.Int)),
  temperature: Schema.optional(Schema.NullOr(Schema.Finite)),
  top_p: Schema.optional(Schema.NullOr(Schema.Finite)),
  text: Schema.optional(Schema.NullOr(Schema.Struct({
    format: Schema.optional(Schema.NullOr(Schema.Unknown)),
    verbosity: Schema.optional(Schema.NullOr(Schema.Literals(["low", "medium", "high"])))
  }))),
  reasoning: Schema.optional(Schema.NullOr(Schema.Struct({
    effort: Schema.optional(
      Schema.NullOr(Schema.Literals(["none", "minimal", "low", "medium", "high", "xhigh", "max"]))
    ),
    summary: Schema.optional(Schema.NullOr(Schema.Literals(["auto", "concise", "detailed"]))),
    generate_summary: Schema.optional(Schema.NullOr(Schema.Literals(["auto", "concise", "detailed"])))
  }))),
  metadata: Schema.optional(Schema.NullOr(Schema.Record(Schema.String, Schema.String))),
  user: Schema.optional(Schema.NullOr(Schema.String)),
  stream: Schema.optional(Schema.NullOr(Schema.Boolean)),
  store: Schema.optional(Schema.NullOr(Schema.Boolean)),
  include: Schema.optional(Schema.NullOr(Schema.Array(Schema.String))),
  stream_options: Schema.optional(Schema.NullOr(Schema.Struct({
    include_obfuscation: Schema.optional(Schema.NullOr(Schema.Boolean))
  })))
})

const Typed = Schema.Struct({ type: Schema.optional(Schema.NullOr(Schema.String)) })

const MessageItem = Schema.Struct({
  role: Schema.Literals(["user", "system", "developer", "assistant"]),
  content: Schema.Union([Schema.String, Schema.Array(Schema.Unknown)])
})
const FunctionCallItem = Schema.Struct({ call_id: Schema.String, name: Schema.String, arguments: Schema.String })
const CustomToolCallItem = Schema.Struct({ call_id: Schema.String, name: Schema.String, input: Schema.String })
const CustomToolDefinition = Schema.Struct({
  name: Schema.String,
  description: Schema.optional(Schema.NullOr(Schema.String)),
  format: Schema.optional(Schema.NullOr(Schema.Struct({
    type: Schema.String,
    syntax: Schema.optional(Schema.NullOr(Schema.String)),
    definition: Schema.optional(Schema.NullOr(Schema.String))
  })))
})
const FunctionCallOutputItem = Schema.Struct({
  call_id: Schema.String,
  output: Schema.Union([Schema.String, Schema.Array(Schema.Unknown)])
})
const TextEntry = Schema.Struct({ text: Schema.String })
const ReasoningItem = Schema.Struct({
  summary: Schema.optional(Schema.NullOr(Schema.Array(TextEntry))),
  content: Schema.optional(Schema.NullOr(Schema.Array(TextEntry))),
  encrypted_content: Schema.optional(Schema.NullOr(Schema.String))
})

const TextContent = Schema.Struct({ text: Schema.String })
const RefusalContent = Schema.Struct({ refusal: Schema.String })
const ImageContent = Schema.Struct({
  image_url: Schema.optional(Schema.NullOr(Schema.String)),
  file_id: Schema.optional(Schema.NullOr(Schema.String)),
  detail: Schema.optional(Schema.NullOr(Schema.Literals(["auto", "low", "high", "original"])))
})
const FileContent = Schema.Struct({
  file_data: Schema.optional(Schema.NullOr(Schema.String)),
  file_url: Schema.optional(Schema.NullOr(Schema.String)),
  file_id: Schema.optional(Schema.NullOr(Schema.String)),
  filename: Schema.optional(Schema.NullOr(Schema.String))
})
const AudioContent = Schema.Struct({
  input_audio: Schema.Struct({ data: Schema.String, format: Schema.String })
})

const FunctionToolDefinition = Schema.Struct({
  name: Schema.String,
  description: Schema.optional(Schema.NullOr(Schema.String)),
  parameters: Schema.optional(Schema.NullOr(Schema.Record(Schema.String, Schema.Unknown))),
  strict: Schema.optional(Schema.NullOr(Schema.Boolean))
})
const ObjectValue = Schema.Record(Schema.String, Schema.Unknown)
const NamedChoice = Schema.Struct({ type: Schema.Literals(["function", "custom"]), name: Schema.String })
const JsonSchemaFormat = Schema.Struct({
  name: Schema.String,
  schema: Schema.Record(Schema.String, Schema.Unknown),
  strict: Schema.optional(Schema.NullOr(Schema.Boolean)),
  description: Schema.optional(Schema.NullOr(Schema.String))
})

const decoders = {
  body: makeWireDecoder(Body),
  typed: makeWireDecoder(Typed),
  message: makeWireDecoder(MessageItem),
  functionCall: makeWireDecoder(FunctionCallItem),
  functionCallOutput: makeWireDecoder(FunctionCallOutputItem),
  customToolCall: makeWireDecoder(CustomToolCallItem),
  customTool: makeWireDecoder(CustomToolDefinition),
  reasoning: makeWireDecoder(ReasoningItem),
  text: makeWireDecoder(TextContent),
  refusal: makeWireDecoder(RefusalContent),
  image: makeWireDecoder(ImageContent),
  file: makeWireDecoder(FileContent),
  audio: makeWireDecoder(AudioContent),
  functionTool: makeWireDecoder(FunctionToolDefinition),
  object: makeWireDecoder(ObjectValue),
  namedChoice: makeWireDecoder(NamedChoice),
  jsonSchema: makeWireDecoder(JsonSchemaFormat)
}

type Refused<A> = Result.Result<A, InvalidRequest>

const refuse = (message: string, param: string): Refused<never> => Result.fail(new InvalidRequest({ message, param }))

/** Refuses a part or item at `path` whose `type` is missing (named as such) or is not one it reads (`unsupported`). */
const refuseType = (type: string | undefined, path: string, unsupported: string): Refused<never> =>
  type === undefined ? refuse(`${path}.type is missing.`, `${path}.type`) : refuse(unsupported, `${path}.type`)

/** Decodes `value` found at `prefix`, re-basing the failing field's path onto it. */
const expect = <A>(decode: (input: unknown) => Decoded<A>, value: unknown, prefix: string): Refused<A> =>
  Result.mapError(decode(value), (error) => {
    const rebased = rebase(error, prefix)
    return new InvalidRequest({ message: rebased.message, param: rebased.param ?? "" })
  })

const typeAt = (value: unknown, path: string): Refused<string | undefined> =>
  Result.map(expect(decoders.typed, value, path), (typed) => typed.type ?? undefined)

/** The parts `read` gives for `parts` (items named `path[i]`), in order, leaving out those it notes and drops. */
const partsOf = <P>(
  parts: ReadonlyArray<unknown>,
  path: string,
  read: (value: unknown, path: string) => Refused<P | undefined>
): Refused<ReadonlyArray<P>> =>
  Result.gen(function* () {
    const out: Array<P> = []
    for (const [position, value] of parts.entries()) {
      const part = yield* read(value, `${path}[${position}]`)
      if (part !== undefined) out.push(part)
    }
    return out
  })

/** Notes what only a Responses upstream can take (see the module doc) and gives no canonical part. */
const onlyResponses = (notes: Array<Untranslatable>, param: string, what: string): undefined => {
  notes.push({
    param,
    message: `${what} reach only a Responses upstream; this model's channel would need a translation, ` +
      "which cannot carry them."
  })
  return undefined
}

/** Rejects a missing `type`; notes a type this decoder does not read (see `onlyResponses`). */
const unmodeled = (
  notes: Array<Untranslatable>,
  type: string | undefined,
  path: string,
  what: string
): Refused<undefined> =>
  type === undefined
    ? refuse(`${path}.type is missing.`, `${path}.type`)
    : Result.succeed(onlyResponses(notes, path, `${what} of type "${safeVendorText(type, 40)}"`))

const userPart = (value: unknown, path: string, notes: Array<Untranslatable>): Refused<Part | undefined> =>
  Result.gen(function* () {
    const type = yield* typeAt(value, path)
    switch (type) {
      case "input_text":
        return { type: "text", text: (yield* expect(decoders.text, value, path)).text }
      case "input_image": {
        const image = yield* expect(decoders.image, value, path)
        if (typeof image.image_url !== "string") {
          return image.file_id
            ? onlyResponses(notes, `${path}.file_id`, "Images referenced by file_id (stored at the vendor)")
            : yield* refuse("An input_image needs an image_url or a file_id.", `${path}.image_url`)
        }
        return {
          type: "image",
          source: mediaSourceOf(image.image_url),
          ...(image.detail ? { detail: image.detail } : {})
        }
      }
      case "input_file": {
        const file = yield* expect(decoders.file, value, path)
        const filename = file.filename ? { filename: file.filename } : {}
        if (typeof file.file_data === "string") {
          const source = mediaSourceOf(file.file_data)
          if (source.kind === "base64") return { type: "file", source, ...filename }
          return {
            type: "file",
            source: { kind: "base64", mediaType: mediaTypeOfName(file.filename), data: file.file_data },
            ...filename
          }
        }
        if (typeof file.file_url === "string") {
          return { type: "file", source: { kind: "url", url: file.file_url }, ...filename }
        }
        return file.file_id
          ? onlyResponses(notes, `${path}.file_id`, "Files referenced by file_id (stored at the vendor)")
          : yield* refuse("An input_file needs file_data, file_url or file_id.", `${path}.file_data`)
      }
      case "input_audio": {
        const audio = (yield* expect(decoders.audio, value, path)).input_audio
        return { type: "audio", data: audio.data, format: audio.format }
      }
      case "output_text":
      case "refusal":
        return yield* refuse(`Content part type "${type}" belongs in an assistant message.`, `${path}.type`)
      default:
        return yield* unmodeled(notes, type, path, "Content parts")
    }
  })

const assistantPart = (value: unknown, path: string, notes: Array<Untranslatable>): Refused<TextPart | undefined> =>
  Result.gen(function* () {
    const type = yield* typeAt(value, path)
    switch (type) {
      case "output_text":
      case "input_text":
        return { type: "text", text: (yield* expect(decoders.text, value, path)).text }
      case "refusal":
        return { type: "text", text: (yield* expect(decoders.refusal, value, path)).refusal }
      default:
        return yield* unmodeled(notes, type, path, "Assistant content parts")
    }
  })

const mediaTypes: Record<string, string> = {
  pdf: "application/pdf",
  txt: "text/plain",
  md: "text/markdown",
  csv: "text/csv",
  json: "application/json",
  html: "text/html",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp"
}

/** Raw Base64 `file_data` carries no media type; the file name's extension gives one (PDF when unknown). */
const mediaTypeOfName = (filename: string | null | undefined): string => {
  const extension = filename?.split(".").pop()?.toLowerCase() ?? ""
  return mediaTypes[extension] ?? "application/pdf"
}

const toolOutputPart = (
  value: unknown,
  path: string,
  notes: Array<Untranslatable>
): Refused<TextPart | ImagePart | undefined> =>
  Result.gen(function* () {
    const type = yield* typeAt(value, path)
    switch (type) {
      case "input_text":
      case "input_image":
        return (yield* userPart(value, path, notes)) as TextPart | ImagePart | undefined
      default:
        // A canonical tool result holds text and images only.
        return yield* unmodeled(notes, type, path, "function_call_output parts")
    }
  })

/** Builds the message list, merging consecutive assistant items and consecutive tool outputs. */
class Conversation {
  readonly messages: Array<Message> = []
  readonly toolNames = new Map<string, string>()
  readonly notes: Array<Untranslatable> = []

  push(message: Message): void {
    this.messages.push(message)
  }

  appendTo(role: "assistant" | "tool", parts: ReadonlyArray<Part>): void {
    const last = this.messages.at(-1)
    if (last !== undefined && last.role === role) {
      this.messages[this.messages.length - 1] = { role, content: [...last.content, ...parts] }
    } else {
      this.messages.push({ role, content: parts })
    }
  }
}

const readItem = (conversation: Conversation, value: unknown, index: number): Refused<void> =>
  Result.gen(function* () {
    const path = `input[${index}]`
    const type = (yield* typeAt(value, path)) ?? "message"
    switch (type) {
      case "message": {
        const item = yield* expect(decoders.message, value, path)
        if (item.role === "assistant") {
          const content = typeof item.content === "string"
            ? [{ type: "text" as const, text: item.content }]
            : yield* partsOf(item.content, `${path}.content`, (part, at) => assistantPart(part, at, conversation.notes))
          return conversation.appendTo("assistant", content)
        }
        const content = typeof item.content === "string"
          ? [{ type: "text" as const, text: item.content }]
          : yield* partsOf(item.content, `${path}.content`, (part, at) => userPart(part, at, conversation.notes))
        if (item.role === "user") return conversation.push({ role: "user", content })
        return conversation.push({ role: "system", content, ...(item.role === "developer" ? { developer: true } : {}) })
      }
      case "function_call": {
        const call = yield* expect(decoders.functionCall, value, path)
        conversation.toolNames.set(call.call_id, call.name)
        const part: ToolCallPart = {
          type: "tool-call",
          callId: call.call_id,
          name: call.name,
          arguments: call.arguments
        }
        return conversation.appendTo("assistant", [part])
      }
      case "custom_tool_call": {
        // A freeform tool's call: its raw `input` becomes the one string argument the translation offers it with.
        const call = yield* expect(decoders.customToolCall, value, path)
        conversation.toolNames.set(call.call_id, call.name)
        const part: ToolCallPart = {
          type: "tool-call",
          callId: call.call_id,
          name: call.name,
          arguments: JSON.stringify({ [FREEFORM_ARGUMENT]: call.input })
        }
        return conversation.appendTo("assistant", [part])
      }
      case "function_call_output":
      case "custom_tool_call_output": {
        const output = yield* expect(decoders.functionCallOutput, value, path)
        const content = typeof output.output === "string"
          ? [{ type: "text" as const, text: output.output }]
          : yield* partsOf(output.output, `${path}.output`, (part, at) => toolOutputPart(part, at, conversation.notes))
        const name = conversation.toolNames.get(output.call_id)
        const part: ToolResultPart = {
          type: "tool-result",
          callId: output.call_id,
          ...(name === undefined ? {} : { name }),
          content
        }
        return conversation.appendTo("tool", [part])
      }
      case "reasoning": {
        const reasoning = yield* expect(decoders.reasoning, value, path)
        const summary = (reasoning.summary ?? []).map((entry) => entry.text)
        const text = summary.length > 0 ? summary : (reasoning.content ?? []).map((entry) => entry.text)
        const part: ReasoningPart = reasoningFromOpaqueToken(
          text.join("\n\n"),
          typeof reasoning.encrypted_content === "string" ? reasoning.encrypted_content : undefined,
          "openai"
        )
        return conversation.appendTo("assistant", [part])
      }
      case "item_reference":
        return void onlyResponses(conversation.notes, path, "Input items referenced by id (item_reference)")
      default:
        if (replayedHostedCalls.has(type)) return
        return void (yield* unmodeled(conversation.notes, type, path, "Input items"))
    }
  })

/** Hosted tool calls of an earlier answer, replayed in `input` (see the module doc). */
const replayedHostedCalls: ReadonlySet<string> = new Set([
  "web_search_call",
  "file_search_call",
  "code_interpreter_call",
  "image_generation_call",
  "mcp_call",
  "mcp_list_tools"
])

const readTool = (value: unknown, index: number): Refused<Tool> =>
  Result.gen(function* () {
    const path = `tools[${index}]`
    const type = yield* typeAt(value, path)
    if (type === "function") {
      const tool = yield* expect(decoders.functionTool, value, path)
      return {
        type: "function",
        name: tool.name,
        ...(typeof tool.description === "string" ? { description: tool.description } : {}),
        parameters: tool.parameters ?? {},
        ...(typeof tool.strict === "boolean" ? { strict: tool.strict } : {})
      }
    }
    if (type === undefined) return yield* refuse("A tool needs a type.", `${path}.type`)
    if (type === "custom") {
      const tool = yield* expect(decoders.customTool, value, path)
      return freeformTool(tool.name, tool.description, tool.format)
    }
    return { type: "builtin", format: "openai-responses", definition: yield* expect(decoders.object, value, path) }
  })

/**
 * The argument that carries a freeform (custom) tool's raw input once translated into a function tool.
 *
 * @category decoding
 */
export const FREEFORM_ARGUMENT = "input"

/**
 * A freeform (custom) tool as a function tool another format can offer: one required string argument, `input`,
 * whose description holds the tool's input format (a grammar's syntax and definition, as the caller wrote it).
 */
const freeformTool = (
  name: string,
  description: string | null | undefined,
  format:
    | { readonly type: string; readonly syntax?: string | null; readonly definition?: string | null }
    | null
    | undefined
): Tool => {
  const grammar = format?.type === "grammar" && typeof format.definition === "string"
    ? ` It must match this ${format.syntax ?? ""} grammar:\n${format.definition}`
    : ""
  return {
    type: "function",
    name,
    ...(typeof description === "string" ? { description } : {}),
    parameters: {
      type: "object",
      properties: {
        [FREEFORM_ARGUMENT]: { type: "string", description: `The tool's raw input, as free text.${grammar}` }
      },
      required: [FREEFORM_ARGUMENT],
      additionalProperties: false
    }
  }
}

const readToolChoice = (value: unknown, notes: Array<Untranslatable>): Refused<ToolChoice | undefined> =>
  Result.gen(function* () {
    if (value === "auto" || value === "none" || value === "required") return { type: value }
    if (typeof value === "object" && value !== null && typeof (value as { type?: unknown }).type === "string") {
      // A custom tool is offered as a function on a translation (`freeformTool`), so choosing it names that function.
      if ((value as { type?: unknown }).type === "function" || (value as { type?: unknown }).type === "custom") {
        return { type: "tool", name: (yield* expect(decoders.namedChoice, value, "tool_choice")).name }
      }
      const type = safeVendorText((value as { type: string }).type, 40)
      return onlyResponses(notes, "tool_choice", `Tool choices of type "${type}"`)
    }
    return yield* refuse(
      'tool_choice must be "auto", "none", "required" or an object with a type.',
      "tool_choice"
    )
  })

const readFormat = (value: unknown): Refused<ResponseFormat> =>
  Result.gen(function* () {
    const path = "text.format"
    const type = yield* typeAt(value, path)
    switch (type) {
      case "text":
      case "json_object":
        return { type }
      case "json_schema": {
        const format = yield* expect(decoders.jsonSchema, value, path)
        return {
          type: "json_schema",
          name: format.name,
          schema: format.schema,
          ...(typeof format.strict === "boolean" ? { strict: format.strict } : {}),
          ...(typeof format.description === "string" ? { description: format.description } : {})
        }
      }
      default:
        return yield* refuseType(type, path, `Text format type "${type}" is not supported.`)
    }
  })

const readReasoning = (reasoning: typeof Body.Type["reasoning"]): ReasoningConfig | undefined => {
  if (reasoning === undefined || reasoning === null) return undefined
  const summary = reasoning.summary ?? reasoning.generate_summary
  const config: ReasoningConfig = {
    ...(typeof reasoning.effort === "string" ? { effort: effortFromWire(reasoning.effort) } : {}),
    ...(typeof summary === "string" ? { includeThoughts: true } : {})
  }
  return Object.keys(config).length === 0 ? undefined : config
}

const defined = <K extends string, V>(key: K, value: V | null | undefined): { [P in K]?: V } =>
  (value === undefined || value === null ? {} : { [key]: value }) as { [P in K]?: V }

const decode = (input: unknown, context: { readonly stream?: boolean | undefined }): Refused<Request> =>
  Result.gen(function* () {
    const body = yield* expect(decoders.body, input, "")
    const conversation = new Conversation()
    if (typeof body.instructions === "string") {
      conversation.push({ role: "system", content: [{ type: "text", text: body.instructions }] })
    }
    if (typeof body.input === "string") {
      conversation.push({ role: "user", content: [{ type: "text", text: body.input }] })
    } else if (Array.isArray(body.input)) {
      for (const [index, item] of body.input.entries()) yield* readItem(conversation, item, index)
    }
    const tools: Array<Tool> | undefined = body.tools === undefined || body.tools === null ? undefined : []
    for (const [index, tool] of (body.tools ?? []).entries()) tools?.push(yield* readTool(tool, index))
    const toolChoice = body.tool_choice === undefined || body.tool_choice === null
      ? undefined
      : yield* readToolChoice(body.tool_choice, conversation.notes)
    const format = body.text?.format
    return {
      model: body.model,
      messages: conversation.messages,
      ...defined("tools", tools),
      ...defined("toolChoice", toolChoice),
      ...defined("parallelToolCalls", body.parallel_tool_calls),
      ...defined("maxOutputTokens", body.max_output_tokens),
      ...defined("temperature", body.temperature),
      ...defined("topP", body.top_p),
      ...defined("responseFormat", format === undefined || format === null ? undefined : yield* readFormat(format)),
      ...defined("reasoning", readReasoning(body.reasoning)),
      ...defined("user", body.user),
      ...defined("metadata", body.metadata),
      ...defined("store", body.store),
      ...defined("include", body.include),
      ...defined("verbosity", body.text?.verbosity),
      ...defined("includeObfuscation", body.stream_options?.include_obfuscation),
      stream: body.stream ?? context.stream ?? false,
      ...(conversation.notes.length === 0 ? {} : { untranslatable: conversation.notes })
    }
  })

/**
 * A caller's Responses body (untrusted JSON) → canonical request, or an
 * `InvalidRequest` whose `param` is the path of the offending field
 * (`input[2].content[0].image_url`). Never throws. `context.stream` is used
 * only when the body has no `stream` field; `context.model` is not used (the
 * Responses body names its model).
 *
 * @category decoding
 */
export const decodeResponsesRequest = (
  body: unknown,
  context: { readonly model?: string | undefined; readonly stream?: boolean | undefined }
): Decoded<Request> => {
  const aside = setAsideNewValues(body, RESPONSES_POSITIONS, "Responses")
  return withNewValues(aside, decode(aside.body, context))
}

const efforts = new Set(["none", "minimal", "low", "medium", "high", "xhigh", "max"])
const summaries = new Set(["auto", "concise", "detailed"])

/** Positions whose new values a Responses channel takes as sent (`NewValues.ts`). */
const RESPONSES_POSITIONS: ReadonlyArray<ValuePosition> = [
  {
    path: ["input", "*", "role"],
    known: new Set(["user", "system", "developer", "assistant"]),
    cut: 2,
    when: (item) => item.type === undefined || item.type === null || item.type === "message"
  },
  { path: ["reasoning", "effort"], known: efforts, cut: 2 },
  { path: ["reasoning", "summary"], known: summaries, cut: 2 },
  { path: ["reasoning", "generate_summary"], known: summaries, cut: 2 },
  { path: ["tool_choice"], known: new Set(["auto", "none", "required"]), cut: 1 },
  { path: ["text", "format", "type"], known: new Set(["text", "json_object", "json_schema"]), cut: 2 },
  { path: ["text", "verbosity"], known: new Set(["low", "medium", "high"]), cut: 2 }
]
