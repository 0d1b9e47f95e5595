/**
 * The answers of the public transcription routes the relay makes itself, in
 * OpenAI's shape (the gateway's audio API is OpenAI's,
 * platform.openai.com/docs/api-reference/audio/createTranscription): a
 * transcript heard on a wire that answers otherwise, as `json` or `text`, and
 * the stream's error event for a bill the ledger could not make durable.
 *
 * @since 0.1.0
 */
import type { Usage } from "../../canonical/Usage.ts"
import { toProblem } from "../../errors/Envelope.ts"
import { LedgerUnavailable } from "../../errors/GatewayError.ts"
import { encodeOpenAiError } from "../openai/shared/ErrorBody.ts"

/**
 * OpenAI's stream error event for a bill the ledger could not make durable (what a withheld end becomes), as the
 * bytes of one SSE `data:` line.
 *
 * @category encoding
 */
export const ledgerErrorEvent: Uint8Array = new TextEncoder().encode(
  `data: ${JSON.stringify(encodeOpenAiError(toProblem(new LedgerUnavailable())))}\n\n`
)

/**
 * A transcript as OpenAI answers it: `text` plus a newline for `response_format: "text"`, else the JSON
 * `{text, usage: {type: "tokens", input_tokens, output_tokens, total_tokens}}`; with its content type.
 *
 * @category encoding
 */
export const transcriptAnswer = (
  text: string,
  usage: Usage,
  responseFormat: unknown
): { readonly text: string; readonly contentType: string } =>
  responseFormat === "text" ? { text: `${text}\n`, contentType: "text/plain; charset=utf-8" } : {
    text: JSON.stringify({
      text,
      usage: {
        type: "tokens",
        input_tokens: usage.inputTokens,
        output_tokens: usage.outputTokens,
        total_tokens: usage.inputTokens + usage.outputTokens
      }
    }),
    contentType: "application/json"
  }
