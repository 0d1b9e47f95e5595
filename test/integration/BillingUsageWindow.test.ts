/**
 * `GET /dashboard/billing/usage` with `start_date` and `end_date` (OpenAI's
 * legacy billing usage: `YYYY-MM-DD`, UTC, the end exclusive): the usage of
 * those days only, in cents, with `daily_costs` by model, checked against the
 * usage log; a bad or lone date is a 400 naming it. Without dates the answer
 * stays the whole usage.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { basicConfig, startGateway } from "../support/Gateway.ts"

const KEY = "sk-test-alice-0001"

const day = (offset: number): string => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10)

Deno.test("billing usage: start_date and end_date select the days; bad dates are a 400 naming the field", async (t) => {
  const gateway = await startGateway({ config: (url) => basicConfig(url), store: "postgres" })
  const usage = async (query: string) => {
    const response = await fetch(`${gateway.url}/dashboard/billing/usage${query}`, {
      headers: { authorization: `Bearer ${KEY}` }
    })
    return { status: response.status, body: await response.json() }
  }
  try {
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY })
    await client.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "hello there" }] })
    const [logged] = await gateway.query<{ cost: string }>("SELECT sum(cost)::text AS cost FROM usage_logs")
    const cents = (Number(logged.cost) / 1_000_000) * 100

    await t.step("today's window holds the request, by model; yesterday's holds nothing", async () => {
      const today = await usage(`?start_date=${day(0)}&end_date=${day(1)}`)
      strictEqual(today.status, 200)
      strictEqual(today.body.object, "list")
      strictEqual(today.body.total_usage, cents)
      deepStrictEqual(today.body.daily_costs, [{
        timestamp: Date.parse(`${day(0)}T00:00:00Z`) / 1000,
        line_items: [{ name: "gpt-test", cost: cents }]
      }])
      const yesterday = await usage(`?start_date=${day(-1)}&end_date=${day(0)}`)
      deepStrictEqual(yesterday.body, { object: "list", daily_costs: [], total_usage: 0 })
      strictEqual((await usage("")).body.total_usage, cents, "without dates: the whole usage")
    })

    await t.step("a malformed, impossible, lone or reversed date is a 400 naming it", async () => {
      for (
        const [query, param] of [
          [`?start_date=yesterday&end_date=${day(1)}`, "start_date"],
          [`?start_date=${day(0)}&end_date=2025-02-30`, "end_date"],
          [`?start_date=${day(0)}`, "end_date"],
          [`?end_date=${day(0)}`, "start_date"],
          [`?start_date=${day(1)}&end_date=${day(0)}`, "end_date"]
        ]
      ) {
        const answer = await usage(query)
        strictEqual(answer.status, 400, query)
        strictEqual(answer.body.error.param, param, query)
      }
    })
  } finally {
    await gateway.close()
  }
})
