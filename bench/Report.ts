/**
 * The benchmark's Markdown report: one table row per case (bare proxy vs
 * gateway), then the cross-format and failover comparisons, the failed-request
 * counts and how the numbers were taken.
 *
 * @since 0.1.0
 */
import type { FirstByteResult } from "./FirstByte.ts"
import type { LoadResult } from "./Wrk.ts"

/**
 * The issue's target for the translated stream: at most this many times the
 * passthrough stream's gateway CPU per request.
 *
 * @category constants
 */
export const cpuRatioTarget = 1.25

/**
 * One wrk run and the CPU time (user + system, milliseconds) the measured
 * process (proxy or gateway) used during it, read just before and just after;
 * `undefined` where it could not be read.
 *
 * @category models
 */
export interface Run extends LoadResult {
  readonly cpuMs: number | undefined
}

/** One target's runs: a short warm-up (not in the figures), throughput (many connections) and latency (few). @category models */
export interface Measured {
  readonly warmup: Run
  readonly throughput: Run
  readonly latency: Run
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
  /** The stream floor's throughput run on this case, when it had one (see `BareProxy.ts`, `PROXY_READ_EVENTS`). */
  readonly floorThroughput?: Run | undefined
}

/** One case at the light, paced load: each target's run (latencies in milliseconds). @category models */
export interface PacedReport {
  readonly name: string
  readonly proxy: Run
  readonly gateway: Run
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

/**
 * Time to first byte of the two streaming cases, from the sequential probe
 * (`FirstByte.ts`) run after the wrk runs, on the same proxy and gateway.
 *
 * @category models
 */
export interface FirstByteReport {
  /** Timed requests per target, and the discarded warm-up rounds before them. */
  readonly rounds: number
  readonly warmupRounds: number
  readonly proxyChat: FirstByteResult
  readonly proxyMessages: FirstByteResult
  readonly gatewayChat: FirstByteResult
  readonly gatewayMessages: FirstByteResult
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
  /** How the paced runs loaded the targets (connections, seconds, pause). */
  readonly pacedLoad: string
  readonly paced: ReadonlyArray<PacedReport>
  readonly elapsedSeconds: number
  /** The machine's 1-minute load average when the run started (other work on the machine skews the figures). */
  readonly loadAverage: number
  readonly cases: ReadonlyArray<CaseReport>
  readonly crossFormat: {
    readonly messages: CaseReport
    readonly chatStream: CaseReport
    /** Why there is no probe when it did not run (the messages case was unavailable). */
    readonly firstByte: FirstByteReport | { readonly unavailable: string }
  }
  /** `getconf CLK_TCK` on this machine: the CPU time resolution is 1 / this second. */
  readonly cpuTicksPerSecond: number
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
 * CPU time per completed request (milliseconds) over a target's throughput and
 * latency runs (the warm-up is left out); `undefined` when a reading is missing
 * or no request completed. Requests still in flight when wrk stops (up to one per
 * connection) used CPU but are not counted, for both cases alike.
 *
 * @category report
 */
export const cpuPerRequest = (side: Measured): number | undefined => perRequest([side.throughput, side.latency])

const perRequest = (runs: ReadonlyArray<Run>): number | undefined => {
  let cpu = 0
  let requests = 0
  for (const run of runs) {
    if (run.cpuMs === undefined) return undefined
    cpu += run.cpuMs
    requests += run.requests
  }
  return requests === 0 ? undefined : cpu / requests
}

const cpuCell = (value: number | undefined) =>
  value === undefined ? "—" : value < 1 ? value.toFixed(3) : value.toFixed(2)
const ratioOf = (numerator: number | undefined, denominator: number | undefined) =>
  numerator === undefined || denominator === undefined || denominator === 0 ? undefined : numerator / denominator
const times = (value: number | undefined) => value === undefined ? "—" : `${value.toFixed(2)}×`

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
  if (outcome._tag === "Unavailable") return `| ${name} | — | unavailable | — | — | — | — | — | — | ${outcome.reason} |`
  const { proxy, gateway } = outcome
  return [
    name,
    rate(proxy.throughput.requestsPerSecond),
    rate(gateway.throughput.requestsPerSecond),
    `${(gateway.throughput.requestsPerSecond / proxy.throughput.requestsPerSecond).toFixed(2)}×`,
    latencyPair(proxy.latency),
    latencyPair(gateway.latency),
    signedMs(gateway.latency.p99Ms - proxy.latency.p99Ms),
    cpuCell(cpuPerRequest(proxy)),
    cpuCell(cpuPerRequest(gateway)),
    `${failures(proxy)} · ${failures(gateway)}`
  ].reduce((line, cell) => `${line} ${cell} |`, "|")
}

const firstBytePair = (result: FirstByteResult) => `${milliseconds(result.p50Ms)} / ${milliseconds(result.p99Ms)} ms`
const addedPair = (from: FirstByteResult, to: FirstByteResult) =>
  `${signedMs(to.p50Ms - from.p50Ms)} / ${signedMs(to.p99Ms - from.p99Ms)}`

const firstByteLines = (probe: FirstByteReport): ReadonlyArray<string> => {
  const { proxyChat, proxyMessages, gatewayChat, gatewayMessages } = probe
  const all = [proxyChat, proxyMessages, gatewayChat, gatewayMessages]
  const wrong = all.filter((result) => result.wrong > 0)
  return [
    `Time to first byte (TTFB: from sending the request to the first body chunk), from a sequential probe after the ` +
    `wrk runs: one request at a time from the bench process, the four targets in turns, ${probe.warmupRounds} ` +
    `warm-up rounds then ${probe.rounds} timed requests per target; p50 / p99:`,
    "",
    "| stream | proxy TTFB | gateway TTFB | added by the gateway (p50 / p99) | gateway whole answer p50 |",
    "|---|---:|---:|---:|---:|",
    `| messages in → openai upstream (translated) | ${firstBytePair(proxyMessages)} | ` +
    `${firstBytePair(gatewayMessages)} | ${addedPair(proxyMessages, gatewayMessages)} | ` +
    `${milliseconds(gatewayMessages.wholeP50Ms)} ms |`,
    `| chat → openai upstream (passthrough) | ${firstBytePair(proxyChat)} | ${firstBytePair(gatewayChat)} | ` +
    `${addedPair(proxyChat, gatewayChat)} | ${milliseconds(gatewayChat.wholeP50Ms)} ms |`,
    "",
    `- TTFB added by translation (gateway, translated − passthrough): p50 ` +
    `${signedMs(gatewayMessages.p50Ms - gatewayChat.p50Ms)}, p99 ${
      signedMs(gatewayMessages.p99Ms - gatewayChat.p99Ms)
    }.`,
    wrong.length === 0
      ? `- Every probe answer was a right 200 (${(probe.rounds * all.length).toLocaleString("en-US")} checked).`
      : `- Wrong or failed probe answers (their times are in the figures): ${
        wrong.map((result) => `${result.label} ${result.wrong} of ${result.requests}`).join(", ")
      }.`
  ]
}

const crossFormatSection = (
  messages: CaseReport,
  chatStream: CaseReport,
  firstByte: FirstByteReport | { readonly unavailable: string }
): string => {
  if (messages.outcome._tag !== "Measured" || chatStream.outcome._tag !== "Measured") {
    const reason = messages.outcome._tag === "Unavailable"
      ? messages.outcome.reason
      : "the chat stream case did not run"
    return `Unavailable: ${reason}.`
  }
  const cross = messages.outcome.gateway
  const same = chatStream.outcome.gateway
  const cpuRatio = ratioOf(cpuPerRequest(cross), cpuPerRequest(same))
  const verdict = cpuRatio === undefined ? "not measured" : cpuRatio <= cpuRatioTarget ? "met" : "NOT met"
  return [
    `- Gateway, messages in → openai upstream, streaming: ${rate(cross.throughput.requestsPerSecond)} req/s, ` +
    `p50/p99 ${latencyPair(cross.latency)} (whole stream), CPU ${cpuCell(cpuPerRequest(cross))} ms/req.`,
    `- Gateway, chat passthrough, streaming: ${rate(same.throughput.requestsPerSecond)} req/s, ` +
    `p50/p99 ${latencyPair(same.latency)} (whole stream), CPU ${cpuCell(cpuPerRequest(same))} ms/req.`,
    `- Cross-format vs same-format: throughput ${
      (cross.throughput.requestsPerSecond / same.throughput.requestsPerSecond).toFixed(2)
    }×, p50 ${signedMs(cross.latency.p50Ms - same.latency.p50Ms)}, p99 ${
      signedMs(cross.latency.p99Ms - same.latency.p99Ms)
    }.`,
    `- **Gateway CPU per request, translated ÷ passthrough: ${times(cpuRatio)}** (throughput run ${
      times(ratioOf(perRequest([cross.throughput]), perRequest([same.throughput])))
    }, latency run ${times(ratioOf(perRequest([cross.latency]), perRequest([same.latency])))}). ` +
    `Target ≤ ${cpuRatioTarget.toFixed(2)}×: **${verdict}**.`,
    `- Bare proxy CPU for reference: messages ${cpuCell(cpuPerRequest(messages.outcome.proxy))} ms/req, ` +
    `chat stream ${cpuCell(cpuPerRequest(chatStream.outcome.proxy))} ms/req.`,
    "",
    ...("unavailable" in firstByte
      ? [`Time to first byte: not measured (${firstByte.unavailable}).`]
      : firstByteLines(firstByte))
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

const pacedRow = (paced: PacedReport): string =>
  [
    paced.name,
    rate(paced.proxy.requestsPerSecond),
    rate(paced.gateway.requestsPerSecond),
    latencyPair(paced.proxy),
    latencyPair(paced.gateway),
    signedMs(paced.gateway.p50Ms - paced.proxy.p50Ms),
    signedMs(paced.gateway.p99Ms - paced.proxy.p99Ms),
    `${paced.proxy.non2xx + paced.proxy.socketErrors} · ${paced.gateway.non2xx + paced.gateway.socketErrors}`
  ].reduce((line, cell) => `${line} ${cell} |`, "|")

const pacedSection = (report: BenchReport): string =>
  report.paced.length === 0 ? "Not measured." : [
    `The same proxy and gateway at a light load (${report.pacedLoad}), so that neither is saturated: the ` +
    `difference is what the gateway adds to one request, not time spent queueing behind other requests (the ` +
    `closed-loop latency in the main table includes that queueing).`,
    "",
    "| case | proxy req/s | gateway req/s | proxy p50/p99 | gateway p50/p99 | added p50 | added p99 | failed (proxy · gateway) |",
    "|---|---:|---:|---:|---:|---:|---:|---|",
    ...report.paced.map(pacedRow)
  ].join("\n")

const floorSection = (cases: ReadonlyArray<CaseReport>): string => {
  const lines = cases.flatMap((item) => {
    const floor = item.floorThroughput
    if (floor === undefined || item.outcome._tag !== "Measured") return []
    const proxy = item.outcome.proxy.throughput
    const gateway = item.outcome.gateway.throughput
    const floorCpu = perRequest([floor])
    return [
      `- ${item.name}: the floor served ${rate(floor.requestsPerSecond)} req/s, ` +
      `${(floor.requestsPerSecond / proxy.requestsPerSecond).toFixed(2)}× the bare proxy's ` +
      `${rate(proxy.requestsPerSecond)} (CPU ${cpuCell(floorCpu)} ms/req against ${
        cpuCell(perRequest([proxy]))
      }); the gateway's ${rate(gateway.requestsPerSecond)} req/s is ` +
      `${(gateway.requestsPerSecond / floor.requestsPerSecond).toFixed(2)}× the floor's ` +
      `(${floor.non2xx + floor.socketErrors} failed of ${floor.requests.toLocaleString("en-US")}).`
    ]
  })
  return lines.length === 0 ? "Not measured." : [
    "The bare proxy again, but reading the answer stream in JavaScript and parsing the JSON of every SSE `data:` " +
    "line, bytes unchanged (`PROXY_READ_EVENTS=1`): the least a gateway that bills from the stream must do, with " +
    "no auth, routing, billing or log. Throughput runs only, between the proxy's and the gateway's:",
    "",
    ...lines
  ].join("\n")
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

| case | proxy req/s | gateway req/s | ratio | proxy p50/p99 | gateway p50/p99 | added p99 | proxy CPU ms/req | gateway CPU ms/req | non-2xx / socket errors (proxy · gateway) |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---|
${rows.join("\n")}

## Added latency at a light load

${pacedSection(report)}

## Stream floor: reading the stream in JavaScript

${floorSection(report.cases)}

## Cross-format (messages in → openai upstream) vs same-format chat stream

${crossFormatSection(report.crossFormat.messages, report.crossFormat.chatStream, report.crossFormat.firstByte)}

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
  the same emulator (\`emulator/main.ts\`, zero latency, unpaced streams, not recording), each its own process;
  wrk, proxy, gateway and emulator share the machine's cores, so the numbers are relative, not capacity.
- Each target first gets a warm-up (${report.warmupLoad}); it is not in the figures. The two targets' runs of a case
  alternate (warm-ups proxy then gateway, throughput proxy then gateway, latency gateway then proxy), so a change of
  the machine's speed during the case weighs on both alike.
- Latency is wrk's closed-loop time from sending the request to the last byte of the answer (for streams, the whole
  stream); p50/p99 from the ${report.latencyLoad} run, req/s from the ${report.throughputLoad} run.
- ratio = gateway req/s ÷ proxy req/s; added p99 = gateway p99 − proxy p99.
- CPU ms/req = the process's CPU time (user + system, all threads, from \`/proc/<pid>/stat\`, resolution
  ${(1000 / report.cpuTicksPerSecond).toFixed(0)} ms) read right before and after each wrk run, summed over the
  throughput and latency runs, ÷ the requests wrk completed in them. Only the proxy's or the gateway's own process is
  counted, not the emulator's or wrk's; requests still in flight when a run ends (up to one per connection) used CPU
  but are not counted.
- The cross-format row's proxy forwards the same Messages request to the emulator's own Messages endpoint.
- The failover row's proxy numbers are the proxy's healthy chat non-stream case, run again alongside the failover
  gateway (the proxy has no failover).
`
}
