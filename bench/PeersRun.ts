/**
 * `deno task bench --peers [--postgres] [--rounds=N] [--seconds=S]`: Sluice
 * against a peer gateway, Portkey's open-source gateway (`Peers.ts`), and the
 * bare proxy (`BareProxy.ts`), all three in front of one emulator (zero
 * latency, unpaced streams) in the same run. Cases: chat non-stream and chat
 * stream (OpenAI chat completions in and out, the one format all three
 * serve: Portkey's `/v1/messages` serves only Anthropic-format providers).
 * After a warm-up of each (10 connections × 3 s), every round runs wrk (50
 * connections × `S` s, default 10) against each target in turn, a second
 * apart, the order rotated by one each round (`N` rounds, default 6, a
 * multiple of the three targets), and takes req/s, p50/p99, CPU per request
 * (the serving process's CPU time from `/proc` ÷ the requests wrk completed)
 * and the highest RSS sampled every 250 ms during the run. RSS (`Rss.ts`, the
 * process and its children) is also read idle, 10 s after every target
 * answered, and 10 s after the last run. Prints the medians and writes them to
 * `bench/PEERS.md`. Every subprocess is stopped at the end, on failure, on
 * Ctrl-C and at the time limit.
 *
 * @since 0.1.0
 */
// deno-lint-ignore-file no-console
import { benchKey, chatBody, gatewayConfig } from "./Config.ts"
import { CpuClock } from "./Cpu.ts"
import { ensurePortkey, nodeVersion, portkeyHeaders, portkeyVersion, startPortkey } from "./Peers.ts"
import { openHarness } from "./Harness.ts"
import { createBenchDatabase } from "./Postgres.ts"
import { freePort, gatewayEnv, type Managed, startBareProxy, startEmulator, waitHealthy } from "./Processes.ts"
import { memoryOf, mib, treeMemory, treeOf } from "./Rss.ts"
import { median } from "./Telemetry.ts"
import { requireWrk, runWrk } from "./Wrk.ts"

const option = (name: string, fallback: number) => {
  const given = Deno.args.find((arg) => arg.startsWith(`--${name}=`))
  return given === undefined ? fallback : Number(given.slice(name.length + 3))
}
const usePostgres = Deno.args.includes("--postgres")
const rounds = option("rounds", 6)
const seconds = option("seconds", 10)
const connections = 50
const settleMillis = 10_000
const sampleMillis = 250
const usage = "Usage: deno task bench --peers [--postgres] [--rounds=N] [--seconds=S]"
const known = (arg: string) => ["--peers", "--postgres"].includes(arg) || /^--(rounds|seconds)=\d+$/.test(arg)
if (Deno.args.some((arg) => !known(arg)) || !(rounds >= 1) || !(seconds >= 1)) {
  console.error(usage)
  Deno.exit(2)
}

const wrk = await requireWrk()

const root = new URL("..", import.meta.url).pathname
const [loadAverage] = Deno.loadavg()
const cpu = await CpuClock.make()
const { workDir, supervisor, databases, progress, sleep, cleanup, fail } = await openHarness("sluice-bench-peers-")
// Startup, 2 cases × (3 warm-ups + rounds × 3 runs), each run plus its pause, and the settling reads.
const limitSeconds = 420 + 2 * (3 * 4 + rounds * 3 * (seconds + 2))
const watchdog = setTimeout(
  () => fail(`The peers bench ran past its ${limitSeconds} s limit; stopped.`, 1),
  limitSeconds * 1000
)

interface Target {
  readonly name: string
  readonly url: string
  readonly managed: Managed
  readonly headers: Record<string, string>
}

/** One wrk run of one target: wrk's figures, CPU ms per request and the highest RSS sampled (KiB). */
interface RunFigures {
  readonly requestsPerSecond: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly cpuPerRequestMs: number
  readonly peakRssKib: number
  readonly failed: number
}

interface CaseFigures {
  readonly name: string
  readonly runs: ReadonlyMap<string, ReadonlyArray<RunFigures>>
}

const cases = [
  { name: "chat, non-stream", stream: false },
  { name: "chat, stream", stream: true }
] as const

const looksRight = (stream: boolean, text: string) =>
  stream ? text.includes("Echo:") && text.includes("data: [DONE]") : /"content":\s*"Echo:/.test(text)

const probe = async (target: Target, stream: boolean): Promise<void> => {
  const response = await fetch(`${target.url}/v1/chat/completions`, {
    method: "POST",
    headers: { ...target.headers, "Content-Type": "application/json" },
    body: JSON.stringify(chatBody(stream)),
    signal: AbortSignal.timeout(10_000)
  })
  const text = await response.text()
  if (response.status !== 200 || !looksRight(stream, text)) {
    throw new Error(`${target.name} answered ${response.status}: ${text.slice(0, 300).replaceAll("\n", "\\n")}`)
  }
}

/** Samples the target's RSS until `done` settles; the highest reading, in KiB. */
const peakWhile = async (target: Target, done: Promise<unknown>): Promise<number> => {
  const tree = await treeOf(target.managed.child.pid)
  let peak = 0
  let finished = false
  done.finally(() => finished = true).catch(() => {})
  while (!finished) {
    const memory = await memoryOf(tree, target.name).catch(() => undefined)
    if (memory !== undefined) peak = Math.max(peak, memory.rssKib)
    await Promise.race([sleep(sampleMillis), done.catch(() => {})])
  }
  return peak
}

const measure = async (target: Target, bodyPath: string, load: number, runSeconds: number): Promise<RunFigures> => {
  const pid = target.managed.child.pid
  const before = await cpu.read(pid)
  const running = runWrk(supervisor, workDir, {
    url: `${target.url}/v1/chat/completions`,
    bodyPath,
    headers: target.headers,
    connections: load,
    seconds: runSeconds
  })
  const peakRssKib = await peakWhile(target, running)
  const result = await running
  const after = await cpu.read(pid)
  if (target.managed.hasExited()) {
    throw new Error(`${target.name} exited during its run; log: ${target.managed.logPath}`)
  }
  if (before === undefined || after === undefined || result.requests === 0) {
    throw new Error(`No CPU figure for ${target.name}.`)
  }
  return {
    requestsPerSecond: result.requestsPerSecond,
    p50Ms: result.p50Ms,
    p99Ms: result.p99Ms,
    cpuPerRequestMs: (after - before) / result.requests,
    peakRssKib,
    failed: result.non2xx + result.socketErrors
  }
}

const measureCase = async (targets: ReadonlyArray<Target>, name: string, stream: boolean): Promise<CaseFigures> => {
  for (const target of targets) await probe(target, stream)
  const bodyPath = `${workDir}/body-${stream ? "stream" : "chat"}.json`
  await Deno.writeTextFile(bodyPath, JSON.stringify(chatBody(stream)))
  for (const target of targets) await measure(target, bodyPath, 10, 3)
  const runs = new Map<string, Array<RunFigures>>(targets.map((target) => [target.name, []]))
  for (let round = 0; round < rounds; round++) {
    const shift = round % targets.length
    const order = [...targets.slice(shift), ...targets.slice(0, shift)]
    const line: Array<string> = []
    for (const target of order) {
      await sleep(1_000)
      const figures = await measure(target, bodyPath, connections, seconds)
      runs.get(target.name)!.push(figures)
      line.push(
        `${target.name} ${Math.round(figures.requestsPerSecond)} req/s, CPU ${
          figures.cpuPerRequestMs.toFixed(3)
        } ms, ` +
          `p50 ${figures.p50Ms.toFixed(2)} p99 ${figures.p99Ms.toFixed(2)} ms, RSS ≤ ${mib(figures.peakRssKib)} MiB` +
          (figures.failed > 0 ? `, ${figures.failed} failed` : "")
      )
    }
    progress(`${name}, round ${round + 1}/${rounds}: ${line.join(" · ")}`)
  }
  return { name, runs }
}

const rssOf = async (targets: ReadonlyArray<Target>) =>
  new Map(
    await Promise.all(targets.map(async (target) => [target.name, await treeMemory(target.managed.child.pid)] as const))
  )

const main = async () => {
  const node = await nodeVersion()
  const entry = await ensurePortkey(progress)
  const portkey = await portkeyVersion()
  progress(
    `Starting the emulator, the bare proxy, Sluice (${usePostgres ? "PostgreSQL" : "PGlite"}) and Portkey ${portkey}`
  )
  const emulator = await startEmulator(supervisor, "emulator")
  const proxy = await startBareProxy(supervisor, emulator.url)
  const configPath = `${workDir}/gateway.json`
  await Deno.writeTextFile(configPath, gatewayConfig(emulator.url))
  const database = usePostgres ? await createBenchDatabase() : undefined
  if (database !== undefined) databases.push(database)
  const sluicePort = freePort()
  const sluice = await supervisor.start({
    name: "sluice",
    command: Deno.execPath(),
    args: ["run", "-A", "src/main.ts"],
    cwd: root,
    env: gatewayEnv({ port: sluicePort, configPath, dataDir: `${workDir}/sluice-data`, databaseUrl: database?.url })
  })
  const peer = await startPortkey(supervisor, entry)
  const targets: ReadonlyArray<Target> = [
    { name: "proxy", url: proxy.url, managed: proxy.managed, headers: { Authorization: "Bearer sk-upstream-proxy" } },
    {
      name: "Sluice",
      url: `http://127.0.0.1:${sluicePort}`,
      managed: sluice,
      headers: { Authorization: `Bearer ${benchKey}` }
    },
    {
      name: "Portkey",
      url: peer.url,
      managed: peer.managed,
      headers: portkeyHeaders(emulator.url, "sk-upstream-portkey")
    }
  ]
  await waitHealthy(emulator.managed, `${emulator.url}/healthz`, 60_000)
  await waitHealthy(proxy.managed, `${proxy.url}/healthz`, 60_000)
  // A fresh PGlite store runs `initdb` first: a minute or more on a busy machine.
  await waitHealthy(sluice, `${targets[1].url}/healthz`, 300_000)
  await waitHealthy(peer.managed, `${peer.url}/`, 60_000)
  await sleep(settleMillis)
  const idle = await rssOf(targets)
  progress(
    `Idle RSS: ${targets.map((target) => `${target.name} ${mib(idle.get(target.name)!.rssKib)} MiB`).join(", ")}`
  )
  const measured: Array<CaseFigures> = []
  for (const item of cases) measured.push(await measureCase(targets, item.name, item.stream))
  await sleep(settleMillis)
  const after = await rssOf(targets)
  progress(
    `RSS after: ${targets.map((target) => `${target.name} ${mib(after.get(target.name)!.rssKib)} MiB`).join(", ")}`
  )
  return {
    targets: targets.map((target) => target.name),
    cases: measured,
    idle,
    after,
    versions: `deno ${Deno.version.deno}, node ${node}, @portkey-ai/gateway ${portkey}, ${wrk} (-t1)`
  }
}

const cell = (value: number, digits: number) => value.toFixed(digits)
const rate = (value: number) => Math.round(value).toLocaleString("en-US")

const render = (report: Awaited<ReturnType<typeof main>>): string => {
  const rows: Array<string> = []
  for (const item of report.cases) {
    const proxyRuns = item.runs.get("proxy")!
    for (const name of report.targets) {
      const runs = item.runs.get(name)!
      const ratio = (pick: (run: RunFigures) => number) =>
        median(runs.map((run, index) => pick(run) / pick(proxyRuns[index])))
      rows.push(
        `| ${item.name} | ${name} | ${rate(median(runs.map((run) => run.requestsPerSecond)))} | ${
          name === "proxy" ? "1.00×" : `${cell(ratio((run) => run.requestsPerSecond), 2)}×`
        } | ${cell(median(runs.map((run) => run.cpuPerRequestMs)), 3)} | ${
          name === "proxy" ? "1.00×" : `${cell(ratio((run) => run.cpuPerRequestMs), 2)}×`
        } | ${cell(median(runs.map((run) => run.p50Ms)), 2)} / ${cell(median(runs.map((run) => run.p99Ms)), 1)} ms | ${
          mib(Math.max(...runs.map((run) => run.peakRssKib)))
        } MiB | ${runs.reduce((sum, run) => sum + run.failed, 0)} |`
      )
    }
  }
  const memoryRows = report.targets.map((name) =>
    `| ${name} | ${mib(report.idle.get(name)!.rssKib)} MiB | ${
      mib(Math.max(...report.cases.flatMap((item) => item.runs.get(name)!.map((run) => run.peakRssKib))))
    } MiB | ${mib(report.after.get(name)!.rssKib)} MiB |`
  )
  return `# Sluice, Portkey and the bare proxy

- Date: ${new Date().toISOString()}
- Command: \`deno task bench ${Deno.args.join(" ")}\`
- Machine: ${navigator.hardwareConcurrency} cores, ${Deno.build.os}/${Deno.build.arch}; load average (1 min) at the
  start: ${loadAverage.toFixed(2)}
- Tools: ${report.versions}
- Sluice store: ${usePostgres ? "PostgreSQL (fresh database, dropped after)" : "embedded PGlite (temp dir)"}; metrics
  and the access log on, as by default
- Load: ${connections} connections × ${seconds} s per run, ${rounds} rounds, the three targets' order rotated each round

Medians over the rounds; ratios are taken within a round (÷ the proxy's run in the same round), then the median:

| case | target | req/s | ÷ proxy | CPU ms/req | ÷ proxy | p50 / p99 | highest RSS under load | failed |
|---|---|---:|---:|---:|---:|---:|---:|---:|
${rows.join("\n")}

Memory (RSS of the process and its children, ${settleMillis / 1000} s after start-up and after the last run):

| target | idle | highest under load | after the load |
|---|---:|---:|---:|
${memoryRows.join("\n")}

## How to read it

- All three run in front of the same emulator (\`emulator/main.ts\`, zero latency, unpaced streams), each its own
  process; wrk, emulator and target share the machine's cores, so compare ratios, not req/s.
- The proxy is \`bench/BareProxy.ts\` (Deno, no auth or accounting). Sluice is \`src/main.ts\` (auth, routing, quota hold
  and settle, durable charges, usage log, metrics, access log). Portkey is \`@portkey-ai/gateway\` on Node.js, routed by
  \`x-portkey-provider: openai\` and \`x-portkey-custom-host\` (no auth, no accounting, no store: it forwards the
  caller's key), installed by \`npm ci\` in \`bench/peers\`.
- CPU ms/req: the serving process's CPU time (user + system, all threads, \`/proc/<pid>/stat\`) over a run ÷ the
  requests wrk completed in it. RSS: \`VmRSS\` summed over the process and its children (\`bench/Rss.ts\`).
`
}

try {
  const report = render(await main())
  await cleanup()
  clearTimeout(watchdog)
  const path = new URL("./PEERS.md", import.meta.url).pathname
  await Deno.writeTextFile(path, report)
  await new Deno.Command(Deno.execPath(), { args: ["fmt", "--quiet", path], cwd: root }).output()
  console.log(await Deno.readTextFile(path))
  await Deno.remove(workDir, { recursive: true })
  Deno.exit(0)
} catch (error) {
  clearTimeout(watchdog)
  await fail(`The peers bench failed: ${error instanceof Error ? error.message : String(error)}`, 1)
}
