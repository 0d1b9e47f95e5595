/**
 * DeepSeek's chat completions (`POST {base_url}/chat/completions`,
 * api-docs.deepseek.com/api/create-chat-completion): the OpenAI chat wire
 * format, of which it is a dialect, with DeepSeek's differences. Reading is
 * the chat format's own (`reasoning_content` in answers and deltas becomes the
 * canonical reasoning; `prompt_cache_hit_tokens` the cached prompt tokens, see
 * `openai/chat/WireSchema.ts` `decodeUsage`); writing goes through
 * `RequestEncoder.ts`; errors through `ErrorBody.ts` (402 is spent credit).
 * Named `openai-chat`, so a chat completions caller is passed through, with
 * the same differences applied to its body and DeepSeek's cache hits shown in
 * OpenAI's `prompt_tokens_details.cached_tokens` too (the chat format's own
 * `answer` and `event`, `openai/shared/CacheHitUsage.ts`).
 *
 * @since 0.1.0
 */
import type { Format, Passthrough } from "../../Format.ts"
import { OpenAiChatFormat } from "../../openai/chat/Format.ts"
import { classifyDeepSeekError } from "./ErrorBody.ts"
import { encodeDeepSeekRequest, withDeepSeekRoles } from "./RequestEncoder.ts"

/**
 * A chat completions body as DeepSeek takes it: the output cap of
 * `max_completion_tokens` in `max_tokens` when the caller set no `max_tokens`,
 * and `developer` messages as `system`. A new object.
 *
 * @category passthrough
 */
export const deepseekChatBody = (body: Record<string, unknown>): Record<string, unknown> => {
  const { max_completion_tokens: cap, ...rest } = body
  return {
    ...rest,
    messages: withDeepSeekRoles(rest.messages),
    ...(cap === undefined || cap === null || (rest.max_tokens !== undefined && rest.max_tokens !== null)
      ? {}
      : { max_tokens: cap })
  }
}

const passthrough: Passthrough = {
  ...OpenAiChatFormat.passthrough,
  body: (raw, target) => deepseekChatBody(OpenAiChatFormat.passthrough.body(raw, target))
}

/**
 * The chat completions format as a `deepseek` channel speaks it.
 *
 * @category formats
 */
export const DeepSeekChatFormat: Format<unknown, unknown> = {
  ...(OpenAiChatFormat as Format<unknown, unknown>),
  encodeRequest: encodeDeepSeekRequest,
  classifyError: classifyDeepSeekError,
  passthrough
}
