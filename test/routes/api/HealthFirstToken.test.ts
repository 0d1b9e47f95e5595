/**
 * Time to first token, from the caller's stream to the health view (`usage_logs.first_token_ms`, migration
 * `0026`): streams through the `openai` SDK against an upstream that holds its first byte back record a first-token
 * time at least that delay and at most the row's latency, a non-streamed answer none; the hour view's p50/p95 of it
 * are exactly `percentile_cont`'s over those rows; the day view estimates them from the rollup's histogram, for rows
 * folded by a pass and for the open tail, within the histogram's bound (a third of the value).
 */
import { ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import type { HealthReport } from "../../../src/accounts/HealthQueries.ts"
import { basicConfig, ROOT_PASSWORD, startGateway } from "../../support/Gateway.ts"
import { nextRollupPass } from "../../support/HealthSeed.ts"
import { browser } from "../../support/Browser.ts"

const config = (url: string) =>
  basicConfig(url, { settings: { probe_interval_seconds: 0, health_rollup_interval_seconds: 1 } })

const DELAYS_MS = [60, 120, 180, 240]

Deno.test({
  name: "health api: a stream's time to first token is recorded and read back per window",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const gateway = await startGateway({ config, store: "postgres" })
    try {
      const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "sk-test-alice-0001", maxRetries: 0 })
      for (const delayMs of DELAYS_MS) {
        gateway.emulator.setFaults([{ match: { path: "/chat/completions" }, delayMs, times: 1 }])
        const stream = await openai.chat.completions.create({
          model: "gpt-test",
          stream: true,
          messages: [{ role: "user", content: `first token after ${delayMs} ms` }]
        })
        let text = ""
        for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? ""
        ok(text.length > 0, "the stream answered")
      }
      gateway.emulator.setFaults([])
      await openai.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "whole" }] })

      const rows = await (async () => {
        for (let tries = 0; tries < 100; tries++) {
          const found = await gateway.query<{ stream: boolean; first: number | null; latency: number }>(
            `SELECT stream, first_token_ms AS first, latency_ms AS latency FROM usage_logs
             WHERE attempt >= 1 ORDER BY id`,
            false
          )
          if (found.length === DELAYS_MS.length + 1) return found
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
        throw new Error("the usage rows were not written")
      })()
      rows.filter((row) => row.stream).forEach((row, index) => {
        ok(row.first !== null && row.first >= DELAYS_MS[index], `stream ${index}: ${row.first} ms`)
        ok(row.first <= row.latency, `stream ${index}: first token ${row.first} ms within ${row.latency} ms`)
      })
      strictEqual(rows.filter((row) => !row.stream).map((row) => row.first).join(), "", "no first token unstreamed")

      const [exact] = await gateway.query<{ p50: number; p95: number }>(
        `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY first_token_ms) AS p50,
                percentile_cont(0.95) WITHIN GROUP (ORDER BY first_token_ms) AS p95
         FROM usage_logs WHERE first_token_ms IS NOT NULL`,
        false
      )
      const root = browser(gateway.url)
      await root.login("root", ROOT_PASSWORD)
      const hour = await root.call<HealthReport>("GET", "/api/health/models?window=hour&model=gpt-test")
      strictEqual(hour.success, true, hour.message)
      const totals = hour.data.series[0].totals
      strictEqual(totals.ttft_p50_ms, Math.round(exact.p50 * 10) / 10, "the hour's p50 is exact")
      strictEqual(totals.ttft_p95_ms, Math.round(exact.p95 * 10) / 10, "the hour's p95 is exact")
      ok(totals.p50_ms !== null && totals.ttft_p50_ms !== null && totals.ttft_p50_ms <= totals.p95_ms!)

      const near = (estimate: number | null, value: number, what: string) =>
        ok(estimate !== null && Math.abs(estimate - value) <= value / 3, `${what}: ${estimate} for ${value}`)
      // The open tail (not folded yet) read through the rollup's shape.
      const tail = await root.call<HealthReport>("GET", "/api/health/models?window=day&model=gpt-test")
      strictEqual(tail.success, true, tail.message)
      near(tail.data.series[0].totals.ttft_p50_ms, exact.p50, "the tail's p50")
      near(tail.data.series[0].totals.ttft_p95_ms, exact.p95, "the tail's p95")

      // Moved 45 minutes back (a closed bucket, in the hour each pass folds again), the rows are folded by the next
      // pass and read from the rollup.
      await gateway.query("UPDATE usage_logs SET created_at = created_at - interval '45 minutes'", false)
      await nextRollupPass(gateway)
      await nextRollupPass(gateway)
      const [{ folded }] = await gateway.query<{ folded: number }>(
        `SELECT count(*)::int AS folded FROM health_rollup
         WHERE model = 'gpt-test' AND first_token_max IS NOT NULL`,
        false
      )
      ok(folded > 0, "the rollup holds the first-token histogram")
      const day = await root.call<HealthReport>("GET", "/api/health/models?window=day&model=gpt-test")
      strictEqual(day.success, true, day.message)
      ok(day.data.rollup_until !== null, "read from the rollup")
      near(day.data.series[0].totals.ttft_p50_ms, exact.p50, "the rollup's p50")
      near(day.data.series[0].totals.ttft_p95_ms, exact.p95, "the rollup's p95")
    } finally {
      await gateway.close()
    }
  }
})
