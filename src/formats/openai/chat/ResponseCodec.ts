/**
 * The non-stream `chat.completion` object in both directions (spec "Chat
 * completion"; openai@7.57.0 `ChatCompletion`, `ChatCompletionMessage`).
 *
 * @since 0.1.0
 */
import { Predicate } from "effect"
import type { OutputPart } from "../../../canonical/Content.ts"
import type { Response } from "../../../canonical/Response.ts"
import { emptyUsage } from "../../../canonical/Usage.ts"
import type { UpstreamFailed } from "../../../errors/GatewayError.ts"
import type { ResponseMeta } from "../../Format.ts"
import { callSignatures, chatToolCall, signatureOfExtraContent } from "./CallSignatures.ts"
import {
  badBody,
  decodeFinishReason,
  decodeUsage,
  encodeChatFinishReason,
  encodeUsage,
  inBandFailure,
  numberOrUndefined,
  stringOrUndefined
} from "./WireSchema.ts"

const outputParts = (message: Record<string, unknown>): ReadonlyArray<OutputPart> => {
  const parts: Array<OutputPart> = []
  const reasoning = stringOrUndefined(message.reasoning_content) ?? stringOrUndefined(message.reasoning)
  if (reasoning !== undefined && reasoning !== "") parts.push({ type: "reasoning", text: reasoning })
  const content = message.content
  if (typeof content === "string" && content !== "") parts.push({ type: "text", text: content })
  else if (Array.isArray(content)) {
    for (const item of content) {
      const text = Predicate.isObject(item) ? stringOrUndefined(item.text) : undefined
      if (text !== undefined) parts.push({ type: "text", text })
    }
  }
  const refusal = stringOrUndefined(message.refusal)
  if (refusal !== undefined && refusal !== "") parts.push({ type: "text", text: refusal })
  if (Array.isArray(message.tool_calls)) {
    for (const call of message.tool_calls) {
      if (!Predicate.isObject(call)) continue
      const callId = stringOrUndefined(call.id) ?? ""
      // Gemini's OpenAI-compatible endpoint signs a call in `extra_content` (see `CallSignatures.ts`).
      const signature = signatureOfExtraContent(call.extra_content)
      if (signature !== undefined) parts.push({ type: "reasoning", text: "", signature, origin: "gemini" })
      if (Predicate.isObject(call.function)) {
        parts.push({
          type: "tool-call",
          callId,
          name: stringOrUndefined(call.function.name) ?? "",
          arguments: stringOrUndefined(call.function.arguments) ?? ""
        })
      } else if (Predicate.isObject(call.custom)) {
        parts.push({
          type: "tool-call",
          callId,
          name: stringOrUndefined(call.custom.name) ?? "",
          arguments: stringOrUndefined(call.custom.input) ?? ""
        })
      }
    }
  }
  if (Predicate.isObject(message.function_call)) {
    parts.push({
      type: "tool-call",
      callId: "call_function_0",
      name: stringOrUndefined(message.function_call.name) ?? "",
      arguments: stringOrUndefined(message.function_call.arguments) ?? ""
    })
  }
  return parts
}

/**
 * An upstream `chat.completion` body → canonical `Response` (first choice).
 * `message.reasoning_content` (DeepSeek) or `message.reasoning` → a reasoning
 * part; a `refusal` → text; tool calls (custom ones with their `input` as
 * arguments) → tool-call parts, each after a signature-only reasoning part
 * (origin `gemini`) when its `extra_content` carries Gemini's signature;
 * missing usage → zeros. A body with an
 * `error` member → that failure (`inBandFailure`); a body without a
 * `choices[0].message` → `bad-body`.
 *
 * @category decoding
 */
export const decodeChatResponse = (body: unknown): Response | UpstreamFailed => {
  if (!Predicate.isObject(body)) return badBody("The upstream answer is not a JSON object.")
  if (body.error !== undefined && body.error !== null) return inBandFailure(body.error)
  const choice = Array.isArray(body.choices) ? body.choices[0] : undefined
  if (!Predicate.isObject(choice) || !Predicate.isObject(choice.message)) {
    return badBody("The upstream answer has no choices[0].message.")
  }
  const rawFinishReason = stringOrUndefined(choice.finish_reason)
  return {
    id: stringOrUndefined(body.id) ?? "",
    model: stringOrUndefined(body.model) ?? "",
    created: numberOrUndefined(body.created) ?? 0,
    content: outputParts(choice.message),
    finishReason: decodeFinishReason(rawFinishReason),
    ...(rawFinishReason === undefined ? {} : { rawFinishReason }),
    usage: decodeUsage(body.usage) ?? emptyUsage
  }
}

/**
 * Canonical `Response` → `chat.completion` with `id`, `created` and `model`
 * from `meta`. `message.content` is the joined text, `null` when the answer is
 * only tool calls; reasoning text goes to `message.reasoning_content`
 * (reasoning signatures and redacted reasoning have no chat field and are not
 * sent, but for a Gemini call's signature, which goes on the call as
 * `extra_content.google.thought_signature`, see `CallSignatures.ts`); `refusal`
 * is `null`; usage carries the cached and reasoning details.
 *
 * @category encoding
 */
export const encodeChatResponse = (response: Response, meta: ResponseMeta): Record<string, unknown> => {
  const text = response.content.flatMap((part) => (part.type === "text" ? [part.text] : []))
  const reasoning = response.content.flatMap((part) => (part.type === "reasoning" ? [part.text] : []))
  const calls = response.content.flatMap((part) => (part.type === "tool-call" ? [part] : []))
  const signatures = callSignatures(response.content)
  return {
    id: meta.id,
    object: "chat.completion",
    created: meta.created,
    model: meta.model,
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: text.length === 0 && calls.length > 0 ? null : text.join(""),
        ...(reasoning.length === 0 ? {} : { reasoning_content: reasoning.join("") }),
        refusal: null,
        ...(calls.length === 0 ? {} : {
          tool_calls: calls.map((call) => chatToolCall(call, signatures.get(call)))
        })
      },
      logprobs: null,
      finish_reason: encodeChatFinishReason(response.finishReason)
    }],
    usage: encodeUsage(response.usage)
  }
}
