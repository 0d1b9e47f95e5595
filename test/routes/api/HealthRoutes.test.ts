/**
 * `GET /api/health/channels` and `GET /api/health/models` on PostgreSQL: admins only (a user's session is
 * refused, no session is 401), bad parameters named; real traffic through the `openai` SDK counted with the
 * tokens the vendor reported and the cost the usage log holds, a failing upstream counted by its failure kind
 * with the channel's `channel.unhealthy` event and its cooldown; seeded rows bucketed and their p50/p95 exactly
 * `percentile_cont`'s; and a million usage rows aggregated well under a second per window (the figures printed).
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import type { HealthReport } from "../../../src/accounts/HealthQueries.ts"
import { basicConfig, ROOT_PASSWORD, startGateway } from "../../support/Gateway.ts"
import { browser } from "../../support/Browser.ts"

const config = (url: string) =>
  basicConfig(url, { settings: { cooldown_failures: 1, cooldown_seconds: 600, probe_interval_seconds: 0 } })

/** The same with the prober every second (it tests a cooling channel until it answers). */
const probing = (url: string) =>
  basicConfig(url, { settings: { cooldown_failures: 1, cooldown_seconds: 600, probe_interval_seconds: 1 } })

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
  name: "health api: a million usage rows on PostgreSQL aggregate under a second for the live views",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const gateway = await startGateway({ config, store: "postgres" })
    try {
      const root = browser(gateway.url)
      await root.login("root", ROOT_PASSWORD)
      const [{ id: channelId }] = await gateway.query<{ id: string }>(`SELECT min(id)::text AS id FROM channels`)
      const seeding = performance.now()
      // Seeded with the indexes set aside and built again after (as a restore would): minutes of index upkeep
      // become seconds. The same definitions, read from the catalogue, so the queries below use the real indexes.
      const indexes = await gateway.query<{ name: string; definition: string }>(
        `SELECT indexname AS name, indexdef AS definition FROM pg_indexes
         WHERE tablename = 'usage_logs' AND indexname <> 'usage_logs_pkey'`,
        false
      )
      ok(indexes.some((index) => index.name === "usage_logs_channel_created_idx"), "migration 0020's index")
      for (const index of indexes) await gateway.query(`DROP INDEX ${index.name}`, false)
      // 1,000,000 rows over the last week: 50 channels, 20 models, 5% failures of three kinds.
      await gateway.query(
        `INSERT INTO usage_logs (request_id, attempt, user_id, token_id, channel_id, model, prompt_tokens,
           completion_tokens, cost, latency_ms, status, error, created_at)
         SELECT 'bulk-' || n, 1, 1, 1, CASE WHEN n % 50 = 0 THEN ${channelId} ELSE 1000 + n % 50 END,
                'model-' || (n % 20), 100 + n % 900, 20 + n % 300, 1000 + n % 5000, 50 + (n::bigint * 7919) % 4000,
                CASE WHEN n % 20 = 0 THEN 500 WHEN n % 20 = 1 THEN 429 ELSE 200 END,
                CASE WHEN n % 20 = 0 THEN 'server: upstream error' WHEN n % 20 = 1 THEN 'throttled: slow down'
                     ELSE NULL END,
                now() - (n % 590000) * interval '1 second'
         FROM generate_series(1, 1000000) AS n`,
        false
      )
      for (const index of indexes) await gateway.query(index.definition, false)
      await gateway.query("ANALYZE usage_logs", false)
      // deno-lint-ignore no-console
      console.log(`health: seeded 1,000,000 usage rows in ${Math.round(performance.now() - seeding)} ms`)
      const [{ count }] = await gateway.query<{ count: string }>(
        "SELECT count(*)::text AS count FROM usage_logs",
        false
      )
      ok(Number(count) >= 1_000_000)
      const timings: Array<string> = []
      const timed = async (path: string, warm = true) => {
        // Warm the database's cache once with another limit (the same query again is the report computed already).
        if (warm) await root.call("GET", `${path}&limit=19`)
        const started = performance.now()
        const answer = await root.call<HealthReport>("GET", path)
        const elapsed = Math.round(performance.now() - started)
        strictEqual(answer.success, true, answer.message)
        ok(answer.data.series.length > 0, path)
        ok(answer.data.series.length <= 20, "bounded to the default limit")
        timings.push(`${path}: ${elapsed} ms (query ${answer.data.query_ms} ms)`)
        return elapsed
      }
      // What the console asks for: the live overview (hour, day), one channel's or one model's detail (any window).
      for (
        const path of [
          "/api/health/channels?window=hour",
          "/api/health/models?window=hour",
          `/api/health/channels?window=week&channel=${channelId}`,
          "/api/health/models?window=day&model=model-3"
        ]
      ) {
        const elapsed = await timed(path)
        ok(elapsed < 1000, `${path} took ${elapsed} ms`)
      }
      // Every channel over a day (about 146,000 rows) and a week (all 1,000,000 rows in the window): recorded, not
      // bounded (docs/CONSOLE.md).
      await timed("/api/health/channels?window=day", false)
      await timed("/api/health/channels?window=week", false)
      const week = await root.call<HealthReport>("GET", "/api/health/channels?window=week&limit=100")
      strictEqual(week.data.series.length, 50)
      strictEqual(week.data.series.reduce((sum, entry) => sum + entry.totals.requests, 0), 1_000_000)
      ok(week.data.series.every((entry) => entry.buckets.length <= 85), "at most one bucket per 2 h")
      // deno-lint-ignore no-console
      console.log(`health: 1,000,000 rows\n  ${timings.join("\n  ")}`)
    } finally {
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
