/**
 * What an embedding wire format offers the embedding relay: the shape of an
 * upstream call (its body from the canonical request, or the caller's own body
 * with only the model mapped when the caller speaks the same format), how to
 * read its answer, and how the caller gets its answer back.
 *
 * @since 0.1.0
 */
import type { EmbeddingRequest, EmbeddingResponse } from "../../canonical/Embedding.ts"
import type { Usage } from "../../canonical/Usage.ts"
import type { UpstreamFailed, UpstreamFailureKind } from "../../errors/GatewayError.ts"

/**
 * The embedding wire formats: the two callers speak (`openai`, `gemini`) and those spoken to upstreams only (`vertex`:
 * Vertex AI's `:predict`; `bedrock-titan`, `bedrock-cohere`: Bedrock's model families, `formats/bedrock/embeddings/`).
 *
 * @category models
 */
export type EmbeddingFormatName = "openai" | "gemini" | "vertex" | "bedrock-titan" | "bedrock-cohere"

/**
 * How the caller asked: OpenAI `/v1/embeddings` (with the encoding it wants
 * its vectors in), or generate-content `:embedContent` (`batch: false`, one
 * `embedding`) or `:batchEmbedContents` (`batch: true`, `embeddings[]`).
 *
 * @category models
 */
export type EmbeddingInbound =
  | { readonly format: "openai"; readonly base64: boolean }
  | { readonly format: "gemini"; readonly batch: boolean }

/**
 * One embedding wire format, as the relay uses it on an upstream.
 *
 * @category models
 */
export interface EmbeddingWire {
  readonly name: EmbeddingFormatName
  /** The most inputs one upstream call may carry (a longer request is split into several calls). */
  readonly maxInputs: number
  /** Whether token-array inputs can be sent (only OpenAI's format has them). */
  readonly acceptsTokens: boolean
  /** The body of one call embedding `request` (at most `maxInputs` inputs) with the upstream's `model`. */
  readonly encodeRequest: (request: EmbeddingRequest, model: string) => Record<string, unknown>
  /**
   * The caller's body forwarded as is but for the upstream's `model` (fields the gateway does not know still
   * reach the upstream); only called when `inbound` is this format. The three passthrough members are absent on a
   * wire no caller speaks (Bedrock's).
   */
  readonly passthroughBody?: (
    raw: Record<string, unknown>,
    inbound: EmbeddingInbound,
    model: string
  ) => Record<string, unknown>
  /**
   * A 2xx answer (parsed JSON, and its headers with lower-case names, for a vendor that reports usage there) of a
   * call that sent `count` inputs: one vector per input in order, and the reported usage; an `UpstreamFailed`
   * (`bad-body`) when the answer is not one.
   */
  readonly decodeResponse: (
    json: unknown,
    count: number,
    headers?: Readonly<Record<string, string>> | undefined
  ) => EmbeddingResponse | UpstreamFailed
  /**
   * A passthrough call's 2xx answer checked without decoding its vectors (the caller gets them as sent): the
   * reported usage (`undefined` when none) when it holds `count` embeddings, else an `UpstreamFailed` (`bad-body`).
   */
  readonly passthroughUsage?: (json: unknown, count: number) => Usage | undefined | UpstreamFailed
  /**
   * The caller's answer to a passthrough call (same format both sides): the upstream's own text when the shapes
   * match, or its parts re-framed (one `embedContent` answered through `batchEmbedContents`).
   */
  readonly passthroughAnswer?: (text: string, json: unknown, inbound: EmbeddingInbound) => string
  /** The failure kind and caller-safe message of an upstream error answer (the text formats' classifiers). */
  readonly classifyError: (
    status: number,
    text: string,
    errorType?: string | undefined
  ) => { readonly kind: UpstreamFailureKind; readonly message: string }
}

/**
 * An embedding wire a caller speaks (`openai`, `gemini`): its passthrough members present.
 *
 * @category models
 */
export type CallerEmbeddingWire =
  & EmbeddingWire
  & Required<
    Pick<EmbeddingWire, "passthroughBody" | "passthroughUsage" | "passthroughAnswer">
  >
