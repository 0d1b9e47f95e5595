/**
 * The OpenAI error body `{error: {message, type, param, code}}`, shared by the
 * chat completions, Responses and legacy completions formats. It is also the
 * gateway envelope of the spec ("Resources": Error object).
 *
 * @since 0.1.0
 */
import type { UpstreamFailureKind } from "../../errors/GatewayError.ts"
import type { Problem } from "../Format.ts"

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
 * Classifies an OpenAI-compatible upstream's HTTP error. OpenAI answers 429
 * with code `insufficient_quota` when the account is out of credit
 * (platform.openai.com/docs/guides/error-codes), which is `quota`, not
 * throttling. The message is the vendor's own, or the status text.
 *
 * @category decoding
 */
export const classifyOpenAiError = (
  status: number,
  bodyText: string
): { readonly kind: UpstreamFailureKind; readonly message: string } => {
  const body = readBody(bodyText)
  const message = body.message ?? `Upstream answered HTTP ${status}`
  if (body.code === "insufficient_quota" || body.type === "insufficient_quota") return { kind: "quota", message }
  if (status === 401 || status === 403) return { kind: "unauthorized", message }
  if (status === 429) return { kind: "throttled", message }
  if (status >= 500) return { kind: "server", message }
  if (status === 408) return { kind: "timeout", message }
  return { kind: "rejected", message }
}
