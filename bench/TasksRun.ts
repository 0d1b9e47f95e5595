/**
 * `deno task bench --tasks`: the tasks case (figures and report in
 * `Tasks.ts`). On a fresh PostgreSQL database (`Postgres.ts`, dropped after)
 * it starts the emulator (video step `SLUICE_BENCH_TASKS_STEP_MS`, default
 * 30 s, so a task finishes two minutes after its submit) and the gateway
 * (`sora-2` priced per second on an openai channel to the emulator,
 * `task_poll_interval_ms` 1000), counts the idle gateway's statements for
 * 10 s, reads its VmRSS, submits 10,000 video tasks (`POST /v1/videos`, 50 at
 * a time, plain `fetch`), measures the poller for 20 s from 5 s after the
 * last submit, with every task in flight, waits until every task finished
 * (at most `SLUICE_BENCH_TASKS_WAIT_S`, default 420 s), and reads the RSS
 * again then and five poll cycles later. The run is kept in
 * `bench/TASKS.json` under its label (`SLUICE_BENCH_TASKS_LABEL`, default the
 * commit), and `bench/TASKS.md` is rendered from every kept run, the
 * hand-written notes after its marker kept. Every subprocess is stopped at the
 * end and on failure.
 *
 * @since 0.1.0
 */
// deno-lint-ignore-file no-console
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { benchKey, benchVideoModel, tasksConfig } from "./Config.ts"
import { type BenchDatabase, createBenchDatabase } from "./Postgres.ts"
import { freePort, gatewayEnv, startEmulator, Supervisor, waitHealthy } from "./Processes.ts"
import { type Counters, pollWindow, renderTasksReport, rssKibOf, type SubmitFigures, type TasksRun } from "./Tasks.ts"

const TASKS = Number(Deno.env.get("SLUICE_BENCH_TASKS_COUNT") ?? 10_000)
const CONCURRENCY = 50
const POLL_MILLIS = 1000
const STEP_MILLIS = Number(Deno.env.get("SLUICE_BENCH_TASKS_STEP_MS") ?? 30_000)
const WINDOW_SECONDS = 20
/** The idle gateway's own statements are measured over this long before the submits. */
const IDLE_SECONDS = 10
/** The poller is measured from this long after the last submit (the submits' usage rows flushed by then). */
const SETTLE_SECONDS = 5
const WAIT_LIMIT_SECONDS = Number(Deno.env.get("SLUICE_BENCH_TASKS_WAIT_S") ?? 420)
const LATER_CYCLES = 5
const NOTES_MARKER =
  "<!-- Notes below: written by hand, kept by `deno task bench --tasks` when it rewrites the report. -->"

const root = new URL("..", import.meta.url).pathname
const started = Date.now()
const [loadAverage] = Deno.loadavg()
const workDir = await Deno.makeTempDir({ prefix: "sluice-bench-tasks-" })
const supervisor = new Supervisor(workDir)
let database: BenchDatabase | undefined

const progress = (message: string) =>
  console.error(`[${((Date.now() - started) / 1000).toFixed(0).padStart(3)} s] ${message}`)
const sleep = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds))

const query = <A extends object>(url: string, statement: string): Promise<ReadonlyArray<A>> =>
  Effect.runPromise(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<A>(statement)).pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })),
      Effect.scoped
    ) as Effect.Effect<ReadonlyArray<A>, unknown, never>
  )

const rssKib = async (pid: number): Promise<number> => {
  const kib = rssKibOf(await Deno.readTextFile(`/proc/${pid}/status`))
  if (kib === undefined) throw new Error(`No VmRSS for process ${pid}.`)
  return kib
}

const upstreamCalls = async (url: string): Promise<number> => {
  const stats: { requests?: unknown } = await (await fetch(`${url}/_emulator/stats`)).json()
  if (typeof stats.requests !== "number") throw new Error("Could not read the emulator's stats.")
  return stats.requests
}

/** One statement: the database's commits and the `tasks` rows updated (it commits once itself). */
const counters = async (databaseUrl: string, emulatorUrl: string): Promise<Counters> => {
  const [row] = await query<{ commits: string; updated: string | null }>(
    databaseUrl,
    `SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()) AS commits,
      (SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = 'tasks') AS updated`
  )
  return {
    at: Date.now(),
    commits: Number(row.commits),
    taskRowsUpdated: Number(row.updated ?? 0),
    upstreamCalls: await upstreamCalls(emulatorUrl)
  }
}

const unfinished = async (databaseUrl: string): Promise<number> => {
  const [row] = await query<{ n: string }>(
    databaseUrl,
    `SELECT count(*) AS n FROM tasks WHERE status IN ('queued', 'in_progress')`
  )
  return Number(row.n)
}

const submitAll = async (gatewayUrl: string): Promise<SubmitFigures> => {
  const latenciesMs: Array<number> = []
  const failures: Record<string, number> = {}
  let next = 0
  const begin = performance.now()
  const worker = async () => {
    while (next < TASKS) {
      const index = next++
      const t0 = performance.now()
      const status = await fetch(`${gatewayUrl}/v1/videos`, {
        method: "POST",
        headers: { authorization: `Bearer ${benchKey}`, "content-type": "application/json" },
        body: JSON.stringify({ model: benchVideoModel, prompt: `a calm lake, take ${index}`, seconds: "4" })
      }).then(async (response) => {
        await response.arrayBuffer()
        return String(response.status)
      }, (error: Error) => `network: ${error.name}`)
      if (status === "200") latenciesMs.push(performance.now() - t0)
      else failures[status] = (failures[status] ?? 0) + 1
      if (index % 1000 === 999) progress(`${index + 1} submitted`)
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker))
  return { count: TASKS, concurrency: CONCURRENCY, seconds: (performance.now() - begin) / 1000, latenciesMs, failures }
}

const label = Deno.env.get("SLUICE_BENCH_TASKS_LABEL") ??
  new TextDecoder().decode(
    (await new Deno.Command("git", { args: ["rev-parse", "--short", "HEAD"], cwd: root }).output()).stdout
  ).trim()

const runCase = async (): Promise<TasksRun> => {
  database = await createBenchDatabase()
  const { managed: emulator, url: emulatorUrl } = await startEmulator(supervisor, "emulator", {
    EMULATOR_VIDEO_STEP_MS: String(STEP_MILLIS)
  })
  const configPath = `${workDir}/gateway.json`
  await Deno.writeTextFile(configPath, tasksConfig(emulatorUrl, POLL_MILLIS))
  const port = freePort()
  const gateway = await supervisor.start({
    name: "gateway",
    command: Deno.execPath(),
    args: ["run", "-A", "src/main.ts"],
    cwd: root,
    env: gatewayEnv({ port, configPath, dataDir: `${workDir}/gateway-data`, databaseUrl: database.url }, {
      SLUICE_SHUTDOWN_GRACE_SECONDS: "2",
      SLUICE_ACCESS_LOG: "off"
    })
  })
  const gatewayUrl = `http://127.0.0.1:${port}`
  await Promise.all([
    waitHealthy(emulator, `${emulatorUrl}/healthz`, 60_000),
    waitHealthy(gateway, `${gatewayUrl}/healthz`, 120_000)
  ])
  const pid = gateway.child.pid
  await sleep(3000)
  const idleBefore = await counters(database.url, emulatorUrl)
  await sleep(IDLE_SECONDS * 1000)
  const idleWindow = pollWindow(idleBefore, await counters(database.url, emulatorUrl), 1)
  const idle = await rssKib(pid)
  progress(`Gateway ready (RSS ${(idle / 1024).toFixed(0)} MiB); submitting ${TASKS} tasks, ${CONCURRENCY} at a time`)
  const submits = await submitAll(gatewayUrl)
  const submitted = Date.now()
  progress(`Submitted in ${submits.seconds.toFixed(1)} s; measuring the poller for ${WINDOW_SECONDS} s`)
  await sleep(SETTLE_SECONDS * 1000)
  const before = await counters(database.url, emulatorUrl)
  await sleep(WINDOW_SECONDS * 1000)
  const after = await counters(database.url, emulatorUrl)
  const inFlightRss = await rssKib(pid)
  const inFlight = pollWindow(before, after, 1)
  progress(
    `${inFlight.upstreamCallsPerSecond.toFixed(0)} polls/s, ${
      inFlight.statementsPerSecond.toFixed(1)
    } statements/s; waiting for every task to finish`
  )
  let left = await unfinished(database.url)
  while (left > 0 && Date.now() - submitted < WAIT_LIMIT_SECONDS * 1000) {
    await sleep(2000)
    left = await unfinished(database.url)
  }
  const finishSeconds = left === 0 ? (Date.now() - submitted) / 1000 : undefined
  progress(left === 0 ? `All finished after ${finishSeconds!.toFixed(0)} s` : `${left} still unfinished; stopping`)
  const finished = left === 0 ? await rssKib(pid) : undefined
  if (left === 0) await sleep(LATER_CYCLES * POLL_MILLIS)
  const laterCycles = left === 0 ? await rssKib(pid) : undefined
  return {
    label,
    submits,
    rssKib: { idle, inFlight: inFlightRss, finished, laterCycles },
    inFlight,
    idle: idleWindow,
    finishSeconds,
    unfinished: left,
    waitLimitSeconds: WAIT_LIMIT_SECONDS
  }
}

const cleanup = async () => {
  await supervisor.stopAll()
  await database?.drop().catch((error: Error) => console.error(`Could not drop ${database?.name}: ${error.message}`))
}

try {
  const run = await runCase()
  await cleanup()
  const jsonPath = new URL("./TASKS.json", import.meta.url).pathname
  const reportPath = new URL("./TASKS.md", import.meta.url).pathname
  const kept: Array<TasksRun> = JSON.parse(await Deno.readTextFile(jsonPath).catch(() => "[]"))
  const runs = [...kept.filter((item) => item.label !== run.label), run]
  await Deno.writeTextFile(jsonPath, JSON.stringify(runs, null, 2) + "\n")
  const previous = await Deno.readTextFile(reportPath).catch(() => "")
  const at = previous.indexOf(NOTES_MARKER)
  await Deno.writeTextFile(
    reportPath,
    renderTasksReport({
      date: new Date().toISOString(),
      command: "deno task bench --tasks",
      machine: `${navigator.hardwareConcurrency} cores, ${Deno.build.os}/${Deno.build.arch}`,
      loadAverage,
      setup:
        `PostgreSQL (fresh database, dropped after); ${
          TASKS.toLocaleString("en-US")
        } tasks of \`${benchVideoModel}\`, ` +
        `${CONCURRENCY} submits at a time; emulator video step ${STEP_MILLIS / 1000} s (a task finishes ${
          4 * STEP_MILLIS / 1000
        } s after its submit); \`task_poll_interval_ms\` ${POLL_MILLIS}; poller measured over ${WINDOW_SECONDS} s ` +
        `from ${SETTLE_SECONDS} s after the last submit, the idle gateway over ${IDLE_SECONDS} s before the first`,
      runs,
      notes: at === -1 ? NOTES_MARKER : previous.slice(at).trimEnd()
    })
  )
  await new Deno.Command(Deno.execPath(), { args: ["fmt", "--quiet", reportPath, jsonPath], cwd: root }).output()
  console.log(await Deno.readTextFile(reportPath))
  await Deno.remove(workDir, { recursive: true })
  Deno.exit(0)
} catch (error) {
  console.error(`The tasks bench failed: ${error instanceof Error ? error.message : String(error)}`)
  await cleanup()
  console.error(`Subprocess logs kept in ${workDir}`)
  Deno.exit(1)
}
