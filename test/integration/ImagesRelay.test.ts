/**
 * The image relay's parts on PostgreSQL: failover from a failing channel to
 * the next before any upstream accepted (the failed attempt logged at cost 0,
 * the answer charged once), an upstream failure or refusal costing nothing,
 * an unreadable answer failing over, the quota hold refusing a request the
 * quota cannot cover before any upstream call, the group ratio applied, an
 * unpriced model refused, and `used_quota` equal to the sum of logged costs.
 */
import { ok, strictEqual } from "node:assert/strict"
import { APIError } from "openai"
import { startGateway } from "../support/Gateway.ts"
import { eventually, expectedCost, imageClient, imageConfig, POOR_KEY, usageOf } from "../support/ImageGateway.ts"

interface LogRow {
  readonly attempt: number
  readonly status: number
  readonly cost: string
  readonly error: string | null
}

const rowsFor = (gateway: Awaited<ReturnType<typeof startGateway>>, model: string) =>
  gateway.query<LogRow>(
    `SELECT attempt, status, cost::text AS cost, error FROM usage_logs WHERE model = '${model}' ORDER BY id`
  )

const failure = async (promise: Promise<unknown>): Promise<APIError> => {
  try {
    await promise
  } catch (error) {
    if (error instanceof APIError) return error
    throw error
  }
  throw new Error("The request succeeded.")
}

Deno.test("image relay: failover, failures free, quota hold, ratio, unpriced", async (t) => {
  const gateway = await startGateway({ config: imageConfig, store: "postgres" })
  const client = imageClient(gateway)
  try {
    await t.step("a failing first channel fails over to the next; billed once, the failure logged free", async () => {
      gateway.emulator.setFaults([{ match: { key: "sk-test-up-openai-broken" }, status: 500, times: 1 }])
      const before = await usageOf(gateway)
      const result = await client.images.generate({ model: "img-failover", prompt: "a bridge" })
      strictEqual(result.data?.length, 1)
      ok(gateway.emulator.requests.some((request) => request.path === "/api/v3/images/generations"))
      strictEqual((await usageOf(gateway)).used - before.used, expectedCost("img-failover", 1))
      await eventually(async () => (await rowsFor(gateway, "img-failover")).length === 2)
      const rows = await rowsFor(gateway, "img-failover")
      strictEqual(rows[0].status, 500)
      strictEqual(rows[0].cost, "0")
      strictEqual(rows[1].cost, String(expectedCost("img-failover", 1)))
    })

    await t.step("an unreadable answer fails over too", async () => {
      gateway.emulator.setFaults([{ match: { key: "sk-test-up-openai-broken" }, malformed: true, times: 1 }])
      const result = await client.images.generate({ model: "img-failover", prompt: "a tower" })
      strictEqual(result.data?.length, 1)
    })

    await t.step("an upstream failure with no channel left costs nothing", async () => {
      gateway.emulator.setFaults([{ match: { path: "/v1/images/generations" }, status: 503 }])
      const before = await usageOf(gateway)
      const error = await failure(client.images.generate({ model: "dall-e-2", prompt: "a storm" }))
      ok((error.status ?? 0) >= 500, String(error.status))
      strictEqual((await usageOf(gateway)).used, before.used)
      gateway.emulator.clearFaults()
    })

    await t.step("an upstream's refusal of the request is a 400, not failed over, free", async () => {
      gateway.emulator.setFaults([{
        match: { key: "sk-test-up-openai-broken" },
        status: 400,
        message: "Your request was rejected as a result of our safety system.",
        times: 1
      }])
      const before = await usageOf(gateway)
      const error = await failure(client.images.generate({ model: "img-failover", prompt: "something" }))
      strictEqual(error.status, 400)
      ok(error.message.includes("safety system"))
      ok(
        !gateway.emulator.requests.some((request) =>
          request.path === "/api/v3/images/generations" && (request.body as { prompt?: string }).prompt === "something"
        )
      )
      strictEqual((await usageOf(gateway)).used, before.used)
    })

    await t.step(
      "the hold covers every image asked for: a quota too small is refused before any upstream call",
      async () => {
        const poor = imageClient(gateway, POOR_KEY)
        const calls = gateway.emulator.requests.length
        const error = await failure(poor.images.generate({ model: "dall-e-2", prompt: "ten birds", n: 10 }))
        strictEqual(error.status, 402)
        strictEqual((error.error as { code?: string }).code, "insufficient_user_quota")
        strictEqual(gateway.emulator.requests.length, calls)
        strictEqual((await usageOf(gateway, POOR_KEY)).used, 0)
      }
    )

    await t.step("the group ratio applies: ceil(0.5 × 2 × 0.02 USD) = 20000 units", async () => {
      const poor = imageClient(gateway, POOR_KEY)
      const result = await poor.images.generate({ model: "dall-e-2", prompt: "two birds", n: 2 })
      strictEqual(result.data?.length, 2)
      strictEqual((await usageOf(gateway, POOR_KEY)).used, expectedCost("dall-e-2", 2, 0.5))
      strictEqual(expectedCost("dall-e-2", 2, 0.5), 20_000)
    })

    await t.step("a model with no per_image price is refused, free", async () => {
      const error = await failure(client.images.generate({ model: "img-unpriced", prompt: "x" }))
      strictEqual(error.status, 400)
      strictEqual((error.error as { code?: string }).code, "model_price_not_set")
    })

    await t.step("used quota equals the sum of the logged costs", async () => {
      await eventually(async () => {
        const [row] = await gateway.query<{ used: string; logged: string }>(
          `SELECT u.used_quota::text AS used, (SELECT coalesce(sum(l.cost), 0)::text FROM usage_logs l
            WHERE l.user_id = u.id) AS logged FROM users u WHERE u.username = 'alice'`
        )
        return row.used === row.logged
      })
    })
  } finally {
    await gateway.close()
  }
})
