/**
 * What a caller sees of an upstream failure: its own words only for a request
 * error it can fix (masked), the gateway's fixed words for everything else.
 */
import { ok, strictEqual } from "node:assert/strict"
import { toProblem } from "../../src/errors/Envelope.ts"
import { UpstreamFailed, UpstreamFailureKind } from "../../src/errors/GatewayError.ts"

const KEY = "sk-test-" + "Lk3Jh5Gf7Ds9Aq1Wz2Xc"
const VENDOR = `Incorrect API key provided: ${KEY}. Organization org-vendor-secret is on hold.`

Deno.test("upstream problems: no vendor text for key, quota, throttling and server failures", () => {
  for (const kind of UpstreamFailureKind.literals) {
    if (kind === "rejected") continue
    const problem = toProblem(new UpstreamFailed({ kind, status: kind === "server" ? 503 : 401, message: VENDOR }))
    strictEqual(problem.message.includes("Incorrect API key"), false, `${kind}: ${problem.message}`)
    strictEqual(problem.message.includes(KEY), false, kind)
    strictEqual(problem.message.includes("org-vendor-secret"), false, kind)
    ok(problem.message.length > 0, kind)
  }
})

Deno.test("upstream problems: a rejected request keeps the vendor's words with secrets masked and bounded", () => {
  const problem = toProblem(
    new UpstreamFailed({
      kind: "rejected",
      status: 400,
      message: `temperature is invalid near ${KEY}\u0000` + "x".repeat(5000)
    })
  )
  strictEqual(problem.status, 400)
  strictEqual(problem.code, "invalid_request")
  ok(problem.message.startsWith("temperature is invalid near sk-[redacted] "), problem.message)
  strictEqual(problem.message.includes(KEY), false)
  strictEqual(problem.message.includes("\u0000"), false)
  ok(problem.message.length <= 1000)
})

Deno.test("upstream problems: statuses and codes stay as the spec's table has them", () => {
  const of = (kind: UpstreamFailureKind, status = 0) => toProblem(new UpstreamFailed({ kind, status, message: "m" }))
  strictEqual(of("throttled", 429).status, 429)
  strictEqual(of("throttled", 429).code, "too_many_requests")
  strictEqual(of("server", 503).status, 503)
  strictEqual(of("server", 503).code, "upstream_error")
  strictEqual(of("unauthorized", 401).status, 502)
  strictEqual(of("quota", 429).status, 502)
  strictEqual(of("timeout").status, 504)
  strictEqual(of("bad-body", 200).code, "bad_response_body")
  strictEqual(of("copy-failed", 200).status, 500)
  strictEqual(of("copy-failed", 200).code, "bad_response")
  strictEqual(of("copy-failed", 200).type, "platform_api_error")
  strictEqual(new UpstreamFailed({ kind: "copy-failed", status: 200, message: "m" }).retryable, false)
})
