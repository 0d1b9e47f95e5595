/**
 * Decodes a caller's chat completions body (`POST /v1/chat/completions`, spec
 * "Text: chat completions") into the canonical `Request`. Known fields are
 * type-checked (a wrong type is an `InvalidRequest` naming the field); unknown
 * fields are ignored. Shapes follow the openai SDK types (openai@7.57.0
 * `resources/chat/completions/completions.d.ts`, `ChatCompletionCreateParamsBase`).
 *
 * Not carried into the canonical form (the canonical `Request` has no place
 * for them): message `name`, assistant `audio`,
 * `logprobs` / `top_logprobs`, `logit_bias`, `modalities` / `audio`,
 * `prediction`, `service_tier`, `prompt_cache_key`,
 * `safety_identifier`, `web_search_options`. `store`, `verbosity` and
 * `stream_options.include_obfuscation` are carried; `seed` is any integer
 * (a non-integer is refused naming `seed`: the vendor takes an integer).
 * Kept out of the canonical messages and listed as `Request.untranslatable`
 * (a same-format channel gets them as sent; a translation is refused naming
 * them): `video_url` parts, `file.file_id` references, user content parts of
 * a type Sluice does not model, `n` above 1 (`Request.choices`), custom tool
 * calls in assistant history, and `tool_choice` `allowed_tools`.
 * `reasoning_effort` `max` is read as `xhigh` (as in Responses).
 *
 * @since 0.1.0
 */
import { Predicate, Result, Schema } from "effect"
import { parseDataUri } from "../../../canonical/DataUri.ts"
import type { ImagePart, Part, TextPart, ToolCallPart } from "../../../canonical/Content.ts"
import type {
  Message,
  ReasoningEffort,
  Request,
  ResponseFormat,
  Tool,
  ToolChoice,
  Untranslatable
} from "../../../canonical/Request.ts"
import { safeVendorText } from "../../../domain/Redact.ts"
import { InvalidRequest } from "../../../errors/GatewayError.ts"
import type { Decoded } from "../../Format.ts"
import { makeWireDecoder, rebase } from "../../shared/WireDecode.ts"
import { setAsideNewValues, type ValuePosition, withNewValues } from "../../shared/NewValues.ts"
import { signaturePartOf } from "./CallSignatures.ts"

const optionalNullable = <S extends Schema.Top>(schema: S) => Schema.optional(Schema.NullOr(schema))

const JsonObject = Schema.Record(Schema.String, Schema.Unknown)

const TextContentPart = Schema.Struct({ type: Schema.Literal("text"), text: Schema.String })
const RefusalContentPart = Schema.Struct({ type: Schema.Literal("refusal"), refusal: Schema.String })
const ImageContentPart = Schema.Struct({
  type: Schema.Literal("image_url"),
  image_url: Schema.Struct({ url: Schema.String, detail: Schema.optional(Schema.String) })
})
const AudioContentPart = Schema.Struct({
  type: Schema.Literal("input_audio"),
  input_audio: Schema.Struct({ data: Schema.String, format: Schema.String })
})
const FileContentPart = Schema.Struct({
  type: Schema.Literal("file"),
  file: Schema.Struct({
    file_data: Schema.optional(Schema.String),
    file_id: Schema.optional(Schema.String),
    filename: Schema.optional(Schema.String)
  })
})
type UserContentPart =
  | typeof TextContentPart.Type
  | typeof ImageContentPart.Type
  | typeof AudioContentPart.Type
  | typeof FileContentPart.Type

/** The user content parts the canonical form models, each checked by its own schema. */
const userPartDecoders: Record<string, (input: unknown) => Decoded<UserContentPart>> = {
  text: makeWireDecoder(TextContentPart),
  image_url: makeWireDecoder(ImageContentPart),
  input_audio: makeWireDecoder(AudioContentPart),
  file: makeWireDecoder(FileContentPart)
}

/** A user content part as the caller sent it (all its fields): checked by `userPart`. */
const UserContentPartInput = Schema.Unknown

const FunctionCall = Schema.Struct({ name: Schema.String, arguments: Schema.String })
const ToolCall = Schema.Struct({
  id: Schema.String,
  type: Schema.optional(Schema.Literal("function")),
  function: FunctionCall,
  /** Gemini's OpenAI-compatible extension; read by `CallSignatures.ts`. */
  extra_content: Schema.optional(Schema.Unknown)
})

const SystemMessage = Schema.Struct({
  role: Schema.Literals(["system", "developer"]),
  content: Schema.Union([Schema.String, Schema.Array(TextContentPart)])
})
const UserMessage = Schema.Struct({
  role: Schema.Literal("user"),
  content: Schema.Union([Schema.String, Schema.Array(UserContentPartInput)])
})
/** A custom tool call in history (`ChatCompletionMessageCustomToolCall`): only a chat upstream can take it. */
const CustomToolCall = Schema.Struct({
  id: Schema.String,
  type: Schema.Literal("custom"),
  custom: Schema.Struct({ name: Schema.String, input: Schema.String })
})
const AssistantMessage = Schema.Struct({
  role: Schema.Literal("assistant"),
  content: optionalNullable(
    Schema.Union([Schema.String, Schema.Array(Schema.Union([TextContentPart, RefusalContentPart]))])
  ),
  refusal: optionalNullable(Schema.String),
  tool_calls: optionalNullable(Schema.Array(Schema.Union([CustomToolCall, ToolCall]))),
  function_call: optionalNullable(FunctionCall),
  reasoning_content: optionalNullable(Schema.String),
  reasoning: optionalNullable(Schema.String)
})
const ToolMessage = Schema.Struct({
  role: Schema.Literal("tool"),
  tool_call_id: Schema.String,
  content: Schema.Union([Schema.String, Schema.Array(TextContentPart)])
})
const FunctionMessage = Schema.Struct({
  role: Schema.Literal("function"),
  name: Schema.String,
  content: Schema.NullOr(Schema.String)
})
type ChatMessage =
  | typeof SystemMessage.Type
  | typeof UserMessage.Type
  | typeof AssistantMessage.Type
  | typeof ToolMessage.Type
  | typeof FunctionMessage.Type

/**
 * One decoder per role: a union of the message structs would report a
 * mismatch against the wrong member, so messages are dispatched on `role`.
 */
const messageDecoders: Record<string, (input: unknown) => Decoded<ChatMessage>> = {
  system: makeWireDecoder(SystemMessage),
  developer: makeWireDecoder(SystemMessage),
  user: makeWireDecoder(UserMessage),
  assistant: makeWireDecoder(AssistantMessage),
  tool: makeWireDecoder(ToolMessage),
  function: makeWireDecoder(FunctionMessage)
}

const FunctionDefinition = Schema.Struct({
  name: Schema.String,
  description: Schema.optional(Schema.String),
  parameters: Schema.optional(JsonObject),
  strict: optionalNullable(Schema.Boolean)
})
const FunctionToolDefinition = Schema.Struct({ type: Schema.Literal("function"), function: FunctionDefinition })
const CustomToolDefinition = Schema.Struct({
  type: Schema.Literal("custom"),
  custom: Schema.Struct({ name: Schema.String })
})

const NamedFunctionChoice = Schema.Struct({
  type: Schema.Literal("function"),
  function: Schema.Struct({ name: Schema.String })
})
const NamedCustomChoice = Schema.Struct({
  type: Schema.Literal("custom"),
  custom: Schema.Struct({ name: Schema.String })
})
/** `{type: "allowed_tools", allowed_tools: {mode, tools}}`: the canonical choice cannot say it. */
const AllowedToolsChoice = Schema.Struct({
  type: Schema.Literal("allowed_tools"),
  allowed_tools: Schema.Struct({ mode: Schema.String, tools: Schema.Array(JsonObject) })
})

const JsonSchemaFormat = Schema.Struct({
  type: Schema.Literal("json_schema"),
  json_schema: Schema.Struct({
    name: Schema.String,
    description: Schema.optional(Schema.String),
    schema: Schema.optional(JsonObject),
    strict: optionalNullable(Schema.Boolean)
  })
})

/** The SDK's `ReasoningEffort` values; `max` is read as the canonical `xhigh`. */
const reasoningEfforts = ["none", "minimal", "low", "medium", "high", "xhigh", "max"] as const

const Body = Schema.Struct({
  model: Schema.String,
  messages: Schema.Array(Schema.Unknown),
  tools: optionalNullable(Schema.Array(Schema.Union([FunctionToolDefinition, CustomToolDefinition]))),
  tool_choice: optionalNullable(
    Schema.Union([
      Schema.Literals(["auto", "none", "required"]),
      NamedFunctionChoice,
      NamedCustomChoice,
      AllowedToolsChoice
    ])
  ),
  functions: optionalNullable(Schema.Array(FunctionDefinition)),
  function_call: optionalNullable(
    Schema.Union([Schema.Literals(["auto", "none"]), Schema.Struct({ name: Schema.String })])
  ),
  parallel_tool_calls: optionalNullable(Schema.Boolean),
  max_tokens: optionalNullable(Schema.Int),
  max_completion_tokens: optionalNullable(Schema.Int),
  temperature: optionalNullable(Schema.Number),
  top_p: optionalNullable(Schema.Number),
  stop: optionalNullable(Schema.Union([Schema.String, Schema.Array(Schema.String)])),
  seed: optionalNullable(Schema.Number),
  presence_penalty: optionalNullable(Schema.Number),
  frequency_penalty: optionalNullable(Schema.Number),
  response_format: optionalNullable(
    Schema.Union([
      Schema.Struct({ type: Schema.Literal("text") }),
      Schema.Struct({ type: Schema.Literal("json_object") }),
      JsonSchemaFormat
    ])
  ),
  reasoning_effort: optionalNullable(Schema.Literals(reasoningEfforts)),
  user: optionalNullable(Schema.String),
  metadata: optionalNullable(Schema.Record(Schema.String, Schema.String)),
  n: optionalNullable(Schema.Int),
  stream: optionalNullable(Schema.Boolean),
  stream_options: optionalNullable(Schema.Struct({
    include_usage: optionalNullable(Schema.Boolean),
    include_obfuscation: optionalNullable(Schema.Boolean)
  })),
  store: optionalNullable(Schema.Boolean),
  verbosity: optionalNullable(Schema.Literals(["low", "medium", "high"]))
})
type Body = typeof Body.Type

const decodeBody = makeWireDecoder(Body)

type Refused<A> = Result.Result<A, InvalidRequest>

const refuse = (message: string, param: string): Refused<never> => Result.fail(new InvalidRequest({ message, param }))

const textParts = (content: string | ReadonlyArray<{ readonly text: string }>): ReadonlyArray<TextPart> =>
  typeof content === "string"
    ? [{ type: "text", text: content }]
    : content.map((part) => ({ type: "text", text: part.text }))

const imagePart = (url: string, detail: string | undefined): ImagePart => {
  const inline = parseDataUri(url)
  const source = inline === undefined
    ? { kind: "url" as const, url }
    : { kind: "base64" as const, mediaType: inline.mediaType, data: inline.data }
  return detail === undefined ? { type: "image", source } : { type: "image", source, detail }
}

const mediaTypeOfFilename = (filename: string | undefined): string =>
  filename !== undefined && filename.toLowerCase().endsWith(".pdf") ? "application/pdf" : "application/octet-stream"

/**
 * A user content part → its canonical part, or `undefined` when the part is one
 * only a chat completions upstream can take (a `video_url` part, a file by
 * `file_id`, a type Sluice does not model), noted in `notes`.
 */
const userPart = (input: unknown, param: string, notes: Array<Untranslatable>): Refused<Part | undefined> => {
  const type = Predicate.isObject(input) ? input.type : undefined
  if (typeof type !== "string") {
    return refuse(
      Predicate.isObject(input) ? `${param}.type must be a string.` : `${param} must be a content part object.`,
      Predicate.isObject(input) ? `${param}.type` : param
    )
  }
  const decoder = Object.hasOwn(userPartDecoders, type) ? userPartDecoders[type] : undefined
  if (decoder === undefined) {
    notes.push({
      param,
      message: type === "video_url"
        ? "Video parts (video_url) reach only a chat completions upstream; this model's channel would need a " +
          "translation, which cannot carry video."
        : `Content parts of type "${
          safeVendorText(type, 40)
        }" reach only a chat completions upstream; this model's channel would ` +
          "need a translation, which cannot carry them."
    })
    return Result.succeed(undefined)
  }
  const decoded = decoder(input)
  if (Result.isFailure(decoded)) {
    const rebased = rebase(decoded.failure, param)
    return refuse(rebased.message, rebased.param ?? "")
  }
  return partOf(decoded.success, param, notes)
}

/** A decoded user content part → its canonical part (`userPart`). */
const partOf = (part: UserContentPart, param: string, notes: Array<Untranslatable>): Refused<Part | undefined> => {
  switch (part.type) {
    case "text":
      return Result.succeed({ type: "text", text: part.text })
    case "image_url":
      return Result.succeed(imagePart(part.image_url.url, part.image_url.detail))
    case "input_audio":
      return Result.succeed({ type: "audio", data: part.input_audio.data, format: part.input_audio.format })
    case "file": {
      const { file_data, file_id, filename } = part.file
      if (file_data === undefined) {
        if (file_id === undefined) {
          return refuse("A file part needs file.file_data or file.file_id.", `${param}.file`)
        }
        notes.push({
          param: `${param}.file.file_id`,
          message: "Files referenced by file_id are stored at the upstream vendor and reach only a chat " +
            "completions upstream; this model's channel would need a translation. Send the file inline as " +
            "file.file_data."
        })
        return Result.succeed(undefined)
      }
      const inline = parseDataUri(file_data)
      const source = inline === undefined
        ? { kind: "base64" as const, mediaType: mediaTypeOfFilename(filename), data: file_data }
        : { kind: "base64" as const, mediaType: inline.mediaType, data: inline.data }
      return Result.succeed(filename === undefined ? { type: "file", source } : { type: "file", source, filename })
    }
  }
}

/** Finds the name of the tool call `callId` in the assistant turns before `before`. */
const toolNameFor = (messages: ReadonlyArray<ChatMessage>, before: number, callId: string): string | undefined => {
  for (let index = before - 1; index >= 0; index--) {
    const message = messages[index]
    if (message.role !== "assistant") continue
    const call = message.tool_calls?.find((candidate) => candidate.id === callId)
    if (call !== undefined) return call.type === "custom" ? call.custom.name : call.function.name
  }
  return undefined
}

/** The synthetic call id of a legacy assistant `function_call` at message `index`. */
const legacyCallId = (index: number): string => `call_function_${index}`

/** Pairs a legacy `function` message with the latest assistant `function_call` of the same name. */
const legacyCallIdFor = (messages: ReadonlyArray<ChatMessage>, before: number, name: string): string => {
  for (let index = before - 1; index >= 0; index--) {
    const message = messages[index]
    if (message.role === "assistant" && message.function_call?.name === name) return legacyCallId(index)
  }
  return legacyCallId(before)
}

/** The canonical parts of a user message's content parts, in order (`userPart`). */
const userParts = (
  parts: ReadonlyArray<unknown>,
  param: string,
  notes: Array<Untranslatable>
): Refused<ReadonlyArray<Part>> =>
  Result.gen(function* () {
    const out: Array<Part> = []
    for (const [partIndex, input] of parts.entries()) {
      const part = yield* userPart(input, `${param}.content[${partIndex}]`, notes)
      if (part !== undefined) out.push(part)
    }
    return out
  })

const toMessage = (
  messages: ReadonlyArray<ChatMessage>,
  index: number,
  notes: Array<Untranslatable>
): Refused<Message> => {
  const message = messages[index]
  const param = `messages[${index}]`
  if (message.role === "user" && typeof message.content !== "string") {
    return Result.map(userParts(message.content, param, notes), (content) => ({ role: "user", content }))
  }
  return Result.succeed(translatedMessage(messages, index, notes))
}

/** A message whose translation cannot fail (every role but a user message with content parts). */
const translatedMessage = (
  messages: ReadonlyArray<ChatMessage>,
  index: number,
  notes: Array<Untranslatable>
): Message => {
  const message = messages[index]
  const param = `messages[${index}]`
  switch (message.role) {
    case "system":
    case "developer":
      return message.role === "developer"
        ? { role: "system", content: textParts(message.content), developer: true }
        : { role: "system", content: textParts(message.content) }
    case "user":
      // Content parts are translated by `toMessage`; here the content is text.
      return { role: "user", content: typeof message.content === "string" ? textParts(message.content) : [] }
    case "assistant": {
      const content: Array<Part> = []
      const reasoning = message.reasoning_content ?? message.reasoning
      if (reasoning !== undefined && reasoning !== null) content.push({ type: "reasoning", text: reasoning })
      if (typeof message.content === "string") content.push({ type: "text", text: message.content })
      else if (message.content !== undefined && message.content !== null) {
        for (const part of message.content) {
          content.push({ type: "text", text: part.type === "text" ? part.text : part.refusal })
        }
      }
      if (message.refusal !== undefined && message.refusal !== null) {
        content.push({ type: "text", text: message.refusal })
      }
      for (const [position, call] of (message.tool_calls ?? []).entries()) {
        if (call.type === "custom") {
          notes.push({
            param: `${param}.tool_calls[${position}]`,
            message: "Custom tool calls reach only a chat completions upstream; this model's channel would need a " +
              "translation, which cannot carry them."
          })
          continue
        }
        const signature = signaturePartOf(call.extra_content)
        if (signature !== undefined) content.push(signature)
        content.push({
          type: "tool-call",
          callId: call.id,
          name: call.function.name,
          arguments: call.function.arguments
        })
      }
      if (message.function_call !== undefined && message.function_call !== null) {
        const call: ToolCallPart = {
          type: "tool-call",
          callId: legacyCallId(index),
          name: message.function_call.name,
          arguments: message.function_call.arguments
        }
        content.push(call)
      }
      return { role: "assistant", content }
    }
    case "tool": {
      const name = toolNameFor(messages, index, message.tool_call_id)
      return {
        role: "tool",
        content: [{
          type: "tool-result",
          callId: message.tool_call_id,
          ...(name === undefined ? {} : { name }),
          content: textParts(message.content)
        }]
      }
    }
    case "function":
      return {
        role: "tool",
        content: [{
          type: "tool-result",
          callId: legacyCallIdFor(messages, index, message.name),
          name: message.name,
          content: textParts(message.content ?? "")
        }]
      }
  }
}

const functionTool = (definition: typeof FunctionDefinition.Type): Tool => ({
  type: "function",
  name: definition.name,
  ...(definition.description === undefined ? {} : { description: definition.description }),
  // OpenAI: "Omitting parameters defines a function with an empty parameter list."
  parameters: definition.parameters ?? { type: "object", properties: {} },
  ...(definition.strict === undefined || definition.strict === null ? {} : { strict: definition.strict })
})

const toTools = (body: Body, raw: Record<string, unknown>): ReadonlyArray<Tool> | undefined => {
  if (body.tools !== undefined && body.tools !== null) {
    const rawTools = Array.isArray(raw.tools) ? raw.tools : []
    return body.tools.map((tool, index): Tool => {
      if (tool.type === "function") return functionTool(tool.function)
      const definition = rawTools[index]
      return {
        type: "builtin",
        format: "openai-chat",
        definition: Predicate.isObject(definition) ? definition : { ...tool }
      }
    })
  }
  if (body.functions !== undefined && body.functions !== null) return body.functions.map(functionTool)
  return undefined
}

const toToolChoice = (body: Body, notes: Array<Untranslatable>): ToolChoice | undefined => {
  const choice = body.tool_choice ?? body.function_call
  if (choice === undefined || choice === null) return undefined
  if (typeof choice === "string") return { type: choice }
  if ("name" in choice) return { type: "tool", name: choice.name }
  if (choice.type === "allowed_tools") {
    notes.push({
      param: "tool_choice",
      message: "tool_choice allowed_tools reaches only a chat completions upstream; this model's channel would " +
        "need a translation, which cannot carry it."
    })
    return undefined
  }
  return { type: "tool", name: choice.type === "function" ? choice.function.name : choice.custom.name }
}

const toResponseFormat = (body: Body): ResponseFormat | undefined => {
  const format = body.response_format
  if (format === undefined || format === null) return undefined
  if (format.type !== "json_schema") return { type: format.type }
  const { name, description, schema, strict } = format.json_schema
  return {
    type: "json_schema",
    name,
    schema: schema ?? {},
    ...(strict === undefined || strict === null ? {} : { strict }),
    ...(description === undefined ? {} : { description })
  }
}

/** Keeps the keys whose value is not `undefined` (so the canonical object has no explicit `undefined`s). */
const compact = <A extends object>(record: A): A =>
  Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as A

const orUndefined = <A>(value: A | null | undefined): A | undefined => value === null ? undefined : value

const decodeMessage = (input: unknown, index: number): Refused<ChatMessage> => {
  const prefix = `messages[${index}]`
  const role = Predicate.isObject(input) ? input.role : undefined
  const decoder = typeof role === "string" && Object.hasOwn(messageDecoders, role) ? messageDecoders[role] : undefined
  if (decoder === undefined) {
    return refuse(
      Predicate.isObject(input)
        ? `Invalid ${prefix}.role: expected one of system, developer, user, assistant, tool, function (got ${
          JSON.stringify(role) ?? "nothing"
        }).`
        : `Invalid ${prefix}: expected a message object.`,
      Predicate.isObject(input) ? `${prefix}.role` : prefix
    )
  }
  return Result.mapError(decoder(input), (error) => {
    const rebased = rebase(error, prefix)
    return new InvalidRequest({ message: rebased.message, param: rebased.param ?? "" })
  })
}

const toRequest = (body: Body, raw: Record<string, unknown>, contextStream: boolean | undefined): Refused<Request> =>
  Result.gen(function* () {
    if (body.messages.length === 0) return yield* refuse("messages must contain at least one message.", "messages")
    const messages: Array<ChatMessage> = []
    for (const [index, input] of body.messages.entries()) messages.push(yield* decodeMessage(input, index))
    const n = orUndefined(body.n) ?? 1
    if (n < 1) return yield* refuse(`n must be at least 1 (got ${n}).`, "n")
    const stop = orUndefined(body.stop)
    const wireEffort = orUndefined(body.reasoning_effort)
    const effort: ReasoningEffort | undefined = wireEffort === "max" ? "xhigh" : wireEffort
    const seed = orUndefined(body.seed)
    // The spec types `seed` as a number; OpenAI takes an integer (`ChatCompletionCreateParamsBase.seed`), any size.
    if (seed !== undefined && !Number.isInteger(seed)) {
      return yield* refuse(`Invalid seed: the upstream API takes an integer seed (got ${seed}).`, "seed")
    }
    const notes: Array<Untranslatable> = []
    if (n > 1) {
      notes.push({
        param: "n",
        message: `n = ${n} choices reach only a chat completions upstream; this model's channel would need a ` +
          "translation, which answers one."
      })
    }
    const translated: Array<Message> = []
    for (const index of messages.keys()) translated.push(yield* toMessage(messages, index, notes))
    return compact<Request>({
      model: body.model,
      messages: translated,
      tools: toTools(body, raw),
      toolChoice: toToolChoice(body, notes),
      parallelToolCalls: orUndefined(body.parallel_tool_calls),
      maxOutputTokens: orUndefined(body.max_completion_tokens) ?? orUndefined(body.max_tokens),
      temperature: orUndefined(body.temperature),
      topP: orUndefined(body.top_p),
      stopSequences: stop === undefined ? undefined : typeof stop === "string" ? [stop] : stop,
      seed,
      presencePenalty: orUndefined(body.presence_penalty),
      frequencyPenalty: orUndefined(body.frequency_penalty),
      responseFormat: toResponseFormat(body),
      reasoning: effort === undefined ? undefined : { effort },
      stream: orUndefined(body.stream) ?? contextStream ?? false,
      user: orUndefined(body.user),
      metadata: orUndefined(body.metadata),
      store: orUndefined(body.store),
      verbosity: orUndefined(body.verbosity),
      includeObfuscation: orUndefined(body.stream_options?.include_obfuscation),
      choices: n === 1 ? undefined : n,
      untranslatable: notes.length === 0 ? undefined : notes
    })
  })

/**
 * A caller's chat completions JSON body → canonical `Request`, or an
 * `InvalidRequest` whose `param` names the first bad field (`model`,
 * `messages`, `messages[0].content[1].image_url.url`, `n`, …). Never throws.
 * `context.stream` is used only when the body has no `stream`.
 *
 * Mapping notes: `developer` → system with `developer: true`; `tool` →
 * tool-result (its name recovered from the assistant turn that made the
 * call); legacy `function` messages and assistant `function_call` are paired
 * by a synthetic id `call_function_<message index>`; assistant
 * `reasoning_content` (DeepSeek) or `reasoning` → a reasoning part first in
 * the turn; a tool call's `extra_content.google.thought_signature` (Gemini's
 * OpenAI-compatible field) → a signature-only reasoning part right before the
 * call (`CallSignatures.ts`); `refusal` → text; image data URIs → Base64 sources;
 * `max_completion_tokens` wins over `max_tokens`; a `custom` tool → a builtin
 * tool of format `openai-chat`; legacy `functions` / `function_call` are read
 * when `tools` / `tool_choice` are absent. New values of known fields (a
 * message role, tool type, tool choice, response format type, reasoning
 * effort or verbosity the decoder does not model) are set aside
 * (`NewValues.ts`): a same-format channel gets them as sent, a translation is
 * refused naming them.
 *
 * @category decoding
 */
export const decodeChatRequest = (
  body: unknown,
  context: { readonly model?: string | undefined; readonly stream?: boolean | undefined }
): Decoded<Request> => {
  const aside = setAsideNewValues(body, CHAT_POSITIONS, "chat completions")
  return withNewValues(aside, decodeKnown(aside.body, context))
}

/** Positions whose new values a chat completions channel takes as sent (`NewValues.ts`). */
const CHAT_POSITIONS: ReadonlyArray<ValuePosition> = [
  {
    path: ["messages", "*", "role"],
    known: new Set(["system", "developer", "user", "assistant", "tool", "function"]),
    cut: 2
  },
  { path: ["tools", "*", "type"], known: new Set(["function", "custom"]), cut: 2 },
  { path: ["tool_choice"], known: new Set(["auto", "none", "required"]), cut: 1 },
  { path: ["tool_choice", "type"], known: new Set(["function", "custom", "allowed_tools"]), cut: 1 },
  { path: ["response_format", "type"], known: new Set(["text", "json_object", "json_schema"]), cut: 1 },
  { path: ["reasoning_effort"], known: new Set(reasoningEfforts), cut: 1 },
  { path: ["verbosity"], known: new Set(["low", "medium", "high"]), cut: 1 }
]

const decodeKnown = (
  body: unknown,
  context: { readonly model?: string | undefined; readonly stream?: boolean | undefined }
): Decoded<Request> =>
  Result.flatMap(decodeBody(body), (decoded) => toRequest(decoded, body as Record<string, unknown>, context.stream))

/**
 * Whether a chat completions body asks for usage on the last stream chunk
 * (`stream_options.include_usage`); the route passes it on as
 * `ResponseMeta.includeUsage`.
 *
 * @category decoding
 */
export const includeUsageRequested = (body: unknown): boolean =>
  Predicate.isObject(body) && Predicate.isObject(body.stream_options) && body.stream_options.include_usage === true
