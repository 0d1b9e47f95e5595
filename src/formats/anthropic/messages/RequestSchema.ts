/**
 * The messages-format request body (`POST /v1/messages`) as `Schema`s: only the
 * fields Sluice reads; unknown fields are ignored. Shapes follow the official
 * SDK types (`@anthropic-ai/sdk` 1.12, `MessageCreateParamsBase`,
 * `ContentBlockParam`, `ToolChoice`, `ThinkingConfigParam`, `OutputConfig`) and
 * the spec, "Text: messages format". Optional fields also accept `null`.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

const nullable = <S extends Schema.Top>(schema: S) => Schema.optional(Schema.NullOr(schema))

/** A JSON object (JSON Schema documents, tool inputs). */
const JsonObject = Schema.Record(Schema.String, Schema.Unknown)

/**
 * `cache_control`: a prompt-cache breakpoint, `{type: "ephemeral", ttl?: "5m" | "1h"}` (`CacheControlEphemeral`;
 * docs.anthropic.com/en/docs/build-with-claude/prompt-caching). A `type` or `ttl` string of another value is set
 * aside before decoding (`SetAside.ts`); anything else that is not this shape is the caller's 400.
 *
 * @category schemas
 */
export const CacheControl = Schema.Struct({
  type: Schema.Literal("ephemeral"),
  ttl: nullable(Schema.Literals(["5m", "1h"]))
})

/** The `cache_control` field of a block or tool that may carry one. */
const cacheControl = { cache_control: nullable(CacheControl) }

/**
 * `{type: "text", text, cache_control}`.
 *
 * @category schemas
 */
export const TextBlock = Schema.Struct({ type: Schema.Literal("text"), text: Schema.String, ...cacheControl })

/**
 * `{type: "base64", media_type, data}`: raw Base64, no `data:` prefix.
 *
 * @category schemas
 */
export const Base64Source = Schema.Struct({
  type: Schema.Literal("base64"),
  media_type: Schema.String,
  data: Schema.String
})

/**
 * `{type: "url", url}`.
 *
 * @category schemas
 */
export const UrlSource = Schema.Struct({ type: Schema.Literal("url"), url: Schema.String })

/**
 * `{type: "text", media_type: "text/plain", data}`: a plain-text document (`PlainTextSource`).
 *
 * @category schemas
 */
export const PlainTextSource = Schema.Struct({
  type: Schema.Literal("text"),
  media_type: Schema.optional(Schema.String),
  data: Schema.String
})

/**
 * `{type: "image", source, cache_control}` with a Base64 or URL source.
 *
 * @category schemas
 */
export const ImageBlock = Schema.Struct({
  type: Schema.Literal("image"),
  source: Schema.Union([Base64Source, UrlSource]).annotate({ expected: "an image source of type base64 or url" }),
  ...cacheControl
})

/**
 * `{type: "document", source, title, cache_control}`: a PDF (Base64 or URL) or plain text.
 *
 * @category schemas
 */
export const DocumentBlock = Schema.Struct({
  type: Schema.Literal("document"),
  source: Schema.Union([Base64Source, UrlSource, PlainTextSource]).annotate({
    expected: "a document source of type base64, url or text"
  }),
  title: nullable(Schema.String),
  ...cacheControl
})

/**
 * `{type: "thinking", thinking, signature}`.
 *
 * @category schemas
 */
export const ThinkingBlock = Schema.Struct({
  type: Schema.Literal("thinking"),
  thinking: Schema.String,
  signature: Schema.String
})

/**
 * `{type: "redacted_thinking", data}`: encrypted reasoning.
 *
 * @category schemas
 */
export const RedactedThinkingBlock = Schema.Struct({ type: Schema.Literal("redacted_thinking"), data: Schema.String })

/**
 * `{type: "tool_use", id, name, input, cache_control}`; `input` is a JSON object.
 *
 * @category schemas
 */
export const ToolUseBlock = Schema.Struct({
  type: Schema.Literal("tool_use"),
  id: Schema.String,
  name: Schema.String,
  input: JsonObject,
  ...cacheControl
})

/**
 * `{type: "tool_result", tool_use_id, content, is_error, cache_control}`;
 * `content` is a string or text and image blocks (each may carry its own `cache_control`).
 *
 * @category schemas
 */
export const ToolResultBlock = Schema.Struct({
  type: Schema.Literal("tool_result"),
  tool_use_id: Schema.String,
  content: nullable(
    Schema.Union([
      Schema.String,
      Schema.Array(Schema.Union([TextBlock, ImageBlock]).annotate({ expected: "a block of type text or image" }))
    ])
  ),
  is_error: nullable(Schema.Boolean),
  ...cacheControl
})

/**
 * Any content block Sluice understands in a message.
 *
 * @category schemas
 */
export const ContentBlock = Schema.Union([
  TextBlock,
  ImageBlock,
  DocumentBlock,
  ThinkingBlock,
  RedactedThinkingBlock,
  ToolUseBlock,
  ToolResultBlock
]).annotate({
  expected: "a content block of type text, image, document, thinking, redacted_thinking, tool_use or tool_result"
})

/**
 * A decoded content block.
 *
 * @category models
 */
export type ContentBlock = typeof ContentBlock.Type

/**
 * One turn: `user` or `assistant` (spec: "roles `user` or `assistant`"), or a
 * mid-conversation `system` message (Claude Code sends its environment block
 * as one; the vendor takes it in place), with a string or blocks.
 *
 * @category schemas
 */
export const MessageParam = Schema.Struct({
  role: Schema.Literals(["user", "assistant", "system"]),
  content: Schema.Union([Schema.String, Schema.Array(ContentBlock)])
})

/**
 * A custom (client) tool: `{name, description, input_schema, strict, cache_control}`,
 * `type` absent or `"custom"`.
 *
 * @category schemas
 */
export const CustomTool = Schema.Struct({
  type: nullable(Schema.Literal("custom")),
  name: Schema.String,
  description: nullable(Schema.String),
  input_schema: JsonObject,
  strict: nullable(Schema.Boolean),
  ...cacheControl
})

const parallel = { disable_parallel_tool_use: nullable(Schema.Boolean) }

/**
 * `{type: auto | any | none}` or `{type: "tool", name}`, with
 * `disable_parallel_tool_use`.
 *
 * @category schemas
 */
export const ToolChoice = Schema.Union([
  Schema.Struct({ type: Schema.Literal("auto"), ...parallel }),
  Schema.Struct({ type: Schema.Literal("any"), ...parallel }),
  Schema.Struct({ type: Schema.Literal("tool"), name: Schema.String, ...parallel }),
  Schema.Struct({ type: Schema.Literal("none") })
]).annotate({ expected: "a tool choice of type auto, any, tool or none" })

const display = { display: nullable(Schema.Literals(["summarized", "omitted"])) }

/**
 * `thinking`: `{type: "enabled", budget_tokens}`, `{type: "adaptive"}`,
 * `{type: "between_tools"}` or `{type: "disabled"}` (`ThinkingConfigParam`).
 *
 * @category schemas
 */
export const Thinking = Schema.Union([
  Schema.Struct({ type: Schema.Literal("enabled"), budget_tokens: Schema.Int, ...display }),
  Schema.Struct({ type: Schema.Literal("adaptive"), ...display }),
  Schema.Struct({ type: Schema.Literal("between_tools") }),
  Schema.Struct({ type: Schema.Literal("disabled") })
]).annotate({ expected: "a thinking setting of type enabled, adaptive, between_tools or disabled" })

/**
 * The effort levels of the messages format (`OutputConfig.effort`; the spec's
 * top-level `effort` lists `low`, `medium`, `high`, `xhigh`).
 *
 * @category schemas
 */
export const Effort = Schema.Literals(["low", "medium", "high", "xhigh", "max"])

/**
 * `{type: "json_schema", schema}` (`JSONOutputFormat`).
 *
 * @category schemas
 */
export const JsonOutputFormat = Schema.Struct({ type: Schema.Literal("json_schema"), schema: JsonObject })

/**
 * The request body. `tools` are read one by one (custom or server tool), so
 * they are plain objects here.
 *
 * @category schemas
 */
export const RequestBody = Schema.Struct({
  model: Schema.String,
  messages: Schema.Array(MessageParam),
  system: nullable(Schema.Union([Schema.String, Schema.Array(TextBlock)])),
  max_tokens: nullable(Schema.Int),
  stop_sequences: nullable(Schema.Array(Schema.String)),
  temperature: nullable(Schema.Finite),
  top_p: nullable(Schema.Finite),
  top_k: nullable(Schema.Int),
  stream: nullable(Schema.Boolean),
  metadata: nullable(Schema.Struct({ user_id: nullable(Schema.String) })),
  tools: nullable(Schema.Array(JsonObject)),
  tool_choice: nullable(ToolChoice),
  thinking: nullable(Thinking),
  effort: nullable(Effort),
  output_config: nullable(Schema.Struct({ effort: nullable(Effort), format: nullable(JsonOutputFormat) })),
  output_format: nullable(JsonOutputFormat),
  /** Automatic caching: a breakpoint on the last cacheable block of the request (`MessageCreateParamsBase`). */
  cache_control: nullable(CacheControl)
})

/**
 * A decoded request body.
 *
 * @category models
 */
export type RequestBody = typeof RequestBody.Type
