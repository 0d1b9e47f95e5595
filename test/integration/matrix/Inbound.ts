/**
 * One driver per inbound format of the cross-format matrix: each builds its
 * requests the way that format's own SDK user would (system instruction, tool
 * declaration, tool result, image, reasoning request) and reads the answer from
 * that format's own fields, non-streamed or streamed, into an `Outcome` the
 * matrix compares across formats.
 */
import Anthropic from "@anthropic-ai/sdk"
import { type Content, type GenerateContentResponse, GoogleGenAI } from "@google/genai"
import OpenAI from "openai"

/** The cases a cell can run. */
export type Case = "plain text" | "tool call round trip" | "image input" | "reasoning"

/**
 * How the answer travels: one JSON body, SSE, or (generate-content without `alt=sse`) one streamed JSON
 * array of chunks.
 */
export type Mode = "non-stream" | "stream" | "stream (JSON array)"

const sdkModes: ReadonlyArray<Mode> = ["non-stream", "stream"]

/** The inbound formats of the matrix. */
export type InboundName = "chat" | "responses" | "messages" | "generate-content" | "completions"

/** One tool call as the inbound format returned it; `input` is the parsed arguments. */
export interface SeenToolCall {
  readonly id: string
  readonly name: string
  readonly input: unknown
}

/** What one call answered, read from the inbound format's own fields. */
export interface Outcome {
  readonly text: string
  /** Reasoning text from the format's own reasoning field ("" when none arrived). */
  readonly reasoning: string
  /** Messages only: the thinking block's signature, when a thinking block arrived. */
  readonly signature?: string | undefined
  readonly toolCalls: ReadonlyArray<SeenToolCall>
  /** The finish reason (or status) in the format's own words. */
  readonly finish: string | null | undefined
  /** Token counts read from the format's own usage fields (undefined when absent). */
  readonly usage: {
    readonly input: number | undefined
    readonly output: number | undefined
    readonly reasoning?: number | undefined
  }
  /** Stream mode: the event names / shapes in arrival order, for end-marker checks. */
  readonly events?: ReadonlyArray<string>
}

/** The outcome of a tool round trip: the call, then the answer to the tool result. */
export interface RoundTrip {
  readonly first: Outcome
  readonly second: Outcome
}

/** An inbound format driven through its own SDK. */
export interface Driver {
  readonly name: InboundName
  readonly cases: ReadonlyArray<Case>
  /** The finish words of this format for a normal end and for a tool call. */
  readonly finishWords: { readonly stop: string; readonly toolCalls: string }
  /** The transport modes this format offers. */
  readonly modes: ReadonlyArray<Mode>
  readonly plain: (model: string, mode: Mode) => Promise<Outcome>
  readonly image: (model: string, mode: Mode) => Promise<Outcome>
  readonly reasoning: (model: string, mode: Mode) => Promise<Outcome>
  readonly toolRoundTrip: (model: string, mode: Mode) => Promise<RoundTrip>
}

/** The system instruction every plain-text case sends. */
export const SYSTEM = "Be brief."
/** The user text of the plain-text case; the emulator echoes it. */
export const PLAIN_TEXT = "hello matrix"
/** The user text of the image case. */
export const IMAGE_TEXT = "what is this"
/** The user text of the reasoning case. */
export const REASONING_TEXT = "why is the sky blue"
/** The user text of the tool case. */
export const TOOL_TEXT = "weather in Paris?"
/** The tool result every format sends back (JSON text, or the object itself for generate-content). */
export const TOOL_RESULT = { temperature: 21 }
/** A 1×1 PNG, base64. */
export const PIXEL_PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
/** The tool every tool case declares. */
export const WEATHER_TOOL = {
  name: "get_weather",
  description: "Current weather for a city",
  schema: {
    type: "object",
    properties: { city: { type: "string" } },
    required: ["city"]
  }
} as const

const allCases: ReadonlyArray<Case> = ["plain text", "tool call round trip", "image input", "reasoning"]

const parseArguments = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

const notExpressible = (format: string, what: string): never => {
  throw new Error(`The ${format} format cannot express ${what}; this is not a cell.`)
}

// ---------------------------------------------------------------- chat completions

/** Chat completions through the openai SDK. */
export const chatDriver = (client: OpenAI): Driver => {
  type Message = OpenAI.Chat.ChatCompletionMessageParam
  const tools: Array<OpenAI.Chat.ChatCompletionTool> = [{
    type: "function",
    function: { name: WEATHER_TOOL.name, description: WEATHER_TOOL.description, parameters: WEATHER_TOOL.schema }
  }]

  const call = async (
    model: string,
    mode: Mode,
    messages: Array<Message>,
    extra: Partial<OpenAI.Chat.ChatCompletionCreateParamsNonStreaming> = {}
  ): Promise<Outcome & { readonly assistant: Message }> => {
    if (mode === "non-stream") {
      const completion = await client.chat.completions.create({ model, messages, max_tokens: 200, ...extra })
      const message = completion.choices[0].message
      const raw = message as unknown as { reasoning_content?: string }
      return {
        text: message.content ?? "",
        reasoning: raw.reasoning_content ?? "",
        toolCalls: (message.tool_calls ?? []).flatMap((toolCall) =>
          toolCall.type === "function"
            ? [{ id: toolCall.id, name: toolCall.function.name, input: parseArguments(toolCall.function.arguments) }]
            : []
        ),
        finish: completion.choices[0].finish_reason,
        usage: {
          input: completion.usage?.prompt_tokens,
          output: completion.usage?.completion_tokens,
          reasoning: completion.usage?.completion_tokens_details?.reasoning_tokens
        },
        assistant: message as Message
      }
    }
    const chunks = await client.chat.completions.create({
      model,
      messages,
      max_tokens: 200,
      ...extra,
      stream: true,
      stream_options: { include_usage: true }
    })
    let text = ""
    let reasoning = ""
    let finish: string | null = null
    let usage: OpenAI.CompletionUsage | undefined
    const calls: Array<{ id: string; name: string; arguments: string }> = []
    const events: Array<string> = []
    for await (const chunk of chunks) {
      events.push(chunk.object)
      if (chunk.usage) usage = chunk.usage
      const choice = chunk.choices[0]
      if (choice === undefined) continue
      const delta = choice.delta as typeof choice.delta & { reasoning_content?: string | null }
      text += delta.content ?? ""
      reasoning += delta.reasoning_content ?? ""
      for (const toolCall of delta.tool_calls ?? []) {
        const slot = calls[toolCall.index] ?? (calls[toolCall.index] = { id: "", name: "", arguments: "" })
        slot.id += toolCall.id ?? ""
        slot.name += toolCall.function?.name ?? ""
        slot.arguments += toolCall.function?.arguments ?? ""
      }
      finish = choice.finish_reason ?? finish
    }
    const assistant: Message = {
      role: "assistant",
      content: text.length > 0 ? text : null,
      ...(calls.length > 0
        ? {
          tool_calls: calls.map((slot) => ({
            id: slot.id,
            type: "function" as const,
            function: { name: slot.name, arguments: slot.arguments }
          }))
        }
        : {})
    }
    return {
      text,
      reasoning,
      toolCalls: calls.map((slot) => ({ id: slot.id, name: slot.name, input: parseArguments(slot.arguments) })),
      finish,
      usage: {
        input: usage?.prompt_tokens,
        output: usage?.completion_tokens,
        reasoning: usage?.completion_tokens_details?.reasoning_tokens
      },
      events,
      assistant
    }
  }

  return {
    name: "chat",
    cases: allCases,
    modes: sdkModes,
    finishWords: { stop: "stop", toolCalls: "tool_calls" },
    plain: (model, mode) =>
      call(model, mode, [{ role: "system", content: SYSTEM }, { role: "user", content: PLAIN_TEXT }]),
    image: (model, mode) =>
      call(model, mode, [{
        role: "user",
        content: [
          { type: "text", text: IMAGE_TEXT },
          { type: "image_url", image_url: { url: `data:image/png;base64,${PIXEL_PNG}` } }
        ]
      }]),
    reasoning: (model, mode) =>
      // The cap includes reasoning tokens: it leaves room for a thinking budget (Anthropic's smallest is 1024).
      call(model, mode, [{ role: "user", content: REASONING_TEXT }], { reasoning_effort: "low", max_tokens: 4096 }),
    toolRoundTrip: async (model, mode) => {
      const question: Message = { role: "user", content: TOOL_TEXT }
      const first = await call(model, mode, [question], { tools })
      const results: Array<Message> = first.toolCalls.map((toolCall) => ({
        role: "tool",
        tool_call_id: toolCall.id,
        content: JSON.stringify(TOOL_RESULT)
      }))
      const second = await call(model, mode, [question, first.assistant, ...results], { tools })
      return { first, second }
    }
  }
}

// ---------------------------------------------------------------- Responses

/** Responses through the openai SDK (`client.responses.create`). */
export const responsesDriver = (client: OpenAI): Driver => {
  type Input = OpenAI.Responses.ResponseInputItem
  const tools: Array<OpenAI.Responses.Tool> = [{
    type: "function",
    name: WEATHER_TOOL.name,
    description: WEATHER_TOOL.description,
    parameters: WEATHER_TOOL.schema,
    strict: false
  }]

  const fromResponse = (response: OpenAI.Responses.Response, streamedText?: string, streamedReasoning?: string) => {
    const toolCalls: Array<SeenToolCall> = []
    let reasoning = ""
    for (const item of response.output) {
      if (item.type === "function_call") {
        toolCalls.push({ id: item.call_id, name: item.name, input: parseArguments(item.arguments) })
      }
      if (item.type === "reasoning") reasoning += item.summary.map((summary) => summary.text).join("")
    }
    return {
      text: streamedText ?? response.output_text ?? "",
      reasoning: streamedReasoning ?? reasoning,
      toolCalls,
      finish: response.status,
      usage: {
        input: response.usage?.input_tokens,
        output: response.usage?.output_tokens,
        reasoning: response.usage?.output_tokens_details?.reasoning_tokens
      }
    }
  }

  const call = async (
    model: string,
    mode: Mode,
    input: Array<Input>,
    extra: Partial<OpenAI.Responses.ResponseCreateParamsNonStreaming> = {}
  ): Promise<Outcome & { readonly output: ReadonlyArray<OpenAI.Responses.ResponseOutputItem> }> => {
    if (mode === "non-stream") {
      const response = await client.responses.create({ model, input, max_output_tokens: 200, ...extra })
      return { ...fromResponse(response), output: response.output }
    }
    const events = await client.responses.create({ model, input, max_output_tokens: 200, ...extra, stream: true })
    let text = ""
    let reasoning = ""
    let final: OpenAI.Responses.Response | undefined
    const names: Array<string> = []
    for await (const event of events) {
      names.push(event.type)
      if (event.type === "response.output_text.delta") text += event.delta
      if (event.type === "response.reasoning_summary_text.delta") reasoning += event.delta
      if (event.type === "response.completed" || event.type === "response.incomplete") final = event.response
    }
    if (final === undefined) {
      return {
        text,
        reasoning,
        toolCalls: [],
        finish: undefined,
        usage: { input: undefined, output: undefined },
        events: names,
        output: []
      }
    }
    return { ...fromResponse(final, text, reasoning), events: names, output: final.output }
  }

  return {
    name: "responses",
    cases: allCases,
    modes: sdkModes,
    finishWords: { stop: "completed", toolCalls: "completed" },
    plain: (model, mode) => call(model, mode, [{ role: "user", content: PLAIN_TEXT }], { instructions: SYSTEM }),
    image: (model, mode) =>
      call(model, mode, [{
        role: "user",
        content: [
          { type: "input_text", text: IMAGE_TEXT },
          { type: "input_image", image_url: `data:image/png;base64,${PIXEL_PNG}`, detail: "auto" }
        ]
      }]),
    reasoning: (model, mode) =>
      call(model, mode, [{ role: "user", content: REASONING_TEXT }], {
        reasoning: { effort: "low", summary: "auto" },
        // The cap includes reasoning tokens: it leaves room for a thinking budget.
        max_output_tokens: 4096
      }),
    toolRoundTrip: async (model, mode) => {
      const question: Input = { role: "user", content: TOOL_TEXT }
      const first = await call(model, mode, [question], { tools })
      const results: Array<Input> = first.toolCalls.map((toolCall) => ({
        type: "function_call_output",
        call_id: toolCall.id,
        output: JSON.stringify(TOOL_RESULT)
      }))
      // The SDK user's way: the previous output items go back as input, then the results.
      const previous = first.output as unknown as Array<Input>
      const second = await call(model, mode, [question, ...previous, ...results], { tools })
      return { first, second }
    }
  }
}

// ---------------------------------------------------------------- Messages

/** Messages through @anthropic-ai/sdk. */
export const messagesDriver = (client: Anthropic): Driver => {
  type Params = Anthropic.MessageCreateParamsNonStreaming
  const tools: Array<Anthropic.Tool> = [{
    name: WEATHER_TOOL.name,
    description: WEATHER_TOOL.description,
    input_schema: WEATHER_TOOL.schema as unknown as Anthropic.Tool.InputSchema
  }]

  const fromMessage = (message: Anthropic.Message, events?: ReadonlyArray<string>): Outcome => {
    let text = ""
    let reasoning = ""
    let signature: string | undefined
    const toolCalls: Array<SeenToolCall> = []
    for (const block of message.content) {
      if (block.type === "text") text += block.text
      if (block.type === "thinking") {
        reasoning += block.thinking
        signature = block.signature
      }
      if (block.type === "tool_use") toolCalls.push({ id: block.id, name: block.name, input: block.input })
    }
    return {
      text,
      reasoning,
      signature,
      toolCalls,
      finish: message.stop_reason,
      usage: {
        input: message.usage.input_tokens,
        output: message.usage.output_tokens,
        reasoning: message.usage.output_tokens_details?.thinking_tokens
      },
      events
    }
  }

  const call = async (
    model: string,
    mode: Mode,
    params: Omit<Params, "model" | "max_tokens"> & { max_tokens?: number }
  ): Promise<Outcome & { readonly content: Anthropic.Message["content"] }> => {
    const body = { model, max_tokens: 200, ...params }
    if (mode === "non-stream") {
      const message = await client.messages.create(body)
      return { ...fromMessage(message), content: message.content }
    }
    const messageStream = client.messages.stream(body)
    const events: Array<string> = []
    for await (const event of messageStream) events.push(event.type)
    const message = await messageStream.finalMessage()
    return { ...fromMessage(message, events), content: message.content }
  }

  return {
    name: "messages",
    cases: allCases,
    modes: sdkModes,
    finishWords: { stop: "end_turn", toolCalls: "tool_use" },
    plain: (model, mode) => call(model, mode, { system: SYSTEM, messages: [{ role: "user", content: PLAIN_TEXT }] }),
    image: (model, mode) =>
      call(model, mode, {
        messages: [{
          role: "user",
          content: [
            { type: "text", text: IMAGE_TEXT },
            { type: "image", source: { type: "base64", media_type: "image/png", data: PIXEL_PNG } }
          ]
        }]
      }),
    reasoning: (model, mode) =>
      call(model, mode, {
        max_tokens: 2048,
        thinking: { type: "enabled", budget_tokens: 1024 },
        messages: [{ role: "user", content: REASONING_TEXT }]
      }),
    toolRoundTrip: async (model, mode) => {
      const question: Anthropic.MessageParam = { role: "user", content: TOOL_TEXT }
      const first = await call(model, mode, { tools, messages: [question] })
      const second = await call(model, mode, {
        tools,
        messages: [
          question,
          { role: "assistant", content: first.content },
          {
            role: "user",
            content: first.toolCalls.map((toolCall) => ({
              type: "tool_result" as const,
              tool_use_id: toolCall.id,
              content: JSON.stringify(TOOL_RESULT)
            }))
          }
        ]
      })
      return { first, second }
    }
  }
}

// ---------------------------------------------------------------- generate-content

/**
 * Generate-content through @google/genai (API version v1beta, the gateway's path prefix), plus the
 * JSON-array stream (no `alt=sse`), which the SDK does not offer, through `fetch`.
 */
export const generateContentDriver = (
  client: GoogleGenAI,
  gateway: { readonly url: string; readonly key: string }
): Driver => {
  type Config = NonNullable<Parameters<GoogleGenAI["models"]["generateContent"]>[0]["config"]>
  const toolConfig: Config = {
    tools: [{
      functionDeclarations: [{
        name: WEATHER_TOOL.name,
        description: WEATHER_TOOL.description,
        parametersJsonSchema: WEATHER_TOOL.schema
      }]
    }]
  }

  const fold = (chunks: ReadonlyArray<GenerateContentResponse>, events?: ReadonlyArray<string>) => {
    let text = ""
    let reasoning = ""
    const toolCalls: Array<SeenToolCall> = []
    const parts: Array<NonNullable<Content["parts"]>[number]> = []
    let finish: string | undefined
    let usage: GenerateContentResponse["usageMetadata"]
    for (const chunk of chunks) {
      const candidate = chunk.candidates?.[0]
      for (const part of candidate?.content?.parts ?? []) {
        parts.push(part)
        if (part.text !== undefined && part.thought === true) reasoning += part.text
        else if (part.text !== undefined) text += part.text
        if (part.functionCall !== undefined) {
          toolCalls.push({
            id: part.functionCall.id ?? "",
            name: part.functionCall.name ?? "",
            input: part.functionCall.args
          })
        }
      }
      finish = candidate?.finishReason ?? finish
      usage = chunk.usageMetadata ?? usage
    }
    const outcome: Outcome = {
      text,
      reasoning,
      toolCalls,
      finish,
      usage: {
        input: usage?.promptTokenCount,
        output: usage?.candidatesTokenCount,
        reasoning: usage?.thoughtsTokenCount
      },
      events
    }
    return { ...outcome, modelContent: { role: "model", parts } satisfies Content }
  }

  /** The REST body the SDK would send for `config` (systemInstruction, tools, generationConfig). */
  const restBody = (contents: Array<Content>, config: Config) => {
    const { systemInstruction, tools, ...generationConfig } = config
    return {
      contents,
      ...(typeof systemInstruction === "string" ? { systemInstruction: { parts: [{ text: systemInstruction }] } } : {}),
      ...(tools === undefined ? {} : { tools }),
      generationConfig
    }
  }

  /** `:streamGenerateContent` without `alt=sse`: one JSON array of chunks, key in the spec's header. */
  const jsonArray = async (model: string, contents: Array<Content>, config: Config) => {
    const response = await fetch(`${gateway.url}/v1beta/models/${model}:streamGenerateContent`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-vendorb-api-key": gateway.key },
      body: JSON.stringify(restBody(contents, config))
    })
    const text = await response.text()
    if (response.status !== 200) throw new Error(`The JSON array stream answered ${response.status}: ${text}`)
    const chunks: unknown = JSON.parse(text)
    if (!Array.isArray(chunks)) throw new Error(`The JSON array stream is not an array: ${text.slice(0, 200)}`)
    const typed = chunks as Array<GenerateContentResponse>
    return fold(typed, typed.map((chunk) => chunk.candidates?.[0]?.finishReason ?? "chunk"))
  }

  const call = async (model: string, mode: Mode, contents: Array<Content>, config: Config = {}) => {
    const request = { model, contents, config: { maxOutputTokens: 200, ...config } }
    if (mode === "stream (JSON array)") return jsonArray(model, contents, request.config)
    if (mode === "non-stream") return fold([await client.models.generateContent(request)])
    const chunks: Array<GenerateContentResponse> = []
    for await (const chunk of await client.models.generateContentStream(request)) chunks.push(chunk)
    return fold(chunks, chunks.map((chunk) => chunk.candidates?.[0]?.finishReason ?? "chunk"))
  }

  const user = (text: string): Content => ({ role: "user", parts: [{ text }] })

  return {
    name: "generate-content",
    cases: allCases,
    modes: [...sdkModes, "stream (JSON array)"],
    finishWords: { stop: "STOP", toolCalls: "STOP" },
    plain: (model, mode) => call(model, mode, [user(PLAIN_TEXT)], { systemInstruction: SYSTEM }),
    image: (model, mode) =>
      call(model, mode, [{
        role: "user",
        parts: [{ text: IMAGE_TEXT }, { inlineData: { mimeType: "image/png", data: PIXEL_PNG } }]
      }]),
    reasoning: (model, mode) =>
      // The cap includes thoughts: it leaves room for the budget.
      call(model, mode, [user(REASONING_TEXT)], {
        maxOutputTokens: 2048,
        thinkingConfig: { includeThoughts: true, thinkingBudget: 1024 }
      }),
    toolRoundTrip: async (model, mode) => {
      const first = await call(model, mode, [user(TOOL_TEXT)], toolConfig)
      const second = await call(model, mode, [
        user(TOOL_TEXT),
        first.modelContent,
        {
          role: "user",
          parts: first.toolCalls.map((toolCall) => ({
            functionResponse: {
              ...(toolCall.id.length > 0 ? { id: toolCall.id } : {}),
              name: toolCall.name,
              response: TOOL_RESULT
            }
          }))
        }
      ], toolConfig)
      return { first, second }
    }
  }
}

// ---------------------------------------------------------------- legacy completions

/** Legacy completions through the openai SDK (`client.completions.create`): plain text only. */
export const completionsDriver = (client: OpenAI): Driver => ({
  name: "completions",
  cases: ["plain text"],
  modes: sdkModes,
  finishWords: { stop: "stop", toolCalls: "" },
  plain: async (model, mode) => {
    if (mode === "non-stream") {
      const completion = await client.completions.create({ model, prompt: PLAIN_TEXT, max_tokens: 200 })
      return {
        text: completion.choices[0].text,
        reasoning: "",
        toolCalls: [],
        finish: completion.choices[0].finish_reason,
        usage: { input: completion.usage?.prompt_tokens, output: completion.usage?.completion_tokens }
      }
    }
    const chunks = await client.completions.create({
      model,
      prompt: PLAIN_TEXT,
      max_tokens: 200,
      stream: true,
      stream_options: { include_usage: true }
    })
    let text = ""
    let finish: string | null = null
    let usage: OpenAI.CompletionUsage | undefined
    const events: Array<string> = []
    for await (const chunk of chunks) {
      events.push(chunk.object)
      if (chunk.usage) usage = chunk.usage
      text += chunk.choices[0]?.text ?? ""
      finish = chunk.choices[0]?.finish_reason ?? finish
    }
    return {
      text,
      reasoning: "",
      toolCalls: [],
      finish,
      usage: { input: usage?.prompt_tokens, output: usage?.completion_tokens },
      events
    }
  },
  image: () => notExpressible("completions", "images"),
  reasoning: () => notExpressible("completions", "reasoning"),
  toolRoundTrip: () => notExpressible("completions", "tools")
})
