/**
 * DeepSeek's error answers: the OpenAI body `{error: {message, type, param,
 * code}}` (api-docs.deepseek.com/quick_start/error_codes), classified by
 * status. DeepSeek's spent-credit signal is its own status, 402 Insufficient
 * Balance ("You have run out of balance"), which it sends where OpenAI sends
 * 429 `insufficient_quota`; 422 Invalid Parameters is a request error, 503
 * Server Overloaded a server failure.
 *
 * @since 0.1.0
 */
import type { UpstreamFailureKind } from "../../../errors/GatewayError.ts"
import { classifyOpenAiError } from "../../openai/shared/ErrorBody.ts"

/**
 * Classifies a DeepSeek HTTP error: 402 → `quota` (the account's balance is
 * spent, so the key is disabled as a spent OpenAI key is), everything else as an
 * OpenAI-compatible upstream's (`classifyOpenAiError`: 400 and 422 `rejected`,
 * 401 `unauthorized`, 429 `throttled`, 5xx `server`). The message is the
 * vendor's own, made safe by `classifyOpenAiError`.
 *
 * @category decoding
 */
export const classifyDeepSeekError = (
  status: number,
  bodyText: string
): { readonly kind: UpstreamFailureKind; readonly message: string } => {
  const classified = classifyOpenAiError(status, bodyText)
  return status === 402 ? { kind: "quota", message: classified.message } : classified
}
