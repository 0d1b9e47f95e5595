/**
 * The generate-content request body (`POST /v1beta/models/{model}:generateContent`
 * and `:streamGenerateContent`) to and from the canonical request.
 *
 * Sources: spec "Text: generate-content format"; @google/genai 3.1.0
 * `GenerateContentParameters`, `Content`, `GenerationConfig`, `ThinkingConfig`,
 * `Tool`, `FunctionDeclaration`, `ToolConfig`, `FunctionCallingConfig`
 * (genai.d.ts); ai.google.dev/gemini-api/docs/thinking,
 * ai.google.dev/gemini-api/docs/function-calling,
 * ai.google.dev/gemini-api/docs/structured-output.
 *
 * @since 0.1.0
 */
import { Predicate, Result, Schema } from "effect"
import type { Part } from "../../../canonical/Content.ts"
import type {
  Message,
  ReasoningConfig,
  ReasoningEffort,
  Request,
  ResponseFormat,
  Tool,
  ToolChoice
} from "../../../canonical/Request.ts"
import { InvalidRequest } from "../../../errors/GatewayError.ts"
import type { Decoded, EncodedRequest } from "../../Format.ts"
import { checksCallSignatures, SKIP_SIGNATURE_VALIDATOR } from "../Models.ts"
import { hasCacheBreakpoints } from "../../shared/CacheBreakpoints.ts"
import { isForeignReasoning } from "../../shared/ReasoningOrigin.ts"
import { fitThinkingBudget } from "../../shared/ThinkingBudget.ts"
import { makeWireDecoder, rebase } from "../../shared/WireDecode.ts"
import {
  clientSignature,
  decodeFunctionResponse,
  decodeParts,
  encodeParts,
  type ToolNameLookup,
  type WireJson,
  WirePart
} from "./Parts.ts"
import { setAsideNewValues, type ValuePosition, withNewValues } from "../../shared/NewValues.ts"
import { openApiToJsonSchemaObject } from "./OpenApiSchema.ts"

// ---------------------------------------------------------------------------
// snake_case aliases (the REST API reads proto JSON, which accepts both spellings)

type Aliases = Readonly<Record<string, string>>

const topAliases: Aliases = {
  system_instruction: "systemInstruction",
  generation_config: "generationConfig",
  tool_config: "toolConfig",
  safety_settings: "safetySettings",
  cached_content: "cachedContent"
}
const generationAliases: Aliases = {
  max_output_tokens: "maxOutputTokens",
  top_p: "topP",
  top_k: "topK",
  stop_sequences: "stopSequences",
  presence_penalty: "presencePenalty",
  frequency_penalty: "frequencyPenalty",
  response_mime_type: "responseMimeType",
  response_schema: "responseSchema",
  response_json_schema: "responseJsonSchema",
  thinking_config: "thinkingConfig"
}
const thinkingAliases: Aliases = {
  thinking_budget: "thinkingBudget",
  include_thoughts: "includeThoughts",
  thinking_level: "thinkingLevel"
}
const partAliases: Aliases = {
  inline_data: "inlineData",
  file_data: "fileData",
  function_call: "functionCall",
  function_response: "functionResponse",
  thought_signature: "thoughtSignature"
}
const mediaAliases: Aliases = { mime_type: "mimeType", file_uri: "fileUri" }
const toolAliases: Aliases = {
  function_declarations: "functionDeclarations",
  google_search: "googleSearch",
  code_execution: "codeExecution",
  url_context: "urlContext"
}
const declarationAliases: Aliases = { parameters_json_schema: "parametersJsonSchema" }
const toolConfigAliases: Aliases = { function_calling_config: "functionCallingConfig" }
const callingAliases: Aliases = { allowed_function_names: "allowedFunctionNames" }

/** Renames snake_case keys to camelCase (the camelCase key wins when both are present), then edits some keys. */
const alias = (
  value: unknown,
  aliases: Aliases,
  nested: Readonly<Record<string, (inner: unknown) => unknown>> = {}
): unknown => {
  if (!Predicate.isReadonlyObject(value)) return value
  const out: Record<string, unknown> = Object.fromEntries(
    Object.entries(value).map(([key, inner]) => [aliases[key] ?? key, inner])
  )
  for (const [snake, camel] of Object.entries(aliases)) {
    if (Object.hasOwn(value, camel) && Object.hasOwn(value, snake)) out[camel] = value[camel]
  }
  for (const [key, edit] of Object.entries(nested)) {
    if (Object.hasOwn(out, key)) out[key] = edit(out[key])
  }
  return out
}

const eachOf = (edit: (inner: unknown) => unknown) => (value: unknown): unknown =>
  Array.isArray(value) ? value.map(edit) : value

const normalizePart = (part: unknown): unknown =>
  alias(part, partAliases, {
    inlineData: (inner) => alias(inner, mediaAliases),
    fileData: (inner) => alias(inner, mediaAliases),
    functionResponse: (inner) =>
      alias(inner, {}, {
        parts: eachOf((item) =>
          alias(item, partAliases, {
            inlineData: (media) => alias(media, mediaAliases),
            fileData: (media) => alias(media, mediaAliases)
          })
        )
      })
  })

const normalizeContent = (content: unknown): unknown => alias(content, {}, { parts: eachOf(normalizePart) })

const normalizeTool = (tool: unknown): unknown =>
  alias(tool, toolAliases, { functionDeclarations: eachOf((declaration) => alias(declaration, declarationAliases)) })

const normalizeBody = (body: unknown): unknown =>
  alias(body, topAliases, {
    contents: eachOf(normalizeContent),
    systemInstruction: normalizeContent,
    generationConfig: (config) =>
      alias(config, generationAliases, { thinkingConfig: (thinking) => alias(thinking, thinkingAliases) }),
    tools: (tools) => Array.isArray(tools) ? tools.map(normalizeTool) : normalizeTool(tools),
    toolConfig: (config) =>
      alias(config, toolConfigAliases, { functionCallingConfig: (calling) => alias(calling, callingAliases) })
  })

// ---------------------------------------------------------------------------
// schema of the fields Sluice reads (unknown fields are ignored; the same-format passthrough keeps them)

const Content = Schema.Struct({ role: Schema.optional(Schema.String), parts: Schema.Array(WirePart) })
const SystemContent = Schema.Struct({
  role: Schema.optional(Schema.String),
  parts: Schema.optional(Schema.Array(WirePart))
})
const JsonObject = Schema.Record(Schema.String, Schema.Unknown)

const FunctionDeclaration = Schema.Struct({
  name: Schema.String,
  description: Schema.optional(Schema.String),
  parameters: Schema.optional(JsonObject),
  parametersJsonSchema: Schema.optional(JsonObject)
})
const WireTool = JsonObject

const GenerationConfig = Schema.Struct({
  temperature: Schema.optional(Schema.Number),
  topP: Schema.optional(Schema.Number),
  topK: Schema.optional(Schema.Number),
  maxOutputTokens: Schema.optional(Schema.Int),
  stopSequences: Schema.optional(Schema.Array(Schema.String)),
  seed: Schema.optional(Schema.Int),
  presencePenalty: Schema.optional(Schema.Number),
  frequencyPenalty: Schema.optional(Schema.Number),
  responseMimeType: Schema.optional(Schema.String),
  responseSchema: Schema.optional(JsonObject),
  responseJsonSchema: Schema.optional(JsonObject),
  thinkingConfig: Schema.optional(Schema.Struct({
    thinkingBudget: Schema.optional(Schema.Int),
    includeThoughts: Schema.optional(Schema.Boolean),
    thinkingLevel: Schema.optional(Schema.String)
  }))
})

const Body = Schema.Struct({
  model: Schema.optional(Schema.String),
  contents: Schema.Array(Content),
  systemInstruction: Schema.optional(SystemContent),
  generationConfig: Schema.optional(GenerationConfig),
  tools: Schema.optional(Schema.Union([Schema.Array(WireTool), WireTool])),
  toolConfig: Schema.optional(Schema.Struct({
    functionCallingConfig: Schema.optional(Schema.Struct({
      mode: Schema.optional(Schema.String),
      allowedFunctionNames: Schema.optional(Schema.Array(Schema.String))
    }))
  }))
})
type Body = typeof Body.Type

const decodeBody = makeWireDecoder(Body)
const decodeDeclaration = makeWireDecoder(FunctionDeclaration)

// ---------------------------------------------------------------------------
// decoding

interface CallRecord {
  readonly name: string
  readonly callId: string
  answered: boolean
}

/** Pairs an id-less function response with the oldest unanswered call of that name, else the latest one. */
const pairResponse = (calls: Array<CallRecord>, name: string): string | undefined => {
  const open = calls.find((call) => call.name === name && !call.answered)
  if (open !== undefined) {
    open.answered = true
    return open.callId
  }
  return calls.findLast((call) => call.name === name)?.callId
}

const decodeMessages = (body: Body): Decoded<ReadonlyArray<Message>> => {
  const messages: Array<Message> = []
  let nextCall = 0
  const system = body.systemInstruction?.parts ?? []
  if (system.length > 0) {
    const decoded = decodeParts(system, nextCall, clientSignature)
    nextCall = decoded.nextCall
    messages.push({ role: "system", content: decoded.parts })
  }
  const calls: Array<CallRecord> = []
  for (const [index, content] of body.contents.entries()) {
    const wireRole = content.role ?? "user"
    if (wireRole !== "user" && wireRole !== "model" && wireRole !== "function") {
      return Result.fail(
        new InvalidRequest({
          message: `Invalid contents[${index}].role: expected "user" or "model", got "${wireRole}"`,
          param: `contents[${index}].role`
        })
      )
    }
    const role = wireRole === "model" ? "assistant" : "user"
    if (content.parts.length === 0) {
      messages.push({ role, content: [] })
      continue
    }
    // runs of functionResponse parts become tool messages; other runs stay in the turn's role
    let start = 0
    while (start < content.parts.length) {
      const isResponse = content.parts[start].functionResponse !== undefined
      let end = start
      while (end < content.parts.length && (content.parts[end].functionResponse !== undefined) === isResponse) end++
      const run = content.parts.slice(start, end)
      if (isResponse) {
        messages.push({
          role: "tool",
          content: run.flatMap((part) => {
            const response = part.functionResponse
            if (response === undefined) return []
            const callId = response.id !== undefined && response.id !== ""
              ? response.id
              : pairResponse(calls, response.name) ?? `call_${response.name}_${nextCall++}`
            const answered = calls.find((call) => call.callId === callId)
            if (answered !== undefined) answered.answered = true
            return [decodeFunctionResponse(response, callId)]
          })
        })
      } else {
        const decoded = decodeParts(run, nextCall, clientSignature)
        nextCall = decoded.nextCall
        for (const part of decoded.parts) {
          if (part.type === "tool-call") calls.push({ name: part.name, callId: part.callId, answered: false })
        }
        messages.push({ role, content: decoded.parts })
      }
      start = end
    }
  }
  return Result.succeed(messages)
}

const builtinKeys = (tool: Readonly<Record<string, unknown>>): ReadonlyArray<string> =>
  Object.keys(tool).filter((key) => key !== "functionDeclarations")

const decodeTools = (raw: Body["tools"]): Decoded<ReadonlyArray<Tool> | undefined> => {
  if (raw === undefined) return Result.succeed(undefined)
  const list = Array.isArray(raw) ? raw : [raw]
  const tools: Array<Tool> = []
  for (const [toolIndex, tool] of list.entries()) {
    const declarations = tool.functionDeclarations
    if (declarations !== undefined) {
      if (!Array.isArray(declarations)) {
        const param = Array.isArray(raw) ? `tools[${toolIndex}].functionDeclarations` : "tools.functionDeclarations"
        return Result.fail(new InvalidRequest({ message: `Invalid ${param}: expected an array`, param }))
      }
      for (const [index, candidate] of declarations.entries()) {
        const decoded = decodeDeclaration(candidate)
        if (Result.isFailure(decoded)) {
          const prefix = Array.isArray(raw) ? `tools[${toolIndex}]` : "tools"
          return Result.fail(rebase(decoded.failure, `${prefix}.functionDeclarations[${index}]`))
        }
        const declaration = decoded.success
        const parameters = declaration.parametersJsonSchema ??
          (declaration.parameters !== undefined
            ? openApiToJsonSchemaObject(declaration.parameters)
            : { type: "object", properties: {} })
        tools.push({
          type: "function",
          name: declaration.name,
          ...(declaration.description !== undefined ? { description: declaration.description } : {}),
          parameters
        })
      }
    }
    for (const key of builtinKeys(tool)) {
      tools.push({ type: "builtin", format: "gemini", definition: { [key]: tool[key] } })
    }
  }
  return Result.succeed(tools)
}

const decodeToolChoice = (body: Body): ToolChoice | undefined => {
  const config = body.toolConfig?.functionCallingConfig
  if (config === undefined) return undefined
  const allowed = config.allowedFunctionNames ?? []
  switch (config.mode?.toUpperCase()) {
    case "AUTO":
    case "VALIDATED":
      return { type: "auto" }
    case "NONE":
      return { type: "none" }
    case "ANY":
      return allowed.length === 1 ? { type: "tool", name: allowed[0] } : { type: "required" }
    default:
      return undefined
  }
}

const jsonMime = "application/json"

const decodeResponseFormat = (config: Body["generationConfig"]): ResponseFormat | undefined => {
  if (config === undefined) return undefined
  const mime = config.responseMimeType?.toLowerCase()
  if (config.responseJsonSchema !== undefined) {
    return { type: "json_schema", name: "response", schema: config.responseJsonSchema }
  }
  if (config.responseSchema !== undefined) {
    return { type: "json_schema", name: "response", schema: openApiToJsonSchemaObject(config.responseSchema) }
  }
  if (mime === jsonMime) return { type: "json_object" }
  if (mime === "text/plain") return { type: "text" }
  return undefined
}

const efforts: ReadonlyArray<ReasoningEffort> = ["none", "minimal", "low", "medium", "high", "xhigh"]

const decodeReasoning = (config: Body["generationConfig"]): ReasoningConfig | undefined => {
  const thinking = config?.thinkingConfig
  if (thinking === undefined) return undefined
  const level = thinking.thinkingLevel?.toLowerCase()
  const effort = efforts.find((candidate) => candidate === level)
  const budget = thinking.thinkingBudget
  const reasoning: {
    enabled?: boolean
    effort?: ReasoningEffort
    budgetTokens?: number
    includeThoughts?: boolean
  } = {}
  if (budget === 0) reasoning.enabled = false
  else if (budget !== undefined) {
    reasoning.enabled = true
    if (budget > 0) reasoning.budgetTokens = budget
  }
  if (effort !== undefined) reasoning.effort = effort
  if (thinking.includeThoughts !== undefined) reasoning.includeThoughts = thinking.includeThoughts
  return reasoning
}

const defined = <A extends Record<string, unknown>>(record: A): A =>
  Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as A

/**
 * A caller's generate-content body → canonical request. The model comes from
 * the URL path (`context.model`), else from `body.model`; `stream` from the
 * route (`context.stream`). `snake_case` spellings of the fields Sluice reads
 * are accepted. Roles: `user`, `model` (→ assistant), `function` (→ user; its
 * `functionResponse` parts become `tool` messages). A `functionResponse`
 * without `id` is paired with the oldest unanswered preceding call of the same
 * name (parallel calls of one function pair in order), else the latest one.
 * A `thoughtSignature` written as `sluice.<origin>.<token>` is another vendor's
 * token, any other is Gemini's (`ReasoningOrigin.ts`). `safetySettings`,
 * `cachedContent`, `candidateCount`, `responseModalities`, … are not canonical
 * and are ignored here (the same-format passthrough keeps them). A content
 * role other than `user`, `model` and `function` is set aside (`NewValues.ts`): the
 * same-format channel gets it, a translation is refused naming it. Never throws:
 * a bad body gives an `InvalidRequest` naming the field.
 *
 * @category decoding
 */
export const decodeGeminiRequest = (
  body: unknown,
  context: { readonly model?: string | undefined; readonly stream?: boolean | undefined }
): Decoded<Request> => {
  const aside = setAsideNewValues(body, GEMINI_POSITIONS, "generate-content")
  return withNewValues(aside, decodeKnown(aside.body, context))
}

/** Positions whose new values a gemini channel takes as sent (`NewValues.ts`): a content's role. */
const GEMINI_POSITIONS: ReadonlyArray<ValuePosition> = [
  { path: ["contents", "*", "role"], known: new Set(["user", "model", "function"]), cut: 2 }
]

const decodeKnown = (
  body: unknown,
  context: { readonly model?: string | undefined; readonly stream?: boolean | undefined }
): Decoded<Request> => {
  const decoded = decodeBody(normalizeBody(body))
  if (Result.isFailure(decoded)) return Result.fail(decoded.failure)
  const wire = decoded.success
  const model = context.model ?? wire.model
  if (model === undefined || model === "") {
    return Result.fail(new InvalidRequest({ message: "The model is missing.", param: "model" }))
  }
  const messages = decodeMessages(wire)
  if (Result.isFailure(messages)) return Result.fail(messages.failure)
  const tools = decodeTools(wire.tools)
  if (Result.isFailure(tools)) return Result.fail(tools.failure)
  const config = wire.generationConfig
  const request: Request = defined({
    model,
    messages: messages.success,
    tools: tools.success,
    toolChoice: decodeToolChoice(wire),
    maxOutputTokens: config?.maxOutputTokens,
    temperature: config?.temperature,
    topP: config?.topP,
    topK: config?.topK,
    stopSequences: config?.stopSequences,
    seed: config?.seed,
    presencePenalty: config?.presencePenalty,
    frequencyPenalty: config?.frequencyPenalty,
    responseFormat: decodeResponseFormat(config),
    reasoning: decodeReasoning(config),
    stream: context.stream ?? false
  })
  return Result.succeed(request)
}

// ---------------------------------------------------------------------------
// encoding

/**
 * `thinkingBudget` (tokens) Sluice sends for a canonical reasoning effort; a
 * Sluice choice inside the documented ranges (ai.google.dev/gemini-api/docs/thinking:
 * 2.5 Pro 128–32768, 2.5 Flash 0–24576; 0 turns thinking off).
 *
 * @category encoding
 */
export const thinkingBudgetForEffort: Readonly<Record<ReasoningEffort, number>> = {
  none: 0,
  minimal: 512,
  low: 1024,
  medium: 8192,
  high: 24576,
  xhigh: 32768
}

/**
 * Canonical fields generate-content cannot express, each with the test that
 * says whether a request uses it. The one place the encoder's losses are
 * listed (`EncodedRequest.dropped`).
 *
 * @category encoding
 */
export const geminiDroppedFields: ReadonlyArray<readonly [string, (request: Request) => boolean]> = [
  ["parallelToolCalls", (request) => request.parallelToolCalls !== undefined],
  ["user", (request) => request.user !== undefined],
  // A thinking budget the output cap has no room for is left out (`thinkingBudgetOf`).
  ["reasoning.noRoomUnderCap", (request) => noRoomForThinking(request)],
  ["metadata", (request) => request.metadata !== undefined],
  ["store", (request) => request.store !== undefined],
  ["include", (request) => request.include !== undefined],
  ["verbosity", (request) => request.verbosity !== undefined],
  // Gemini caches prompt prefixes implicitly (explicit caches are `cachedContent` resources, not breakpoints).
  ["cache", (request) => hasCacheBreakpoints(request)],
  [
    "tools.strict",
    (request) => (request.tools ?? []).some((tool) => tool.type === "function" && tool.strict !== undefined)
  ],
  [
    "tools.builtin",
    (request) => (request.tools ?? []).some((tool) => tool.type === "builtin" && tool.format !== "gemini")
  ],
  [
    "responseFormat.name",
    (request) => request.responseFormat?.type === "json_schema" && request.responseFormat.name !== "response"
  ],
  [
    "responseFormat.strict",
    (request) => request.responseFormat?.type === "json_schema" && request.responseFormat.strict !== undefined
  ],
  [
    "responseFormat.description",
    (request) => request.responseFormat?.type === "json_schema" && request.responseFormat.description !== undefined
  ],
  ["messages.developer", (request) => request.messages.some((message) => message.developer !== undefined)],
  [
    "messages.content.redacted",
    (request) => someContent(request, (part) => part.type === "reasoning" && part.redacted !== undefined)
  ],
  // Another vendor's signature would be refused ("Corrupted thought signature."): the thought text is sent
  // without it, and a reasoning part with no text is left out.
  [
    "messages.content.foreignSignature",
    (request) => someContent(request, (part) => isForeignReasoning(part, "gemini"))
  ],
  [
    "messages.content.detail",
    (request) => someContent(request, (part) => part.type === "image" && part.detail !== undefined)
  ],
  [
    "messages.content.filename",
    (request) => someContent(request, (part) => part.type === "file" && part.filename !== undefined)
  ]
]

const someContent = (request: Request, test: (part: Part) => boolean): boolean =>
  request.messages.some((message) => message.content.some(test))

/** A turn's parts for the upstream: reasoning with another vendor's token keeps only its text (none when empty). */
const upstreamParts = (parts: ReadonlyArray<Part>): ReadonlyArray<Part> =>
  parts.flatMap((part): ReadonlyArray<Part> => {
    if (!isForeignReasoning(part, "gemini") || part.type !== "reasoning") return [part]
    return part.text === "" ? [] : [{ type: "reasoning", text: part.text }]
  })

const encodeToolChoice = (choice: ToolChoice): WireJson => {
  switch (choice.type) {
    case "auto":
      return { mode: "AUTO" }
    case "none":
      return { mode: "NONE" }
    case "required":
      return { mode: "ANY" }
    case "tool":
      return { mode: "ANY", allowedFunctionNames: [choice.name] }
  }
}

const encodeTools = (tools: ReadonlyArray<Tool>): Array<WireJson> => {
  const declarations = tools.flatMap((tool) =>
    tool.type === "function"
      ? [defined({ name: tool.name, description: tool.description, parametersJsonSchema: tool.parameters })]
      : []
  )
  const builtins = tools.flatMap((tool) =>
    tool.type === "builtin" && tool.format === "gemini" ? [{ ...tool.definition }] : []
  )
  return [...(declarations.length > 0 ? [{ functionDeclarations: declarations }] : []), ...builtins]
}

const reasoningIsOn = (reasoning: ReasoningConfig): boolean =>
  reasoning.enabled !== false && reasoning.effort !== "none" && reasoning.budgetTokens !== 0

/**
 * The smallest budget Sluice fits under a cap: the largest of the documented
 * minimums (ai.google.dev/gemini-api/docs/thinking: 2.5 Pro 128–32768, 2.5
 * Flash 0–24576, 2.5 Flash-Lite 512–24576), so a fitted budget is valid on each.
 */
const MIN_FITTED_THINKING_BUDGET = 512

/**
 * The thinking budget for `reasoning` under the output cap `cap`: a budget or
 * an effort's (`thinkingBudgetForEffort`) fitted under `maxOutputTokens`,
 * which counts thoughts too (`fitThinkingBudget`); `-1` (dynamic) for
 * `enabled: true` alone; `undefined` when the cap leaves no room for
 * `MIN_FITTED_THINKING_BUDGET` (the model's own default then applies, still
 * bounded by `maxOutputTokens`).
 */
const thinkingBudgetOf = (reasoning: ReasoningConfig, cap: number | undefined): number | undefined => {
  const explicit = reasoning.budgetTokens !== undefined
  const wanted = reasoning.budgetTokens ??
    (reasoning.effort !== undefined
      ? thinkingBudgetForEffort[reasoning.effort]
      : reasoning.enabled === true
      ? -1
      : undefined)
  if (wanted === undefined || wanted <= 0 || cap === undefined) return wanted
  return fitThinkingBudget(wanted, cap, { minimum: MIN_FITTED_THINKING_BUDGET, explicit })
}

const encodeThinking = (reasoning: ReasoningConfig, cap: number | undefined): WireJson => {
  if (!reasoningIsOn(reasoning)) return { thinkingBudget: 0 }
  return defined({ thinkingBudget: thinkingBudgetOf(reasoning, cap), includeThoughts: true })
}

/** Whether reasoning asks for a budget the output cap has no room for (see `thinkingBudgetOf`). */
const noRoomForThinking = (request: Request): boolean =>
  request.reasoning !== undefined && reasoningIsOn(request.reasoning) &&
  (request.reasoning.budgetTokens !== undefined || request.reasoning.effort !== undefined) &&
  thinkingBudgetOf(request.reasoning, request.maxOutputTokens) === undefined

const encodeResponseFormat = (format: ResponseFormat): WireJson => {
  switch (format.type) {
    case "text":
      return { responseMimeType: "text/plain" }
    case "json_object":
      return { responseMimeType: jsonMime }
    case "json_schema":
      return { responseMimeType: jsonMime, responseJsonSchema: format.schema }
  }
}

const wireRole = (role: Message["role"]): string => role === "assistant" ? "model" : "user"

/**
 * Gives `SKIP_SIGNATURE_VALIDATOR` to every unsigned call Gemini 3 would
 * refuse: the current turn starts after the last user content holding anything
 * but function responses, and in each model content (a step) after it the
 * first `functionCall` part must carry a signature. Earlier turns are not
 * checked by the vendor and are left alone. Reads both spellings of the part
 * fields (`functionCall` / `function_call`, …), so a caller's own body can go
 * through it too; changes `contents` in place.
 *
 * @category encoding
 */
export const signCurrentTurnCalls = (contents: Array<{ role: string; parts: Array<WireJson> }>) => {
  const has = (part: WireJson, camel: string, snake: string) => part[camel] !== undefined || part[snake] !== undefined
  let start = 0
  for (let index = contents.length - 1; index >= 0; index--) {
    const content = contents[index]
    if (
      content.role === "user" && content.parts.some((part) => !has(part, "functionResponse", "function_response"))
    ) {
      start = index + 1
      break
    }
  }
  for (const content of contents.slice(start)) {
    if (content.role !== "model") continue
    const index = content.parts.findIndex((part) => has(part, "functionCall", "function_call"))
    if (index >= 0 && !has(content.parts[index], "thoughtSignature", "thought_signature")) {
      content.parts[index] = { ...content.parts[index], thoughtSignature: SKIP_SIGNATURE_VALIDATOR }
    }
  }
}

/**
 * Canonical request → generate-content body, without `model` (the adapter puts
 * the model, and `:streamGenerateContent?alt=sse` for a stream, in the URL).
 * System messages, wherever they stood, are joined into `systemInstruction`;
 * adjacent turns of the same wire role are merged (so the results of parallel
 * calls travel in one turn, as the vendor requires); tool results become
 * `functionResponse` parts (name recovered from the matching call when the
 * part has none; `response` is the result text parsed when it is a JSON object,
 * else `{result: text}`, or `{error: …}` for a failed call). Reasoning: a token
 * budget or an effort (table `thinkingBudgetForEffort`) becomes
 * `thinkingBudget`, fitted under `maxOutputTokens` (never raising it:
 * `thinkingBudgetOf`), `enabled: true` alone becomes `-1` (dynamic), off becomes
 * `0`; `includeThoughts` is set whenever reasoning is on. A reasoning part
 * whose signature another vendor minted is sent as its thought text alone (left
 * out when it has no text); for a Gemini 3 model (`checksCallSignatures`), an
 * unsigned function call of the current turn gets `SKIP_SIGNATURE_VALIDATOR`,
 * so a tool loop begun elsewhere is not refused. `dropped` lists the
 * canonical fields used that the format cannot carry (`geminiDroppedFields`).
 *
 * @category encoding
 */
export const encodeGeminiRequest = (request: Request): EncodedRequest => {
  const names = new Map<string, string>()
  for (const message of request.messages) {
    for (const part of message.content) if (part.type === "tool-call") names.set(part.callId, part.name)
  }
  const lookup: ToolNameLookup = (callId) => names.get(callId)
  const systemParts: Array<WireJson> = []
  const contents: Array<{ role: string; parts: Array<WireJson> }> = []
  for (const message of request.messages) {
    const parts = encodeParts(upstreamParts(message.content), lookup)
    if (message.role === "system") {
      systemParts.push(...parts)
      continue
    }
    const role = wireRole(message.role)
    const last = contents[contents.length - 1]
    if (last !== undefined && last.role === role) last.parts.push(...parts)
    else contents.push({ role, parts })
  }
  if (checksCallSignatures(request.model)) signCurrentTurnCalls(contents)
  const generationConfig = defined({
    temperature: request.temperature,
    topP: request.topP,
    topK: request.topK,
    maxOutputTokens: request.maxOutputTokens,
    stopSequences: request.stopSequences,
    seed: request.seed,
    presencePenalty: request.presencePenalty,
    frequencyPenalty: request.frequencyPenalty,
    ...(request.responseFormat !== undefined ? encodeResponseFormat(request.responseFormat) : {}),
    thinkingConfig: request.reasoning !== undefined
      ? encodeThinking(request.reasoning, request.maxOutputTokens)
      : undefined
  })
  const tools = request.tools !== undefined ? encodeTools(request.tools) : []
  const body = defined({
    contents,
    systemInstruction: systemParts.length > 0 ? { parts: systemParts } : undefined,
    tools: tools.length > 0 ? tools : undefined,
    toolConfig: request.toolChoice !== undefined
      ? { functionCallingConfig: encodeToolChoice(request.toolChoice) }
      : undefined,
    generationConfig: Object.keys(generationConfig).length > 0 ? generationConfig : undefined
  })
  const dropped = geminiDroppedFields.filter(([, used]) => used(request)).map(([name]) => name)
  return { body, dropped }
}
