/**
 * `deno task bench [--postgres]`: the load benchmark. Starts, each as its own
 * process on loopback, a healthy emulator, a second emulator that answers
 * every request 500, the bare proxy (`BareProxy.ts`) and the gateway
 * (`src/main.ts`, on embedded PGlite in a temp dir, or with `--postgres` on a
 * fresh database `sluice_bench_<rand>` that is dropped after), then drives
 * them with `wrk`: chat non-stream, chat stream, Messages-in stream
 * (cross-format), embeddings (16 inputs a request, passthrough), each through
 * the proxy and through the gateway, and a
 * failover gateway; within a case the proxy's and the gateway's runs
 * alternate. The chat stream's throughput is also taken through the stream
 * floor (the bare proxy reading and parsing the stream in JavaScript). Then
 * the added latency at a light, paced load (chat non-stream and stream, each
 * connection pausing between requests). Around every wrk run it reads the proxy's or gateway's CPU
 * time (`Cpu.ts`) for CPU per request; after the stream cases a short
 * sequential probe (`FirstByte.ts`) times the first byte of both streams on
 * both targets. Prints the Markdown report and writes it to
 * `bench/RESULTS.md`. Every subprocess is stopped at the end, on failure, on
 * Ctrl-C and at the time limit (300 s). Exits 1 when `wrk` is missing or a
 * step fails (its logs are kept and their folder printed).
 *
 * @since 0.1.0
 */
// deno-lint-ignore-file no-console
import {
  chatBody,
  chatHeaders,
  embeddingInputs,
  embeddingsBody,
  failoverConfig,
  gatewayConfig,
  messagesBody,
  messagesHeaders
} from "./Config.ts"
import { CpuClock } from "./Cpu.ts"
import { type FirstByteTarget, probeFirstByte } from "./FirstByte.ts"
import { type BenchDatabase, createBenchDatabase } from "./Postgres.ts"
import {
  freePort,
  gatewayEnv,
  logTail,
  type Managed,
  startBareProxy,
  startEmulator as startEmulatorProcess,
  Supervisor,
  waitHealthy
} from "./Processes.ts"
import {
  type BenchReport,
  type CaseReport,
  type FailoverReport,
  type FirstByteReport,
  type Measured,
  type PacedReport,
  renderReport,
  type Run
} from "./Report.ts"
import { renderTelemetryReport, type TelemetryCase, type TelemetryReport } from "./Telemetry.ts"
import { requireWrk, runWrk } from "./Wrk.ts"

const throughputConnections = 50
const latencyConnections = 10
const runSeconds = 10
const warmupSeconds = 2
const pacedConnections = 10
const pacedPauseMs = 20
const pacedSeconds = 8
const timeLimitSeconds = Deno.args.includes("--telemetry") ? 480 : 300
const firstByteRounds = 200
const firstByteWarmupRounds = 10

const usage =
  "Usage: deno task bench [--postgres] [--telemetry] | --tasks | --peers [--postgres] [--rounds=N] [--seconds=S] | " +
  "--memory [--postgres] [--streams=N]"
// `--tasks`: the video tasks case alone, on PostgreSQL (`TasksRun.ts`); it exits when done.
if (Deno.args.length === 1 && Deno.args[0] === "--tasks") await import("./TasksRun.ts")
// `--peers`: proxy, Sluice and Portkey side by side (`PeersRun.ts`); `--memory`: the gateway's RSS (`Memory.ts`).
if (Deno.args.includes("--peers")) await import("./PeersRun.ts")
if (Deno.args.includes("--memory")) await import("./Memory.ts")
const unknown = Deno.args.filter((arg) => arg !== "--postgres" && arg !== "--telemetry")
if (unknown.length > 0) {
  console.error(`Unknown argument ${unknown.map((arg) => `"${arg}"`).join(", ")}. ${usage}`)
  Deno.exit(2)
}
const usePostgres = Deno.args.includes("--postgres")
/** Only the telemetry overhead: the gateway with metrics and the access log on, and off (see `Telemetry.ts`). */
const telemetryOnly = Deno.args.includes("--telemetry")
const telemetryRounds = 8
/** Seconds of each telemetry run, and the pause before each (the previous run's GC and log writes settle). */
const telemetryRunSeconds = 8
const telemetryPauseMillis = 1_000
/** Where the hand-written analysis of `bench/RESULTS.md` starts. */
const ANALYSIS_MARKER =
  "<!-- Analysis below: written by hand, kept by `deno task bench` when it rewrites the report above. -->"

const wrk = await requireWrk()

const cpuClock = await CpuClock.make()
const root = new URL("..", import.meta.url).pathname
const started = Date.now()
const [loadAverage] = Deno.loadavg()
const workDir = await Deno.makeTempDir({ prefix: "sluice-bench-" })
const supervisor = new Supervisor(workDir)
const databases: Array<BenchDatabase> = []

const progress = (message: string) =>
  console.error(`[${((Date.now() - started) / 1000).toFixed(0).padStart(3)} s] ${message}`)

let cleaned: Promise<void> | undefined
const cleanup = (): Promise<void> =>
  cleaned ??= (async () => {
    await supervisor.stopAll()
    for (const database of databases) {
      await database.drop().catch((error: Error) => console.error(`Could not drop ${database.name}: ${error.message}`))
    }
  })()

let aborting = false
const abort = async (message: string, code: number) => {
  // The first reason wins: an interrupt also makes the running step fail.
  if (aborting) return
  aborting = true
  console.error(message)
  await cleanup()
  console.error(`Subprocess logs kept in ${workDir}`)
  Deno.exit(code)
}
const watchdog = setTimeout(
  () => abort(`The bench ran past its ${timeLimitSeconds} s limit; stopped.`, 1),
  timeLimitSeconds * 1000
)
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  Deno.addSignalListener(signal, () => abort(`Interrupted (${signal}).`, 130))
}

// ---- processes -------------------------------------------------------------------------------------------------

const startEmulator = (name: string) => startEmulatorProcess(supervisor, name)

const startProxy = (upstream: string, readEvents = false) => startBareProxy(supervisor, upstream, readEvents)

const startGateway = async (name: string, config: string, extraEnv: Record<string, string> = {}) => {
  const configPath = `${workDir}/${name}.json`
  await Deno.writeTextFile(configPath, config)
  const database = usePostgres ? await createBenchDatabase() : undefined
  if (database !== undefined) databases.push(database)
  const port = freePort()
  const managed = await supervisor.start({
    name,
    command: Deno.execPath(),
    args: ["run", "-A", "src/main.ts"],
    cwd: root,
    env: gatewayEnv({ port, configPath, dataDir: `${workDir}/${name}-data`, databaseUrl: database?.url }, {
      SLUICE_SHUTDOWN_GRACE_SECONDS: "2",
      ...extraEnv
    })
  })
  return { managed, url: `http://127.0.0.1:${port}`, store: database === undefined ? "PGlite" : database.name }
}

const emulatorCalls = async (url: string): Promise<number> => {
  const response = await fetch(`${url}/_emulator/stats`)
  const stats: { requests?: unknown } = await response.json()
  if (typeof stats.requests !== "number") throw new Error(`Could not read the emulator stats at ${url}.`)
  return stats.requests
}

// ---- load ------------------------------------------------------------------------------------------------------

interface Target {
  readonly label: string
  readonly url: string
  /** The process that serves `url`: its CPU time is read around each wrk run, and a run fails if it exits. */
  readonly process: Managed
}

interface Case {
  readonly name: string
  readonly path: string
  readonly body: unknown
  readonly headers: Record<string, string>
  /** Whether a 200 answer's text is the expected kind of answer. */
  readonly looksRight: (text: string) => boolean
}

const chatNonStream: Case = {
  name: "chat, non-stream",
  path: "/v1/chat/completions",
  body: chatBody(false),
  headers: chatHeaders,
  looksRight: (text) => {
    try {
      const content: unknown = JSON.parse(text)?.choices?.[0]?.message?.content
      return typeof content === "string" && content.startsWith("Echo:")
    } catch {
      return false
    }
  }
}
const chatStream: Case = {
  name: "chat, stream",
  path: "/v1/chat/completions",
  body: chatBody(true),
  headers: chatHeaders,
  looksRight: (text) => text.includes("Echo:") && text.includes("data: [DONE]")
}
const messagesStream: Case = {
  name: "messages in → openai upstream, stream",
  path: "/v1/messages",
  body: messagesBody(),
  headers: messagesHeaders,
  looksRight: (text) => text.includes("Echo:") && text.includes("event: message_stop") && !text.includes("event: error")
}

const embeddings: Case = {
  name: `embeddings, ${embeddingInputs} inputs`,
  path: "/v1/embeddings",
  body: embeddingsBody(),
  headers: chatHeaders,
  looksRight: (text) => {
    try {
      const data: unknown = JSON.parse(text)?.data
      return Array.isArray(data) && data.length === embeddingInputs && typeof data[0]?.embedding === "string"
    } catch {
      return false
    }
  }
}

/** One request, checked: `undefined` when it is right, else why not. */
const probe = async (target: Target, item: Case): Promise<string | undefined> => {
  const response = await fetch(`${target.url}${item.path}`, {
    method: "POST",
    headers: { ...item.headers, "Content-Type": "application/json" },
    body: JSON.stringify(item.body),
    signal: AbortSignal.timeout(10_000)
  }).catch((error: Error) => error)
  if (response instanceof Error) return `${target.label} could not be reached: ${response.message}`
  const text = await response.text()
  if (response.status === 200 && item.looksRight(text)) return undefined
  return `${target.label} answered ${response.status}: ${text.slice(0, 300).replaceAll("\n", "\\n")}`
}

const bodyFiles = new Map<Case, string>()
const bodyFile = async (item: Case) => {
  const known = bodyFiles.get(item)
  if (known !== undefined) return known
  const path = await Deno.makeTempFile({ dir: workDir, prefix: "body-", suffix: ".json" })
  await Deno.writeTextFile(path, JSON.stringify(item.body))
  bodyFiles.set(item, path)
  return path
}

/** Fails, quoting its exit status and log, when the target's process is no longer running. */
const stillRunning = async (target: Target, item: Case): Promise<void> => {
  if (!target.process.hasExited()) return
  const status = await target.process.exited
  throw new Error(
    `The ${target.label} process exited during the ${item.name} runs ` +
      `(code ${status.code}${status.signal === null ? "" : `, signal ${status.signal}`}):\n` +
      (await logTail(target.process.logPath))
  )
}

const load = async (target: Target, item: Case, connections: number, seconds: number, pauseMs = 0): Promise<Run> => {
  const bodyPath = await bodyFile(item)
  const pid = target.process.child.pid
  const cpuBefore = await cpuClock.read(pid)
  const result = await runWrk(supervisor, workDir, {
    url: `${target.url}${item.path}`,
    bodyPath,
    headers: item.headers,
    connections,
    seconds,
    pauseMs
  }).catch(async (error: Error) => {
    await stillRunning(target, item)
    throw error
  })
  await stillRunning(target, item)
  const cpuAfter = await cpuClock.read(pid)
  const cpuMs = cpuBefore === undefined || cpuAfter === undefined ? undefined : cpuAfter - cpuBefore
  const failed = result.non2xx + result.socketErrors
  progress(
    `${target.label} ${item.name}, ${connections} connections${pauseMs > 0 ? ` pausing ${pauseMs} ms` : ""} ` +
      `${seconds} s: ${Math.round(result.requestsPerSecond)} ` +
      `req/s, p50 ${result.p50Ms.toFixed(2)} ms, p99 ${result.p99Ms.toFixed(2)} ms` +
      (cpuMs === undefined || result.requests === 0 ? "" : `, CPU ${(cpuMs / result.requests).toFixed(3)} ms/req`) +
      (failed > 0 ? `, ${result.non2xx} non-2xx, ${result.socketErrors} socket errors` : "")
  )
  return { ...result, cpuMs }
}

/** Wraps each gateway run, e.g. to count the upstream calls made during it. */
type AroundRun = (run: () => Promise<Run>) => Promise<Run>

const plainRun: AroundRun = (run) => run()

/**
 * Both targets on one case, interleaved so that a change of machine speed during the case (this machine's speed
 * drifts by up to 2× within minutes) weighs on both alike: the warm-ups (proxy, gateway), the throughput runs
 * (proxy, gateway), then the latency runs in the reverse order (gateway, proxy). Every gateway run goes through
 * `around`. A `floor` target, when given, gets a warm-up and a throughput run between the proxy's and the gateway's.
 */
const measurePair = async (
  proxy: Target,
  gateway: Target,
  item: Case,
  around: AroundRun = plainRun,
  floor?: Target
) => {
  const proxyWarmup = await load(proxy, item, latencyConnections, warmupSeconds)
  const gatewayWarmup = await around(() => load(gateway, item, latencyConnections, warmupSeconds))
  const proxyThroughput = await load(proxy, item, throughputConnections, runSeconds)
  const floorThroughput = floor === undefined ? undefined : await (async () => {
    await load(floor, item, latencyConnections, warmupSeconds)
    return load(floor, item, throughputConnections, runSeconds)
  })()
  const gatewayThroughput = await around(() => load(gateway, item, throughputConnections, runSeconds))
  const gatewayLatency = await around(() => load(gateway, item, latencyConnections, runSeconds))
  const proxyLatency = await load(proxy, item, latencyConnections, runSeconds)
  return {
    proxy: { warmup: proxyWarmup, throughput: proxyThroughput, latency: proxyLatency } satisfies Measured,
    gateway: { warmup: gatewayWarmup, throughput: gatewayThroughput, latency: gatewayLatency } satisfies Measured,
    floorThroughput
  }
}

/**
 * The latency of both targets on one case at a light load: `pacedConnections` connections, each pausing
 * `pacedPauseMs` after every answer, so neither target is saturated and the difference is what the gateway adds
 * to a request rather than queueing behind other requests. Gateway first, then proxy.
 */
const measurePaced = async (proxy: Target, gateway: Target, item: Case): Promise<PacedReport> => {
  const gatewayRun = await load(gateway, item, pacedConnections, pacedSeconds, pacedPauseMs)
  const proxyRun = await load(proxy, item, pacedConnections, pacedSeconds, pacedPauseMs)
  return { name: item.name, proxy: proxyRun, gateway: gatewayRun }
}

/** An `AroundRun` that adds up the calls the emulators at `urls` received during the wrapped runs. */
const countingCalls = (urls: ReadonlyArray<string>) => {
  const calls = urls.map(() => 0)
  const around: AroundRun = async (run) => {
    const before = await Promise.all(urls.map(emulatorCalls))
    const result = await run()
    const after = await Promise.all(urls.map(emulatorCalls))
    after.forEach((count, index) => calls[index] += count - before[index])
    return result
  }
  return { around, calls }
}

/** Runs `item` on both targets; a failed probe fails the bench unless the case is `optional`. */
const runCase = async (
  proxy: Target,
  gateway: Target,
  item: Case,
  emulatorUrl: string,
  optional: boolean,
  floor?: Target
) => {
  const problems = (await Promise.all([probe(proxy, item), probe(gateway, item)])).filter((p) => p !== undefined)
  if (problems.length > 0) {
    if (!optional) throw new Error(`The ${item.name} case does not work: ${problems.join("; ")}`)
    progress(`${item.name}: unavailable (${problems.join("; ")})`)
    return { name: item.name, outcome: { _tag: "Unavailable", reason: problems.join("; ") } } satisfies CaseReport
  }
  const counting = countingCalls([emulatorUrl])
  const measured = await measurePair(proxy, gateway, item, counting.around, floor)
  return {
    name: item.name,
    outcome: { _tag: "Measured", proxy: measured.proxy, gateway: measured.gateway },
    upstreamCalls: counting.calls[0],
    floorThroughput: measured.floorThroughput
  } satisfies CaseReport
}

/** TTFB of both streams through both targets, sequential and in turns (see `FirstByte.ts`). */
const firstByte = async (proxy: Target, gateway: Target): Promise<FirstByteReport> => {
  const target = (on: Target, item: Case, label: string): FirstByteTarget => ({
    label,
    url: `${on.url}${item.path}`,
    headers: item.headers,
    body: JSON.stringify(item.body),
    looksRight: item.looksRight
  })
  const began = Date.now()
  const [proxyChat, proxyMessages, gatewayChat, gatewayMessages] = await probeFirstByte(
    [
      target(proxy, chatStream, "proxy, chat stream"),
      target(proxy, messagesStream, "proxy, messages stream"),
      target(gateway, chatStream, "gateway, chat stream"),
      target(gateway, messagesStream, "gateway, messages in → openai")
    ],
    firstByteRounds,
    firstByteWarmupRounds
  )
  progress(
    `TTFB probe, ${firstByteRounds} requests per target in ${((Date.now() - began) / 1000).toFixed(1)} s: p50 ` +
      [proxyChat, proxyMessages, gatewayChat, gatewayMessages]
        .map((result) => `${result.label} ${result.p50Ms.toFixed(2)} ms`).join(", ")
  )
  return {
    rounds: firstByteRounds,
    warmupRounds: firstByteWarmupRounds,
    proxyChat,
    proxyMessages,
    gatewayChat,
    gatewayMessages
  }
}

// ---- the run ---------------------------------------------------------------------------------------------------

const ready = (managed: Managed, url: string, path = "/healthz") => waitHealthy(managed, `${url}${path}`, 60_000)

const main = async (): Promise<BenchReport> => {
  progress(
    `Starting emulators, proxy and gateway (store: ${usePostgres ? "PostgreSQL" : "PGlite"}); logs in ${workDir}`
  )
  const healthy = await startEmulator("emulator")
  const broken = await startEmulator("emulator-broken")
  const proxy = await startProxy(healthy.url)
  const floorProxy = await startProxy(healthy.url, true)
  const gateway = await startGateway("gateway", gatewayConfig(healthy.url))
  await Promise.all([
    ready(healthy.managed, healthy.url),
    ready(broken.managed, broken.url),
    ready(proxy.managed, proxy.url),
    ready(floorProxy.managed, floorProxy.url),
    ready(gateway.managed, gateway.url)
  ])
  // The emulator has no probabilistic fault; this one answers every request 500 (OpenAI error shape).
  const armed = await fetch(`${broken.url}/_emulator/faults`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify([{ status: 500, message: "Benchmark fault: the primary channel always fails." }])
  })
  await armed.body?.cancel()
  if (armed.status !== 204) throw new Error(`Could not arm the broken emulator's fault (status ${armed.status}).`)

  const proxyTarget: Target = { label: "proxy", url: proxy.url, process: proxy.managed }
  const gatewayTarget: Target = { label: "gateway", url: gateway.url, process: gateway.managed }
  const floorTarget: Target = { label: "stream floor", url: floorProxy.url, process: floorProxy.managed }
  const floorProblem = await probe(floorTarget, chatStream)
  if (floorProblem !== undefined) throw new Error(`The stream floor does not work: ${floorProblem}`)
  const nonStream = await runCase(proxyTarget, gatewayTarget, chatNonStream, healthy.url, false)
  const stream = await runCase(proxyTarget, gatewayTarget, chatStream, healthy.url, false, floorTarget)
  const messages = await runCase(proxyTarget, gatewayTarget, messagesStream, healthy.url, true)
  const embedded = await runCase(proxyTarget, gatewayTarget, embeddings, healthy.url, false)
  const probed = messages.outcome._tag === "Measured"
    ? await firstByte(proxyTarget, gatewayTarget)
    : { unavailable: "the messages case did not run" }
  const paced = [
    await measurePaced(proxyTarget, gatewayTarget, chatNonStream),
    await measurePaced(proxyTarget, gatewayTarget, chatStream)
  ]
  await supervisor.stop(gateway.managed)
  await supervisor.stop(floorProxy.managed)

  progress("Starting the failover gateway (primary: always 500 at priority 10; secondary: healthy at priority 0)")
  const failoverGateway = await startGateway("gateway-failover", failoverConfig(broken.url, healthy.url))
  await ready(failoverGateway.managed, failoverGateway.url)
  const failoverTarget: Target = {
    label: "failover gateway",
    url: failoverGateway.url,
    process: failoverGateway.managed
  }
  const failoverProblem = await probe(failoverTarget, chatNonStream)
  if (failoverProblem !== undefined) throw new Error(`The failover case does not work: ${failoverProblem}`)
  // The proxy has no failover: it runs its healthy chat non-stream case again, interleaved with this gateway.
  const counting = countingCalls([broken.url, healthy.url])
  const failoverMeasured = await measurePair(proxyTarget, failoverTarget, chatNonStream, counting.around)
  const failover: FailoverReport = {
    outcome: { _tag: "Measured", proxy: failoverMeasured.proxy, gateway: failoverMeasured.gateway },
    setup: "Two emulators (the emulator has no probabilistic fault): the primary channel (priority 10) answers " +
      "every request 500, the secondary (priority 0) is healthy; settings.cooldown_failures 1,000,000 keeps the " +
      "primary from cooling down, so every caller request pays for one failed attempt before it is retried " +
      "(settings.retry_times default 2).",
    primaryCalls: counting.calls[0],
    secondaryCalls: counting.calls[1]
  }

  const cores = navigator.hardwareConcurrency
  return {
    date: new Date().toISOString(),
    command: ["deno task bench", ...Deno.args].join(" "),
    store: usePostgres ? "PostgreSQL (fresh database per gateway, dropped after)" : "embedded PGlite (temp dir)",
    machine: `${cores} cores, ${Deno.build.os}/${Deno.build.arch}`,
    tools: `deno ${Deno.version.deno}, ${wrk} (-t1, --timeout 10s)`,
    throughputLoad: `${throughputConnections} connections × ${runSeconds} s`,
    latencyLoad: `${latencyConnections} connections × ${runSeconds} s`,
    warmupLoad: `${latencyConnections} connections × ${warmupSeconds} s`,
    pacedLoad:
      `${pacedConnections} connections × ${pacedSeconds} s, each pausing ${pacedPauseMs} ms after every answer`,
    paced,
    elapsedSeconds: (Date.now() - started) / 1000,
    loadAverage,
    cases: [nonStream, stream, messages, embedded],
    crossFormat: { messages, chatStream: stream, firstByte: probed },
    cpuTicksPerSecond: cpuClock.ticksPerSecond,
    failover
  }
}

/**
 * `--telemetry`: two gateways on one emulator, telemetry on and off, each case's throughput runs alternating
 * between them (on, off, off, on, …) after a warm-up of each.
 */
const telemetryMain = async (): Promise<TelemetryReport> => {
  progress(`Starting the emulator and two gateways, telemetry on and off; logs in ${workDir}`)
  const healthy = await startEmulator("emulator")
  const on = await startGateway("gateway-telemetry-on", gatewayConfig(healthy.url))
  const off = await startGateway("gateway-telemetry-off", gatewayConfig(healthy.url), {
    SLUICE_METRICS: "off",
    SLUICE_ACCESS_LOG: "off"
  })
  await Promise.all([
    ready(healthy.managed, healthy.url),
    ready(on.managed, on.url),
    ready(off.managed, off.url)
  ])
  const onTarget: Target = { label: "gateway, telemetry on", url: on.url, process: on.managed }
  const offTarget: Target = { label: "gateway, telemetry off", url: off.url, process: off.managed }
  const cases: Array<TelemetryCase> = []
  for (const item of [chatNonStream, chatStream]) {
    const problems = (await Promise.all([probe(onTarget, item), probe(offTarget, item)])).filter((p) => p !== undefined)
    if (problems.length > 0) throw new Error(`The ${item.name} case does not work: ${problems.join("; ")}`)
    await load(onTarget, item, latencyConnections, warmupSeconds)
    await load(offTarget, item, latencyConnections, warmupSeconds)
    const onRuns: Array<Run> = []
    const offRuns: Array<Run> = []
    for (let round = 0; round < telemetryRounds; round++) {
      const order = round % 2 === 0 ? [onTarget, offTarget] : [offTarget, onTarget]
      for (const target of order) {
        await new Promise((resolve) => setTimeout(resolve, telemetryPauseMillis))
        const run = await load(target, item, throughputConnections, telemetryRunSeconds)
        ;(target === onTarget ? onRuns : offRuns).push(run)
      }
    }
    cases.push({ name: item.name, on: onRuns, off: offRuns })
  }
  return {
    date: new Date().toISOString(),
    command: ["deno task bench", ...Deno.args].join(" "),
    store: usePostgres ? "PostgreSQL (fresh database per gateway, dropped after)" : "embedded PGlite (temp dir)",
    machine: `${navigator.hardwareConcurrency} cores, ${Deno.build.os}/${Deno.build.arch}`,
    load: `${throughputConnections} connections × ${telemetryRunSeconds} s per run, ${
      telemetryPauseMillis / 1000
    } s apart`,
    rounds: telemetryRounds,
    loadAverage,
    cases
  }
}

if (telemetryOnly) {
  try {
    const report = renderTelemetryReport(await telemetryMain())
    await cleanup()
    clearTimeout(watchdog)
    const resultsPath = new URL("./TELEMETRY.md", import.meta.url).pathname
    await Deno.writeTextFile(resultsPath, report)
    await new Deno.Command(Deno.execPath(), { args: ["fmt", "--quiet", resultsPath], cwd: root }).output()
    console.log(await Deno.readTextFile(resultsPath))
    await Deno.remove(workDir, { recursive: true })
    Deno.exit(0)
  } catch (error) {
    clearTimeout(watchdog)
    await abort(`The bench failed: ${error instanceof Error ? error.message : String(error)}`, 1)
  }
}

try {
  const report = renderReport(await main())
  await cleanup()
  clearTimeout(watchdog)
  const resultsPath = new URL("./RESULTS.md", import.meta.url).pathname
  // The hand-written analysis after the marker is kept; the report above it is replaced.
  const previous = await Deno.readTextFile(resultsPath).catch(() => "")
  const kept = previous.indexOf(ANALYSIS_MARKER)
  await Deno.writeTextFile(resultsPath, kept === -1 ? report : `${report}\n${previous.slice(kept)}`)
  // `deno fmt` aligns the table, so the committed file stays format-clean.
  await new Deno.Command(Deno.execPath(), { args: ["fmt", "--quiet", resultsPath], cwd: root }).output()
  console.log(await Deno.readTextFile(resultsPath))
  await Deno.remove(workDir, { recursive: true })
} catch (error) {
  clearTimeout(watchdog)
  await abort(`The bench failed: ${error instanceof Error ? error.message : String(error)}`, 1)
}
