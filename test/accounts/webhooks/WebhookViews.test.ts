/** Webhook rows as `/api/webhooks` shows them: USD from quota units, epoch seconds, counts as numbers. */
import { deepStrictEqual } from "node:assert/strict"
import { deliveryViewOf, endpointViewOf } from "../../../src/accounts/webhooks/WebhookViews.ts"

Deno.test("WebhookViews: an endpoint row reads with USD, numeric thresholds, its status and counts", () => {
  deepStrictEqual(
    endpointViewOf({
      id: 4n,
      url: "https://example.com/",
      events: ["balance.low"],
      thresholds: ["0.5000", "1.0000"],
      operator: false,
      balanceBelow: 2_500_000n,
      enabled: false,
      createdAt: new Date(1_700_000_000_900),
      pending: 1n,
      delivered: 2n,
      failed: 0n
    }),
    {
      id: 4,
      url: "https://example.com/",
      events: ["balance.low"],
      thresholds: [0.5, 1],
      operator: false,
      balance_below: 2.5,
      status: "disabled",
      created_at: 1_700_000_000,
      deliveries: { pending: 1, delivered: 2, failed: 0 }
    }
  )
})

Deno.test("WebhookViews: a delivery row reads with epoch seconds; never delivered is null", () => {
  deepStrictEqual(
    deliveryViewOf({
      id: "msg_1",
      event: "webhook.test",
      status: "pending",
      attempts: 2,
      lastStatus: null,
      lastError: "refused",
      createdAt: new Date(1_700_000_000_000),
      deliveredAt: null
    }),
    {
      id: "msg_1",
      event: "webhook.test",
      status: "pending",
      attempts: 2,
      last_status: null,
      last_error: "refused",
      created_at: 1_700_000_000,
      delivered_at: null
    }
  )
})
