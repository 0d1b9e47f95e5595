/**
 * Alerts end to end: a user's endpoint receives `budget.threshold` events
 * (50% and 80% of a key's daily budget) and one `balance.low` signed as Standard Webhooks says
 * (checked by the `standardwebhooks` package's own `verify`), written with
 * the spend and delivered at least once across a gateway restart while the
 * receiver was down (nothing lost; a repeat carries the same `webhook-id`);
 * the delivery log shows the failed attempts and the delivery; the test
 * button queues a `webhook.test` event; bad input names the field and the
 * operator's events need an admin.
 */
import { ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { basicConfig, freshPostgres, ROOT_PASSWORD, startGateway, type TestGateway } from "../support/Gateway.ts"
import { startEmulator } from "../../emulator/Emulator.ts"
import { browser } from "../support/Browser.ts"
import { startWebhookReceiver, until } from "../support/WebhookReceiver.ts"

const KEY = "sk-test-alerts-0001"
const PASSWORD = "alice-password-1"

Deno.test({
  name: "webhooks: budget thresholds are signed, written with the spend and delivered across a restart",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    // The receiver: down (503) at first; then verifies every delivery with the secret.
    let up = false
    const receiver = startWebhookReceiver(() => up)
    const received = receiver.received
    const receiverUrl = `http://127.0.0.1:${receiver.port}/hooks?token=abc`
    const database = await freshPostgres()
    const config = (url: string) =>
      basicConfig(url, {
        settings: { webhook_allow_hosts: ["127.0.0.1"] },
        users: [{
          username: "alice",
          password: PASSWORD,
          group: "default",
          quota: 10_000_000,
          tokens: [{ name: "main", key: KEY, budgets: [{ amount: 0.002, period: "day" }] }]
        }]
      })
    let gateway: TestGateway | undefined
    try {
      gateway = await startGateway({ config, databaseUrl: database.url })
      const alice = browser(gateway.url)
      await alice.login("alice", PASSWORD)

      const badEvent = await alice.call("POST", "/api/webhook/", { url: receiverUrl, events: ["budget.nope"] })
      strictEqual(badEvent.success, false)
      ok(badEvent.message.includes("events[0]"), badEvent.message)
      const badUrl = await alice.call("POST", "/api/webhook/", { url: "ftp://example.com/x", events: ["key.expiring"] })
      strictEqual(badUrl.success, false)
      ok(badUrl.message.includes("url"), badUrl.message)
      const noLevel = await alice.call("POST", "/api/webhook/", { url: receiverUrl, events: ["balance.low"] })
      strictEqual(noLevel.success, false)
      ok(noLevel.message.includes("balance_below"), noLevel.message)
      const operator = await alice.call("POST", "/api/webhook/", { url: receiverUrl, events: ["channel.unhealthy"] })
      strictEqual(operator.status, 403)

      const made = await alice.call<{ id: number; secret: string; thresholds: Array<number> }>(
        "POST",
        "/api/webhook/",
        { url: receiverUrl, events: ["budget.threshold", "balance.low"], balance_below: 9.9995 }
      )
      strictEqual(made.success, true, made.message)
      ok(made.data.secret.startsWith("whsec_"))
      receiver.secret = made.data.secret
      strictEqual(JSON.stringify(made.data.thresholds), JSON.stringify([0.5, 0.8, 1]))

      // Spend the key's daily budget until it refuses.
      const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
      let refused = false
      for (let index = 0; index < 100 && !refused; index++) {
        await openai.chat.completions.create({
          model: "gpt-test",
          messages: [{ role: "user", content: `spend ${index}` }],
          max_tokens: 16
        }).catch((error) => {
          refused = error instanceof OpenAI.RateLimitError
          if (!refused) throw error
        })
      }
      ok(refused, "the budget ran out")

      // The receiver is down: the deliveries are attempted and kept.
      const log = () =>
        alice.call<Array<{ event: string; status: string; attempts: number; last_status: number | null }>>(
          "GET",
          `/api/webhook/${made.data.id}/deliveries`
        )
      await until("a failed attempt", async () => (await log()).data.some((row) => row.last_status === 503))
      const before = (await log()).data
      ok(before.length >= 2, `two thresholds crossed: ${JSON.stringify(before)}`)
      ok(before.every((row) => row.status === "pending"), JSON.stringify(before))

      // A restart while the receiver is down; it comes up after.
      await gateway.stop()
      gateway = await startGateway({ config, databaseUrl: database.url })
      up = true
      const thresholds = () =>
        new Set(received.filter((event) => event.type === "budget.threshold").map((event) => event.data.threshold))
      await until("the 50% and 80% events", () => thresholds().has(0.5) && thresholds().has(0.8))
      const again = browser(gateway.url)
      await again.login("alice", PASSWORD)
      const after = await again.call<Array<{ event: string; status: string; attempts: number }>>(
        "GET",
        `/api/webhook/${made.data.id}/deliveries`
      )
      ok(after.data.filter((row) => row.status === "delivered").length >= 2, JSON.stringify(after.data))
      ok(after.data.every((row) => row.attempts >= 1))

      // Each event arrived under one webhook-id; a repeat would carry the same one.
      const idsByThreshold = new Map<unknown, Set<string>>()
      for (const event of received.filter((event) => event.type === "budget.threshold")) {
        const ids = idsByThreshold.get(event.data.threshold) ?? new Set()
        ids.add(event.id)
        idsByThreshold.set(event.data.threshold, ids)
      }
      for (const [threshold, ids] of idsByThreshold) strictEqual(ids.size, 1, `threshold ${threshold}: ${[...ids]}`)
      const half = received.find((event) => event.data.threshold === 0.5)!
      strictEqual(half.data.period, "day")
      strictEqual(half.data.amount, 0.002)
      ok(Number(half.data.spent) >= 0.001, `spent ${half.data.spent} at the 50% mark`)
      strictEqual(receiver.refusedSignatures, 0)
      ok(receiver.downAnswers >= 1, `${receiver.downAnswers} attempts while the receiver was down`)

      // The balance went from 10 USD to under 9.9995 once: one balance.low.
      await until("the balance.low event", () => received.some((event) => event.type === "balance.low"))
      const low = received.filter((event) => event.type === "balance.low")
      strictEqual(new Set(low.map((event) => event.id)).size, 1, JSON.stringify(low))
      strictEqual(low[0].data.below, 9.9995)
      ok(Number(low[0].data.balance) < 9.9995, JSON.stringify(low[0].data))

      // The test button.
      const test = await again.call<{ id: string }>("POST", `/api/webhook/${made.data.id}/test`)
      strictEqual(test.success, true, test.message)
      await until("the test event", () => received.some((event) => event.id === test.data.id))
      strictEqual(received.find((event) => event.id === test.data.id)!.type, "webhook.test")

      const listed = await again.call<Array<{ id: number; deliveries: { delivered: number } }>>("GET", "/api/webhook/")
      ok(listed.data[0].deliveries.delivered >= 3, JSON.stringify(listed.data))
      const removed = await again.call("DELETE", `/api/webhook/${made.data.id}`)
      strictEqual(removed.success, true)
      strictEqual((await again.call<Array<unknown>>("GET", "/api/webhook/")).data.length, 0)
    } finally {
      await gateway?.close().catch(() => {})
      await receiver.shutdown()
      await database.drop()
    }
  }
})

Deno.test({
  name: "webhooks: an upstream refusing a channel key raises one channel.key_disabled event to operator endpoints",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const receiver = startWebhookReceiver()
    const received = receiver.received
    const emulator = startEmulator()
    emulator.setFaults([{ match: { key: "sk-test-upstream-1" }, status: 401, message: "Incorrect API key provided." }])
    const gateway = await startGateway({
      emulator,
      config: (url) => basicConfig(url, { settings: { webhook_allow_hosts: ["127.0.0.1"] } })
    })
    try {
      const root = browser(gateway.url)
      await root.login("root", ROOT_PASSWORD)
      const made = await root.call<{ id: number; secret: string }>("POST", "/api/webhook/", {
        url: `http://127.0.0.1:${receiver.port}/ops`,
        events: ["channel.key_disabled"]
      })
      strictEqual(made.success, true, made.message)
      receiver.secret = made.data.secret
      const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "sk-test-alice-0001", maxRetries: 0 })
      for (let index = 0; index < 2; index++) {
        await openai.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "hi" }] })
          .catch(() => {})
      }
      await until("the channel.key_disabled event", () => received.length > 0, 30_000)
      await new Promise((resolve) => setTimeout(resolve, 1_500))
      strictEqual(received.length, 1, JSON.stringify(received))
      strictEqual(received[0].type, "channel.key_disabled")
      strictEqual(received[0].data.channel, "emu-openai")
      strictEqual(received[0].data.key_position, 0)
      ok(!JSON.stringify(received[0]).includes("sk-test-upstream-1"), "no upstream key in the event")
    } finally {
      await gateway.close()
      await emulator.close()
      await receiver.shutdown()
    }
  }
})
