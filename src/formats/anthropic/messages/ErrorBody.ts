/**
 * Errors of the messages format: the body `{type: "error", error: {type,
 * message}}` (SDK 1.12 `ErrorResponse`, `ErrorType`;
 * docs.anthropic.com/en/api/errors) read from an upstream and written to a
 * caller.
 *
 * @since 0.1.0
 */
import { safeVendorText } from "../../../domain/Redact.ts"
import type { UpstreamFailureKind } from "../../../errors/GatewayError.ts"
import type { Problem } from "../../Format.ts"

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
 * 1.12 `resources/shared.ts` `ErrorDetails`: `enforced_spend_limit_reached`
 * "crossed the monthly API usage threshold of its API tier",
 * `contract_spend_limit_reached`, `linked_organization_spend_limit_reached`
 * "reached a spend limit … or lacks credit", `linked_organization_billing_unavailable`).
 */
const QUOTA_CODES: ReadonlySet<string> = new Set([
  "enforced_spend_limit_reached",
  "contract_spend_limit_reached",
  "linked_organization_spend_limit_reached",
  "linked_organization_billing_unavailable"
])

/** `error.details.error_code` values that mean the key's organization is shut out (SDK 1.12 `OrganizationOnHoldErrorDetails`). */
const UNAUTHORIZED_CODES: ReadonlySet<string> = new Set(["organization_on_hold"])

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

/** The kind the structured `error.details.error_code` names, if it names one. */
const kindOfErrorCode = (errorCode: string | undefined): UpstreamFailureKind | undefined =>
  errorCode === undefined
    ? undefined
    : QUOTA_CODES.has(errorCode)
    ? "quota"
    : UNAUTHORIZED_CODES.has(errorCode)
    ? "unauthorized"
    : undefined

/**
 * Classifies an upstream HTTP error from the status, `error.type` and
 * `error.details.error_code`, never from the message (the SDK says of it "Its
 * wording can change, so don't match on it", and vendors quote callers'
 * fields back in it; docs.anthropic.com/en/api/errors):
 * - 400 → `rejected`, whatever the body says (a 400 never disables a key; the
 *   vendor's "credit balance is too low" 400 `invalid_request_error` is
 *   therefore a request error here, shown to the caller);
 * - 401/403 → `unauthorized`;
 * - 402, `billing_error`, or a spend-limit `error_code` (sent with 429) →
 *   `quota`; `organization_on_hold` → `unauthorized`;
 * - 429 → `throttled`; 5xx and 529 (`overloaded_error`) → `server`; else `rejected`.
 *
 * The message is the vendor's own passed through `safeVendorText` (controls
 * dropped, secrets masked, at most 1000 characters), or names the status.
 *
 * @category decoding
 */
export const classifyError = (
  status: number,
  bodyText: string
): { readonly kind: UpstreamFailureKind; readonly message: string } => {
  const body = readErrorBody(parseJson(bodyText))
  const message = body.message === undefined ? `Upstream answered HTTP ${status}` : safeVendorText(body.message)
  if (status === 400) return { kind: "rejected", message }
  if (status === 401 || status === 403) return { kind: "unauthorized", message }
  if (status === 402 || body.type === "billing_error") return { kind: "quota", message }
  const coded = kindOfErrorCode(body.errorCode)
  if (coded !== undefined) return { kind: coded, message }
  if (status === 429) return { kind: "throttled", message }
  if (status >= 500) return { kind: "server", message }
  return { kind: "rejected", message }
}

/**
 * The failure kind of an in-band stream `error` event or an error body that
 * arrived with HTTP 200, by the same structured fields as `classifyError`:
 * `error.details.error_code` (spend limits → quota, `organization_on_hold` →
 * unauthorized), then `error.type` (see `kindOfErrorType`), otherwise
 * rejected; never by the message. The message is passed through
 * `safeVendorText`.
 *
 * @category decoding
 */
export const kindOfErrorBody = (body: unknown): { readonly kind: UpstreamFailureKind; readonly message: string } => {
  const read = readErrorBody(body)
  const message = read.message === undefined ? "The upstream reported an error." : safeVendorText(read.message)
  return { kind: kindOfErrorCode(read.errorCode) ?? kindOfErrorType(read.type) ?? "rejected", message }
}
