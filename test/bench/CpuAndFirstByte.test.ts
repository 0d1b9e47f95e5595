/**
 * The bench's CPU-per-request and time-to-first-byte parts: `/proc` CPU
 * readings, the sequential TTFB probe against a local server whose first
 * chunk comes well before its last, the report's CPU figures and verdict, its
 * light-load latency table and its stream floor line.
 */
import { ok, strictEqual } from "node:assert/strict"
import { CpuClock } from "../../bench/Cpu.ts"
import { probeFirstByte } from "../../bench/FirstByte.ts"
import {
  type BenchReport,
  type CaseReport,
  cpuPerRequest,
  type FirstByteReport,
  type Measured,
  renderReport,
  type Run
} from "../../bench/Report.ts"

const onLinux = Deno.build.os === "linux"

Deno.test({
  name: "CpuClock: a 300 ms busy loop adds at least 100 ms to this process's CPU time; a gone pid reads undefined",
  ignore: !onLinux,
  fn: async () => {
    const clock = await CpuClock.make()
    ok(clock.ticksPerSecond > 0)
    const before = await clock.read(Deno.pid)
    const start = performance.now()
    let spins = 0
    while (performance.now() - start < 300) spins++
    const after = await clock.read(Deno.pid)
    const elapsed = performance.now() - start
    ok(before !== undefined && after !== undefined && spins > 0)
    const used = after - before
    // Ticks are 10 ms at 100 Hz; on a busy 2-core machine the loop may be descheduled for part of the time, and
    // the reading covers every thread of the process (other tests of this run too), so only the floor is certain.
    ok(used >= 100, `CPU used during a ${elapsed.toFixed(0)} ms busy loop: ${used} ms`)
    strictEqual(await clock.read(2 ** 22 + 12345), undefined)
  }
})

Deno.test("probeFirstByte: times the first chunk, not the end, checks the text, and counts wrong answers", async () => {
  const encoder = new TextEncoder()
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (request) => {
    await request.body?.cancel()
    if (new URL(request.url).pathname === "/broken") return new Response("no", { status: 500 })
    let timer: ReturnType<typeof setTimeout> | undefined
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode("data: first\n\n"))
        timer = setTimeout(() => {
          controller.enqueue(encoder.encode("data: [DONE]\n\n"))
          controller.close()
        }, 40)
      },
      cancel() {
        clearTimeout(timer)
      }
    })
    return new Response(body, { headers: { "Content-Type": "text/event-stream" } })
  })
  try {
    const base = `http://127.0.0.1:${server.addr.port}`
    const looksRight = (text: string) => text.includes("first") && text.includes("[DONE]")
    const [slowTail, broken] = await probeFirstByte(
      [
        { label: "slow tail", url: `${base}/stream`, headers: {}, body: "{}", looksRight },
        { label: "broken", url: `${base}/broken`, headers: {}, body: "{}", looksRight }
      ],
      5,
      1
    )
    strictEqual(slowTail.requests, 5)
    strictEqual(slowTail.wrong, 0)
    ok(slowTail.p50Ms < 30, `first chunk p50 ${slowTail.p50Ms} ms should come before the 40 ms tail`)
    ok(slowTail.wholeP50Ms >= 39, `whole answer p50 ${slowTail.wholeP50Ms} ms should include the 40 ms tail`)
    ok(slowTail.p99Ms >= slowTail.p50Ms)
    strictEqual(broken.requests, 5)
    strictEqual(broken.wrong, 5)
  } finally {
    await server.shutdown()
  }
})

const run = (requests: number, cpuMs: number | undefined): Run => ({
  requests,
  seconds: 10,
  requestsPerSecond: requests / 10,
  p50Ms: 10,
  p99Ms: 20,
  maxMs: 30,
  non2xx: 0,
  socketErrors: 0,
  cpuMs
})

const side = (throughput: Run, latency: Run): Measured => ({ warmup: run(10, 99_999), throughput, latency })

const measured = (name: string, gateway: Measured): CaseReport => ({
  name,
  outcome: { _tag: "Measured", proxy: side(run(10_000, 1_000), run(5_000, 500)), gateway },
  upstreamCalls: 100
})

const firstByte = (label: string, p50Ms: number): FirstByteReport["proxyChat"] => ({
  label,
  requests: 200,
  wrong: 0,
  p50Ms,
  p99Ms: p50Ms * 2,
  wholeP50Ms: p50Ms + 1
})

const report = (messagesGateway: Measured): BenchReport => {
  // The floor: 6,000 requests in 10 s (600 req/s, 0.60× the proxy's 1,000), 1,200 ms CPU (0.200 ms/req).
  const chat = {
    ...measured("chat, stream", side(run(2_000, 8_000), run(1_000, 4_000))),
    floorThroughput: run(6_000, 1_200)
  }
  const messages = measured("messages in → openai upstream, stream", messagesGateway)
  return {
    date: "2026-01-01T00:00:00.000Z",
    command: "deno task bench",
    store: "PGlite",
    machine: "2 cores",
    tools: "test",
    throughputLoad: "50 connections × 10 s",
    latencyLoad: "10 connections × 10 s",
    warmupLoad: "10 connections × 2 s",
    pacedLoad: "10 connections × 8 s, each pausing 20 ms after every answer",
    paced: [{
      name: "chat, non-stream",
      proxy: run(4_000, 400),
      gateway: { ...run(3_600, 900), p50Ms: 12.5, p99Ms: 31 }
    }],
    elapsedSeconds: 1,
    loadAverage: 0,
    cases: [chat, messages],
    crossFormat: {
      messages,
      chatStream: chat,
      firstByte: {
        rounds: 200,
        warmupRounds: 10,
        proxyChat: firstByte("proxy, chat", 1),
        proxyMessages: firstByte("proxy, messages", 1.5),
        gatewayChat: firstByte("gateway, chat", 5),
        gatewayMessages: firstByte("gateway, messages", 6)
      }
    },
    cpuTicksPerSecond: 100,
    failover: {
      outcome: { _tag: "Unavailable", reason: "not in this test" },
      setup: "",
      primaryCalls: 0,
      secondaryCalls: 0
    }
  }
}

Deno.test("cpuPerRequest: CPU over the throughput and latency runs ÷ their requests, warm-up left out", () => {
  strictEqual(cpuPerRequest(side(run(2_000, 8_000), run(1_000, 4_000))), 4)
  strictEqual(cpuPerRequest(side(run(2_000, 8_000), run(1_000, undefined))), undefined)
  strictEqual(cpuPerRequest(side(run(0, 0), run(0, 0))), undefined)
})

Deno.test("renderReport: CPU columns, the translated ÷ passthrough CPU ratio against 1.25×, and the TTFB table", () => {
  // Passthrough: 12,000 ms over 3,000 requests = 4 ms/req. Translated 4.8 ms/req → 1.20×, met.
  const met = renderReport(report(side(run(2_000, 9_600), run(1_000, 4_800))))
  ok(met.includes("| proxy CPU ms/req | gateway CPU ms/req |"), "table header has both CPU columns")
  ok(met.includes("| 0.100 | 4.00 |"), "chat stream row: proxy 0.100, gateway 4.00 ms/req")
  ok(met.includes("translated ÷ passthrough: 1.20×**"), met)
  ok(met.includes("Target ≤ 1.25×: **met**"), met)
  ok(met.includes("| 1.50 / 3.00 ms | 6.00 / 12.0 ms | +4.50 ms / +9.00 ms |"), "translated TTFB row")
  ok(met.includes("p50 +1.00 ms, p99 +2.00 ms"), "TTFB added by translation")
  // Translated 5.2 ms/req → 1.30×, not met.
  const missed = renderReport(report(side(run(2_000, 10_400), run(1_000, 5_200))))
  ok(missed.includes("translated ÷ passthrough: 1.30×**"), missed)
  ok(missed.includes("Target ≤ 1.25×: **NOT met**"), missed)
})

Deno.test("renderReport: the light-load table (added p50 and p99) and the stream floor against proxy and gateway", () => {
  const text = renderReport(report(side(run(2_000, 9_600), run(1_000, 4_800))))
  ok(text.includes("(10 connections × 8 s, each pausing 20 ms after every answer)"), text)
  // Proxy 400 req/s at 10 / 20 ms; gateway 360 req/s at 12.5 / 31 ms.
  ok(
    text.includes("| chat, non-stream | 400 | 360 | 10.0 / 20.0 ms | 12.5 / 31.0 ms | +2.50 ms | +11.0 ms | 0 · 0 |"),
    text
  )
  // Proxy throughput 1,000 req/s at 0.100 ms/req (10,000 requests, 1,000 ms); gateway 200 req/s.
  ok(
    text.includes(
      "the floor served 600 req/s, 0.60× the bare proxy's 1,000 (CPU 0.200 ms/req against 0.100); " +
        "the gateway's 200 req/s is 0.33× the floor's (0 failed of 6,000)."
    ),
    text
  )
})
