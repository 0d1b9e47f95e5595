/**
 * The operator's channel health events end to end, on two gateway instances
 * sharing one PostgreSQL: the emulator answers 500 to the channel's key, both
 * instances put the channel in cooldown, and an operator endpoint receives
 * one `channel.unhealthy` (reason `server`, the structured failure kind, not
 * the vendor's text); the emulator recovers, the probers' tests succeed and
 * the endpoint receives one `channel.recovered`. Signed as Standard Webhooks
 * says (checked by `standardwebhooks`' own `verify`); the delivery log shows
 * both delivered.
 */
import { ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { basicConfig, freshPostgres, ROOT_PASSWORD, startGateway, type TestGateway } from "../support/Gateway.ts"
import { startEmulator } from "../../emulator/Emulator.ts"
import { browser } from "../support/Browser.ts"
import { startWebhookReceiver, until } from "../support/WebhookReceiver.ts"

const VENDOR_TEXT = "The server had an error while processing your request (internal ref 7f3a)."

Deno.test({
  name: "channel health: one channel.unhealthy and one channel.recovered per transition across two instances",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const receiver = startWebhookReceiver()
    const received = receiver.received
    const emulator = startEmulator()
    const database = await freshPostgres()
    const config = (url: string) =>
      basicConfig(url, {
        settings: {
          webhook_allow_hosts: ["127.0.0.1"],
          cooldown_failures: 2,
          cooldown_seconds: 600,
          probe_interval_seconds: 1
        }
      })
    const gateways: Array<TestGateway> = []
    try {
      gateways.push(await startGateway({ emulator, config, databaseUrl: database.url }))
      gateways.push(await startGateway({ emulator, config, databaseUrl: database.url }))
      const root = browser(gateways[0].url)
      await root.login("root", ROOT_PASSWORD)
      const made = await root.call<{ id: number; secret: string }>("POST", "/api/webhook/", {
        url: `http://127.0.0.1:${receiver.port}/ops`,
        events: ["channel.unhealthy", "channel.recovered"]
      })
      strictEqual(made.success, true, made.message)
      receiver.secret = made.data.secret

      // Healthy traffic raises nothing.
      for (const gateway of gateways) {
        const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "sk-test-alice-0001", maxRetries: 0 })
        await openai.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "hi" }] })
      }

      // The upstream fails: several failed requests on each instance, each instance cools the channel.
      emulator.setFaults([{ match: { key: "sk-test-upstream-1" }, status: 500, message: VENDOR_TEXT }])
      let failed = 0
      for (let round = 0; round < 3; round++) {
        await Promise.all(gateways.map(async (gateway) => {
          const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "sk-test-alice-0001", maxRetries: 0 })
          await openai.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "hi" }] })
            .catch(() => failed++)
        }))
      }
      strictEqual(failed, 6)
      await until("the channel.unhealthy event", () => received.some((event) => event.type === "channel.unhealthy"))
      for (const gateway of gateways) {
        const admin = browser(gateway.url)
        await admin.login("root", ROOT_PASSWORD)
        const status = await admin.call<{ channels: Array<{ state: string }> }>("GET", "/api/status")
        strictEqual(
          status.data.channels[0].state,
          "cooling",
          `each instance cooled the channel: ${JSON.stringify(status)}`
        )
      }
      // Probes keep failing meanwhile: still one event.
      await new Promise((resolve) => setTimeout(resolve, 2_500))
      const unhealthy = received.filter((event) => event.type === "channel.unhealthy")
      strictEqual(unhealthy.length, 1, JSON.stringify(received))
      strictEqual(unhealthy[0].data.channel, "emu-openai")
      strictEqual(typeof unhealthy[0].data.channel_id, "number")
      strictEqual(unhealthy[0].data.reason, "server")
      ok(!Number.isNaN(Date.parse(String(unhealthy[0].data.changed_at))), JSON.stringify(unhealthy[0]))
      ok(!JSON.stringify(received).includes("internal ref"), "no vendor text in the event")
      strictEqual(received.some((event) => event.type === "channel.recovered"), false)

      // The upstream recovers: the probers test it, one channel.recovered.
      emulator.setFaults([])
      await until("the channel.recovered event", () => received.some((event) => event.type === "channel.recovered"))
      await new Promise((resolve) => setTimeout(resolve, 2_500))
      const recovered = received.filter((event) => event.type === "channel.recovered")
      strictEqual(recovered.length, 1, JSON.stringify(received))
      strictEqual(recovered[0].data.channel, "emu-openai")
      strictEqual(recovered[0].data.reason, "probe")
      strictEqual(received.length, 2, JSON.stringify(received))
      strictEqual(new Set(received.map((event) => event.id)).size, 2)

      // Traffic flows again on both instances; no further events.
      for (const gateway of gateways) {
        const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "sk-test-alice-0001", maxRetries: 0 })
        await openai.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "hi" }] })
      }
      const log = await root.call<Array<{ event: string; status: string; attempts: number }>>(
        "GET",
        `/api/webhook/${made.data.id}/deliveries`
      )
      strictEqual(
        JSON.stringify(log.data.map((entry) => [entry.event, entry.status]).sort()),
        JSON.stringify([["channel.recovered", "delivered"], ["channel.unhealthy", "delivered"]])
      )

      // A second failure is a new transition: a new event.
      emulator.setFaults([{ match: { key: "sk-test-upstream-1" }, status: 500, message: VENDOR_TEXT }])
      const openai = new OpenAI({ baseURL: `${gateways[1].url}/v1`, apiKey: "sk-test-alice-0001", maxRetries: 0 })
      for (let index = 0; index < 2; index++) {
        await openai.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "hi" }] })
          .catch(() => {})
      }
      await until(
        "the second channel.unhealthy",
        () => received.filter((event) => event.type === "channel.unhealthy").length === 2
      )
      emulator.setFaults([])
    } finally {
      for (const gateway of gateways) await gateway.close()
      await emulator.close()
      await receiver.shutdown()
      await database.drop()
    }
  }
})
