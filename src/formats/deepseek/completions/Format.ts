/**
 * DeepSeek's FIM completion (`POST {base_url}/beta/completions`,
 * api-docs.deepseek.com/api/create-completion; api-docs.deepseek.com/guides/fim_completion):
 * the legacy completions wire format (`prompt`, `suffix`, `max_tokens`,
 * `stream`), which a legacy completions caller reaches as it sent it, `suffix`
 * included. Its usage is DeepSeek's (cache hits read as cached prompt tokens,
 * and shown to the caller as `prompt_tokens_details.cached_tokens` too); its
 * errors DeepSeek's (402 is spent credit).
 *
 * @since 0.1.0
 */
import type { Format } from "../../Format.ts"
import { CompletionsFormat } from "../../openai/completions/Format.ts"
import { classifyDeepSeekError } from "../chat/ErrorBody.ts"

/**
 * The legacy completions format as a `deepseek` channel speaks it (FIM).
 *
 * @category formats
 */
export const DeepSeekCompletionsFormat: Format<unknown, unknown> = {
  ...(CompletionsFormat as Format<unknown, unknown>),
  classifyError: classifyDeepSeekError,
  passthrough: CompletionsFormat.passthrough
}
