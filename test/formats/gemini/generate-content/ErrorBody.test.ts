import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { GeminiFormat, rpcStatusName } from "../../../../src/formats/gemini/generate-content/Format.ts"

const googleError = (code: number, status: string, message: string, details: ReadonlyArray<unknown> = []) =>
  JSON.stringify({ error: { code, message, status, details } })

const kind = (status: number, body: string) => GeminiFormat.classifyError(status, body).kind

Deno.test("classifyError: invalid API key (400 API_KEY_INVALID), 401 and 403 → unauthorized", () => {
  const invalidKey = googleError(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", [
    { "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "API_KEY_INVALID", domain: "googleapis.com" }
  ])
  deepStrictEqual(GeminiFormat.classifyError(400, invalidKey), {
    kind: "unauthorized",
    message: "API key not valid. Please pass a valid API key."
  })
  strictEqual(
    kind(401, googleError(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")),
    "unauthorized"
  )
  strictEqual(kind(403, googleError(403, "PERMISSION_DENIED", "The caller does not have permission")), "unauthorized")
})

Deno.test("classifyError: 429 per-minute → throttled; per-day quota → quota; the message decides nothing", () => {
  const perMinute = googleError(
    429,
    "RESOURCE_EXHAUSTED",
    "You exceeded your current quota, please check your plan and billing details.",
    [
      {
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        violations: [{
          quotaMetric: "generativelanguage.googleapis.com/generate_content_free_tier_requests",
          quotaId: "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
        }]
      },
      { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "33s" }
    ]
  )
  strictEqual(kind(429, perMinute), "throttled")
  strictEqual(
    kind(429, googleError(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).")),
    "throttled"
  )
  const perDay = googleError(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota.", [{
    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
    violations: [{ quotaId: "GenerateRequestsPerDayPerProjectPerModel-FreeTier" }]
  }])
  strictEqual(kind(429, perDay), "quota")
  // the message is never read: a depleted-credits text without a structured detail stays throttled
  strictEqual(
    kind(429, googleError(429, "RESOURCE_EXHAUSTED", "Your prepayment credits are depleted. Please go to AI Studio.")),
    "throttled"
  )
})

Deno.test("classifyError: 400/404/413/422 → rejected, 408 → timeout, 5xx → server, non-JSON body", () => {
  strictEqual(kind(400, googleError(400, "INVALID_ARGUMENT", "Request contains an invalid argument.")), "rejected")
  strictEqual(kind(404, googleError(404, "NOT_FOUND", "models/x is not found for API version v1beta")), "rejected")
  strictEqual(kind(413, ""), "rejected")
  strictEqual(kind(422, "{}"), "rejected")
  strictEqual(kind(408, ""), "timeout")
  strictEqual(kind(500, googleError(500, "INTERNAL", "An internal error has occurred.")), "server")
  deepStrictEqual(GeminiFormat.classifyError(503, "<html>Service Unavailable</html>"), {
    kind: "server",
    message: "Upstream answered HTTP 503"
  })
  // a non-SSE stream answer wraps the error in an array
  strictEqual(
    GeminiFormat.classifyError(503, `[${googleError(503, "UNAVAILABLE", "The model is overloaded.")}]`).message,
    "The model is overloaded."
  )
})

Deno.test("encodeError: the Google API error, numeric code, RPC status, the field in a BadRequest violation", () => {
  deepStrictEqual(
    GeminiFormat.encodeError({
      status: 400,
      type: "invalid_request_error",
      code: "invalid_request",
      message: "The model is missing.",
      param: "model"
    }),
    {
      error: {
        code: 400,
        message: "The model is missing.",
        status: "INVALID_ARGUMENT",
        details: [
          {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            reason: "INVALID_REQUEST",
            domain: "sluice",
            metadata: { code: "invalid_request", type: "invalid_request_error" }
          },
          {
            "@type": "type.googleapis.com/google.rpc.BadRequest",
            fieldViolations: [{ field: "model", description: "The model is missing." }]
          }
        ]
      }
    }
  )
  // No param: no BadRequest detail; an empty type stays out of the metadata.
  deepStrictEqual(
    GeminiFormat.encodeError({
      status: 503,
      type: "",
      code: "model_not_found",
      message: 'Model "x" is not available for this key.',
      param: ""
    }),
    {
      error: {
        code: 503,
        message: 'Model "x" is not available for this key.',
        status: "UNAVAILABLE",
        details: [{
          "@type": "type.googleapis.com/google.rpc.ErrorInfo",
          reason: "MODEL_NOT_FOUND",
          domain: "sluice",
          metadata: { code: "model_not_found" }
        }]
      }
    }
  )
  const unauthorized = GeminiFormat.encodeError({
    status: 401,
    type: "invalid_request_error",
    code: "invalid_api_key",
    message: "The API key is not valid.",
    param: ""
  }) as { error: { code: unknown; status: unknown } }
  strictEqual(unauthorized.error.code, 401)
  strictEqual(unauthorized.error.status, "UNAUTHENTICATED")
})

Deno.test("encodeError: an odd spec code still gives a well-formed ErrorInfo reason", () => {
  const body = GeminiFormat.encodeError({
    status: 400,
    type: "invalid_request_error",
    code: "bad-code.\u0000x",
    message: "m",
    param: ""
  }) as { error: { details: ReadonlyArray<{ reason?: string }> } }
  const reason = body.error.details[0]?.reason ?? ""
  ok(/^[A-Z][A-Z0-9_]+[A-Z0-9]$/.test(reason), reason)
})

Deno.test("rpcStatusName: the google.rpc names per HTTP status", () => {
  deepStrictEqual(
    [400, 401, 402, 403, 404, 418, 429, 500, 502, 503, 504].map(rpcStatusName),
    [
      "INVALID_ARGUMENT",
      "UNAUTHENTICATED",
      "RESOURCE_EXHAUSTED",
      "PERMISSION_DENIED",
      "NOT_FOUND",
      "FAILED_PRECONDITION",
      "RESOURCE_EXHAUSTED",
      "INTERNAL",
      "UNAVAILABLE",
      "UNAVAILABLE",
      "DEADLINE_EXCEEDED"
    ]
  )
})
