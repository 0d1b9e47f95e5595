/**
 * What every bench script sets up before it starts anything: a work directory
 * for subprocess logs and configs, the `Supervisor` of its subprocesses, the
 * PostgreSQL databases it made, a progress line with the seconds since start,
 * and one cleanup (stop everything, drop the databases) that `fail` and the
 * interrupt signals run before exiting.
 *
 * @since 0.1.0
 */
// deno-lint-ignore-file no-console
import type { BenchDatabase } from "./Postgres.ts"
import { Supervisor } from "./Processes.ts"

/** A bench script's shared state and exits. @category models */
export interface Harness {
  /** Epoch ms the script started. */
  readonly started: number
  readonly workDir: string
  readonly supervisor: Supervisor
  /** Databases to drop at cleanup (the script pushes the ones it creates). */
  readonly databases: Array<BenchDatabase>
  /** Prints `[  N s] message` on stderr. */
  readonly progress: (message: string) => void
  readonly sleep: (milliseconds: number) => Promise<void>
  /** Stops every subprocess and drops the databases, once. */
  readonly cleanup: () => Promise<void>
  /** Prints `message`, cleans up, says where the logs are kept, and exits with `code`. */
  readonly fail: (message: string, code: number) => Promise<never>
}

/**
 * Opens a harness whose work directory is a new temporary directory named
 * with `prefix`; SIGINT and SIGTERM fail it with code 130.
 *
 * @category constructors
 */
export const openHarness = async (prefix: string): Promise<Harness> => {
  const started = Date.now()
  const workDir = await Deno.makeTempDir({ prefix })
  const supervisor = new Supervisor(workDir)
  const databases: Array<BenchDatabase> = []
  let cleaned: Promise<void> | undefined
  const cleanup = (): Promise<void> =>
    cleaned ??= (async () => {
      await supervisor.stopAll()
      for (const database of databases) await database.drop().catch(() => {})
    })()
  const fail = async (message: string, code: number): Promise<never> => {
    console.error(message)
    await cleanup()
    console.error(`Subprocess logs kept in ${workDir}`)
    Deno.exit(code)
  }
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    Deno.addSignalListener(signal, () => fail(`Interrupted (${signal}).`, 130))
  }
  return {
    started,
    workDir,
    supervisor,
    databases,
    progress: (message) => console.error(`[${((Date.now() - started) / 1000).toFixed(0).padStart(3)} s] ${message}`),
    sleep: (milliseconds) => new Promise((resolve) => setTimeout(resolve, milliseconds)),
    cleanup,
    fail
  }
}
