/**
 * `GET /api/health/channels` and `GET /api/health/models` on PostgreSQL: admins only (a user's session is
 * refused, no session is 401), bad parameters named; real traffic through the `openai` SDK counted with the
 * tokens the vendor reported and the cost the usage log holds, a failing upstream counted by its failure kind
 * with the channel's `channel.unhealthy` event and its cooldown; seeded rows bucketed and their p50/p95 exactly
 * `percentile_cont`'s for the hour; and 20,000 seeded rows over a week, folded into the rollup by two instances at
 * once, read back by the day and week views with exact counts, tokens and cost and percentiles within the
 * histogram's bound, still counted once their usage rows are gone, with a new row counted at once and a late one
 * after the next pass (the million-row figures: `deno task test:scale`, `test/scale/ConsolePagesAtScale.test.ts`).
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import type { HealthReport } from "../../../src/accounts/HealthQueries.ts"
import { basicConfig, ROOT_PASSWORD, startGateway, type TestGateway } from "../../support/Gateway.ts"
import { nextRollupPass, seedUsage } from "../../support/HealthSeed.ts"
import { browser } from "../../support/Browser.ts"

const config = (url: string) =>
  basicConfig(url, { settings: { cooldown_failures: 1, cooldown_seconds: 600, probe_interval_seconds: 0 } })

/** The same with the prober every second (it tests a cooling channel until it answers). */
const probing = (url: string) =>
  basicConfig(url, { settings: { cooldown_failures: 1, cooldown_seconds: 600, probe_interval_seconds: 1 } })

/** The same with the rollup folded every second. */
const folding = (url: string) =>
  basicConfig(url, {
    settings: {
      cooldown_failures: 1,
      cooldown_seconds: 600,
      probe_interval_seconds: 0,
      health_rollup_interval_seconds: 1
    }
  })

/** Per channel over `[start, end)`, what `usage_logs` holds: counts, kinds, tokens, cost and exact percentiles. */
const exactByChannel = async (gateway: TestGateway, start: number, end: number) => {
  const rows = await gateway.query<{
    id: string
    requests: number
    errors: number
    server: number
    throttled: number
    prompt: number
    completion: number
    cost: string
    p50: number
    p95: number
  }>(
    `SELECT channel_id::text AS id, count(*)::int AS requests, count(*) FILTER (WHERE status >= 400)::int AS errors,
            count(*) FILTER (WHERE error LIKE 'server:%')::int AS server,
            count(*) FILTER (WHERE error LIKE 'throttled:%')::int AS throttled,
            sum(prompt_tokens)::int AS prompt, sum(completion_tokens)::int AS completion, sum(cost)::text AS cost,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms) FILTER (WHERE status < 400) AS p50,
            percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms) FILTER (WHERE status < 400) AS p95
     FROM usage_logs WHERE created_at >= to_timestamp(${start}) AND created_at < to_timestamp(${end})
       AND channel_id IS NOT NULL GROUP BY channel_id`,
    false
  )
  return new Map(rows.map((row) => {
    const kinds: Record<string, number> = {}
    if (row.server > 0) kinds.server = row.server
    if (row.throttled > 0) kinds.throttled = row.throttled
    return [row.id, { ...row, kinds }]
  }))
}

const until = async (what: string, check: () => Promise<boolean>) => {
  for (let tries = 0; tries < 100; tries++) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`Timed out waiting for ${what}`)
}

Deno.test({
  name: "health api: admins only, real traffic and failures counted, seeded rows bucketed with exact percentiles",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const gateway = await startGateway({ config: probing, store: "postgres" })
    try {
      const root = browser(gateway.url)
      await root.login("root", ROOT_PASSWORD)
      const made = await root.call("POST", "/api/user/", { username: "uma", password: "uma-password-1" })
      strictEqual(made.success, true, made.message)
      const uma = browser(gateway.url)
      await uma.login("uma", "uma-password-1")
      for (const path of ["/api/health/channels", "/api/health/models"]) {
        const refused = await uma.call(path === "/api/health/models" ? "GET" : "GET", path)
        strictEqual(refused.status, 403)
        strictEqual(refused.success, false)
        const anonymous = await browser(gateway.url).call("GET", path)
        strictEqual(anonymous.status, 401)
      }
      for (
        const [query, param] of [
          ["window=month", "window"],
          ["channel=abc", "channel"],
          ["limit=0", "limit"],
          ["limit=101", "limit"],
          ["model=%00x", "model"],
          [`model=${"m".repeat(300)}`, "model"]
        ]
      ) {
        const bad = await root.call("GET", `/api/health/models?${query}`)
        strictEqual(bad.success, false, query)
        ok(bad.message.includes(param), `${query}: ${bad.message}`)
      }

      // Real traffic: two answers, then the upstream fails once (kind `server`), which cools the channel.
      const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "sk-test-alice-0001", maxRetries: 0 })
      let prompt = 0
      let completion = 0
      for (const text of ["hello there", "health check"]) {
        const answer = await openai.chat.completions.create({
          model: "gpt-test",
          messages: [{ role: "user", content: text }]
        })
        prompt += answer.usage!.prompt_tokens
        completion += answer.usage!.completion_tokens
      }
      gateway.emulator.setFaults([{ match: { key: "sk-test-upstream-1" }, status: 500, message: "upstream down" }])
      const failed = await openai.chat.completions.create({
        model: "gpt-test",
        messages: [{ role: "user", content: "x" }]
      })
        .then(() => 200, (error: { status: number }) => error.status)
      ok(failed >= 500, `the failed request answered ${failed}`)
      const [{ id: cooled }] = await gateway.query<{ id: string }>(
        "SELECT id::text AS id FROM channels WHERE name = 'emu-openai'"
      )
      const stateOf = async () =>
        (await root.call<HealthReport>("GET", `/api/health/channels?channel=${cooled}`)).data.channels[0]
      // The prober tests the cooling channel: failed (HTTP 500) while the upstream fails.
      await until("a failed probe", async () => (await stateOf()).last_probe?.status === 500)
      const probed = await stateOf()
      strictEqual(probed.last_probe!.ok, false)
      strictEqual(probed.last_probe!.key_position, 0)
      strictEqual(probed.state, "cooling")
      gateway.emulator.clearFaults()
      // Then passed, which ends the cooldown and announces the recovery.
      await until("a passed probe", async () => (await stateOf()).last_probe?.ok === true)
      await until("the recovery", async () => (await stateOf()).state === "healthy")
      const [{ id: channelId, cost }] = await gateway.query<{ id: string; cost: string }>(
        `SELECT c.id::text AS id, (SELECT sum(cost)::text FROM usage_logs) AS cost FROM channels c
         WHERE c.name = 'emu-openai'`
      )
      const live = await root.call<HealthReport>("GET", `/api/health/channels?window=hour&channel=${channelId}`)
      strictEqual(live.success, true, live.message)
      strictEqual(live.data.bucket_seconds, 60)
      strictEqual(live.data.end - live.data.start, 3600)
      strictEqual(live.data.series.length, 1)
      const series = live.data.series[0]
      strictEqual(series.name, "emu-openai")
      strictEqual(series.totals.requests, 3)
      strictEqual(series.totals.errors, 1)
      deepStrictEqual(series.totals.errors_by_kind, { server: 1 })
      strictEqual(series.totals.prompt_tokens, prompt, "prompt tokens as the vendor reported them")
      strictEqual(series.totals.completion_tokens, completion, "completion tokens as the vendor reported them")
      strictEqual(String(series.totals.quota), cost, "cost as the usage log holds it")
      ok(series.totals.quota > 0)
      ok(series.buckets.every((bucket) => bucket.t >= live.data.start && bucket.t < live.data.end))
      strictEqual(series.buckets.reduce((sum, bucket) => sum + bucket.requests, 0), 3)
      const state = live.data.channels.find((channel) => String(channel.channel_id) === channelId)!
      strictEqual(state.state, "healthy")
      strictEqual(state.unhealthy, false)
      strictEqual(state.cooldown_until, null)
      ok(state.health_changed_at !== null)
      deepStrictEqual(state.keys, [{ position: 0, enabled: true, reason: null }])
      // Both transitions on the time axis, newest first, with their structured reasons.
      deepStrictEqual(
        live.data.events.map((event) => [event.type, event.reason, event.channel]),
        [["channel.recovered", "probe", "emu-openai"], ["channel.unhealthy", "server", "emu-openai"]]
      )
      ok(live.data.events.every((event) => event.at >= live.data.start && event.at < live.data.end))
      ok(!JSON.stringify(live.data).includes("sk-test-upstream-1"), "no upstream key in the report")

      // Seeded rows of one model: 100 successes at 1..100 ms ten minutes ago, two timeouts and one cancelled call
      // in the next minute, a task adjustment (attempt 0) counted in cost only.
      const at = Math.floor(Date.now() / 1000 / 60) * 60 - 600
      await gateway.query(
        `INSERT INTO usage_logs (request_id, attempt, user_id, token_id, channel_id, model, prompt_tokens,
           completion_tokens, cost, latency_ms, status, error, created_at)
         SELECT 'seed-' || n, 1, 1, 1, ${channelId}, 'seed-model', 10, 5, 7, n, 200, NULL,
                to_timestamp(${at} + 30)
         FROM generate_series(1, 100) AS n`,
        false
      )
      await gateway.query(
        `INSERT INTO usage_logs (request_id, attempt, user_id, token_id, channel_id, model, cost, latency_ms, status,
           error, created_at) VALUES
         ('seed-t1', 1, 1, 1, ${channelId}, 'seed-model', 0, 30000, 504, 'timeout: no answer in 30 s',
          to_timestamp(${at} + 70)),
         ('seed-t2', 1, 1, 1, ${channelId}, 'seed-model', 0, 30000, 504, 'timeout: no answer in 30 s',
          to_timestamp(${at} + 80)),
         ('seed-c1', 1, 1, 1, ${channelId}, 'seed-model', 0, 12, 499, NULL, to_timestamp(${at} + 90)),
         ('seed-a0', 0, 1, 1, ${channelId}, 'seed-model', 11, 0, 200, NULL, to_timestamp(${at} + 95))`,
        false
      )
      const seeded = await root.call<HealthReport>("GET", "/api/health/models?window=hour&model=seed-model")
      strictEqual(seeded.success, true, seeded.message)
      strictEqual(seeded.data.series.length, 1)
      const model = seeded.data.series[0]
      strictEqual(model.model, "seed-model")
      deepStrictEqual(
        model.buckets.map((bucket) => [bucket.t, bucket.requests, bucket.errors, bucket.p50_ms, bucket.p95_ms]),
        [[at, 100, 0, 50.5, 95.1], [at + 60, 3, 3, null, null]],
        "percentile_cont over 1..100 ms: p50 50.5, p95 95.05 (shown to 0.1 ms)"
      )
      deepStrictEqual(model.buckets[1].errors_by_kind, { timeout: 2, cancelled: 1 })
      strictEqual(model.totals.requests, 103)
      deepStrictEqual(model.totals.errors_by_kind, { timeout: 2, cancelled: 1 })
      strictEqual(model.totals.prompt_tokens, 1000)
      strictEqual(model.totals.quota, 711, "100 × 7 plus the task adjustment's 11")
      strictEqual(model.totals.p50_ms, 50.5)

      // The day window puts both minutes in one 15-minute bucket (or two, at a boundary), same totals.
      const day = await root.call<HealthReport>("GET", "/api/health/models?window=day&model=seed-model")
      strictEqual(day.data.bucket_seconds, 900)
      strictEqual(day.data.series[0].totals.requests, 103)
      ok(day.data.series[0].buckets.every((bucket) => bucket.t % 900 === 0))

      // Both models by model, busiest first; limit keeps the busiest only.
      const models = await root.call<HealthReport>("GET", "/api/health/models?window=hour")
      deepStrictEqual(models.data.series.map((entry) => entry.model), ["seed-model", "gpt-test"])
      const top = await root.call<HealthReport>("GET", "/api/health/models?window=hour&limit=1")
      deepStrictEqual(top.data.series.map((entry) => entry.model), ["seed-model"])
    } finally {
      await gateway.close()
    }
  }
})

Deno.test({
  name:
    "health api: the day and week views read the rollup, folded by two instances once, with the open tail and late rows",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const gateway = await startGateway({ config: folding, store: "postgres" })
    // A second instance on the same database: both fold every second, the state row's lock lets one at a time.
    const second = await startGateway({ config: folding, databaseUrl: gateway.databaseUrl, emulator: gateway.emulator })
    try {
      const root = browser(gateway.url)
      await root.login("root", ROOT_PASSWORD)
      const [{ id: channelId }] = await gateway.query<{ id: string }>(`SELECT min(id)::text AS id FROM channels`)
      const seeded = await seedUsage(gateway, 20_000, channelId)
      const week = await root.call<HealthReport>("GET", "/api/health/channels?window=week&limit=100")
      strictEqual(week.success, true, week.message)
      const { start, end } = week.data
      const folded = week.data.rollup_until
      ok(folded !== null && folded > start && end - folded <= 7_200 + 1_800, `rollup until ${folded}, end ${end}`)
      strictEqual(week.data.series.length, 50)
      const exact = await exactByChannel(gateway, start, end)
      let worst = 0
      for (const entry of week.data.series) {
        const truth = exact.get(String(entry.channel_id))!
        deepStrictEqual(
          [entry.totals.requests, entry.totals.errors, entry.totals.errors_by_kind],
          [truth.requests, truth.errors, truth.kinds],
          `channel ${entry.channel_id}`
        )
        deepStrictEqual(
          [entry.totals.prompt_tokens, entry.totals.completion_tokens, String(entry.totals.quota)],
          [truth.prompt, truth.completion, truth.cost]
        )
        for (
          const [estimate, value] of [[entry.totals.p50_ms, truth.p50], [entry.totals.p95_ms, truth.p95]] as const
        ) {
          ok(estimate !== null && Math.abs(estimate - value) <= value / 3 + 1, `${estimate} for ${value}`)
          worst = Math.max(worst, Math.abs(estimate - value) / value)
        }
        strictEqual(entry.buckets.reduce((sum, bucket) => sum + bucket.requests, 0), entry.totals.requests)
        ok(entry.buckets.every((bucket) => bucket.t % 7_200 === 0 && bucket.t >= start && bucket.t < end))
      }
      // One channel bucket by bucket, against `usage_logs` binned the same way.
      const mine = week.data.series.find((entry) => String(entry.channel_id) === channelId)!
      const perBucket = await gateway.query<{ t: string; requests: number }>(
        `SELECT extract(epoch FROM date_bin('7200 seconds', created_at, 'epoch'))::bigint::text AS t,
                count(*)::int AS requests
         FROM usage_logs WHERE channel_id = ${channelId} AND created_at >= to_timestamp(${start})
           AND created_at < to_timestamp(${end}) GROUP BY 1 ORDER BY 1`,
        false
      )
      deepStrictEqual(
        mine.buckets.map((bucket) => [String(bucket.t), bucket.requests]),
        perBucket.map((row) => [row.t, row.requests])
      )
      const day = await root.call<HealthReport>("GET", "/api/health/channels?window=day&limit=100")
      const exactDay = await exactByChannel(gateway, day.data.start, day.data.end)
      strictEqual(day.data.series.length, exactDay.size)
      for (const entry of day.data.series) {
        strictEqual(entry.totals.requests, exactDay.get(String(entry.channel_id))!.requests)
        ok(entry.buckets.every((bucket) => bucket.t % 900 === 0))
      }
      const model = await root.call<HealthReport>("GET", "/api/health/models?window=day&model=model-3")
      const [modelTruth] = await gateway.query<{ requests: number }>(
        `SELECT count(*)::int AS requests FROM usage_logs WHERE model = 'model-3'
           AND created_at >= to_timestamp(${model.data.start}) AND created_at < to_timestamp(${model.data.end})`,
        false
      )
      strictEqual(model.data.series[0].totals.requests, modelTruth.requests)
      // deno-lint-ignore no-console
      console.log(
        `health: 20,000 rows written in ${seeded.writeMs} ms, folded in ${seeded.foldMs} ms; every channel, ` +
          `week ${week.data.query_ms} ms, day ` +
          `${day.data.query_ms} ms (query); worst percentile estimate ${(worst * 100).toFixed(1)} % off`
      )
      await second.close()

      // The rollup is what the week view reads: usage rows of buckets no pass refolds any more, removed from
      // `usage_logs`, still count.
      const stable = folded - 3_600 - 900
      const [{ removed }] = await gateway.query<{ removed: number }>(
        `WITH gone AS (DELETE FROM usage_logs WHERE created_at < to_timestamp(${stable}) RETURNING 1)
         SELECT count(*)::int AS removed FROM gone`,
        false
      )
      ok(removed > 15_000, `${removed} rows removed`)
      const after = await root.call<HealthReport>("GET", "/api/health/channels?window=week&limit=99")
      strictEqual(after.data.series.reduce((sum, entry) => sum + entry.totals.requests, 0), 20_000)

      // The open tail: a row written now counts at once.
      const insert = (model: string, at: string) =>
        gateway.query(
          `INSERT INTO usage_logs (request_id, attempt, user_id, token_id, channel_id, model, prompt_tokens,
             completion_tokens, cost, latency_ms, status, created_at)
           VALUES ('${model}', 1, 1, 1, ${channelId}, '${model}', 3, 4, 5, 120, 200, ${at})`,
          false
        )
      await insert("fresh-model", "now()")
      const fresh = await root.call<HealthReport>("GET", "/api/health/models?window=week&model=fresh-model")
      strictEqual(fresh.data.series[0].totals.requests, 1)
      strictEqual(fresh.data.series[0].totals.p50_ms, 120)
      // A late row, written into a bucket already folded: counted once the next pass refolded the last hour.
      await insert("late-model", `to_timestamp(${folded - 600})`)
      await nextRollupPass(gateway)
      const late = await root.call<HealthReport>("GET", "/api/health/models?window=day&model=late-model")
      strictEqual(late.data.series[0].totals.requests, 1)
      strictEqual(late.data.series[0].totals.quota, 5)
      ok(late.data.rollup_until !== null && late.data.rollup_until > folded - 600, "read from the rollup")
    } finally {
      await second.close()
      await gateway.close()
    }
  }
})

Deno.test({
  name: "health api: the embedded store (PGlite) answers the same report",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const gateway = await startGateway({ config, store: "pglite" })
    try {
      const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "sk-test-alice-0001", maxRetries: 0 })
      const answer = await openai.chat.completions.create({
        model: "gpt-test",
        messages: [{ role: "user", content: "embedded" }]
      })
      const root = browser(gateway.url)
      await root.login("root", ROOT_PASSWORD)
      for (const window of ["hour", "day", "week"]) {
        const channels = await root.call<HealthReport>("GET", `/api/health/channels?window=${window}`)
        strictEqual(channels.success, true, channels.message)
        strictEqual(channels.data.series[0].name, "emu-openai")
        strictEqual(channels.data.series[0].totals.requests, 1)
        strictEqual(channels.data.series[0].totals.prompt_tokens, answer.usage!.prompt_tokens)
        strictEqual(channels.data.channels[0].state, "healthy")
        const models = await root.call<HealthReport>("GET", `/api/health/models?window=${window}&model=gpt-test`)
        strictEqual(models.success, true, models.message)
        strictEqual(models.data.series[0].totals.completion_tokens, answer.usage!.completion_tokens)
        ok(models.data.series[0].totals.p50_ms !== null)
      }
    } finally {
      await gateway.close()
    }
  }
})
