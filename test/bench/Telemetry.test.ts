/**
 * The telemetry overhead report of `deno task bench --telemetry`, with plain
 * values: CPU per request of each run, the overhead over pairs of rounds,
 * and the Markdown table.
 */
import { ok, strictEqual } from "node:assert/strict"
import { cpuPerRequest, overhead, pairedRatios, renderTelemetryReport } from "../../bench/Telemetry.ts"
import type { Run } from "../../bench/Report.ts"

const run = (requests: number, cpuMs: number | undefined): Run => ({
  requests,
  seconds: 10,
  requestsPerSecond: requests / 10,
  p50Ms: 1,
  p99Ms: 5,
  maxMs: 9,
  non2xx: 0,
  socketErrors: 0,
  cpuMs
})

Deno.test("telemetry report: CPU per request, the overhead of the paired rounds, the table", () => {
  const item = {
    name: "chat, non-stream",
    on: [run(10_000, 2_100), run(10_000, 2_000), run(10_000, 2_060)],
    off: [run(10_000, 2_000), run(10_000, 1_900), run(10_000, 2_050), run(5_000, undefined)]
  }
  strictEqual(cpuPerRequest(item.off).length, 3, "a run without CPU time is left out")
  // Rounds: 0.210 ÷ 0.200, 0.200 ÷ 0.190, 0.206 ÷ 0.205; the fourth off run has no partner. One pair of rounds
  // (the third round has none): the geometric mean of the first two.
  strictEqual(pairedRatios(item).length, 3)
  const share = overhead(item)!
  ok(Math.abs(share - (Math.sqrt((0.21 / 0.2) * (0.2 / 0.19)) - 1)) < 1e-9, String(share))
  strictEqual(overhead({ name: "none", on: [], off: [] }), undefined)
  const text = renderTelemetryReport({
    date: "2026-11-25T00:00:00.000Z",
    command: "deno task bench --telemetry",
    store: "embedded PGlite (temp dir)",
    machine: "2 cores, linux/x86_64",
    load: "50 connections × 10 s per run",
    rounds: 3,
    loadAverage: 0.5,
    cases: [item]
  })
  ok(text.includes("| chat, non-stream | 1,000 | 1,000 | 0.200 | 0.206 | 5.1% |"), text)
  ok(text.includes("| 1.05 · 1.05 · 1.00 |"), text)
})
