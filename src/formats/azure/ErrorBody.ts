/**
 * Azure OpenAI's error answers: the OpenAI body `{error: {message, type, param, code}}`, or Azure's own
 * `{error: {code, message}}` (a 401 `code: "401"`, a 404 `DeploymentNotFound`), classified by status as an
 * OpenAI-compatible upstream's, with one refusal of its own read from its structured code: the content filter.
 *
 * A prompt the content filter blocks is HTTP 400 with `error.code: "content_filter"`, `param: "prompt"` and
 * `error.innererror: {code: "ResponsibleAIPolicyViolation", content_filter_result: {hate, self_harm, sexual,
 * violence, jailbreak, …}}` (learn.microsoft.com/azure/ai-foundry/openai/concepts/content-filter, "Scenario
 * details"; the `innerErrorCode` enum of Azure's inference OpenAPI spec holds `ResponsibleAIPolicyViolation`).
 * It is the caller's to change, so it is `rejected` (never retried on another channel, never a reason to disable
 * the key) with the code `content_filter`; the gateway's envelope shows that code. Never decided from the message.
 *
 * @since 0.1.0
 */
import { Predicate } from "effect"
import type { ClassifiedError } from "../Format.ts"
import { classifyOpenAiError } from "../openai/shared/ErrorBody.ts"

/** The codes of a body `{error: {code, innererror: {code}}}` that are strings. */
const codesOf = (bodyText: string): { readonly code?: string; readonly inner?: string } => {
  try {
    const parsed: unknown = JSON.parse(bodyText)
    const error = Predicate.isObject(parsed) ? parsed.error : undefined
    if (!Predicate.isObject(error)) return {}
    const inner = Predicate.isObject(error.innererror) ? error.innererror.code : undefined
    return {
      ...(typeof error.code === "string" ? { code: error.code } : {}),
      ...(typeof inner === "string" ? { inner } : {})
    }
  } catch {
    return {}
  }
}

/**
 * Whether an Azure error body is the content filter's refusal: `error.code` `content_filter`, or
 * `error.innererror.code` `ResponsibleAIPolicyViolation`.
 *
 * @category decoding
 */
export const isContentFilterError = (bodyText: string): boolean => {
  const codes = codesOf(bodyText)
  return codes.code === "content_filter" || codes.inner === "ResponsibleAIPolicyViolation"
}

/**
 * Classifies an Azure OpenAI HTTP error: a 400 that is the content filter's refusal (`isContentFilterError`) →
 * `rejected` with code `content_filter`; everything else as an OpenAI-compatible upstream's (`classifyOpenAiError`:
 * 400 and 404 `rejected`, 401/403 `unauthorized`, 429 `throttled`, 5xx `server`). The message is the vendor's
 * own, made safe by `classifyOpenAiError` (controls dropped, secrets masked, bounded).
 *
 * @category decoding
 */
export const classifyAzureError = (status: number, bodyText: string): ClassifiedError => {
  const classified = classifyOpenAiError(status, bodyText)
  return status === 400 && isContentFilterError(bodyText) ? { ...classified, code: "content_filter" } : classified
}
