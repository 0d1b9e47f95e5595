/**
 * `GET /metrics` through a real Prometheus text parser: the counters and
 * histograms move by exactly what a known set of requests implies (requests
 * by route, format, model, channel and status class; upstream attempts and
 * failovers; tokens; quota charged equal to what the ledger wrote), labels are
 * bounded (an unknown model is `other`), gauges of the usage log, the leases
 * and channel health are there, and the access rule holds (loopback open,
 * otherwise the metrics token as Bearer).
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { startGateway } from "../support/Gateway.ts"
import { KEY, METRICS_TOKEN, scrape, twoChannels } from "./Support.ts"

const CHAT = "/v1/chat/completions"

Deno.test("metrics: exact deltas for a known set of requests, cost equal to the ledger's", async () => {
  const gateway = await startGateway({ store: "postgres", config: (url) => twoChannels(url) })
  const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
  try {
    const before = await scrape(gateway.url)
    const usage = { prompt: 0, completion: 0 }

    // 1. A plain answer from the primary.
    const first = await client.chat.completions.create({
      model: "gpt-test",
      messages: [{ role: "user", content: "first question" }],
      max_tokens: 20
    })
    usage.prompt += first.usage!.prompt_tokens
    usage.completion += first.usage!.completion_tokens

    // 2. A stream from the primary, with its usage.
    const stream = await client.chat.completions.create({
      model: "gpt-test",
      messages: [{ role: "user", content: "second question, streamed" }],
      max_tokens: 20,
      stream: true,
      stream_options: { include_usage: true }
    })
    for await (const chunk of stream) {
      if (chunk.usage) {
        usage.prompt += chunk.usage.prompt_tokens
        usage.completion += chunk.usage.completion_tokens
      }
    }

    // 3. The primary fails once with 500: the secondary answers.
    gateway.emulator.setFaults([{ match: { key: "sk-test-upstream-primary" }, status: 500, times: 1 }])
    const third = await client.chat.completions.create({
      model: "gpt-test",
      messages: [{ role: "user", content: "third question" }],
      max_tokens: 20
    })
    usage.prompt += third.usage!.prompt_tokens
    usage.completion += third.usage!.completion_tokens
    gateway.emulator.clearFaults()

    // 4. A model nobody serves, named with caller-chosen text: counted under `other`.
    const unknown = await fetch(`${gateway.url}${CHAT}`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "no-such-model-x1", messages: [{ role: "user", content: "hi" }] })
    })
    await unknown.body?.cancel()
    strictEqual(unknown.status, 503)

    // The stream's settlement may finish just after its last byte; the usage log commits every 50 ms.
    await new Promise((resolve) => setTimeout(resolve, 400))
    const after = await scrape(gateway.url)
    const delta = (name: string, labels: Record<string, string> = {}) =>
      after.value(name, labels) - before.value(name, labels)
    const requests = (model: string, channel: string, statusClass: string) =>
      delta("sluice_http_requests_total", {
        route: CHAT,
        format: "openai-chat",
        model,
        channel,
        status_class: statusClass
      })

    strictEqual(after.type("sluice_http_requests_total"), "COUNTER")
    strictEqual(after.type("sluice_http_request_duration_seconds"), "HISTOGRAM")
    strictEqual(requests("gpt-test", "primary", "2xx"), 2)
    strictEqual(requests("gpt-test", "secondary", "2xx"), 1)
    strictEqual(requests("other", "none", "5xx"), 1)
    ok(
      !(after.families.get("sluice_http_requests_total")?.metrics ?? []).some((sample) =>
        Object.values(sample.labels ?? {}).includes("no-such-model-x1")
      ),
      "an unknown model name never becomes a label"
    )

    strictEqual(delta("sluice_upstream_attempts_total", { channel: "primary", outcome: "ok" }), 2)
    strictEqual(delta("sluice_upstream_attempts_total", { channel: "primary", outcome: "server" }), 1)
    strictEqual(delta("sluice_upstream_attempts_total", { channel: "secondary", outcome: "ok" }), 1)
    strictEqual(delta("sluice_failovers_total", { channel: "primary", reason: "server" }), 1)

    const histogramDelta = (name: string, channel: string) =>
      after.count(name, { route: CHAT, channel }) - before.count(name, { route: CHAT, channel })
    strictEqual(histogramDelta("sluice_http_request_duration_seconds", "primary"), 2)
    strictEqual(histogramDelta("sluice_http_request_duration_seconds", "secondary"), 1)
    strictEqual(histogramDelta("sluice_http_time_to_first_byte_seconds", "primary"), 2)
    strictEqual(histogramDelta("sluice_http_request_duration_seconds", "none"), 1)

    strictEqual(delta("sluice_tokens_total", { model: "gpt-test", kind: "prompt" }), usage.prompt)
    strictEqual(delta("sluice_tokens_total", { model: "gpt-test", kind: "completion" }), usage.completion)
    const [ledger] = await gateway.query<{ cost: string; prompt: string; completion: string }>(
      `SELECT SUM(cost)::text AS cost, SUM(prompt_tokens)::text AS prompt, SUM(completion_tokens)::text AS completion
       FROM usage_logs WHERE model = 'gpt-test'`
    )
    const charged = delta("sluice_quota_charged_total", { model: "gpt-test", group: "default" })
    ok(charged > 0)
    strictEqual(charged, Number(ledger.cost))
    deepStrictEqual([usage.prompt, usage.completion], [Number(ledger.prompt), Number(ledger.completion)])

    // Gauges read when scraped.
    strictEqual(after.value("sluice_usage_log_queue_rows"), 0)
    ok(after.value("sluice_usage_log_last_commit_age_seconds") < 5)
    // The token has no quota of its own (unlimited): one lease, on the user's balance, as the table says.
    const leases = await gateway.query<{ count: string }>(`SELECT COUNT(*)::text AS count FROM quota_leases`)
    strictEqual(after.value("sluice_quota_leases"), Number(leases[0].count))
    strictEqual(after.value("sluice_quota_leases"), 1)
    ok(after.value("sluice_quota_leased_amount") > 0)
    strictEqual(after.value("sluice_channel_up", { channel: "primary" }), 1)
    strictEqual(after.value("sluice_channel_enabled_keys", { channel: "secondary" }), 1)
  } finally {
    await gateway.close()
  }
})

Deno.test("metrics: open on loopback; elsewhere only with the metrics token as Bearer", async () => {
  const gateway = await startGateway({ config: (url) => twoChannels(url) })
  try {
    const loopback = await fetch(`${gateway.url}/metrics`)
    strictEqual(loopback.status, 200)
    ok((await loopback.text()).includes("# TYPE"))
    // Through the handler with no peer address: as from anywhere but loopback.
    const remote = (headers: Record<string, string>) =>
      gateway.handler(new Request("http://gateway.example/metrics", { headers }))
    const bare = await remote({})
    strictEqual(bare.status, 401)
    strictEqual((await bare.json()).error.code, "unauthorized")
    const wrong = await remote({ authorization: "Bearer sk-test-not-the-token" })
    strictEqual(wrong.status, 401)
    await wrong.body?.cancel()
    const right = await remote({ authorization: `Bearer ${METRICS_TOKEN}` })
    strictEqual(right.status, 200)
    ok((await right.text()).includes("sluice_"))
  } finally {
    await gateway.close()
  }
})

Deno.test("metrics: cooldowns, key disables, rate-limit rejections and channel health", async () => {
  const gateway = await startGateway({
    config: (url) => {
      const file = twoChannels(url, { cooldown_failures: 1 })
      return { ...file, users: file.users!.map((user) => ({ ...user, limits: { rpm: 2 } })) }
    }
  })
  const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
  const ask = () =>
    client.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "hi" }], max_tokens: 8 })
  try {
    const before = await scrape(gateway.url)
    // The primary fails once: one failure is enough for a cooldown here; the secondary answers.
    gateway.emulator.setFaults([{ match: { key: "sk-test-upstream-primary" }, status: 500, times: 1 }])
    await ask()
    // The secondary's key is refused (401): disabled; the cooling primary, tried last, answers.
    gateway.emulator.setFaults([{ match: { key: "sk-test-upstream-second" }, status: 401, times: 1 }])
    await ask()
    gateway.emulator.clearFaults()
    // The user's limit is 2 requests a minute.
    const refused = await ask().then(() => undefined, (error: { status?: number }) => error.status)
    strictEqual(refused, 429)
    const after = await scrape(gateway.url)
    const delta = (name: string, labels: Record<string, string> = {}) =>
      after.value(name, labels) - before.value(name, labels)
    strictEqual(delta("sluice_channel_cooldowns_total", { channel: "primary" }), 1)
    strictEqual(delta("sluice_key_disables_total", { channel: "secondary" }), 1)
    strictEqual(delta("sluice_rate_limit_rejections_total"), 1)
    strictEqual(delta("sluice_upstream_attempts_total", { channel: "secondary", outcome: "unauthorized" }), 1)
    strictEqual(
      delta("sluice_http_requests_total", {
        route: CHAT,
        format: "openai-chat",
        model: "gpt-test",
        channel: "none",
        status_class: "4xx"
      }),
      1
    )
    strictEqual(after.value("sluice_channel_up", { channel: "primary" }), 1, "its answer ended the cooldown")
    strictEqual(after.value("sluice_channel_enabled_keys", { channel: "secondary" }), 0)
    strictEqual(after.value("sluice_channel_up", { channel: "secondary" }), 0, "no enabled key")
  } finally {
    await gateway.close()
  }
})
