/**
 * Keys are disabled (kinds `unauthorized`, `quota`) only on a vendor's
 * structured signal: HTTP 401/403 or a documented error type/code/status/
 * reason. A message that merely quotes such words (a vendor echoing a
 * caller's field) is a request error, and a 400 is always `rejected`.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { classifyError, kindOfErrorBody } from "../../src/formats/anthropic/messages/ErrorBody.ts"
import { classifyGeminiError } from "../../src/formats/gemini/generate-content/ErrorBody.ts"
import { classifyDeepSeekError } from "../../src/formats/deepseek/chat/ErrorBody.ts"
import { classifyAzureError } from "../../src/formats/azure/ErrorBody.ts"
import { classifyOpenAiError } from "../../src/formats/openai/shared/ErrorBody.ts"
import { classifyBedrockError, streamExceptionFailure } from "../../src/formats/bedrock/ErrorBody.ts"

const hostile = [
  "Your credit balance is too low to access the Anthropic API.",
  "API key not valid. Please pass a valid API key.",
  "Quota exceeded for metric: generate_content_free_tier_requests, limit: 0",
  "Your prepayment credits are depleted. Billing account is disabled. Spending cap reached."
]

const quoted = (text: string) => `Unknown field "x": ${text}`

Deno.test("anthropic classifyError: message text never makes a key failure", () => {
  for (const text of hostile) {
    for (const message of [text, quoted(text)]) {
      const body = JSON.stringify({ type: "error", error: { type: "invalid_request_error", message } })
      strictEqual(classifyError(400, body).kind, "rejected", message)
      strictEqual(classifyError(404, body).kind, "rejected", message)
      strictEqual(
        classifyError(429, JSON.stringify({ error: { type: "rate_limit_error", message } })).kind,
        "throttled"
      )
      strictEqual(
        kindOfErrorBody({ type: "error", error: { type: "invalid_request_error", message } }).kind,
        "rejected"
      )
    }
  }
})

Deno.test("anthropic classifyError: a 400 is rejected whatever its type; structured signals decide otherwise", () => {
  const body = (type: string, details?: object) =>
    JSON.stringify({ type: "error", error: { type, message: "m", ...(details ? { details } : {}) } })
  strictEqual(classifyError(400, body("billing_error")).kind, "rejected")
  strictEqual(classifyError(400, body("authentication_error")).kind, "rejected")
  strictEqual(classifyError(402, body("billing_error")).kind, "quota")
  strictEqual(classifyError(429, body("billing_error")).kind, "quota")
  strictEqual(
    classifyError(429, body("rate_limit_error", { error_code: "enforced_spend_limit_reached" })).kind,
    "quota"
  )
  strictEqual(classifyError(403, body("permission_error", { error_code: "organization_on_hold" })).kind, "unauthorized")
  strictEqual(classifyError(401, body("authentication_error")).kind, "unauthorized")
  strictEqual(kindOfErrorBody({ type: "error", error: { type: "billing_error", message: "m" } }).kind, "quota")
  strictEqual(
    kindOfErrorBody({ type: "error", error: { type: "authentication_error", message: "m" } }).kind,
    "unauthorized"
  )
})

Deno.test("gemini classifyGeminiError: message text never makes a key failure", () => {
  for (const text of hostile) {
    for (const message of [text, quoted(text)]) {
      for (
        const [status, rpc] of [[400, "INVALID_ARGUMENT"], [404, "NOT_FOUND"], [429, "RESOURCE_EXHAUSTED"]] as const
      ) {
        const body = JSON.stringify({ error: { code: status, message, status: rpc } })
        const kind = classifyGeminiError(status, body).kind
        strictEqual(kind, status === 429 ? "throttled" : "rejected", `${status} ${message}`)
      }
    }
  }
})

Deno.test("gemini classifyGeminiError: ErrorInfo API_KEY_INVALID and QuotaFailure decide, not the message", () => {
  const google = (code: number, status: string, details: ReadonlyArray<unknown>) =>
    JSON.stringify({ error: { code, message: "m", status, details } })
  const errorInfo = (reason: string) => ({ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason })
  strictEqual(
    classifyGeminiError(400, google(400, "INVALID_ARGUMENT", [errorInfo("API_KEY_INVALID")])).kind,
    "unauthorized"
  )
  // a `reason` outside an ErrorInfo detail (a caller's echoed object) is not a signal
  strictEqual(
    classifyGeminiError(400, google(400, "INVALID_ARGUMENT", [{ "@type": "x/Other", reason: "API_KEY_INVALID" }])).kind,
    "rejected"
  )
  const quotaFailure = (violation: object) => ({
    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
    violations: [violation]
  })
  strictEqual(
    classifyGeminiError(429, google(429, "RESOURCE_EXHAUSTED", [quotaFailure({ quotaValue: "0" })])).kind,
    "quota"
  )
  strictEqual(
    classifyGeminiError(
      429,
      google(429, "RESOURCE_EXHAUSTED", [quotaFailure({ quotaId: "RequestsPerDayPerProject", quotaValue: "50" })])
    ).kind,
    "quota"
  )
  strictEqual(
    classifyGeminiError(
      429,
      google(429, "RESOURCE_EXHAUSTED", [quotaFailure({ quotaId: "RequestsPerMinutePerProject", quotaValue: "15" })])
    ).kind,
    "throttled"
  )
  // a 400 with a quota detail is still rejected
  strictEqual(
    classifyGeminiError(400, google(400, "FAILED_PRECONDITION", [quotaFailure({ quotaValue: "0" })])).kind,
    "rejected"
  )
  strictEqual(classifyGeminiError(403, google(403, "PERMISSION_DENIED", [])).kind, "unauthorized")
})

Deno.test("openai classifyOpenAiError: a 400 is rejected; insufficient_quota and the spend-limit codes are quota", () => {
  const body = (message: string, type: string, code: string | null) =>
    JSON.stringify({ error: { message, type, param: null, code } })
  for (const text of hostile) {
    strictEqual(classifyOpenAiError(400, body(text, "invalid_request_error", null)).kind, "rejected")
  }
  strictEqual(classifyOpenAiError(400, body("m", "insufficient_quota", "insufficient_quota")).kind, "rejected")
  strictEqual(classifyOpenAiError(429, body("m", "insufficient_quota", "insufficient_quota")).kind, "quota")
  for (
    const code of ["credit_balance_exhausted", "organization_spend_limit_exceeded", "project_spend_limit_exceeded"]
  ) {
    strictEqual(classifyOpenAiError(429, body("m", "insufficient_quota", code)).kind, "quota", code)
  }
  strictEqual(
    classifyOpenAiError(429, body("You exceeded your current quota", "requests", "rate_limit_exceeded")).kind,
    "throttled"
  )
})

Deno.test("classifiers mask key-like text in the message they keep", () => {
  const key = "sk-test-" + "Q1w2E3r4T5y6U7i8O9p0"
  deepStrictEqual(
    classifyOpenAiError(400, JSON.stringify({ error: { message: `bad value ${key}`, type: "invalid_request_error" } })),
    { kind: "rejected", message: "bad value sk-[redacted]" }
  )
  strictEqual(
    classifyError(400, JSON.stringify({ error: { type: "invalid_request_error", message: key } })).message,
    "sk-[redacted]"
  )
  strictEqual(
    classifyGeminiError(400, JSON.stringify({ error: { code: 400, message: `k ${key}\u0000` } })).message,
    "k sk-[redacted] "
  )
  strictEqual(kindOfErrorBody({ error: { type: "api_error", message: key } }).message, "sk-[redacted]")
})

Deno.test("deepseek classifyDeepSeekError: 402 Insufficient Balance is spent credit; the rest as OpenAI's", () => {
  // api-docs.deepseek.com/quick_start/error_codes.
  const body = (message: string) =>
    JSON.stringify({ error: { message, type: "invalid_request_error", param: null, code: "invalid_request_error" } })
  strictEqual(classifyDeepSeekError(402, body("Insufficient Balance")).kind, "quota")
  strictEqual(classifyDeepSeekError(402, body("Insufficient Balance")).message, "Insufficient Balance")
  strictEqual(classifyDeepSeekError(401, body("Authentication Fails")).kind, "unauthorized")
  strictEqual(classifyDeepSeekError(422, body("Invalid Parameters")).kind, "rejected")
  strictEqual(classifyDeepSeekError(429, body("Rate Limit Reached")).kind, "throttled")
  strictEqual(classifyDeepSeekError(503, body("Server Overloaded")).kind, "server")
  for (const text of hostile) strictEqual(classifyDeepSeekError(400, body(quoted(text))).kind, "rejected")
})

Deno.test("bedrock classifyBedrockError: the error type decides, never the message; no failure is spent credit", () => {
  for (const text of hostile) {
    for (const message of [text, quoted(text)]) {
      const body = JSON.stringify({ message })
      strictEqual(classifyBedrockError(400, body, "ValidationException").kind, "rejected", message)
      strictEqual(classifyBedrockError(400, body).kind, "rejected", message)
      strictEqual(classifyBedrockError(429, body, "ThrottlingException").kind, "throttled", message)
      strictEqual(streamExceptionFailure("validationException", body).kind, "rejected", message)
    }
  }
  strictEqual(classifyBedrockError(403, "{}", "UnrecognizedClientException").kind, "unauthorized")
  strictEqual(classifyBedrockError(403, "{}", "AccessDeniedException").kind, "unauthorized")
  const kinds = ["Validation", "ServiceQuotaExceeded", "Throttling", "ModelNotReady", "InternalServer"].map((name) =>
    classifyBedrockError(400, "{}", `${name}Exception`).kind
  )
  strictEqual(kinds.includes("quota"), false)
})

Deno.test("azure classifyAzureError: its 401 disables the key, its content filter is a refusal by code only", () => {
  // Azure's gateway errors: `{error: {code: "<status>", message}}`; the filter's 400 carries `code: content_filter`.
  const azure = (code: string, message: string) => JSON.stringify({ error: { code, message } })
  strictEqual(
    classifyAzureError(401, azure("401", "Access denied due to invalid subscription key")).kind,
    "unauthorized"
  )
  strictEqual(classifyAzureError(429, azure("429", "Requests have exceeded the token rate limit")).kind, "throttled")
  strictEqual(classifyAzureError(400, azure("content_filter", "The response was filtered")).code, "content_filter")
  for (const text of [...hostile, "content_filter ResponsibleAIPolicyViolation"]) {
    const classified = classifyAzureError(400, azure("invalid_request", quoted(text)))
    deepStrictEqual({ kind: classified.kind, code: classified.code }, { kind: "rejected", code: undefined }, text)
  }
})
