/**
 * Errors of the messages format: the body `{type: "error", error: {type,
 * message}}` (SDK 1.12 `ErrorResponse`, `ErrorType`;
 * docs.anthropic.com/en/api/errors) read from an upstream and written to a
 * caller.
 *
 * @since 0.1.0
 */
import type { UpstreamFailureKind } from "../../errors/GatewayError.ts"
import type { Problem } from "../Format.ts"

/**
 * A problem in the messages-format error shape, plus the gateway's `param`
 * and `code`: `{type: "error", error: {type, message, param, code}}`.
 *
 * @category encoding
 */
export const encodeError = (problem: Problem): {
  readonly type: "error"
  readonly error: { readonly type: string; readonly message: string; readonly param: string; readonly code: string }
} => ({
  type: "error",
  error: { type: problem.type, message: problem.message, param: problem.param, code: problem.code }
})

/**
 * `error.details.error_code` values that mean the account cannot pay (SDK
 * 1.12 `shared.ts`: spend limits reached, linked organization billing).
 */
const QUOTA_CODES: ReadonlySet<string> = new Set([
  "enforced_spend_limit_reached",
  "contract_spend_limit_reached",
  "linked_organization_spend_limit_reached",
  "linked_organization_billing_unavailable"
])

/**
 * The failure kind an error `type` stands for, when the type alone decides:
 * `billing_error` → quota, `authentication_error`/`permission_error` →
 * unauthorized, `rate_limit_error` → throttled, `overloaded_error`/`api_error`
 * → server, `timeout_error` → timeout; other types are the request's fault
 * (rejected).
 *
 * @category decoding
 */
export const kindOfErrorType = (type: string | undefined): UpstreamFailureKind | undefined => {
  switch (type) {
    case "billing_error":
      return "quota"
    case "authentication_error":
    case "permission_error":
      return "unauthorized"
    case "rate_limit_error":
      return "throttled"
    case "overloaded_error":
    case "api_error":
      return "server"
    case "timeout_error":
      return "timeout"
    default:
      return undefined
  }
}

/**
 * The readable parts of an error body (`error.type`, `error.message`,
 * `error.details.error_code`); empty when the text is not such a body.
 *
 * @category decoding
 */
export const readErrorBody = (
  body: unknown
): { readonly type?: string; readonly message?: string; readonly errorCode?: string } => {
  if (typeof body !== "object" || body === null || !("error" in body)) return {}
  const error = (body as { readonly error: unknown }).error
  if (typeof error === "string") return { message: error }
  if (typeof error !== "object" || error === null) return {}
  const record = error as Record<string, unknown>
  const details = typeof record.details === "object" && record.details !== null
    ? record.details as Record<string, unknown>
    : {}
  return {
    ...(typeof record.type === "string" ? { type: record.type } : {}),
    ...(typeof record.message === "string" ? { message: record.message } : {}),
    ...(typeof details.error_code === "string" ? { errorCode: details.error_code } : {})
  }
}

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** "Your credit balance is too low to access the Anthropic API" comes as a 400 `invalid_request_error`. */
const CREDIT_MESSAGE = /credit balance/i

/**
 * Classifies an upstream HTTP error. Quota first: HTTP 402, `billing_error`,
 * a spend-limit `error.details.error_code` (sent with 429) or a message about
 * the credit balance (sent with 400). Then 401/403 → unauthorized, 429 →
 * throttled, 5xx and 529 (`overloaded_error`) → server, other statuses →
 * rejected. The message is the vendor's own, or names the status.
 *
 * @category decoding
 */
export const classifyError = (
  status: number,
  bodyText: string
): { readonly kind: UpstreamFailureKind; readonly message: string } => {
  const body = readErrorBody(parseJson(bodyText))
  const message = body.message ?? `Upstream answered HTTP ${status}`
  const quota = status === 402 || body.type === "billing_error" ||
    (body.errorCode !== undefined && QUOTA_CODES.has(body.errorCode)) ||
    (body.message !== undefined && CREDIT_MESSAGE.test(body.message))
  if (quota) return { kind: "quota", message }
  if (status === 401 || status === 403) return { kind: "unauthorized", message }
  if (status === 429) return { kind: "throttled", message }
  if (status >= 500) return { kind: "server", message }
  return { kind: "rejected", message }
}

/**
 * The failure kind of an in-band stream `error` event or an error body that
 * arrived with HTTP 200: by `error.type` (see `kindOfErrorType`), quota codes
 * and credit messages as in `classifyError`, otherwise rejected.
 *
 * @category decoding
 */
export const kindOfErrorBody = (body: unknown): { readonly kind: UpstreamFailureKind; readonly message: string } => {
  const read = readErrorBody(body)
  const message = read.message ?? "The upstream reported an error."
  const quota = (read.errorCode !== undefined && QUOTA_CODES.has(read.errorCode)) ||
    (read.message !== undefined && CREDIT_MESSAGE.test(read.message))
  return { kind: quota ? "quota" : kindOfErrorType(read.type) ?? "rejected", message }
}
