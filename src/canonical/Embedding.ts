/**
 * The canonical embedding request and response: what the embedding formats
 * (OpenAI `/v1/embeddings`, generate-content `:embedContent` and
 * `:batchEmbedContents`) decode into and encode from, so either inbound format
 * reaches either upstream type through one small shape. It is no vendor's
 * format.
 *
 * @since 0.1.0
 */
import { utf8Length } from "./Estimate.ts"
import type { Usage } from "./Usage.ts"

/**
 * One input to embed: a text, or (OpenAI only) a text already tokenized as an
 * array of token ids. `title` and `taskType` are generate-content's per-input
 * hints (`RETRIEVAL_DOCUMENT` with the document's title); formats without them
 * drop them.
 *
 * @category models
 */
export type EmbeddingInput =
  | {
    readonly type: "text"
    readonly text: string
    readonly title?: string | undefined
    readonly taskType?: string | undefined
  }
  | { readonly type: "tokens"; readonly tokens: ReadonlyArray<number> }

/**
 * A request for one vector per input, in order. `dimensions` asks for
 * shorter vectors (OpenAI `dimensions`, generate-content
 * `outputDimensionality`); `user` is OpenAI's end-user id.
 *
 * @category models
 */
export interface EmbeddingRequest {
  readonly model: string
  readonly inputs: ReadonlyArray<EmbeddingInput>
  readonly dimensions?: number | undefined
  readonly user?: string | undefined
}

/**
 * The answer: one vector per input, in the request's order, and the usage the
 * upstream reported (`undefined` when it reported none; only `inputTokens`
 * counts for embeddings).
 *
 * @category models
 */
export interface EmbeddingResponse {
  readonly vectors: ReadonlyArray<ReadonlyArray<number>>
  readonly usage: Usage | undefined
}

/**
 * A typical prompt-token count of an embedding request, the same rule the text
 * routes bill by when the upstream reports no usage (`promptTokensTypical`:
 * about four characters a token, plus 3 per input as per message); a token
 * array counts its length exactly.
 *
 * @category estimates
 */
export const embeddingTokensTypical = (request: EmbeddingRequest): number => {
  let characters = 0
  let exact = 0
  for (const input of request.inputs) {
    if (input.type === "text") characters += input.text.length + (input.title?.length ?? 0)
    else exact += input.tokens.length
  }
  return Math.ceil(characters / 4) + 3 * request.inputs.length + exact
}

/**
 * An upper bound of an embedding request's prompt tokens, for the quota hold:
 * a token is at least one UTF-8 byte, so the byte count of a text (and its
 * title) bounds it, plus 8 per input; a token array counts its length.
 *
 * @category estimates
 */
export const embeddingTokensUpperBound = (request: EmbeddingRequest): number => {
  let total = 8
  for (const input of request.inputs) {
    total += 8 +
      (input.type === "text" ? utf8Length(input.text) + utf8Length(input.title ?? "") : input.tokens.length)
  }
  return total
}
