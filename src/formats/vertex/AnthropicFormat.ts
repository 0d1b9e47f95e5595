/**
 * Claude on Vertex AI (`POST …/publishers/anthropic/models/{model}:rawPredict` and `:streamRawPredict`): the
 * Messages wire format, of which it is a dialect. The body is the Messages body with two differences
 * (docs.anthropic.com/en/api/claude-on-vertex-ai, "Making requests"): no `model` (it is in the URL) and
 * `anthropic_version` in the body, `vertex-2023-10-16`, rather than the `anthropic-version` header. `stream` stays in
 * the body as the Messages API takes it (`@anthropic-ai/vertex-sdk` keeps it and picks `streamRawPredict` by it);
 * `anthropic-beta` stays a header. Answers, stream events and errors are the Messages API's own. Named `anthropic`,
 * so a `/v1/messages` caller is passed through with every field it sent but `model`.
 *
 * @since 0.1.0
 */
import { AnthropicFormat } from "../anthropic/messages/Format.ts"
import type { Format, Passthrough } from "../Format.ts"

/**
 * The `anthropic_version` Vertex AI asks for in the body of a Claude call.
 *
 * @category models
 */
export const VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16"

/**
 * A Messages body as Vertex AI takes it: without `model`, with `anthropic_version` (the caller's own, when it gave
 * one, else `VERTEX_ANTHROPIC_VERSION`). A new object.
 *
 * @category passthrough
 */
export const vertexMessagesBody = (body: Record<string, unknown>): Record<string, unknown> => {
  const { model: _model, ...rest } = body
  return {
    ...rest,
    anthropic_version: typeof rest.anthropic_version === "string" && rest.anthropic_version !== ""
      ? rest.anthropic_version
      : VERTEX_ANTHROPIC_VERSION
  }
}

const passthrough: Passthrough = {
  ...AnthropicFormat.passthrough,
  body: (raw, target) => vertexMessagesBody(AnthropicFormat.passthrough.body(raw, target))
}

/**
 * The Messages format as a `vertex` channel speaks it to Claude models.
 *
 * @category formats
 */
export const VertexAnthropicFormat: Format<unknown, unknown> = {
  ...(AnthropicFormat as Format<unknown, unknown>),
  encodeRequest: (request) => {
    const encoded = AnthropicFormat.encodeRequest(request)
    return { ...encoded, body: vertexMessagesBody(encoded.body) }
  },
  passthrough
}
