import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { AnthropicFormat } from "../../../../src/formats/anthropic/messages/Format.ts"

const body = (type: string, message: string, details?: object) =>
  JSON.stringify({ type: "error", error: { type, message, ...(details ? { details } : {}) }, request_id: "req_1" })

Deno.test("classifyError maps statuses and error types to failure kinds", () => {
  const kind = (status: number, text: string) => AnthropicFormat.classifyError(status, text).kind
  strictEqual(kind(401, body("authentication_error", "invalid x-api-key")), "unauthorized")
  strictEqual(kind(403, body("permission_error", "Your API key does not have permission")), "unauthorized")
  strictEqual(
    kind(429, body("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")),
    "throttled"
  )
  strictEqual(kind(400, body("invalid_request_error", "messages: field required")), "rejected")
  strictEqual(kind(404, body("not_found_error", "model: claude-x")), "rejected")
  strictEqual(kind(413, body("request_too_large", "Request exceeds the maximum allowed number of bytes")), "rejected")
  strictEqual(kind(422, "{}"), "rejected")
  strictEqual(kind(500, body("api_error", "Internal server error")), "server")
  strictEqual(kind(529, body("overloaded_error", "Overloaded")), "server")
  strictEqual(kind(502, "<html>Bad gateway</html>"), "server")
})

Deno.test("classifyError recognises an account out of credit by its structured signals only", () => {
  const kind = (status: number, text: string) => AnthropicFormat.classifyError(status, text).kind
  strictEqual(kind(402, body("billing_error", "Payment required")), "quota")
  strictEqual(kind(429, body("billing_error", "Billing problem")), "quota")
  // a 400 is the request's fault, whatever its type or message says
  strictEqual(kind(400, body("billing_error", "Billing problem")), "rejected")
  strictEqual(
    kind(400, body("invalid_request_error", "Your credit balance is too low to access the Anthropic API.")),
    "rejected"
  )
  strictEqual(
    kind(429, body("rate_limit_error", "Spend limit reached", { error_code: "enforced_spend_limit_reached" })),
    "quota"
  )
})

Deno.test("classifyError keeps the vendor's message or names the status", () => {
  deepStrictEqual(AnthropicFormat.classifyError(529, body("overloaded_error", "Overloaded")), {
    kind: "server",
    message: "Overloaded"
  })
  deepStrictEqual(AnthropicFormat.classifyError(503, "upstream connect error"), {
    kind: "server",
    message: "Upstream answered HTTP 503"
  })
})

Deno.test("encodeError writes the messages error shape with the gateway's param and code", () => {
  deepStrictEqual(
    AnthropicFormat.encodeError({
      status: 400,
      type: "invalid_request_error",
      code: "invalid_request",
      message: 'Invalid messages[0].role: Expected "user" | "assistant"',
      param: "messages[0].role"
    }),
    {
      type: "error",
      error: {
        type: "invalid_request_error",
        message: 'Invalid messages[0].role: Expected "user" | "assistant"',
        param: "messages[0].role",
        code: "invalid_request"
      }
    }
  )
})
