/**
 * The benchmark's Markdown report: one table row per case (bare proxy vs
 * gateway), then the cross-format and failover comparisons, the failed-request
 * counts and how the numbers were taken.
 *
 * @since 0.1.0
 */
import type { LoadResult } from "./Wrk.ts"

/** One target's runs: a short warm-up (not in the figures), throughput (many connections) and latency (few). @category models */
export interface Measured {
  readonly warmup: LoadResult
  readonly throughput: LoadResult
  readonly latency: LoadResult
}

/** A case that ran, or why it could not. @category models */
export type Outcome =
  | { readonly _tag: "Measured"; readonly proxy: Measured; readonly gateway: Measured }
  | { readonly _tag: "Unavailable"; readonly reason: string }

/** One row of the table. @category models */
export interface CaseReport {
  readonly name: string
  readonly outcome: Outcome
  /** Requests the emulator saw during the gateway's runs (one per caller request when all is well). */
  readonly upstreamCalls?: number
}

/** The failover case: the gateway in front of a primary that always fails. @category models */
export interface FailoverReport {
  readonly outcome: Outcome
  /** How the fault was made (which emulator, priorities, cooldown). */
  readonly setup: string
  /** Upstream calls the broken primary and the healthy secondary received during the runs. */
  readonly primaryCalls: number
  readonly secondaryCalls: number
}

/** Everything the report shows. @category models */
export interface BenchReport {
  readonly date: string
  readonly command: string
  readonly store: string
  readonly machine: string
  readonly tools: string
  readonly throughputLoad: string
  readonly latencyLoad: string
  readonly warmupLoad: string
  readonly elapsedSeconds: number
  /** The machine's 1-minute load average when the run started (other work on the machine skews the figures). */
  readonly loadAverage: number
  readonly cases: ReadonlyArray<CaseReport>
  readonly crossFormat: { readonly messages: CaseReport; readonly chatStream: CaseReport }
  readonly failover: FailoverReport
}

const milliseconds = (value: number) => value < 10 ? value.toFixed(2) : value.toFixed(1)
const rate = (value: number) => Math.round(value).toLocaleString("en-US")
const signedMs = (value: number) => `${value >= 0 ? "+" : ""}${milliseconds(value)} ms`
const latencyPair = (result: LoadResult) => `${milliseconds(result.p50Ms)} / ${milliseconds(result.p99Ms)} ms`
const runsOf = (side: Measured) => [side.warmup, side.throughput, side.latency]
const total = (side: Measured, field: "requests" | "non2xx" | "socketErrors") =>
  runsOf(side).reduce((sum, run) => sum + run[field], 0)
const failures = (side: Measured) =>
  `${total(side, "non2xx")} / ${total(side, "socketErrors")} of ${total(side, "requests").toLocaleString("en-US")}`

/**
 * Caller-visible success over all of a target's runs (warm-up included): 2xx answers over
 * answers plus requests that got none. 0..1.
 *
 * @category report
 */
export const successRate = (side: Measured): number => {
  const answered = total(side, "requests")
  const lost = total(side, "socketErrors")
  return answered + lost === 0 ? 0 : (answered - total(side, "non2xx")) / (answered + lost)
}

const row = (name: string, outcome: Outcome): string => {
  if (outcome._tag === "Unavailable") return `| ${name} | — | unavailable | — | — | — | — | ${outcome.reason} |`
  const { proxy, gateway } = outcome
  return [
    name,
    rate(proxy.throughput.requestsPerSecond),
    rate(gateway.throughput.requestsPerSecond),
    `${(gateway.throughput.requestsPerSecond / proxy.throughput.requestsPerSecond).toFixed(2)}×`,
    latencyPair(proxy.latency),
    latencyPair(gateway.latency),
    signedMs(gateway.latency.p99Ms - proxy.latency.p99Ms),
    `${failures(proxy)} · ${failures(gateway)}`
  ].reduce((line, cell) => `${line} ${cell} |`, "|")
}

const crossFormatSection = (messages: CaseReport, chatStream: CaseReport): string => {
  if (messages.outcome._tag !== "Measured" || chatStream.outcome._tag !== "Measured") {
    const reason = messages.outcome._tag === "Unavailable"
      ? messages.outcome.reason
      : "the chat stream case did not run"
    return `Unavailable: ${reason}.`
  }
  const cross = messages.outcome.gateway
  const same = chatStream.outcome.gateway
  return [
    `- Gateway, messages in → openai upstream, streaming: ${rate(cross.throughput.requestsPerSecond)} req/s, ` +
    `p50/p99 ${latencyPair(cross.latency)}.`,
    `- Gateway, chat passthrough, streaming: ${rate(same.throughput.requestsPerSecond)} req/s, ` +
    `p50/p99 ${latencyPair(same.latency)}.`,
    `- Cross-format vs same-format: throughput ${
      (cross.throughput.requestsPerSecond / same.throughput.requestsPerSecond).toFixed(2)
    }×, p50 ${signedMs(cross.latency.p50Ms - same.latency.p50Ms)}, p99 ${
      signedMs(cross.latency.p99Ms - same.latency.p99Ms)
    }.`
  ].join("\n")
}

const failoverSection = (failover: FailoverReport, healthy: CaseReport | undefined): string => {
  if (failover.outcome._tag !== "Measured") return `Unavailable: ${failover.outcome.reason}.`
  const gateway = failover.outcome.gateway
  const lines = [
    `- ${failover.setup}`,
    `- Caller-visible success rate: ${(successRate(gateway) * 100).toFixed(2)} % ` +
    `(non-2xx / socket errors: ${failures(gateway)}).`,
    `- Upstream calls during the runs: primary (broken) ${failover.primaryCalls.toLocaleString("en-US")}, ` +
    `secondary (healthy) ${failover.secondaryCalls.toLocaleString("en-US")}.`
  ]
  if (healthy?.outcome._tag === "Measured") {
    const base = healthy.outcome.gateway
    lines.push(
      `- Added by failover vs the healthy gateway (chat, non-stream): p99 ${
        signedMs(gateway.latency.p99Ms - base.latency.p99Ms)
      }, p50 ${signedMs(gateway.latency.p50Ms - base.latency.p50Ms)}, throughput ${
        rate(gateway.throughput.requestsPerSecond)
      } vs ${rate(base.throughput.requestsPerSecond)} req/s.`
    )
  }
  return lines.join("\n")
}

/**
 * Renders the report as Markdown.
 *
 * @category report
 */
export const renderReport = (report: BenchReport): string => {
  const healthy = report.cases.find((item) => item.name.startsWith("chat, non-stream"))
  const rows = report.cases.map((item) => row(item.name, item.outcome))
  rows.push(row("failover (primary always 500), chat, non-stream", report.failover.outcome))
  const upstream = report.cases
    .filter((item) => item.outcome._tag === "Measured" && item.upstreamCalls !== undefined)
    .map((item) => {
      const outcome = item.outcome as Extract<Outcome, { _tag: "Measured" }>
      const answered = total(outcome.gateway, "requests")
      return `- ${item.name}: ${answered.toLocaleString("en-US")} answers, ${
        (item.upstreamCalls ?? 0).toLocaleString("en-US")
      } upstream calls`
    })
  return `# Sluice load benchmark

- Date: ${report.date}
- Command: \`${report.command}\`
- Machine: ${report.machine}
- Tools: ${report.tools}
- Gateway store: ${report.store}
- Throughput: ${report.throughputLoad}; latency: ${report.latencyLoad}
- Whole run: ${report.elapsedSeconds.toFixed(0)} s; load average (1 min) when it started: ${
    report.loadAverage.toFixed(2)
  }

| case | proxy req/s | gateway req/s | ratio | proxy p50/p99 | gateway p50/p99 | added p99 | non-2xx / socket errors (proxy · gateway) |
|---|---:|---:|---:|---:|---:|---:|---|
${rows.join("\n")}

## Cross-format (messages in → openai upstream) vs same-format chat stream

${crossFormatSection(report.crossFormat.messages, report.crossFormat.chatStream)}

## Failover

${failoverSection(report.failover, healthy)}

## Checks

Every failed request is counted, warm-up included: "non-2xx" is wrk's count of answers with a status above 399,
"socket errors" its connect/read/write errors and timeouts (10 s). Before each case one request per target was checked
by content (chat text, \`[DONE]\`, \`message_stop\`). Answers vs calls the emulator received during the gateway's runs
(warm-up included; wrk leaves up to one request per connection unanswered when a run ends):
${upstream.join("\n")}

## How to read it

- The proxy is \`bench/BareProxy.ts\` (plain \`Deno.serve\` + \`fetch\`), the gateway is \`src/main.ts\`; both in front of
  the same emulator (\`src/emulator/main.ts\`, zero latency, unpaced streams, not recording), each its own process;
  wrk, proxy, gateway and emulator share the machine's cores, so the numbers are relative, not capacity.
- Each target first gets a warm-up (${report.warmupLoad}); it is not in the figures.
- Latency is wrk's closed-loop time from sending the request to the last byte of the answer (for streams, the whole
  stream); p50/p99 from the ${report.latencyLoad} run, req/s from the ${report.throughputLoad} run.
- ratio = gateway req/s ÷ proxy req/s; added p99 = gateway p99 − proxy p99.
- The cross-format row's proxy forwards the same Messages request to the emulator's own Messages endpoint.
- The failover row's proxy numbers are the proxy's healthy chat non-stream runs (the proxy has no failover).
`
}
