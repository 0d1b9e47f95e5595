/**
 * One retry rule: whether a caller is told to retry (`x-should-retry`) and whether failover tries another candidate
 * are both the failed attempt's own `UpstreamFailed.retryable`, so they cannot disagree, not even on an accepted
 * answer that broke off while it was copied (spec "Errors": 500 `bad_response`, the vendor may hold the task).
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { Effect } from "effect"
import { errorHeaders, isRetryable, respondWith } from "../../src/http/Respond.ts"
import { UpstreamFailed, UpstreamFailureKind } from "../../src/errors/GatewayError.ts"

const failed = (kind: UpstreamFailureKind, status = 500) =>
  new UpstreamFailed({ kind, status, message: "The upstream failed.", channelId: 1 })

Deno.test("one retry rule: a copy failure is retried neither by failover nor by the caller", async () => {
  const copyFailed = failed("copy-failed", 200)
  strictEqual(copyFailed.retryable, false)
  strictEqual(isRetryable(copyFailed), false)
  deepStrictEqual(errorHeaders(copyFailed), { "x-should-retry": "false" })
  const response = await Effect.runPromise(
    respondWith((problem) => ({ error: { code: problem.code } }))(Effect.fail(copyFailed))
  )
  strictEqual(response.status, 500)
  strictEqual(response.headers["x-should-retry"], "false")
})

Deno.test("one retry rule: every upstream failure kind answers the caller as failover decides", () => {
  for (const kind of UpstreamFailureKind.literals) {
    const error = failed(kind)
    strictEqual(isRetryable(error), error.retryable, kind)
    strictEqual(errorHeaders(error)["x-should-retry"], error.retryable ? undefined : "false", kind)
  }
  strictEqual(isRetryable(failed("rejected", 400)), false)
  strictEqual(isRetryable(failed("server", 503)), true)
})
