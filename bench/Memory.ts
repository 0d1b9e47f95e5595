/**
 * `deno task bench --memory [--postgres] [--load-seconds=S] [--streams=N]`:
 * the gateway's resident memory, started as the container starts it
 * (`deno task start`, so the launcher counts) on embedded PGlite in a fresh
 * temp dir, or with `--postgres` on a fresh database (dropped after). RSS is
 * the sum over the launcher and the server it spawns (`Rss.ts`).
 *
 * 1. Idle: 10 s after the gateway first answers `/healthz`.
 * 2. Under load: wrk, 50 connections, for `S` s (default 120), chat
 *    non-stream and chat stream in turns of 10 s, against the emulator
 *    unpaced; RSS sampled every second. Reported: the highest sample, and
 *    whether the second half levelled off (its highest sample within 10% of
 *    its lowest).
 * 3. After: 10 s after the load.
 * 4. Slow streams: a second gateway, on an emulator that sends 1 token a
 *    second (a stream lasts about half a minute), warmed up with 100 short
 *    requests, its RSS read 10 s later; then `N` (default 1,000) streams
 *    opened at once from this process; once every one has delivered its
 *    first event, RSS is sampled over 5 s: the cost per stream is (the
 *    highest sample − the warm RSS) ÷ `N`. Every stream is then read to its
 *    end and checked (`[DONE]`).
 *
 * Prints the report and writes it to `bench/MEMORY.md`. Every subprocess is
 * stopped at the end, on failure and on Ctrl-C.
 *
 * @since 0.1.0
 */
// deno-lint-ignore-file no-console
import { benchKey, chatBody, chatHeaders, gatewayConfig } from "./Config.ts"
import { openHarness } from "./Harness.ts"
import { createBenchDatabase } from "./Postgres.ts"
import { freePort, gatewayEnv, type Managed, startEmulator, waitHealthy } from "./Processes.ts"
import { memoryOf, mib, type TreeMemory, treeOf } from "./Rss.ts"
import { requireWrk, runWrk } from "./Wrk.ts"

const option = (name: string, fallback: number) => {
  const given = Deno.args.find((arg) => arg.startsWith(`--${name}=`))
  return given === undefined ? fallback : Number(given.slice(name.length + 3))
}
const usePostgres = Deno.args.includes("--postgres")
const loadSeconds = option("load-seconds", 120)
const streamCount = option("streams", 1_000)
const known = (arg: string) => ["--memory", "--postgres"].includes(arg) || /^--(load-seconds|streams)=\d+$/.test(arg)
if (Deno.args.some((arg) => !known(arg)) || !(loadSeconds >= 10) || !(streamCount >= 1)) {
  console.error("Usage: deno task bench --memory [--postgres] [--load-seconds=S (≥ 10)] [--streams=N]")
  Deno.exit(2)
}
const settleMillis = 10_000
const turnSeconds = 10
const connections = 50
/** The slow emulator's pace: the bench prompt's echo is about 25 tokens, so a stream lasts about 25 s. */
const slowTokensPerSecond = 1

const wrk = await requireWrk()

const root = new URL("..", import.meta.url).pathname
const [loadAverage] = Deno.loadavg()
const { workDir, supervisor, databases, progress, sleep, cleanup, fail } = await openHarness("sluice-bench-memory-")

/** A gateway started with `deno task start`, its URL and its process tree (launcher and server). */
interface Gateway {
  readonly managed: Managed
  readonly url: string
  readonly tree: ReadonlyArray<{ readonly pid: number; readonly name: string }>
}

const startGateway = async (name: string, emulatorUrl: string): Promise<Gateway> => {
  const configPath = `${workDir}/${name}.json`
  await Deno.writeTextFile(configPath, gatewayConfig(emulatorUrl))
  const database = usePostgres ? await createBenchDatabase() : undefined
  if (database !== undefined) databases.push(database)
  const port = freePort()
  const managed = await supervisor.start({
    name,
    command: Deno.execPath(),
    args: ["task", "--quiet", "start"],
    cwd: root,
    env: gatewayEnv({ port, configPath, dataDir: `${workDir}/${name}-data`, databaseUrl: database?.url })
  })
  const url = `http://127.0.0.1:${port}`
  // A fresh store is created first (PGlite: `initdb`), which takes a minute or more on a busy machine.
  await waitHealthy(managed, `${url}/healthz`, 300_000)
  return { managed, url, tree: await treeOf(managed.child.pid) }
}

const memory = (gateway: Gateway): Promise<TreeMemory> => memoryOf(gateway.tree, gateway.managed.name)

const describe = (figures: TreeMemory) =>
  `${mib(figures.rssKib)} MiB (${figures.processes.map((item) => `${item.name} ${mib(item.rssKib)}`).join(" + ")}${
    figures.pssKib === undefined ? "" : `; PSS ${mib(figures.pssKib)} MiB`
  })`

/** Samples RSS every `everyMillis` until `done` settles; the samples, in KiB. */
const sampleWhile = async (gateway: Gateway, done: Promise<unknown>, everyMillis: number): Promise<Array<number>> => {
  const samples: Array<number> = []
  let finished = false
  done.finally(() => finished = true).catch(() => {})
  while (!finished) {
    const figures = await memory(gateway).catch(() => undefined)
    if (figures !== undefined) samples.push(figures.rssKib)
    await Promise.race([sleep(everyMillis), done.catch(() => {})])
  }
  return samples
}

const postChat = (gateway: Gateway, stream: boolean, signal?: AbortSignal) =>
  fetch(`${gateway.url}/v1/chat/completions`, {
    method: "POST",
    headers: { ...chatHeaders, "Content-Type": "application/json" },
    body: JSON.stringify(chatBody(stream)),
    signal
  })

const loadPhase = async (gateway: Gateway) => {
  const bodies = [false, true].map((stream) => {
    const path = `${workDir}/body-${stream}.json`
    Deno.writeTextFileSync(path, JSON.stringify(chatBody(stream)))
    return path
  })
  const samples: Array<number> = []
  let requests = 0
  let failed = 0
  const turns = Math.ceil(loadSeconds / turnSeconds)
  for (let turn = 0; turn < turns; turn++) {
    const running = runWrk(supervisor, workDir, {
      url: `${gateway.url}/v1/chat/completions`,
      bodyPath: bodies[turn % 2],
      headers: { Authorization: `Bearer ${benchKey}` },
      connections,
      seconds: turnSeconds
    })
    samples.push(...await sampleWhile(gateway, running, 1_000))
    const result = await running
    requests += result.requests
    failed += result.non2xx + result.socketErrors
    if (turn % 3 === 2 || turn === turns - 1) {
      progress(`load ${(turn + 1) * turnSeconds} s: RSS now ${mib(samples[samples.length - 1])} MiB`)
    }
  }
  const secondHalf = samples.slice(Math.floor(samples.length / 2))
  return {
    peakKib: Math.max(...samples),
    secondHalfLowKib: Math.min(...secondHalf),
    secondHalfHighKib: Math.max(...secondHalf),
    requests,
    failed
  }
}

const slowStreams = async (emulatorUrl: string) => {
  const gateway = await startGateway("gateway-slow", emulatorUrl)
  for (let index = 0; index < 100; index++) {
    const response = await postChat(gateway, false)
    await response.body?.cancel()
  }
  await sleep(settleMillis)
  const warm = await memory(gateway)
  progress(`slow streams: warm gateway ${describe(warm)}; opening ${streamCount} streams`)
  const controller = new AbortController()
  let firstEvents = 0
  let allFirst: () => void = () => {}
  const allFirstEvents = new Promise<void>((resolve) => allFirst = resolve)
  const streams = Array.from({ length: streamCount }, async () => {
    const response = await postChat(gateway, true, controller.signal)
    if (response.status !== 200 || response.body === null) throw new Error(`A slow stream answered ${response.status}.`)
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
    let text = ""
    let counted = false
    while (true) {
      const { done, value } = await reader.read()
      if (done) break
      text = (text + value).slice(-200)
      if (!counted && text.includes("data:")) {
        counted = true
        if (++firstEvents === streamCount) allFirst()
      }
    }
    if (!text.includes("data: [DONE]")) throw new Error(`A slow stream ended without [DONE]: …${text.slice(-100)}`)
  })
  const failure = Promise.all(streams).then(() => undefined, (error: Error) => error)
  const opened = await Promise.race([allFirstEvents.then(() => undefined), failure, sleep(60_000).then(() => "late")])
  if (opened instanceof Error) throw opened
  if (opened === "late") throw new Error(`Only ${firstEvents} of ${streamCount} slow streams started within 60 s.`)
  const holding = sleep(5_000)
  const samples = await sampleWhile(gateway, holding, 500)
  const peak = Math.max(...samples)
  const open = await memory(gateway)
  const outcome = await failure
  if (outcome instanceof Error) throw outcome
  await sleep(settleMillis)
  const after = await memory(gateway)
  return { warm, open, peakKib: peak, after, perStreamKib: (peak - warm.rssKib) / streamCount }
}

const main = async () => {
  progress(`Starting the emulators and the gateway (${usePostgres ? "PostgreSQL" : "PGlite"}); logs in ${workDir}`)
  const fast = await startEmulator(supervisor, "emulator")
  const slow = await startEmulator(supervisor, "emulator-slow", {
    EMULATOR_TOKENS_PER_SECOND: String(slowTokensPerSecond)
  })
  await waitHealthy(fast.managed, `${fast.url}/healthz`, 60_000)
  await waitHealthy(slow.managed, `${slow.url}/healthz`, 60_000)
  const gateway = await startGateway("gateway", fast.url)
  await sleep(settleMillis)
  const idle = await memory(gateway)
  progress(`idle: ${describe(idle)}`)
  const load = await loadPhase(gateway)
  await sleep(settleMillis)
  const after = await memory(gateway)
  progress(`after the load: ${describe(after)}`)
  await supervisor.stop(gateway.managed)
  const slowFigures = await slowStreams(slow.url)
  progress(`slow streams: ${slowFigures.perStreamKib.toFixed(0)} KiB a stream above the warm gateway`)
  return { idle, load, after, slow: slowFigures }
}

const render = (report: Awaited<ReturnType<typeof main>>) => {
  const { idle, load, after, slow } = report
  const spread = (load.secondHalfHighKib - load.secondHalfLowKib) / load.secondHalfLowKib
  return `# Sluice memory

- Date: ${new Date().toISOString()}
- Command: \`deno task bench ${Deno.args.join(" ")}\`
- Machine: ${navigator.hardwareConcurrency} cores, ${Deno.build.os}/${Deno.build.arch}; load average (1 min) at the
  start: ${loadAverage.toFixed(2)}
- Tools: deno ${Deno.version.deno}, ${wrk}
- Store: ${usePostgres ? "PostgreSQL (fresh database, dropped after)" : "embedded PGlite (fresh temp dir)"}; started as
  \`deno task start\` (launcher + server), metrics and the access log on, as by default

RSS, summed over the launcher and the server (\`bench/Rss.ts\`):

| moment | RSS | launcher + server | PSS |
|---|---:|---|---:|
| idle, ${settleMillis / 1000} s after the first \`/healthz\` | ${mib(idle.rssKib)} MiB | ${
    idle.processes.map((item) => mib(item.rssKib)).join(" + ")
  } | ${idle.pssKib === undefined ? "—" : `${mib(idle.pssKib)} MiB`} |
| under load, highest (${connections} connections, ${loadSeconds} s, chat non-stream and stream in turns) | ${
    mib(load.peakKib)
  } MiB | | |
| under load, second half, lowest – highest | ${mib(load.secondHalfLowKib)} – ${mib(load.secondHalfHighKib)} MiB (${
    (spread * 100).toFixed(1)
  }%: ${spread <= 0.1 ? "levelled off" : "still moving"}) | | |
| ${settleMillis / 1000} s after the load | ${mib(after.rssKib)} MiB | ${
    after.processes.map((item) => mib(item.rssKib)).join(" + ")
  } | ${after.pssKib === undefined ? "—" : `${mib(after.pssKib)} MiB`} |

Load: ${load.requests.toLocaleString("en-US")} requests, ${load.failed} failed.

Slow streams (a second gateway; emulator at ${slowTokensPerSecond} token a second):

| moment | RSS |
|---|---:|
| warm (100 requests, then ${settleMillis / 1000} s) | ${mib(slow.warm.rssKib)} MiB |
| ${streamCount.toLocaleString("en-US")} streams open, highest over 5 s | ${mib(slow.peakKib)} MiB |
| ${settleMillis / 1000} s after every stream ended | ${mib(slow.after.rssKib)} MiB |

**Per stream above the warm gateway: ${slow.perStreamKib.toFixed(0)} KiB** (${
    mib(slow.peakKib - slow.warm.rssKib)
  } MiB ÷ ${streamCount.toLocaleString("en-US")}). Every stream was read to its end and ended with \`[DONE]\`.
`
}

try {
  const report = render(await main())
  await cleanup()
  const path = new URL("./MEMORY.md", import.meta.url).pathname
  await Deno.writeTextFile(path, report)
  await new Deno.Command(Deno.execPath(), { args: ["fmt", "--quiet", path], cwd: root }).output()
  console.log(await Deno.readTextFile(path))
  await Deno.remove(workDir, { recursive: true })
  Deno.exit(0)
} catch (error) {
  await fail(`The memory bench failed: ${error instanceof Error ? error.message : String(error)}`, 1)
}
