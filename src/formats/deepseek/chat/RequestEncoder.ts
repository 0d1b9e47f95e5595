/**
 * Encodes a canonical `Request` as a DeepSeek chat completions body
 * (api-docs.deepseek.com/api/create-chat-completion): the OpenAI chat encoding
 * (`encodeChatRequest`) with DeepSeek's differences carried rather than lost.
 *
 * - Reasoning history `tool-turns`: an assistant message with tool calls carries
 *   its reasoning text back as `reasoning_content` (`""` when it has none), which
 *   DeepSeek's thinking mode requires, and other assistant messages carry none,
 *   which DeepSeek would ignore (api-docs.deepseek.com/guides/thinking_mode,
 *   "Tool Calls").
 * - The output cap in `max_tokens`, DeepSeek's field (`max_completion_tokens` is
 *   OpenAI's and not among DeepSeek's parameters).
 * - `developer` messages as `system`: DeepSeek's roles are `system`, `user`,
 *   `assistant` and `tool`, and a `developer` message is its 400 ("unknown
 *   variant `developer`").
 * - Reasoning switched by DeepSeek's `thinking: {type}` toggle (thinking_mode,
 *   "Thinking Mode Toggle and Effort Control"): reasoning turned off
 *   (`enabled: false`, or the effort `none`, which DeepSeek has not) is
 *   `disabled` with no `reasoning_effort`; an effort, a budget or `enabled: true`
 *   is `enabled`, with the effort when there is one (DeepSeek maps `minimal` to
 *   `low`, `medium` and `xhigh` to `high`); nothing asked sends neither
 *   (DeepSeek's default applies).
 *
 * @since 0.1.0
 */
import type { Request } from "../../../canonical/Request.ts"
import type { EncodedRequest } from "../../Format.ts"
import { type ChatEncodeOptions, droppedFields, encodeChatRequest } from "../../openai/chat/RequestEncoder.ts"

/**
 * The chat encoder's options for DeepSeek.
 *
 * @category encoding
 */
export const deepseekEncodeOptions: ChatEncodeOptions = { reasoningHistory: "tool-turns" }

/** Whether `request` turns reasoning off: `enabled: false` without an effort, or the effort `none`. */
const reasoningOff = (request: Request): boolean =>
  request.reasoning?.effort === "none" ||
  (request.reasoning?.enabled === false && request.reasoning.effort === undefined)

/**
 * Messages with DeepSeek's roles: a `developer` message as `system`.
 *
 * @category encoding
 */
export const withDeepSeekRoles = (messages: unknown): unknown =>
  Array.isArray(messages)
    ? messages.map((message) =>
      typeof message === "object" && message !== null && (message as Record<string, unknown>).role === "developer"
        ? { ...message, role: "system" }
        : message
    )
    : messages

/**
 * The canonical fields a DeepSeek body cannot express: the chat encoder's
 * (`droppedFields` with `tool-turns`), less `reasoning.enabled`, which DeepSeek's
 * `thinking` toggle carries.
 *
 * @category encoding
 */
export const deepseekDroppedFields = (request: Request): ReadonlyArray<string> =>
  droppedFields(request, deepseekEncodeOptions).filter((field) => field !== "reasoning.enabled")

/**
 * Canonical `Request` → DeepSeek chat completions body and the dropped field names.
 *
 * @category encoding
 */
export const encodeDeepSeekRequest = (request: Request): EncodedRequest => {
  const { body } = encodeChatRequest(request, deepseekEncodeOptions)
  const { max_completion_tokens: cap, reasoning_effort: effort, ...rest } = body
  const off = reasoningOff(request)
  const on = !off && (effort !== undefined || request.reasoning?.enabled === true)
  return {
    body: {
      ...rest,
      messages: withDeepSeekRoles(rest.messages),
      ...(cap === undefined ? {} : { max_tokens: cap }),
      ...(off ? { thinking: { type: "disabled" } } : on ? { thinking: { type: "enabled" } } : {}),
      ...(on && effort !== undefined ? { reasoning_effort: effort } : {})
    },
    dropped: deepseekDroppedFields(request)
  }
}
