/**
 * Canonical `Request` → messages-format request body (outbound half). Wire
 * facts: `MessageCreateParamsBase`, `ContentBlockParam`, `ToolChoice`,
 * `ThinkingConfigParam` and `OutputConfig` of `@anthropic-ai/sdk` 1.12
 * (docs.anthropic.com/en/api/messages), extended thinking rules from
 * docs.anthropic.com/en/docs/build-with-claude/extended-thinking.
 *
 * @since 0.1.0
 */
import { parseDataUri } from "../../../canonical/DataUri.ts"
import { DEFAULT_OUTPUT_TOKENS } from "../../../canonical/Estimate.ts"
import type {
  CacheBreakpoint,
  FilePart,
  ImagePart,
  MediaSource,
  Part,
  ReasoningPart,
  TextPart
} from "../../../canonical/Content.ts"
import type { ReasoningEffort, Request, Tool } from "../../../canonical/Request.ts"
import { parseJsonOrUndefined } from "../../../domain/JsonDepth.ts"
import type { EncodedRequest } from "../../Format.ts"
import { cacheOfPart, keptCacheBreakpoints, ttlField } from "../../shared/CacheBreakpoints.ts"
import { isForeignReasoning } from "../../shared/ReasoningOrigin.ts"
import { fitThinkingBudget } from "../../shared/ThinkingBudget.ts"

/**
 * `max_tokens` when the caller gave no limit: the messages format requires
 * the field, the gateway defaults it (spec, "Text: messages format":
 * "the gateway may default it") to the quota hold's default output
 * (`DEFAULT_OUTPUT_TOKENS`). The relay sends the configured
 * `default_max_tokens` itself, on both paths.
 *
 * @category constants
 */
export const DEFAULT_MAX_TOKENS = DEFAULT_OUTPUT_TOKENS

/**
 * The smallest thinking budget the API accepts (`ThinkingConfigEnabled.budget_tokens`:
 * "Must be ≥1024 and less than `max_tokens`").
 *
 * @category constants
 */
export const MIN_THINKING_BUDGET = 1024

/**
 * Thinking budget (tokens) for a request that names an effort level but no
 * budget. Sluice's choice, not a vendor table: each level roughly doubles
 * the previous one, starting from the API minimum.
 *
 * @category constants
 */
export const THINKING_BUDGET_BY_EFFORT: Readonly<Record<Exclude<ReasoningEffort, "none">, number>> = {
  minimal: 1024,
  low: 2048,
  medium: 8192,
  high: 16384,
  xhigh: 32768
}

/** Effort levels `output_config.effort` accepts (`OutputConfig.effort`). */
const WIRE_EFFORTS: ReadonlySet<string> = new Set(["low", "medium", "high", "xhigh"])

type Block = Record<string, unknown>

interface ThinkingPlan {
  /** The `thinking` field, when one is sent. */
  readonly thinking: Block | undefined
  /** `output_config.effort`, when sent. */
  readonly effort: string | undefined
  /** Thinking is on (enabled or adaptive): sampling parameters must be left out. */
  readonly on: boolean
  /** The effort level could not be sent. */
  readonly effortDropped: boolean
  /** Thinking was asked for but turned off: the tool loop's assistant turn has no thinking block to start with. */
  readonly thinkingOff?: boolean
  /** Thinking was asked for but turned off: the output cap leaves no room for the smallest budget. */
  readonly noRoom?: boolean
}

/**
 * The reasoning rule:
 * - `enabled: false` or effort `none` → `thinking: {type: "disabled"}` (explicit, because what an
 *   omitted `thinking` means depends on the model);
 * - a budget → `{type: "enabled", budget_tokens: max(budget, 1024)}`, fitted under the output cap
 *   (`fitThinkingBudget`);
 * - `enabled: true` without a budget → `{type: "adaptive"}`, unless the effort is `minimal`
 *   (not a wire level) which uses the budget table;
 * - an effort alone (no `enabled`, no budget) → `{type: "enabled"}` with `THINKING_BUDGET_BY_EFFORT`, fitted
 *   under the cap the same way;
 * - a cap of 1024 tokens or less leaves no room for any budget (the API wants 1024 ≤ budget < `max_tokens`):
 *   such a request gets `thinking: {type: "disabled"}` and lists `reasoning.noRoomUnderCap` as dropped;
 * - with `enabled: true`, an effort of `low`…`xhigh` is also sent as `output_config.effort`;
 * - `includeThoughts` → `display: summarized | omitted` on an enabled or adaptive `thinking`.
 */
const planThinking = (request: Request): ThinkingPlan => {
  const asked = askedThinking(request, outputCapOf(request))
  if (!asked.on || !toolLoopWithoutThinking(request)) return asked
  return {
    ...asked,
    thinking: { type: "disabled" },
    effort: undefined,
    on: false,
    thinkingOff: true
  }
}

/**
 * With thinking on, the API requires the assistant turn answered by the
 * latest tool results to start with a thinking block ("a final `assistant`
 * message must start with a thinking block (preceeding the lastmost set of
 * `tool_use` and `tool_result` blocks)"; extended thinking docs, "Preserving
 * thinking blocks"). True when the request ends in such a tool loop and that
 * turn would not start with one: its reasoning came from another vendor, was
 * unsigned, or was never there. Thinking is then turned off for the request
 * rather than sent to a certain 400.
 *
 * @category encoding
 */
export const toolLoopWithoutThinking = (request: Request): boolean => {
  const turns = request.messages.filter((message) => message.role !== "system")
  let end = turns.length - 1
  while (end >= 0 && turns[end].role !== "assistant") end -= 1
  if (end < 0 || end === turns.length - 1) return false
  let start = end
  while (start > 0 && turns[start - 1].role === "assistant") start -= 1
  // Consecutive assistant messages are merged into one turn.
  const parts = turns.slice(start, end + 1).flatMap((message) => message.content)
  if (!parts.some((part) => part.type === "tool-call")) return false
  const first = parts.map((part) => blockOf(part)).find((block) => block !== undefined)
  return first?.type !== "thinking" && first?.type !== "redacted_thinking"
}

const askedThinking = (request: Request, cap: number): ThinkingPlan => {
  const reasoning = request.reasoning
  const none: ThinkingPlan = {
    thinking: undefined,
    effort: undefined,
    on: false,
    effortDropped: false
  }
  if (reasoning === undefined) return none
  const effort = reasoning.effort
  if (reasoning.enabled === false || effort === "none") {
    return { ...none, thinking: { type: "disabled" } }
  }
  const display = reasoning.includeThoughts === undefined
    ? {}
    : { display: reasoning.includeThoughts ? "summarized" : "omitted" }
  const wireEffort = reasoning.enabled === true && effort !== undefined && WIRE_EFFORTS.has(effort) ? effort : undefined
  const enabledWith = (wanted: number, explicit: boolean): ThinkingPlan => {
    const budget = fitThinkingBudget(wanted, cap, { minimum: MIN_THINKING_BUDGET, explicit })
    if (budget === undefined) return { ...none, thinking: { type: "disabled" }, noRoom: true }
    return {
      thinking: { type: "enabled", budget_tokens: budget, ...display },
      effort: wireEffort,
      on: true,
      effortDropped: effort !== undefined && wireEffort === undefined && reasoning.budgetTokens !== undefined
    }
  }
  if (reasoning.budgetTokens !== undefined) {
    return enabledWith(Math.max(reasoning.budgetTokens, MIN_THINKING_BUDGET), true)
  }
  if (reasoning.enabled === true && (effort === undefined || wireEffort !== undefined)) {
    return {
      thinking: { type: "adaptive", ...display },
      effort: wireEffort,
      on: true,
      effortDropped: false
    }
  }
  if (effort !== undefined) return enabledWith(THINKING_BUDGET_BY_EFFORT[effort], false)
  return none
}

/**
 * The `max_tokens` rule: `maxOutputTokens ?? DEFAULT_MAX_TOKENS`, thinking or
 * not. The cap includes the thinking budget, which is fitted under it
 * (`planThinking`), so the cap is never raised and the quota hold sized for
 * it covers what is sent.
 */
const outputCapOf = (request: Request): number => request.maxOutputTokens ?? DEFAULT_MAX_TOKENS

/** A URL source that is really a Base64 `data:` URI becomes a Base64 source. */
const normalize = (source: MediaSource): MediaSource => {
  if (source.kind !== "url") return source
  const inline = parseDataUri(source.url)
  return inline === undefined ? source : { kind: "base64", mediaType: inline.mediaType, data: inline.data }
}

const base64ToUtf8 = (data: string): string | undefined => {
  try {
    const binary = atob(data)
    const bytes = Uint8Array.from(binary, (char) => char.charCodeAt(0))
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes)
  } catch {
    return undefined
  }
}

const imageBlock = (part: ImagePart): Block => {
  const source = normalize(part.source)
  return {
    type: "image",
    source: source.kind === "url"
      ? { type: "url", url: source.url }
      : { type: "base64", media_type: source.mediaType, data: source.data }
  }
}

/** A file → a `document` block (PDF by URL or Base64, plain text) or an `image` block; others cannot be sent. */
const fileBlock = (part: FilePart): Block | undefined => {
  const source = normalize(part.source)
  const title = part.filename === undefined ? {} : { title: part.filename }
  if (source.kind === "url") return { type: "document", source: { type: "url", url: source.url }, ...title }
  if (source.mediaType === "application/pdf") {
    return { type: "document", source: { type: "base64", media_type: source.mediaType, data: source.data }, ...title }
  }
  if (source.mediaType === "text/plain") {
    const text = base64ToUtf8(source.data)
    return text === undefined
      ? undefined
      : { type: "document", source: { type: "text", media_type: "text/plain", data: text }, ...title }
  }
  if (source.mediaType.startsWith("image/")) return imageBlock({ type: "image", source })
  return undefined
}

const isSigned = (part: ReasoningPart): boolean =>
  part.redacted !== undefined || (part.signature !== undefined && part.signature !== "")

/**
 * Tool-call arguments → the `input` object; `undefined` for text that is not a JSON object or nests deeper than
 * `MAX_JSON_DEPTH` (a caller's text, checked before it is parsed).
 */
const parseArguments = (text: string): Record<string, unknown> | undefined => {
  const parsed = parseJsonOrUndefined(text)
  return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
    ? parsed as Record<string, unknown>
    : undefined
}

const textBlock = (part: TextPart): Block => ({ type: "text", text: part.text })

/** The breakpoints this request sends (`keptCacheBreakpoints`); none for the rule checks that only read block types. */
type Kept = ReadonlySet<object>
const NONE_KEPT: Kept = new Set()

/**
 * `block` with `cache_control: {type: "ephemeral", ttl?}` when `element` (the part or tool it came from) is a kept
 * breakpoint.
 */
const marked = (block: Block, element: object, cache: CacheBreakpoint | undefined, kept: Kept): Block =>
  cache !== undefined && kept.has(element)
    ? { ...block, cache_control: { type: "ephemeral", ...ttlField(cache) } }
    : block

/** One canonical part → one block with its kept breakpoint, or nothing (see `blockOf`). */
const markedBlockOf = (part: Part, kept: Kept): Block | undefined => {
  const block = blockOf(part, kept)
  return block === undefined ? undefined : marked(block, part, cacheOfPart(part), kept)
}

/** One canonical part → one block, or nothing when the format cannot carry it (see `droppedFields`). */
const blockOf = (part: Part, kept: Kept = NONE_KEPT): Block | undefined => {
  switch (part.type) {
    case "text":
      return textBlock(part)
    case "image":
      return imageBlock(part)
    case "file":
      return fileBlock(part)
    case "audio":
      return undefined
    case "reasoning":
      if (isForeignReasoning(part, "anthropic")) return undefined
      if (part.redacted !== undefined) return { type: "redacted_thinking", data: part.redacted }
      return isSigned(part) ? { type: "thinking", thinking: part.text, signature: part.signature } : undefined
    case "tool-call":
      return { type: "tool_use", id: part.callId, name: part.name, input: parseArguments(part.arguments) ?? {} }
    case "tool-result":
      return {
        type: "tool_result",
        tool_use_id: part.callId,
        ...(part.content.length === 0 ? {} : {
          content: part.content.map((inner) =>
            marked(inner.type === "text" ? textBlock(inner) : imageBlock(inner), inner, inner.cache, kept)
          )
        }),
        ...(part.isError === undefined ? {} : { is_error: part.isError })
      }
  }
}

interface Turn {
  readonly role: "user" | "assistant"
  readonly results: ReadonlyArray<Block>
  readonly blocks: ReadonlyArray<Block>
}

/**
 * Non-system messages → alternating turns: `tool` messages are user turns,
 * consecutive turns of the same role are merged, and in a user turn the
 * `tool_result` blocks come first. Turns left without blocks are skipped.
 */
const turnsOf = (request: Request, kept: Kept): ReadonlyArray<Block> => {
  const turns: Array<Turn> = []
  for (const message of request.messages) {
    if (message.role === "system") continue
    const role = message.role === "assistant" ? "assistant" : "user"
    const blocks = message.content.flatMap((part) => {
      const block = markedBlockOf(part, kept)
      return block === undefined ? [] : [block]
    })
    if (blocks.length === 0) continue
    const results = role === "user" ? blocks.filter((block) => block.type === "tool_result") : []
    const rest = role === "user" ? blocks.filter((block) => block.type !== "tool_result") : blocks
    const last = turns.at(-1)
    if (last !== undefined && last.role === role) {
      turns[turns.length - 1] = { role, results: [...last.results, ...results], blocks: [...last.blocks, ...rest] }
    } else {
      turns.push({ role, results, blocks: rest })
    }
  }
  return turns.map((turn) => ({ role: turn.role, content: [...turn.results, ...turn.blocks] }))
}

/**
 * System messages → `system`: a string when there is one text and no breakpoint on it, else text blocks (each with its
 * kept breakpoint); absent when none.
 */
const systemOf = (request: Request, kept: Kept): string | ReadonlyArray<Block> | undefined => {
  const texts = request.messages
    .filter((message) => message.role === "system")
    .flatMap((message) => message.content.flatMap((part) => (part.type === "text" ? [part] : [])))
  if (texts.length === 0) return undefined
  if (texts.length === 1 && !kept.has(texts[0])) return texts[0].text
  return texts.map((part) => marked(textBlock(part), part, part.cache, kept))
}

const toolOf = (tool: Tool, kept: Kept): Block | undefined => {
  if (tool.type === "builtin") return tool.format === "anthropic" ? { ...tool.definition } : undefined
  return marked(
    {
      name: tool.name,
      ...(tool.description === undefined ? {} : { description: tool.description }),
      input_schema: "type" in tool.parameters ? tool.parameters : { type: "object", ...tool.parameters },
      ...(tool.strict === undefined ? {} : { strict: tool.strict })
    },
    tool,
    tool.cache,
    kept
  )
}

const toolChoiceOf = (request: Request): Block | undefined => {
  const parallel = request.parallelToolCalls === false ? { disable_parallel_tool_use: true } : {}
  const choice = request.toolChoice
  if (choice === undefined) return request.parallelToolCalls === false ? { type: "auto", ...parallel } : undefined
  switch (choice.type) {
    case "auto":
      return { type: "auto", ...parallel }
    case "required":
      return { type: "any", ...parallel }
    case "tool":
      return { type: "tool", name: choice.name, ...parallel }
    case "none":
      return { type: "none" }
  }
}

const allParts = (request: Request): ReadonlyArray<Part> =>
  request.messages.flatMap((message) =>
    message.content.flatMap((
      part
    ): ReadonlyArray<Part> => (part.type === "tool-result" ? [part, ...part.content] : [part]))
  )

/**
 * The one place that says which canonical fields a messages-format body
 * cannot carry, by name: `seed`, `presencePenalty`, `frequencyPenalty`,
 * `metadata` (the API accepts only `metadata.user_id`, from `user`), `store`,
 * `include`, `verbosity` (no such parameters),
 * `messages.developer`, `system.nonText` (images or files in system
 * messages), `audio`, `image.detail`, `file.mediaType` (files other than PDF,
 * plain text and images), `reasoning.unsigned` (reasoning without signature:
 * the API rejects unsigned thinking), `reasoning.foreignSignature` (reasoning
 * whose signature or redacted data another vendor minted: the API rejects a
 * signature it did not mint, so the whole thinking block is left out, as
 * earlier turns' thinking may be; `ReasoningOrigin.ts`), `toolCall.arguments`
 * (arguments that are not a JSON object, sent as `{}`), `tools.builtin`
 * (built-in tools of another format), `parallelToolCalls` (with tool choice
 * `none`),
 * `responseFormat.json_object`, `responseFormat.name` (other than the default
 * `response`), `responseFormat.description`, `responseFormat.strict` (false:
 * the format is always strict), `reasoning.effort` (an effort next to a budget
 * when it cannot go to `output_config.effort`), and `temperature`, `topP`,
 * `topK` when thinking is on (the API rejects them with thinking), and
 * `reasoning.thinkingInToolLoop` (thinking asked for in a tool loop whose
 * assistant turn has no Anthropic thinking block to start with: sent as
 * `disabled`, see `toolLoopWithoutThinking`), `reasoning.noRoomUnderCap`
 * (a budget asked for under an output cap of 1024 tokens or less: sent as
 * `disabled`, see `planThinking`), and `cache.overLimit` (prompt-cache
 * breakpoints beyond `MAX_CACHE_BREAKPOINTS`: the earliest are left out,
 * the last four sent, `keptCacheBreakpoints`).
 *
 * @category encoding
 */
export const droppedFields = (request: Request): ReadonlyArray<string> => {
  const plan = planThinking(request)
  const breakpoints = keptCacheBreakpoints(request)
  const parts = allParts(request)
  const format = request.responseFormat
  const checks: ReadonlyArray<readonly [string, boolean]> = [
    ["seed", request.seed !== undefined],
    ["presencePenalty", request.presencePenalty !== undefined],
    ["frequencyPenalty", request.frequencyPenalty !== undefined],
    ["metadata", request.metadata !== undefined && Object.keys(request.metadata).length > 0],
    ["store", request.store !== undefined],
    ["include", request.include !== undefined],
    ["verbosity", request.verbosity !== undefined],
    ["messages.developer", request.messages.some((message) => message.developer === true)],
    [
      "system.nonText",
      request.messages.some((message) =>
        message.role === "system" && message.content.some((part) => part.type !== "text")
      )
    ],
    ["audio", parts.some((part) => part.type === "audio")],
    ["image.detail", parts.some((part) => part.type === "image" && part.detail !== undefined)],
    ["file.mediaType", parts.some((part) => part.type === "file" && fileBlock(part) === undefined)],
    ["reasoning.unsigned", parts.some((part) => part.type === "reasoning" && !isSigned(part))],
    ["reasoning.foreignSignature", parts.some((part) => isForeignReasoning(part, "anthropic"))],
    ["reasoning.thinkingInToolLoop", plan.thinkingOff === true],
    ["reasoning.noRoomUnderCap", plan.noRoom === true],
    [
      "toolCall.arguments",
      parts.some((part) => part.type === "tool-call" && parseArguments(part.arguments) === undefined)
    ],
    ["tools.builtin", (request.tools ?? []).some((tool) => tool.type === "builtin" && tool.format !== "anthropic")],
    ["parallelToolCalls", request.parallelToolCalls === false && request.toolChoice?.type === "none"],
    ["responseFormat.json_object", format?.type === "json_object"],
    ["responseFormat.name", format?.type === "json_schema" && format.name !== "response"],
    ["responseFormat.description", format?.type === "json_schema" && format.description !== undefined],
    ["responseFormat.strict", format?.type === "json_schema" && format.strict === false],
    ["reasoning.effort", plan.effortDropped],
    ["temperature", plan.on && request.temperature !== undefined],
    ["topP", plan.on && request.topP !== undefined],
    ["topK", plan.on && request.topK !== undefined],
    ["cache.overLimit", breakpoints.overLimit > 0]
  ]
  return checks.filter(([, dropped]) => dropped).map(([name]) => name)
}

/**
 * Encodes a canonical request as a messages-format body. System messages go
 * to `system`; `tool` messages become user turns starting with `tool_result`
 * blocks; consecutive turns of one role are merged; `data:` URIs become
 * Base64 sources; files become `document` blocks; reasoning is sent back only
 * when signed (`thinking`) or redacted (`redacted_thinking`) by Anthropic (or
 * by a vendor not known); tool-call
 * arguments are parsed back into `input`. `max_tokens` and `thinking` follow
 * `outputCapOf` and `planThinking` (see `DEFAULT_MAX_TOKENS`,
 * `THINKING_BUDGET_BY_EFFORT`). Prompt-cache breakpoints (`cache` on a part or
 * a function tool) become `cache_control: {type: "ephemeral", ttl?}` on that
 * block or tool, at most `MAX_CACHE_BREAKPOINTS` (four) of
 * them, the last ones in prompt order (tools, system, messages; a system
 * prompt with a breakpoint is sent as text blocks). `dropped` lists what
 * could not be carried (`droppedFields`).
 *
 * @category encoding
 */
export const encodeRequest = (request: Request): EncodedRequest => {
  const plan = planThinking(request)
  const { kept } = keptCacheBreakpoints(request)
  const system = systemOf(request, kept)
  const tools = (request.tools ?? []).flatMap((tool) => {
    const block = toolOf(tool, kept)
    return block === undefined ? [] : [block]
  })
  const toolChoice = toolChoiceOf(request)
  const outputConfig = {
    ...(plan.effort === undefined ? {} : { effort: plan.effort }),
    ...(request.responseFormat?.type === "json_schema"
      ? { format: { type: "json_schema", schema: request.responseFormat.schema } }
      : {})
  }
  const sampling = plan.on ? {} : {
    ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
    ...(request.topP === undefined ? {} : { top_p: request.topP }),
    ...(request.topK === undefined ? {} : { top_k: request.topK })
  }
  const body: Record<string, unknown> = {
    model: request.model,
    max_tokens: outputCapOf(request),
    ...(system === undefined ? {} : { system }),
    messages: turnsOf(request, kept),
    ...(request.stopSequences === undefined ? {} : { stop_sequences: request.stopSequences }),
    ...sampling,
    ...(tools.length === 0 && request.tools === undefined ? {} : { tools }),
    ...(toolChoice === undefined ? {} : { tool_choice: toolChoice }),
    ...(plan.thinking === undefined ? {} : { thinking: plan.thinking }),
    ...(Object.keys(outputConfig).length === 0 ? {} : { output_config: outputConfig }),
    ...(request.user === undefined ? {} : { metadata: { user_id: request.user } }),
    ...(request.stream ? { stream: true } : {})
  }
  return { body, dropped: droppedFields(request) }
}
