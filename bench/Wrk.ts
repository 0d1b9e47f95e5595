/**
 * Runs `wrk` (https://github.com/wg/wrk, Debian package `wrk`) with
 * `bench/request.lua` and reads back the summary that script writes.
 *
 * @since 0.1.0
 */
import type { Supervisor } from "./Processes.ts"

/** One `wrk` run's outcome. Latencies in milliseconds. @category models */
export interface LoadResult {
  /** Completed responses, any status. */
  readonly requests: number
  readonly seconds: number
  readonly requestsPerSecond: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly maxMs: number
  /** Responses with an HTTP status above 399 (wrk's "Non-2xx or 3xx responses"). */
  readonly non2xx: number
  /** Connect, read and write errors and timeouts: requests that got no complete answer. */
  readonly socketErrors: number
}

/** What one `wrk` run sends and how hard. @category models */
export interface LoadSpec {
  /** Full URL, path included. */
  readonly url: string
  /** Path of the JSON body file. */
  readonly bodyPath: string
  /** Extra request headers (Content-Type is always application/json). */
  readonly headers: Record<string, string>
  readonly connections: number
  readonly seconds: number
  /**
   * Milliseconds each connection waits after an answer before its next request (wrk's `delay()`); absent or 0: none,
   * a closed loop that sends as fast as answers come. Latency never includes the pause.
   */
  readonly pauseMs?: number
}

const numbersOf = (value: unknown): Record<string, number> => {
  if (typeof value !== "object" || value === null) throw new Error("The wrk summary is not a JSON object.")
  const out: Record<string, number> = {}
  for (const [name, field] of Object.entries(value)) {
    if (typeof field !== "number") throw new Error(`The wrk summary field ${name} is not a number: ${field}.`)
    out[name] = field
  }
  return out
}

/**
 * The first line `wrk --version` prints (e.g. `wrk debian/4.1.0-3+b2 [epoll] …`),
 * or `undefined` when `wrk` is not on the PATH.
 *
 * @category wrk
 */
export const wrkVersion = async (): Promise<string | undefined> => {
  try {
    // wrk prints its version and usage, then exits 1.
    const output = await new Deno.Command("wrk", { args: ["--version"], stdout: "piped", stderr: "null" }).output()
    const first = new TextDecoder().decode(output.stdout).split("\n")[0].trim()
    return first.startsWith("wrk") ? first.replace(/\s*Copyright.*$/, "") : undefined
  } catch {
    return undefined
  }
}

/**
 * `wrkVersion`, or, when `wrk` is not on the PATH, says how to install it and exits 1 (what every bench that
 * drives load does first).
 *
 * @category wrk
 */
export const requireWrk = async (): Promise<string> => {
  const version = await wrkVersion()
  if (version !== undefined) return version
  // deno-lint-ignore no-console
  console.error("wrk is not installed. Install it with: apt-get install -y wrk (Debian/Ubuntu), then run again.")
  return Deno.exit(1)
}

/**
 * Runs `wrk -t1 -c<connections> -d<seconds>s --timeout 10s` under `supervisor`
 * (so an interrupted bench also stops it). One wrk thread keeps the load
 * generator's share of a 2-core machine small; it drives 50 connections easily. `workDir` receives the summary file.
 * Fails when wrk exits non-zero or writes no summary.
 *
 * @category wrk
 */
export const runWrk = async (supervisor: Supervisor, workDir: string, spec: LoadSpec): Promise<LoadResult> => {
  const reportPath = await Deno.makeTempFile({ dir: workDir, prefix: "wrk-", suffix: ".json" })
  const script = new URL("./request.lua", import.meta.url).pathname
  const wrk = await supervisor.start({
    name: "wrk",
    command: "wrk",
    args: [
      "-t1",
      `-c${spec.connections}`,
      `-d${spec.seconds}s`,
      "--timeout",
      "10s",
      "-s",
      script,
      spec.url
    ],
    env: {
      BENCH_BODY_FILE: spec.bodyPath,
      BENCH_HEADERS: Object.entries(spec.headers).map(([name, value]) => `${name}: ${value}`).join("\n"),
      BENCH_REPORT: reportPath,
      BENCH_PAUSE_MS: String(spec.pauseMs ?? 0)
    }
  })
  const status = await wrk.exited
  if (!status.success) throw new Error(`wrk exited with code ${status.code} for ${spec.url} (log: ${wrk.logPath}).`)
  const text = await Deno.readTextFile(reportPath)
  if (text.trim() === "") throw new Error(`wrk wrote no summary for ${spec.url} (log: ${wrk.logPath}).`)
  const summary = numbersOf(JSON.parse(text))
  const seconds = summary.duration_us / 1e6
  return {
    requests: summary.requests,
    seconds,
    requestsPerSecond: seconds > 0 ? summary.requests / seconds : 0,
    p50Ms: summary.p50_us / 1000,
    p99Ms: summary.p99_us / 1000,
    maxMs: summary.max_us / 1000,
    non2xx: summary.status_errors,
    socketErrors: summary.connect_errors + summary.read_errors + summary.write_errors + summary.timeouts
  }
}
