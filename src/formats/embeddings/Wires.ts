/**
 * The embedding formats by name, and the caller-side halves the embedding
 * routes use whatever the upstream: the answer in the caller's format, and
 * its error shape.
 *
 * @since 0.1.0
 */
import type { Problem } from "../Format.ts"
import { encodeGeminiError } from "../gemini/generate-content/ErrorBody.ts"
import { encodeOpenAiError } from "../openai/shared/ErrorBody.ts"
import type { EmbeddingFormatName, EmbeddingInbound, EmbeddingWire } from "./EmbeddingWire.ts"
import { encodeGeminiEmbeddings, geminiEmbeddingWire } from "../gemini/embeddings/Wire.ts"
import { encodeOpenAiEmbeddings, openAiEmbeddingWire } from "../openai/embeddings/Wire.ts"
import { cohereEmbeddingWire, titanEmbeddingWire } from "../bedrock/embeddings/Wire.ts"
import { vertexEmbeddingWire } from "../vertex/Embeddings.ts"

export type { EmbeddingFormatName, EmbeddingInbound, EmbeddingWire } from "./EmbeddingWire.ts"

/**
 * Every embedding wire format.
 *
 * @category formats
 */
export const embeddingWires: Record<EmbeddingFormatName, EmbeddingWire> = {
  openai: openAiEmbeddingWire,
  gemini: geminiEmbeddingWire,
  vertex: vertexEmbeddingWire,
  "bedrock-titan": titanEmbeddingWire,
  "bedrock-cohere": cohereEmbeddingWire
}

/**
 * The caller's answer in its own format: `vectors` in input order,
 * `promptTokens` the tokens billed (OpenAI's `usage`; generate-content has no
 * usage field), `model` as the caller named it.
 *
 * @category encoding
 */
export const encodeEmbeddingAnswer = (
  inbound: EmbeddingInbound,
  vectors: ReadonlyArray<ReadonlyArray<number>>,
  promptTokens: number,
  model: string
): Record<string, unknown> =>
  inbound.format === "openai"
    ? encodeOpenAiEmbeddings(vectors, promptTokens, model, inbound.base64)
    : encodeGeminiEmbeddings(vectors, inbound.batch)

/**
 * The error body of an embedding route: the gateway envelope on `/v1/embeddings`, Google's error shape on the
 * generate-content methods (as their text routes answer).
 *
 * @category encoding
 */
export const embeddingErrorBody = (format: EmbeddingInbound["format"]) => (problem: Problem): unknown =>
  format === "openai" ? encodeOpenAiError(problem) : encodeGeminiError(problem)
