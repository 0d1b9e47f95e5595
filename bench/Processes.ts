/**
 * Subprocesses of the benchmark (emulators, the bare proxy, gateways, `wrk`):
 * started with their output in log files, waited on until healthy, and all
 * stopped at the end, also when the run fails or is interrupted.
 *
 * @since 0.1.0
 */

/** A started subprocess. @category models */
export interface Managed {
  readonly name: string
  readonly child: Deno.ChildProcess
  /** Where its stdout and stderr go. */
  readonly logPath: string
  /** Resolves when it has exited. */
  readonly exited: Promise<Deno.CommandStatus>
  /** True once it has exited. */
  readonly hasExited: () => boolean
}

/** What to start. `env` is added to the bench's own environment. @category models */
export interface Launch {
  readonly name: string
  readonly command: string
  readonly args: ReadonlyArray<string>
  readonly env?: Record<string, string>
  readonly cwd?: string
}

const sleep = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds))

/**
 * A port on 127.0.0.1 that was free a moment ago (bound with port 0, then released).
 *
 * @category ports
 */
export const freePort = (): number => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 })
  const port = listener.addr.port
  listener.close()
  return port
}

/**
 * The last `lines` lines of a log file, or a note that it could not be read.
 *
 * @category logs
 */
export const logTail = async (path: string, lines = 20): Promise<string> => {
  const text = await Deno.readTextFile(path).catch((error: Error) => `(could not read ${path}: ${error.message})`)
  return text.trimEnd().split("\n").slice(-lines).join("\n")
}

/**
 * Owns every subprocess it started; `stopAll` ends them (SIGTERM, then SIGKILL
 * after `graceMillis`).
 *
 * @category processes
 */
export class Supervisor {
  readonly #running = new Set<Managed>()
  readonly #logDir: string

  /** `logDir`: an existing directory for `<name>.log` files. */
  constructor(logDir: string) {
    this.#logDir = logDir
  }

  /**
   * Starts `launch`, its stdout and stderr appended to `<logDir>/<name>.log`
   * by the process itself (`sh` opens the file and `exec`s the command, so the
   * pid is the command's): a gateway's access log is written straight to the
   * file, as to a collector, not copied through this process, whose copying
   * would compete for the cores being measured.
   */
  start(launch: Launch): Promise<Managed> {
    const logPath = `${this.#logDir}/${launch.name}.log`
    const child = new Deno.Command("sh", {
      args: ["-c", 'log="$1"; shift; exec "$@" >>"$log" 2>&1', "sh", logPath, launch.command, ...launch.args],
      env: launch.env,
      cwd: launch.cwd,
      stdin: "null",
      stdout: "null",
      stderr: "null"
    }).spawn()
    let done = false
    const exited = child.status.then((status) => {
      done = true
      return status
    })
    const managed: Managed = { name: launch.name, child, logPath, exited, hasExited: () => done }
    this.#running.add(managed)
    exited.finally(() => this.#running.delete(managed))
    return Promise.resolve(managed)
  }

  /** Stops one process: SIGTERM, then SIGKILL if it is still there after `graceMillis`. */
  async stop(managed: Managed, graceMillis = 3000): Promise<void> {
    if (managed.hasExited()) return
    try {
      managed.child.kill("SIGTERM")
    } catch {
      return
    }
    const outcome = await Promise.race([managed.exited.then(() => "exited"), sleep(graceMillis).then(() => "late")])
    if (outcome === "late") {
      try {
        managed.child.kill("SIGKILL")
      } catch {
        // Already gone between the check and the kill.
      }
      await managed.exited
    }
  }

  /** Stops every process still running, in parallel. */
  async stopAll(): Promise<void> {
    await Promise.all([...this.#running].map((managed) => this.stop(managed)))
  }
}

/**
 * Polls `url` until it answers 200 (each try bounded to 1 s). Fails when
 * `managed` exits first or after `timeoutMillis`, quoting the end of its log.
 *
 * @category processes
 */
export const waitHealthy = async (managed: Managed, url: string, timeoutMillis: number): Promise<void> => {
  const deadline = Date.now() + timeoutMillis
  while (Date.now() < deadline) {
    if (managed.hasExited()) {
      throw new Error(`${managed.name} exited before it was ready:\n${await logTail(managed.logPath)}`)
    }
    const status = await fetch(url, { signal: AbortSignal.timeout(1000) }).then(
      async (response) => {
        await response.body?.cancel()
        return response.status
      },
      () => 0
    )
    if (status === 200) return
    await sleep(100)
  }
  throw new Error(
    `${managed.name} was not ready at ${url} after ${timeoutMillis} ms:\n${await logTail(managed.logPath)}`
  )
}

/** A started emulator or proxy and where it listens. @category processes */
export interface Started {
  readonly managed: Managed
  /** `http://127.0.0.1:<port>`. */
  readonly url: string
}

/**
 * The environment a gateway under test starts with (`src/main.ts`): on `port` at 127.0.0.1, the bootstrap file
 * `configPath`, the embedded store in `dataDir` unless `databaseUrl` (PostgreSQL) is given, no Redis, JSON log
 * lines; `extra` is added over it (e.g. `SLUICE_SHUTDOWN_GRACE_SECONDS`).
 *
 * @category processes
 */
export const gatewayEnv = (
  options: {
    readonly port: number
    readonly configPath: string
    readonly dataDir: string
    readonly databaseUrl?: string | undefined
  },
  extra: Record<string, string> = {}
): Record<string, string> => ({
  PORT: String(options.port),
  HOST: "127.0.0.1",
  SLUICE_CONFIG: options.configPath,
  SLUICE_DATA_DIR: options.dataDir,
  DATABASE_URL: options.databaseUrl ?? "",
  REDIS_URL: "",
  LOG_FORMAT: "json",
  ...extra
})

/** The checkout this file is in: where `src/` and `bench/` are run from. */
const checkout = new URL("..", import.meta.url).pathname

/**
 * Starts the emulator (`emulator/main.ts`) as `name` on a free port: zero latency, streams unpaced, requests
 * not recorded; `env` is added (e.g. `EMULATOR_VIDEO_STEP_MS`).
 *
 * @category processes
 */
export const startEmulator = async (
  supervisor: Supervisor,
  name: string,
  env: Record<string, string> = {}
): Promise<Started> => {
  const port = freePort()
  const managed = await supervisor.start({
    name,
    command: Deno.execPath(),
    args: ["run", "-A", "emulator/main.ts"],
    cwd: checkout,
    env: {
      EMULATOR_PORT: String(port),
      EMULATOR_LATENCY_MS: "0",
      EMULATOR_TOKENS_PER_SECOND: "0",
      EMULATOR_RECORD: "false",
      ...env
    }
  })
  return { managed, url: `http://127.0.0.1:${port}` }
}

/**
 * Starts the bare proxy (`BareProxy.ts`) in front of `upstream` on a free port; `readEvents`: the stream floor
 * (`PROXY_READ_EVENTS=1`).
 *
 * @category processes
 */
export const startBareProxy = async (
  supervisor: Supervisor,
  upstream: string,
  readEvents = false
): Promise<Started> => {
  const port = freePort()
  const managed = await supervisor.start({
    name: readEvents ? "proxy-reading-events" : "proxy",
    command: Deno.execPath(),
    args: ["run", "-A", "bench/BareProxy.ts"],
    cwd: checkout,
    env: { PROXY_PORT: String(port), PROXY_UPSTREAM: upstream, PROXY_READ_EVENTS: readEvents ? "1" : "0" }
  })
  return { managed, url: `http://127.0.0.1:${port}` }
}
