/**
 * The telemetry overhead report of `deno task bench --telemetry`: the same
 * gateway twice, side by side, with metrics and the access log on (the
 * defaults; the log goes to a file, as it would to a collector) and off
 * (`SLUICE_METRICS=off SLUICE_ACCESS_LOG=off`), their runs alternating
 * (on, off, off, on, …) so a drift of the machine's speed weighs on both
 * alike. The figure is CPU per request (the gateway process's CPU time ÷ the
 * requests answered) of each, the median over the rounds, and the overhead
 * `on ÷ off − 1` (target ≤ 5%).
 *
 * @since 0.1.0
 */
import type { Run } from "./Report.ts"

/** The runs of one case: one per round and side, in the order they ran. @category models */
export interface TelemetryCase {
  readonly name: string
  readonly on: ReadonlyArray<Run>
  readonly off: ReadonlyArray<Run>
}

/** What `renderTelemetryReport` needs. @category models */
export interface TelemetryReport {
  readonly date: string
  readonly command: string
  readonly store: string
  readonly machine: string
  readonly load: string
  readonly rounds: number
  readonly loadAverage: number
  readonly cases: ReadonlyArray<TelemetryCase>
}

/** The median of `values` (the mean of the middle two for an even count). @category figures */
export const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/** CPU milliseconds per request of each run that has both figures. @category figures */
export const cpuPerRequest = (runs: ReadonlyArray<Run>): ReadonlyArray<number> =>
  runs.filter((run) => run.cpuMs !== undefined && run.requests > 0).map((run) => run.cpuMs! / run.requests)

/**
 * The overhead of `on` over `off`, e.g. `0.031` for 3.1%, or `undefined`
 * without two rounds of figures. Each round's `on ÷ off` compares two runs
 * that ran back to back, so a drift of the shared machine's speed between
 * rounds cancels out; but the second run of a round follows the other
 * process's run and costs up to a fifth more CPU per request than the first,
 * so the rounds are taken in pairs (on first, then off first) and each pair's
 * geometric mean cancels that too. The overhead is the median over the pairs.
 */
export const overhead = (item: TelemetryCase): number | undefined => {
  const ratios = pairedRatios(item)
  const pairs: Array<number> = []
  for (let index = 0; index + 1 < ratios.length; index += 2) pairs.push(Math.sqrt(ratios[index] * ratios[index + 1]))
  return pairs.length === 0 ? undefined : median(pairs) - 1
}

/** Each round's CPU per request, on ÷ off (rounds with both figures). @category figures */
export const pairedRatios = (item: TelemetryCase): ReadonlyArray<number> =>
  item.on.flatMap((run, index) => {
    const other = item.off[index]
    return other === undefined || run.cpuMs === undefined || other.cpuMs === undefined || run.requests === 0 ||
        other.requests === 0
      ? []
      : [(run.cpuMs / run.requests) / (other.cpuMs / other.requests)]
  })

/**
 * The report, in Markdown.
 *
 * @category rendering
 */
export const renderTelemetryReport = (report: TelemetryReport): string => {
  const rows = report.cases.map((item) => {
    const on = cpuPerRequest(item.on)
    const off = cpuPerRequest(item.off)
    const share = overhead(item)
    const rate = (runs: ReadonlyArray<Run>) =>
      Math.round(median(runs.map((run) => run.requestsPerSecond))).toLocaleString("en-US")
    const errors = [...item.on, ...item.off].reduce((sum, run) => sum + run.non2xx + run.socketErrors, 0)
    return `| ${item.name} | ${rate(item.off)} | ${rate(item.on)} | ${median(off).toFixed(3)} | ${
      median(on).toFixed(3)
    } | ${share === undefined ? "n/a" : `${(share * 100).toFixed(1)}%`} | ${
      on.map((value) => value.toFixed(3)).join(" · ")
    } / ${off.map((value) => value.toFixed(3)).join(" · ")} | ${
      pairedRatios(item).map((value) => value.toFixed(2)).join(" · ")
    } | ${errors} |`
  })
  return `# Sluice telemetry overhead

- Date: ${report.date}
- Command: \`${report.command}\`
- Machine: ${report.machine}; load average (1 min) when it started: ${report.loadAverage.toFixed(2)}
- Gateway store: ${report.store}
- Load: ${report.load}, ${report.rounds} rounds per side, alternating (on, off, off, on, …), a pause before each run

| case | off req/s | on req/s | off CPU ms/req | on CPU ms/req | overhead (target ≤ 5%) | every round, on / off | every round, on ÷ off | non-2xx + socket errors |
|---|---:|---:|---:|---:|---:|---|---|---:|
${rows.join("\n")}

"On" is the gateway's default: metrics recorded, one JSON access-log line per request on stdout (here piped to a
file). "Off" is the same gateway with \`SLUICE_METRICS=off SLUICE_ACCESS_LOG=off\` (the request id is still taken,
made and returned). CPU per request is the gateway process's CPU time over a run ÷ the requests wrk completed in it;
req/s and CPU per request are medians over the rounds. The overhead is the median over pairs of rounds of the geometric
mean of each round's on ÷ off: within a round the two runs are back to back, and a pair puts each side first once (the
run that follows the other process's run costs up to a fifth more on this shared machine).
`
}
