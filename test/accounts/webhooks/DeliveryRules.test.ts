/**
 * One delivery attempt over plain values: signed so a Standard Webhooks
 * receiver verifies it, backed off exponentially up to an hour, given up
 * once its event is too old.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import { Webhook } from "standardwebhooks"
import { afterFailure, signedHeaders } from "../../../src/accounts/webhooks/DeliveryRules.ts"

const SECRET = `whsec_${btoa("0123456789abcdefghijklmn")}`

Deno.test("DeliveryRules: the signed headers verify with the endpoint's secret", () => {
  const delivery = {
    id: "msg_1",
    payload: JSON.stringify({ type: "webhook.test", timestamp: "2026-01-01T00:00:00.000Z", data: {} }),
    url: "https://example.com",
    secret: SECRET,
    attempts: 1,
    expired: false
  }
  const now = new Date()
  const headers = signedHeaders(delivery, now)
  strictEqual(headers["webhook-id"], "msg_1")
  strictEqual(headers["webhook-timestamp"], String(Math.floor(now.getTime() / 1000)))
  strictEqual(headers["content-type"], "application/json")
  deepStrictEqual(new Webhook(SECRET).verify(delivery.payload, headers), JSON.parse(delivery.payload))
})

Deno.test("DeliveryRules: the backoff doubles per attempt up to an hour; an expired delivery fails", () => {
  deepStrictEqual(afterFailure({ attempts: 1, expired: false }), { backoffSeconds: 2, status: "pending" })
  deepStrictEqual(afterFailure({ attempts: 5, expired: true }), { backoffSeconds: 32, status: "failed" })
  fc.assert(fc.property(fc.integer({ min: 0, max: 10_000 }), (attempts) => {
    const { backoffSeconds } = afterFailure({ attempts, expired: false })
    strictEqual(backoffSeconds, Math.min(2 ** attempts, 3_600))
  }))
})
