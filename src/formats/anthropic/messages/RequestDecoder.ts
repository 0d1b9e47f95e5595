/**
 * Messages-format request body → canonical `Request` (inbound half). Wire
 * facts: `MessageCreateParamsBase` of `@anthropic-ai/sdk` 1.12 and the spec,
 * "Text: messages format".
 *
 * @since 0.1.0
 */
import { Result } from "effect"
import type {
  CacheBreakpoint,
  ImagePart,
  MediaSource,
  Part,
  TextPart,
  ToolResultPart
} from "../../../canonical/Content.ts"
import type {
  Message,
  ReasoningConfig,
  ReasoningEffort,
  Request,
  ResponseFormat,
  Tool,
  ToolChoice
} from "../../../canonical/Request.ts"
import type { Decoded } from "../../Format.ts"
import { reasoningFromClient } from "../../shared/ReasoningOrigin.ts"
import {
  type CacheControl,
  type ContentBlock,
  CustomTool,
  ImageBlock,
  RequestBody,
  type TextBlock,
  type ToolResultBlock
} from "./RequestSchema.ts"
import { setAside } from "./SetAside.ts"
import { invalidAt, wireDecoder } from "./WireDecoder.ts"

const decodeBody = wireDecoder(RequestBody)
const decodeCustomTool = wireDecoder(CustomTool)

/** UTF-8 text → Base64 (for plain-text documents, kept as `text/plain` files). */
const utf8ToBase64 = (text: string): string => {
  const bytes = new TextEncoder().encode(text)
  let binary = ""
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary)
}

/** A block's `cache_control` as the canonical breakpoint field (`{}` when it has none). */
const cacheOf = (
  control: typeof CacheControl.Type | null | undefined
): { readonly cache?: CacheBreakpoint } =>
  control === undefined || control === null
    ? {}
    : { cache: control.ttl === undefined || control.ttl === null ? {} : { ttl: control.ttl } }

const textPart = (text: string): TextPart => ({ type: "text", text })

const textBlockPart = (block: typeof TextBlock.Type): TextPart => ({
  type: "text",
  text: block.text,
  ...cacheOf(block.cache_control)
})

const imagePart = (block: typeof ImageBlock.Type): ImagePart => ({
  type: "image",
  source: block.source.type === "url"
    ? { kind: "url", url: block.source.url }
    : { kind: "base64", mediaType: block.source.media_type, data: block.source.data },
  ...cacheOf(block.cache_control)
})

const toolResultContent = (block: typeof ToolResultBlock.Type): ReadonlyArray<TextPart | ImagePart> => {
  const content = block.content
  if (content === undefined || content === null) return []
  if (typeof content === "string") return [textPart(content)]
  return content.map((inner) => (inner.type === "text" ? textBlockPart(inner) : imagePart(inner)))
}

/** One block → one canonical part; tool names of results are recovered from earlier `tool_use` blocks. */
const partOf = (block: ContentBlock, toolNames: ReadonlyMap<string, string>): Part => {
  switch (block.type) {
    case "text":
      return textBlockPart(block)
    case "image":
      return imagePart(block)
    case "document": {
      const source: MediaSource = block.source.type === "url"
        ? { kind: "url", url: block.source.url }
        : block.source.type === "base64"
        ? { kind: "base64", mediaType: block.source.media_type, data: block.source.data }
        : { kind: "base64", mediaType: "text/plain", data: utf8ToBase64(block.source.data) }
      return {
        type: "file",
        source,
        ...(typeof block.title === "string" ? { filename: block.title } : {}),
        ...cacheOf(block.cache_control)
      }
    }
    case "thinking":
      return reasoningFromClient(block.thinking, { signature: block.signature }, "anthropic")
    case "redacted_thinking":
      return reasoningFromClient("", { redacted: block.data }, "anthropic")
    case "tool_use":
      return {
        type: "tool-call",
        callId: block.id,
        name: block.name,
        arguments: JSON.stringify(block.input),
        ...cacheOf(block.cache_control)
      }
    case "tool_result": {
      const name = toolNames.get(block.tool_use_id)
      return {
        type: "tool-result",
        callId: block.tool_use_id,
        ...(name === undefined ? {} : { name }),
        content: toolResultContent(block),
        ...(typeof block.is_error === "boolean" ? { isError: block.is_error } : {}),
        ...cacheOf(block.cache_control)
      }
    }
  }
}

/**
 * Turns the wire messages into canonical ones. A user turn's `tool_result`
 * blocks become one `tool` message placed first, the rest of the turn a `user`
 * message after it (each group keeps its order); a `system` message stays a
 * canonical system message in its place.
 */
const messagesOf = (body: RequestBody): Decoded<ReadonlyArray<Message>> => {
  const out: Array<Message> = []
  const toolNames = new Map<string, string>()
  for (const [index, message] of body.messages.entries()) {
    const blocks: ReadonlyArray<ContentBlock> = typeof message.content === "string"
      ? [{ type: "text", text: message.content }]
      : message.content
    if (message.role === "system") {
      // A mid-conversation system message keeps its place; it holds text only, as the top-level `system` does.
      const otherAt = blocks.findIndex((block) => block.type !== "text")
      if (otherAt >= 0) {
        return Result.fail(
          invalidAt(["messages", index, "content", otherAt, "type"], "system messages hold text blocks only")
        )
      }
      out.push({ role: "system", content: blocks.map((block) => partOf(block, toolNames)) })
      continue
    }
    if (message.role === "assistant") {
      const resultAt = blocks.findIndex((block) => block.type === "tool_result")
      if (resultAt >= 0) {
        return Result.fail(invalidAt(
          ["messages", index, "content", resultAt, "type"],
          "tool_result blocks belong in user messages"
        ))
      }
      for (const block of blocks) if (block.type === "tool_use") toolNames.set(block.id, block.name)
      out.push({ role: "assistant", content: blocks.map((block) => partOf(block, toolNames)) })
      continue
    }
    const results: Array<ToolResultPart> = []
    const rest: Array<Part> = []
    for (const block of blocks) {
      const part = partOf(block, toolNames)
      if (part.type === "tool-result") results.push(part)
      else rest.push(part)
    }
    if (results.length > 0) out.push({ role: "tool", content: results })
    if (rest.length > 0 || results.length === 0) out.push({ role: "user", content: rest })
  }
  return Result.succeed(out)
}

const systemOf = (system: RequestBody["system"]): ReadonlyArray<Message> => {
  if (system === undefined || system === null) return []
  if (typeof system === "string") return [{ role: "system", content: [textPart(system)] }]
  if (system.length === 0) return []
  return [{ role: "system", content: system.map(textBlockPart) }]
}

/** Custom tools → function tools; any other `type` is a server tool, kept whole as a builtin. */
const toolsOf = (tools: RequestBody["tools"]): Decoded<ReadonlyArray<Tool> | undefined> => {
  if (tools === undefined || tools === null) return Result.succeed(undefined)
  const out: Array<Tool> = []
  for (const [index, tool] of tools.entries()) {
    if (typeof tool.type === "string" && tool.type !== "custom") {
      out.push({ type: "builtin", format: "anthropic", definition: tool })
      continue
    }
    const decoded = decodeCustomTool(tool, ["tools", index])
    if (Result.isFailure(decoded)) return Result.fail(decoded.failure)
    const custom = decoded.success
    out.push({
      type: "function",
      name: custom.name,
      ...(typeof custom.description === "string" ? { description: custom.description } : {}),
      parameters: custom.input_schema,
      ...(typeof custom.strict === "boolean" ? { strict: custom.strict } : {}),
      ...cacheOf(custom.cache_control)
    })
  }
  return Result.succeed(out)
}

const toolChoiceOf = (
  choice: RequestBody["tool_choice"]
): { readonly toolChoice?: ToolChoice; readonly parallelToolCalls?: boolean } => {
  if (choice === undefined || choice === null) return {}
  const parallel = choice.type !== "none" && choice.disable_parallel_tool_use === true
    ? { parallelToolCalls: false }
    : {}
  switch (choice.type) {
    case "auto":
      return { toolChoice: { type: "auto" }, ...parallel }
    case "any":
      return { toolChoice: { type: "required" }, ...parallel }
    case "tool":
      return { toolChoice: { type: "tool", name: choice.name }, ...parallel }
    case "none":
      return { toolChoice: { type: "none" } }
  }
}

/** `max` has no canonical level; it is read as the highest one, `xhigh`. */
const effortOf = (effort: string | null | undefined): ReasoningEffort | undefined =>
  effort === undefined || effort === null ? undefined : effort === "max" ? "xhigh" : effort as ReasoningEffort

const reasoningOf = (body: RequestBody): ReasoningConfig | undefined => {
  const effort = effortOf(body.output_config?.effort ?? body.effort)
  const thinking = body.thinking
  const settings: ReasoningConfig = thinking === undefined || thinking === null
    ? {}
    : thinking.type === "disabled"
    ? { enabled: false }
    : thinking.type === "enabled"
    ? { enabled: true, budgetTokens: thinking.budget_tokens }
    : { enabled: true }
  const display = thinking !== undefined && thinking !== null && "display" in thinking ? thinking.display : undefined
  const reasoning: ReasoningConfig = {
    ...settings,
    ...(effort === undefined ? {} : { effort }),
    ...(display === "summarized" || display === "omitted" ? { includeThoughts: display === "summarized" } : {})
  }
  return Object.keys(reasoning).length === 0 ? undefined : reasoning
}

const responseFormatOf = (body: RequestBody): ResponseFormat | undefined => {
  const format = body.output_config?.format ?? body.output_format
  return format === undefined || format === null
    ? undefined
    : { type: "json_schema", name: "response", schema: format.schema }
}

/** Whether a part can carry a breakpoint in the messages format (thinking blocks take no `cache_control`). */
const cacheable = (part: Part): boolean => part.type !== "reasoning" && part.type !== "audio"

/**
 * The top-level `cache_control` (automatic caching: "applies a cache_control marker to the last cacheable block in the
 * request", `MessageCreateParamsBase.cache_control`) as an explicit breakpoint on that block: the last cacheable part
 * of the conversation, else of the system prompt, else the last custom tool (prompt order: tools, system, messages).
 * A block with its own marker keeps it.
 */
const withAutomaticBreakpoint = (
  messages: ReadonlyArray<Message>,
  tools: ReadonlyArray<Tool> | undefined,
  control: typeof CacheControl.Type | null | undefined
): { readonly messages: ReadonlyArray<Message>; readonly tools: ReadonlyArray<Tool> | undefined } => {
  const { cache } = cacheOf(control)
  if (cache === undefined) return { messages, tools }
  for (const system of [false, true]) {
    for (let index = messages.length - 1; index >= 0; index--) {
      const message = messages[index]
      if ((message.role === "system") !== system) continue
      const at = message.content.findLastIndex(cacheable)
      if (at < 0) continue
      const part = message.content[at]
      if ("cache" in part && part.cache !== undefined) return { messages, tools }
      const content = message.content.map((item, position) => position === at ? { ...item, cache } as Part : item)
      return { messages: messages.map((item, position) => position === index ? { ...message, content } : item), tools }
    }
  }
  const last = tools?.findLastIndex((tool) => tool.type === "function") ?? -1
  if (tools === undefined || last < 0) return { messages, tools }
  const tool = tools[last]
  if (tool.type !== "function" || tool.cache !== undefined) return { messages, tools }
  return { messages, tools: tools.map((item, position) => position === last ? { ...tool, cache } : item) }
}

const present = <A>(value: A | null | undefined): value is A => value !== undefined && value !== null

/**
 * Decodes a messages-format body. Fails with `InvalidRequest` naming the bad
 * field: `model` and `messages` are required, roles are `user`, `assistant`
 * or `system` (a `system` message holds text and stays in place; any other
 * role is set aside, `SetAside.ts`), blocks must be of a known type with the right
 * fields (`messages[i].content[j]…`), custom tools need `name` and
 * `input_schema` (`tools[i]…`). `system` becomes one canonical system message
 * placed first; `tool_result` blocks are split out into `tool` messages;
 * server tools (a `type` other than `custom`) become builtin tools of format
 * `anthropic`; `thinking`/`effort`/`output_config.effort` become `reasoning`
 * (`enabled` → budget; `adaptive` and `between_tools` → `enabled: true`;
 * `disabled` → `enabled: false`; `display` → `includeThoughts`; `max` effort
 * reads as `xhigh`); a thinking signature or redacted data is read with its
 * origin (`sluice.<origin>.<token>` as written for another vendor's token,
 * else `anthropic`; an empty signature as none, `ReasoningOrigin.ts`);
 * `output_config.format` or the older
 * `output_format` becomes a `json_schema` response format named `response`.
 * `stream` defaults to `context.stream`, then false. Blocks Sluice does not
 * model (`SetAside.ts`), and values of known fields it does not model (a new
 * role, thinking type or display, effort, tool choice type), are left out and
 * listed as `Request.untranslatable`; a same-format channel gets them as sent.
 * `cache_control` marks (`{type: "ephemeral", ttl?: "5m" | "1h"}`) on a
 * `system` text block, a message's `text`, `image`, `document`, `tool_use`
 * or `tool_result` block (and the text and image blocks inside a
 * `tool_result`) and a custom tool become the canonical `cache` breakpoint
 * of that part or tool, `ttl` kept when given (a marker of another shape is
 * a 400 naming it, `…cache_control.type`; a new `type` or `ttl` string is set
 * aside, `SetAside.ts`); a server tool keeps its own in its definition.
 * The top-level `cache_control` (automatic caching) becomes the breakpoint
 * of the last cacheable block (`withAutomaticBreakpoint`).
 * Not read: citations settings, `container`, `service_tier`, `speed`,
 * `inference_geo`, `diagnostics` (the canonical form has no place for them).
 *
 * @category decoding
 */
export const decodeRequest = (
  body: unknown,
  context: { readonly model?: string | undefined; readonly stream?: boolean | undefined }
): Decoded<Request> => {
  const aside = setAside(body)
  const decoded = aside.restore(decodeBody(aside.body))
  if (Result.isFailure(decoded)) return Result.fail(decoded.failure)
  const wire = decoded.success
  const messages = aside.restore(messagesOf(wire))
  if (Result.isFailure(messages)) return Result.fail(messages.failure)
  const tools = toolsOf(wire.tools)
  if (Result.isFailure(tools)) return Result.fail(tools.failure)
  const reasoning = reasoningOf(wire)
  const responseFormat = responseFormatOf(wire)
  const userId = wire.metadata?.user_id
  const marked = withAutomaticBreakpoint(
    [...systemOf(wire.system), ...messages.success],
    tools.success,
    wire.cache_control
  )
  const request: Request = {
    model: wire.model,
    messages: marked.messages,
    ...(marked.tools === undefined ? {} : { tools: marked.tools }),
    ...toolChoiceOf(wire.tool_choice),
    ...(present(wire.max_tokens) ? { maxOutputTokens: wire.max_tokens } : {}),
    ...(present(wire.temperature) ? { temperature: wire.temperature } : {}),
    ...(present(wire.top_p) ? { topP: wire.top_p } : {}),
    ...(present(wire.top_k) ? { topK: wire.top_k } : {}),
    ...(present(wire.stop_sequences) ? { stopSequences: wire.stop_sequences } : {}),
    ...(responseFormat === undefined ? {} : { responseFormat }),
    ...(reasoning === undefined ? {} : { reasoning }),
    stream: wire.stream ?? context.stream ?? false,
    ...(present(userId) ? { user: userId } : {}),
    ...(aside.notes.length === 0 ? {} : { untranslatable: aside.notes })
  }
  return Result.succeed(request)
}
