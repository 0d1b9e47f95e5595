/**
 * A failed task hands back the budget spend its submit took: a key with a
 * daily budget and a user with a monthly one; a video task completes (its
 * charge stays in both windows), another fails at the vendor (the emulator's
 * moderation refusal) and is refunded — the balance and both budget windows'
 * `spent` go back to what they were before it, and each window's `spent`
 * equals the usage log's costs of the key and of the user (the charge and
 * its negative refund row). Checked in the tables and through the key
 * listing's budget view.
 */
import { Result } from "effect"
import { strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { startEmulator } from "../../emulator/Emulator.ts"
import { startGateway } from "../support/Gateway.ts"
import { browser } from "../support/Browser.ts"

const KEY = "sk-test-budget-video-0001"
const PASSWORD = "alice-budget-password-1"
/** USD per second of video; the vendor's default length is 4 s. */
const PER_SECOND = 0.1
const costOf = (seconds: number) => Math.round(seconds * PER_SECOND * 1_000_000)

const eventually = async (what: string, check: () => Promise<boolean>, ms = 15_000) => {
  const until = Date.now() + ms
  while (Date.now() < until) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`Timed out waiting for ${what}`)
}

Deno.test("budgets: a failed video task returns its budget spend to the windows it was charged in", async () => {
  const emulator = startEmulator({ videoStepMs: 100 })
  const gateway = await startGateway({
    emulator,
    store: "postgres",
    config: (url) => {
      const parsed = parseBootstrap(
        JSON.stringify({
          groups: { default: { ratio: 1 } },
          models: { "sora-2": { per_second: PER_SECOND } },
          channels: [{
            name: "video-openai",
            type: "openai",
            base_url: url,
            keys: ["sk-test-up-video"],
            models: ["sora-2"]
          }],
          users: [{
            username: "alice",
            password: PASSWORD,
            group: "default",
            quota: 100_000_000,
            budgets: [{ amount: 50, period: "month" }],
            tokens: [{ name: "main", key: KEY, budgets: [{ amount: 5, period: "day" }] }]
          }],
          settings: { cooldown_failures: 1000, task_poll_interval_ms: 100 }
        }),
        "budgets.json"
      )
      if (Result.isFailure(parsed)) throw new Error(parsed.failure)
      return parsed.success
    }
  })
  try {
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
    const windows = () =>
      gateway.query<{ subject: string; period: string; spent: string }>(
        `SELECT subject, period, spent::text FROM budget_periods ORDER BY subject`
      )
    const logged = async () => {
      const [row] = await gateway.query<{ token: string; user: string }>(
        `SELECT COALESCE(SUM(cost) FILTER (WHERE token_id = (SELECT id FROM tokens WHERE name = 'main')), 0)::text
           AS token,
         COALESCE(SUM(cost) FILTER (WHERE user_id = (SELECT id FROM users WHERE username = 'alice')), 0)::text AS user
         FROM usage_logs`
      )
      return { token: Number(row.token), user: Number(row.user) }
    }

    // A task that completes: its 8 s stay charged to both windows.
    const done = await client.videos.create({ model: "sora-2", prompt: "a calm lake", seconds: "8" })
    await eventually(
      "the first task to complete",
      async () => (await client.videos.retrieve(done.id)).status === "completed"
    )
    await eventually(
      "the first charge in both windows",
      async () => (await windows()).every((row) => Number(row.spent) === costOf(8)) && (await windows()).length === 2
    )
    const before = await windows()

    // A task the vendor refuses: charged 4 s at submit, refunded when it fails.
    const refused = await client.videos.create({ model: "sora-2", prompt: "something unsafe" })
    await eventually(
      "the second task to fail",
      async () => (await client.videos.retrieve(refused.id)).status === "failed"
    )
    await eventually("the refund's usage row", async () => {
      const [row] = await gateway.query<{ n: string }>(
        `SELECT count(*)::text AS n FROM usage_logs WHERE attempt = 0 AND cost < 0`
      )
      return Number(row.n) === 1
    })
    const [refund] = await gateway.query<{ cost: string }>(
      `SELECT cost::text FROM usage_logs WHERE attempt = 0 AND cost < 0`
    )
    strictEqual(Number(refund.cost), -costOf(4), "the vendor's failure refunds the whole pre-charge")

    const after = await windows()
    strictEqual(JSON.stringify(after), JSON.stringify(before), "both windows' spend is back to what it was")
    const usage = await logged()
    strictEqual(usage.token, costOf(8))
    strictEqual(usage.user, costOf(8))
    for (const row of after) {
      strictEqual(Number(row.spent), row.subject === "token" ? usage.token : usage.user, `${row.subject} window`)
    }

    // The owner sees the same in the key listing's budget view.
    const alice = browser(gateway.url)
    await alice.login("alice", PASSWORD)
    const listed = await alice.call<{ items?: Array<{ budgets: Array<{ period: string; spent_quota: number }> }> }>(
      "GET",
      "/api/token/"
    )
    const items = Array.isArray(listed.data) ? listed.data : listed.data.items ?? []
    const budgets = (items as Array<{ budgets: Array<{ period: string; spent_quota: number }> }>)[0].budgets
    strictEqual(budgets[0].period, "day")
    strictEqual(budgets[0].spent_quota, costOf(8))
  } finally {
    await gateway.close()
    await emulator.close()
  }
})
