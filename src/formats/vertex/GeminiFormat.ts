/**
 * Gemini on Vertex AI (`POST …/publishers/google/models/{model}:generateContent` and `:streamGenerateContent?alt=sse`,
 * cloud.google.com/vertex-ai/generative-ai/docs/reference/rest/v1/projects.locations.publishers.models/generateContent):
 * the generate-content wire format, of which it is a dialect. Answers, stream events and errors are the same
 * (`usageMetadata`, `google.rpc.Status` errors); a request differs where the Gemini API is lenient:
 *
 * - `contents[].role` is required on Vertex AI (the Gemini API takes a content without one as the user's); a
 *   passed-through content without a role is sent as `user`, as the Gemini API reads it. The request encoder always
 *   writes the role.
 * - `store` is a Gemini API field Vertex AI does not take (`@google/genai` refuses it in Vertex mode,
 *   `generateContentConfigToVertex`); it is left out, as a channel with `forward_store: false` leaves it out.
 *
 * @since 0.1.0
 */
import { GeminiFormat } from "../gemini/generate-content/Format.ts"
import type { Format, Passthrough } from "../Format.ts"

/**
 * A generate-content body as Vertex AI takes it: every content with a role (`user` where it had none) and no
 * `store`. A new object; `body` is left as it is.
 *
 * @category passthrough
 */
export const vertexGenerateContentBody = (body: Record<string, unknown>): Record<string, unknown> => {
  const { store: _store, ...rest } = body
  const contents = rest.contents
  if (!Array.isArray(contents)) return rest
  return {
    ...rest,
    contents: contents.map((content) =>
      typeof content === "object" && content !== null && !Array.isArray(content) &&
        ((content as Record<string, unknown>).role === undefined || (content as Record<string, unknown>).role === null)
        ? { ...(content as Record<string, unknown>), role: "user" }
        : content
    )
  }
}

const passthrough: Passthrough = {
  ...GeminiFormat.passthrough,
  body: (raw, target) => vertexGenerateContentBody(GeminiFormat.passthrough.body(raw, target))
}

/**
 * The generate-content format as a `vertex` channel speaks it to Gemini models.
 *
 * @category formats
 */
export const VertexGeminiFormat: Format<unknown, unknown> = {
  ...(GeminiFormat as Format<unknown, unknown>),
  passthrough
}
