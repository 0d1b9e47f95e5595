/**
 * The OpenAI error body `{error: {message, type, param, code}}`, shared by the
 * chat completions, Responses and legacy completions formats. It is also the
 * gateway envelope of the spec ("Resources": Error object).
 *
 * @since 0.1.0
 */
import { safeVendorText } from "../../../domain/Redact.ts"
import type { UpstreamFailureKind } from "../../../errors/GatewayError.ts"
import type { Problem } from "../../Format.ts"

/**
 * A problem as the gateway envelope: `{error: {message, type, param, code}}`
 * (`param` is a string, never null).
 *
 * @category encoding
 */
export const encodeOpenAiError = (problem: Problem): { readonly error: Record<string, string> } => ({
  error: { message: problem.message, type: problem.type, param: problem.param, code: problem.code }
})

const readBody = (bodyText: string): { message?: string; type?: string; code?: string } => {
  try {
    const parsed: unknown = JSON.parse(bodyText)
    if (typeof parsed === "object" && parsed !== null && "error" in parsed) {
      const error = (parsed as { error: unknown }).error
      if (typeof error === "string") return { message: error }
      if (typeof error === "object" && error !== null) {
        const record = error as Record<string, unknown>
        return {
          message: typeof record.message === "string" ? record.message : undefined,
          type: typeof record.type === "string" ? record.type : undefined,
          code: typeof record.code === "string" ? record.code : undefined
        }
      }
    }
  } catch {
    // not JSON: fall through
  }
  return {}
}

/**
 * `error.code` values that mean the account cannot pay, sent with HTTP 429
 * and `type: "insufficient_quota"`: `insufficient_quota`, and the finer
 * `credit_balance_exhausted`, `organization_spend_limit_exceeded`,
 * `project_spend_limit_exceeded`, `organization_usage_limit_exceeded`
 * (platform.openai.com/docs/guides/error-codes, "429 - You exceeded your
 * current quota"; learn.microsoft.com/microsoft-cloud/dev/dev-proxy/concepts/openai-insufficient-quota).
 *
 * @category decoding
 */
export const OPENAI_QUOTA_CODES: ReadonlySet<string> = new Set([
  "insufficient_quota",
  "credit_balance_exhausted",
  "organization_spend_limit_exceeded",
  "project_spend_limit_exceeded",
  "organization_usage_limit_exceeded"
])

/**
 * Classifies an OpenAI-compatible upstream's HTTP error from the status and
 * the structured `error.type` / `error.code`, never from the message (vendors
 * quote callers' fields back in it):
 * - 400 → `rejected`, whatever the body says (a 400 never disables a key);
 * - 401/403 → `unauthorized`;
 * - an `OPENAI_QUOTA_CODES` code, or `type: "insufficient_quota"`, on any
 *   other status (OpenAI sends them with 429) → `quota`
 *   (platform.openai.com/docs/guides/error-codes);
 * - 429 → `throttled`; 408 → `timeout`; 5xx → `server`; else `rejected`.
 *
 * The message is the vendor's own passed through `safeVendorText` (controls
 * dropped, secrets masked, at most 1000 characters), or names the status.
 *
 * @category decoding
 */
export const classifyOpenAiError = (
  status: number,
  bodyText: string
): { readonly kind: UpstreamFailureKind; readonly message: string } => {
  const body = readBody(bodyText)
  const message = body.message === undefined ? `Upstream answered HTTP ${status}` : safeVendorText(body.message)
  if (status === 400) return { kind: "rejected", message }
  if (status === 401 || status === 403) return { kind: "unauthorized", message }
  const quota = (body.code !== undefined && OPENAI_QUOTA_CODES.has(body.code)) || body.type === "insufficient_quota"
  if (quota) return { kind: "quota", message }
  if (status === 429) return { kind: "throttled", message }
  if (status >= 500) return { kind: "server", message }
  if (status === 408) return { kind: "timeout", message }
  return { kind: "rejected", message }
}
