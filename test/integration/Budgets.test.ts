/**
 * Budgets end to end: a key's daily budget and its user's monthly one from
 * the bootstrap file hold through the `openai` and `@anthropic-ai/sdk`
 * clients (429 `budget_exceeded`, the budget and its reset named, Retry-After
 * to the next midnight UTC, no charge for the refusal); the key listing and
 * `GET /api/user/self` show each budget's spend this period (equal to the
 * logged costs) and its reset; owners change their keys' budgets within the
 * user's and admins the user's, with bad input refused naming the field;
 * `/metrics` reports the key's utilisation among the top N.
 */
import { ok, strictEqual } from "node:assert/strict"
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { basicConfig, ROOT_PASSWORD, startGateway } from "../support/Gateway.ts"
import { browser } from "../support/Browser.ts"
import { scrape } from "../observability/Support.ts"

const KEY = "sk-test-budget-0001"
const PASSWORD = "alice-password-1"

interface BudgetView {
  amount: number
  period: string
  timezone: string
  spent: number
  spent_quota: number
  period_start: number
  resets_at: number | null
}

interface TokenView {
  id: number
  name: string
  used_quota: number
  budgets: Array<BudgetView> | null
}

const nextMidnightUtc = () => {
  const now = new Date()
  return Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1) / 1000
}

Deno.test("budgets: a key's daily budget refuses with 429 budget_exceeded, shows its spend, and is editable", async () => {
  const gateway = await startGateway({
    config: (url) =>
      basicConfig(url, {
        users: [{
          username: "alice",
          password: PASSWORD,
          group: "default",
          quota: 10_000_000,
          budgets: [{ amount: 1, period: "month", timezone: "Europe/Paris" }],
          tokens: [{ name: "main", key: KEY, budgets: [{ amount: 0.002, period: "day" }] }]
        }]
      })
  })
  try {
    const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
    let served = 0
    let refusal: unknown
    for (let index = 0; index < 100 && refusal === undefined; index++) {
      try {
        await openai.chat.completions.create({
          model: "gpt-test",
          messages: [{ role: "user", content: `request ${index}` }],
          max_tokens: 16
        })
        served++
      } catch (error) {
        refusal = error
      }
    }
    ok(served > 0, "some requests fit in the budget")
    ok(refusal instanceof OpenAI.RateLimitError, `refused with a 429: ${refusal}`)
    strictEqual(refusal.code, "budget_exceeded")
    ok(refusal.message.includes("key's daily budget of $0.002"), refusal.message)
    ok(refusal.message.includes(`it resets at ${new Date(nextMidnightUtc() * 1000).toISOString()}`), refusal.message)
    const retryAfter = Number(refusal.headers?.get("retry-after"))
    const untilMidnight = nextMidnightUtc() - Date.now() / 1000
    ok(Math.abs(retryAfter - untilMidnight) <= 5, `Retry-After ${retryAfter} s, midnight in ${untilMidnight} s`)
    strictEqual(refusal.headers?.get("x-should-retry"), "false")

    // The same refusal in the Messages format, through the Anthropic SDK.
    const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: KEY, maxRetries: 0 })
    const messagesRefusal = await anthropic.messages.create({
      model: "gpt-test",
      max_tokens: 16,
      messages: [{ role: "user", content: "one more" }]
    }).catch((error) => error)
    ok(messagesRefusal instanceof Anthropic.RateLimitError, `refused with a 429: ${messagesRefusal}`)
    ok(String(messagesRefusal.message).includes("budget"), messagesRefusal.message)

    // Every charge folded into the balances and the budget windows (an answer ends once journaled).
    await gateway.settled()
    const alice = browser(gateway.url)
    await alice.login("alice", PASSWORD)
    // The key's used quota and its budget's spend are read from what is committed; under load the last charge's
    // commit may land after the pause above, so read until both have it (or give up and let the check below fail).
    const mainToken = async () => {
      const listed = await alice.call<{ items: Array<TokenView> }>("GET", "/api/token/")
      return listed.data.items.find((item) => item.name === "main")!
    }
    let token = await mainToken()
    for (let waited = 0; waited < 5_000 && token.budgets![0].spent_quota !== token.used_quota; waited += 250) {
      await new Promise((resolve) => setTimeout(resolve, 250))
      token = await mainToken()
    }
    const [daily] = token.budgets!
    strictEqual(daily.period, "day")
    strictEqual(daily.amount, 0.002)
    strictEqual(daily.spent_quota, token.used_quota, "the day's spend is every charge of the key (a refusal is free)")
    ok(daily.spent_quota <= 2_000, `spent ${daily.spent_quota} of 2,000`)
    strictEqual(daily.resets_at, nextMidnightUtc())

    // /metrics: the key's daily window among the top N, refreshed from the database every 15 s.
    const labels = { subject: "token", id: String(token.id), period: "day" }
    let ratio = 0
    for (let waited = 0; waited < 25_000 && ratio === 0; waited += 500) {
      ratio = (await scrape(gateway.url)).value("sluice_budget_utilization_ratio", labels)
      if (ratio === 0) await new Promise((resolve) => setTimeout(resolve, 500))
    }
    strictEqual(ratio, daily.spent_quota / 2_000, "utilisation = spent ÷ budget")

    const self = await alice.call<{ used_quota: number; budgets: Array<BudgetView> }>("GET", "/api/user/self")
    const [monthly] = self.data.budgets
    strictEqual(monthly.period, "month")
    strictEqual(monthly.timezone, "Europe/Paris")
    strictEqual(monthly.spent_quota, self.data.used_quota)
    ok(monthly.resets_at !== null && monthly.resets_at > Date.now() / 1000)

    // Bad budgets are refused naming the field; a key's budget stays within the user's.
    const badZone = await alice.call("PUT", "/api/token/", {
      id: token.id,
      budgets: [{ amount: 1, period: "day", timezone: "Mars/Olympus" }]
    })
    strictEqual(badZone.success, false)
    ok(badZone.message.includes("budgets[0].timezone"), badZone.message)
    const twice = await alice.call("PUT", "/api/token/", {
      id: token.id,
      budgets: [{ amount: 1, period: "day" }, { amount: 2, period: "day" }]
    })
    strictEqual(twice.success, false)
    ok(twice.message.includes("at most one budget per period"), twice.message)
    const aboveUser = await alice.call("PUT", "/api/token/", {
      id: token.id,
      budgets: [{ amount: 5, period: "month" }]
    })
    strictEqual(aboveUser.success, false)
    ok(aboveUser.message.includes("budgets[0].amount"), aboveUser.message)
    const negative = await alice.call("PUT", "/api/token/", { id: token.id, budgets: [{ amount: -1, period: "day" }] })
    strictEqual(negative.success, false)
    ok(negative.message.includes("budgets[0].amount"), negative.message)

    // Raised by its owner, the key is served again at once.
    const raised = await alice.call<TokenView>("PUT", "/api/token/", {
      id: token.id,
      budgets: [{ amount: 0.5, period: "day" }]
    })
    strictEqual(raised.success, true, raised.message)
    strictEqual(raised.data.budgets![0].spent_quota, daily.spent_quota, "the spend so far is kept")
    await openai.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "again" }] })

    // Only an admin sets the user's budgets; alice cannot.
    const root = browser(gateway.url)
    await root.login("root", ROOT_PASSWORD)
    const aliceId = (await alice.call<{ id: number }>("GET", "/api/user/self")).data.id
    const selfChange = await alice.call("PUT", "/api/user/", { id: aliceId, budgets: null })
    strictEqual(selfChange.success, false)
    strictEqual(selfChange.status, 403)
    const cleared = await root.call<{ budgets: unknown }>("PUT", "/api/user/", {
      id: aliceId,
      budgets: [{ amount: 0.000001, period: "week" }]
    })
    strictEqual(cleared.success, true, cleared.message)
    const weekly = await openai.chat.completions.create({
      model: "gpt-test",
      messages: [{ role: "user", content: "week" }]
    }).catch((error) => error)
    ok(weekly instanceof OpenAI.RateLimitError, `the user's new weekly budget applies at once: ${weekly}`)
    ok(weekly.message.includes("user's weekly budget of $0.000001"), weekly.message)
  } finally {
    await gateway.close()
  }
})
