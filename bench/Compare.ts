/**
 * `deno run -A bench/Compare.ts [--connections=N] [--postgres] [--cpu-prof=<dir>] <case> <rounds> <seconds> <name>=<dir>[:<ENV>=<value>,…]
 * …`: CPU per request and added latency (p50, p99 over the proxy's in the same round) of several gateway builds
 * side by side, each ÷ the bare proxy's in the same round; `--connections` sets wrk's connections (default 50; 1
 * for the light-load latency), `--postgres` puts each build on a fresh PostgreSQL database instead of PGlite. One emulator (zero latency,
 * unpaced) and one bare proxy (`BareProxy.ts`) serve every target; each `<dir>` is a checkout of Sluice with its
 * dependencies installed (a `git worktree` of another commit, after `deno install --frozen`), started as
 * `src/main.ts` on embedded PGlite with the given environment added (e.g. `SLUICE_METRICS=off`). `<case>` is
 * `chat`, `stream` or `messages` (`Config.ts`'s bodies). After a warm-up of each target (10 connections × 3 s),
 * every round runs wrk (50 connections × `<seconds>`) against each target in turn, a second apart, the order
 * rotated by one each round so that every target takes every place equally often (with as many rounds as a
 * multiple of the targets); `--cpu-prof` has each build write a V8 CPU profile into `<dir>/<name>/` as it stops (the
 * top items: `bench/ProfileTop.ts`). CPU per request is the target's CPU time (`Cpu.ts`) over the run ÷ the requests wrk
 * completed. Prints each round and the median ratio of each build. Used for the before/after figures of a change
 * to the request path (bench/RESULTS.md); it writes no report.
 *
 * @since 0.1.0
 */
// deno-lint-ignore-file no-console
import { chatBody, chatHeaders, gatewayConfig, messagesBody, messagesHeaders } from "./Config.ts"
import { CpuClock } from "./Cpu.ts"
import { type BenchDatabase, createBenchDatabase } from "./Postgres.ts"
import {
  freePort,
  gatewayEnv,
  type Managed,
  startBareProxy,
  startEmulator,
  Supervisor,
  waitHealthy
} from "./Processes.ts"
import { median } from "./Telemetry.ts"
import { runWrk } from "./Wrk.ts"

interface Target {
  readonly name: string
  readonly url: string
  readonly managed: Managed
}

const usage = "Usage: deno run -A bench/Compare.ts [--connections=N] [--postgres] chat|stream|messages <rounds> " +
  "<seconds> <name>=<dir>[:ENV=value,…] …"
const options = Deno.args.filter((arg) => arg.startsWith("--"))
const connections = Number(options.find((arg) => arg.startsWith("--connections="))?.slice(14) ?? 50)
const usePostgres = options.includes("--postgres")
/** `--cpu-prof=<dir>`: each build writes a V8 CPU profile into `<dir>/<name>/` when it stops. */
const profileDir = options.find((arg) => arg.startsWith("--cpu-prof="))?.slice(11)
const [caseName, roundsText, secondsText, ...specs] = Deno.args.filter((arg) => !arg.startsWith("--"))
const rounds = Number(roundsText)
const seconds = Number(secondsText)
if (
  !["chat", "stream", "messages"].includes(caseName ?? "") || !Number.isInteger(rounds) || rounds < 1 ||
  !(seconds > 0) || specs.length === 0 || specs.some((spec) => !spec.includes("=")) || !(connections >= 1)
) {
  console.error(usage)
  Deno.exit(2)
}

/** `name=dir:A=1,B=2` → its parts. */
const parseSpec = (spec: string) => {
  const name = spec.slice(0, spec.indexOf("="))
  const rest = spec.slice(spec.indexOf("=") + 1)
  const colon = rest.indexOf(":")
  const dir = colon === -1 ? rest : rest.slice(0, colon)
  const env: Record<string, string> = {}
  for (const pair of (colon === -1 ? "" : rest.slice(colon + 1)).split(",").filter((item) => item !== "")) {
    env[pair.slice(0, pair.indexOf("="))] = pair.slice(pair.indexOf("=") + 1)
  }
  return { name, dir, env }
}

const workDir = await Deno.makeTempDir({ prefix: "sluice-compare-" })
const databases: Array<BenchDatabase> = []
const supervisor = new Supervisor(workDir)
const cpu = await CpuClock.make()
try {
  const { managed: emulator, url: emulatorUrl } = await startEmulator(supervisor, "emulator")
  const proxy = await startBareProxy(supervisor, emulatorUrl)
  const targets: Array<Target> = [{ name: "proxy", url: proxy.url, managed: proxy.managed }]
  for (const spec of specs.map(parseSpec)) {
    const database = usePostgres ? await createBenchDatabase() : undefined
    if (database !== undefined) databases.push(database)
    const configPath = `${workDir}/${spec.name}.json`
    await Deno.writeTextFile(configPath, gatewayConfig(emulatorUrl))
    const port = freePort()
    const managed = await supervisor.start({
      name: spec.name,
      command: Deno.execPath(),
      args: [
        "run",
        "-A",
        ...(profileDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${profileDir}/${spec.name}`]),
        "src/main.ts"
      ],
      cwd: spec.dir,
      env: gatewayEnv(
        { port, configPath, dataDir: `${workDir}/${spec.name}-data`, databaseUrl: database?.url },
        spec.env
      )
    })
    targets.push({ name: spec.name, url: `http://127.0.0.1:${port}`, managed })
  }
  await waitHealthy(emulator, `${emulatorUrl}/healthz`, 60_000)
  for (const target of targets) {
    // The proxy forwards `/healthz` to the emulator; a gateway on a fresh PGlite store runs `initdb` first (a minute or
    // more on a busy machine).
    await waitHealthy(target.managed, `${target.url}/healthz`, 300_000)
  }
  const body = caseName === "messages" ? messagesBody() : chatBody(caseName === "stream")
  const path = caseName === "messages" ? "/v1/messages" : "/v1/chat/completions"
  const headers = caseName === "messages" ? messagesHeaders : chatHeaders
  const bodyPath = `${workDir}/body.json`
  await Deno.writeTextFile(bodyPath, JSON.stringify(body))
  for (const target of targets) {
    await runWrk(supervisor, workDir, { url: target.url + path, bodyPath, headers, connections: 10, seconds: 3 })
  }
  const ratios = new Map<string, Array<number>>()
  /** Each target's [p50, p99] milliseconds per round. */
  const latency = new Map<string, Array<readonly [number, number]>>()
  for (let round = 0; round < rounds; round++) {
    const shift = round % targets.length
    const order = [...targets.slice(shift), ...targets.slice(0, shift)]
    const perRequest = new Map<string, number>()
    const line: Array<string> = []
    for (const target of order) {
      await new Promise((resolve) => setTimeout(resolve, 1_000))
      const before = await cpu.read(target.managed.child.pid)
      const result = await runWrk(supervisor, workDir, {
        url: target.url + path,
        bodyPath,
        headers,
        connections,
        seconds
      })
      const after = await cpu.read(target.managed.child.pid)
      if (before === undefined || after === undefined || result.requests === 0) {
        throw new Error(`No CPU figure for ${target.name}.`)
      }
      if (result.non2xx + result.socketErrors > 0) {
        throw new Error(`${target.name}: ${result.non2xx} non-2xx, ${result.socketErrors} socket errors.`)
      }
      perRequest.set(target.name, (after - before) / result.requests)
      latency.set(target.name, [...(latency.get(target.name) ?? []), [result.p50Ms, result.p99Ms]])
      line.push(
        `${target.name} ${Math.round(result.requestsPerSecond)} req/s ${
          ((after - before) / result.requests).toFixed(3)
        } ms CPU, p50 ${result.p50Ms.toFixed(2)} p99 ${result.p99Ms.toFixed(2)} ms`
      )
    }
    const proxyCpu = perRequest.get("proxy")!
    for (const target of targets.slice(1)) {
      const list = ratios.get(target.name) ?? []
      list.push(perRequest.get(target.name)! / proxyCpu)
      ratios.set(target.name, list)
    }
    console.log(`round ${round + 1}: ${line.join(" · ")}`)
  }
  const proxyLatency = latency.get("proxy")!
  for (const [name, list] of ratios) {
    const own = latency.get(name)!
    const added = (column: 0 | 1) => median(own.map((pair, index) => pair[column] - proxyLatency[index][column]))
    console.log(
      `${name}: gateway ÷ proxy CPU per request, median ${median(list).toFixed(2)} (rounds: ${
        list.map((value) => value.toFixed(2)).join(" ")
      }); added latency over the proxy, median p50 ${added(0).toFixed(2)} ms, p99 ${added(1).toFixed(2)} ms`
    )
  }
} finally {
  await supervisor.stopAll()
  for (const database of databases) await database.drop().catch(() => {})
  await Deno.remove(workDir, { recursive: true }).catch(() => {})
}
