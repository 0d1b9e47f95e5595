/**
 * What Sluice reads of a messages-format answer and of its stream events, as
 * `Schema`s (SDK 1.12 `Message`, `ContentBlock`, `Usage`, `MessageDeltaUsage`,
 * `RawMessageStreamEvent`; docs.anthropic.com/en/api/messages and
 * docs.anthropic.com/en/docs/build-with-claude/streaming). Unknown fields are
 * ignored; nullable counters accept `null`.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

const nullable = <S extends Schema.Top>(schema: S) => Schema.optional(Schema.NullOr(schema))

/**
 * `usage` of a message (`input_tokens` excludes cache reads and writes).
 *
 * @category schemas
 */
export const WireUsageSchema = Schema.Struct({
  input_tokens: Schema.Finite,
  output_tokens: Schema.Finite,
  cache_read_input_tokens: nullable(Schema.Finite),
  cache_creation_input_tokens: nullable(Schema.Finite),
  output_tokens_details: nullable(Schema.Struct({ thinking_tokens: Schema.Finite }))
})

/**
 * `usage` of `message_delta`: cumulative; input and cache counters may be
 * absent or `null`.
 *
 * @category schemas
 */
export const WireDeltaUsageSchema = Schema.Struct({
  input_tokens: nullable(Schema.Finite),
  output_tokens: Schema.Finite,
  cache_read_input_tokens: nullable(Schema.Finite),
  cache_creation_input_tokens: nullable(Schema.Finite),
  output_tokens_details: nullable(Schema.Struct({ thinking_tokens: Schema.Finite }))
})

/**
 * The output blocks Sluice carries: `text`, `thinking`, `redacted_thinking`,
 * `tool_use` (server-tool blocks are skipped by the readers).
 *
 * @category schemas
 */
export const OutputBlock = Schema.Union([
  Schema.Struct({ type: Schema.Literal("text"), text: Schema.String }),
  Schema.Struct({
    type: Schema.Literal("thinking"),
    thinking: Schema.String,
    signature: nullable(Schema.String)
  }),
  Schema.Struct({ type: Schema.Literal("redacted_thinking"), data: Schema.String }),
  Schema.Struct({
    type: Schema.Literal("tool_use"),
    id: Schema.String,
    name: Schema.String,
    input: Schema.optional(Schema.Unknown)
  })
])

/**
 * A decoded output block.
 *
 * @category models
 */
export type OutputBlock = typeof OutputBlock.Type

/**
 * The block types `OutputBlock` knows.
 *
 * @category constants
 */
export const OUTPUT_BLOCK_TYPES: ReadonlySet<string> = new Set(["text", "thinking", "redacted_thinking", "tool_use"])

/**
 * A message (non-stream answer); `content` blocks are read one by one.
 *
 * @category schemas
 */
export const WireMessage = Schema.Struct({
  id: Schema.String,
  model: Schema.String,
  content: Schema.Array(Schema.Unknown),
  stop_reason: nullable(Schema.String),
  stop_sequence: nullable(Schema.String),
  usage: WireUsageSchema
})

/**
 * `message_start`: the message shell (id, model, input usage).
 *
 * @category schemas
 */
export const MessageStartEvent = Schema.Struct({
  message: Schema.Struct({
    id: Schema.String,
    model: Schema.String,
    usage: Schema.optional(WireDeltaUsageSchema.mapFields((fields) => ({
      ...fields,
      output_tokens: nullable(Schema.Finite)
    })))
  })
})

/**
 * `content_block_start` with its index and initial block (read with `OutputBlock`).
 *
 * @category schemas
 */
export const ContentBlockStartEvent = Schema.Struct({ index: Schema.Int, content_block: Schema.Unknown })

/**
 * `content_block_delta`: `text_delta`, `input_json_delta`, `thinking_delta`,
 * `signature_delta`; other delta types (`citations_delta`) are skipped.
 *
 * @category schemas
 */
export const ContentBlockDeltaEvent = Schema.Struct({
  index: Schema.Int,
  delta: Schema.Struct({
    type: Schema.String,
    text: Schema.optional(Schema.String),
    partial_json: Schema.optional(Schema.String),
    thinking: Schema.optional(Schema.String),
    signature: Schema.optional(Schema.String)
  })
})

/**
 * `content_block_stop`.
 *
 * @category schemas
 */
export const ContentBlockStopEvent = Schema.Struct({ index: Schema.Int })

/**
 * `message_delta`: stop reason, stop sequence, cumulative usage.
 *
 * @category schemas
 */
export const MessageDeltaEvent = Schema.Struct({
  delta: Schema.Struct({ stop_reason: nullable(Schema.String), stop_sequence: nullable(Schema.String) }),
  usage: Schema.optional(WireDeltaUsageSchema)
})
