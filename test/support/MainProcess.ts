/**
 * Runs `src/main.ts` as a child process, the way `deno task start` does, for
 * tests of the outer contract: exit codes, stderr, `/healthz`, SIGTERM.
 */

const ROOT = new URL("../../", import.meta.url).pathname
const MAIN = `${ROOT}src/main.ts`

/**
 * The variables of the outer contract (docs/ARCHITECTURE.md, "Outer contract") plus the ones `src/config/Env.ts`
 * reads.
 */
const GATEWAY_VARIABLES = ["PORT", "HOST", "DATABASE_URL", "DATABASE_POOL_SIZE", "REDIS_URL"]

/** This process's environment without the gateway's own variables, plus `env`. */
const childEnv = (env: Record<string, string>): Record<string, string> => {
  const inherited = Object.entries(Deno.env.toObject()).filter(([name]) =>
    !GATEWAY_VARIABLES.includes(name) && !name.startsWith("SLUICE_")
  )
  return { ...Object.fromEntries(inherited), HOST: "127.0.0.1", ...env }
}

/** The permissions of `deno task start` (deno.json). */
export const PERMISSIONS = ["--allow-net", "--allow-env", "--allow-read", "--allow-write", "--allow-sys"]

/** A loopback TCP port that was free a moment ago. */
export const freePort = (): number => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 })
  const port = (listener.addr as Deno.NetAddr).port
  listener.close()
  return port
}

/** Writes `text` to a new file named `name` in a new temporary directory; returns its path and a cleanup. */
export const writeTempFile = async (
  name: string,
  text: string
): Promise<{ readonly path: string; readonly directory: string; readonly remove: () => Promise<void> }> => {
  const directory = await Deno.makeTempDir({ prefix: "sluice_test_" })
  const path = `${directory}/${name}`
  await Deno.writeTextFile(path, text)
  return { path, directory, remove: () => Deno.remove(directory, { recursive: true }).catch(() => undefined) }
}

/** What a finished `src/main.ts` run left behind. */
export interface MainResult {
  readonly code: number
  readonly stderr: string
}

/**
 * Runs `src/main.ts` to completion with `env` (on top of this process's
 * environment minus the gateway's variables: no inherited `DATABASE_URL`,
 * `PORT` or `SLUICE_*`).
 */
export const runMain = async (env: Record<string, string>): Promise<MainResult> => {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...PERMISSIONS, MAIN],
    cwd: ROOT,
    env: childEnv(env),
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    stderr: "piped"
  }).output()
  return { code: output.code, stderr: new TextDecoder().decode(output.stderr) }
}

/** A running `src/main.ts`. */
export interface MainProcess {
  readonly url: string
  /** Sends a signal to the process. */
  readonly signal: (signal: Deno.Signal) => void
  /** Waits for the process to exit; resolves with its exit code and everything it wrote to stderr. */
  readonly exited: Promise<MainResult>
  /** Kills the process if it still runs and waits for it (for `finally` blocks). */
  readonly kill: () => Promise<void>
  /** Everything the process wrote to stdout so far (its access log and log lines). */
  readonly stdout: () => string
}

/**
 * Starts `src/main.ts` on a free port with `env` and waits until `/healthz`
 * answers 200 (at most `timeoutMs`, default 60 s). Throws with the child's
 * stderr when it exits or times out first.
 */
export const startMain = async (
  env: Record<string, string>,
  timeoutMs = 60_000,
  permissions: ReadonlyArray<string> = PERMISSIONS
): Promise<MainProcess> => {
  const port = freePort()
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...permissions, MAIN],
    cwd: ROOT,
    env: childEnv({ PORT: String(port), ...env }),
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped"
  }).spawn()
  let stderr = ""
  let stdout = ""
  const reading = (async () => {
    const decoder = new TextDecoder()
    const out = new TextDecoder()
    await Promise.all([
      (async () => {
        for await (const chunk of child.stderr) stderr += decoder.decode(chunk, { stream: true })
      })(),
      (async () => {
        for await (const chunk of child.stdout) stdout += out.decode(chunk, { stream: true })
      })()
    ])
  })()
  let done = false
  const exited = child.status.then(async (status) => {
    done = true
    await reading
    return { code: status.code, stderr }
  })
  const url = `http://127.0.0.1:${port}`
  const kill = async () => {
    if (!done) {
      try {
        child.kill("SIGKILL")
      } catch {
        // already gone
      }
    }
    await exited
  }
  const deadline = Date.now() + timeoutMs
  while (true) {
    if (done) {
      const result = await exited
      throw new Error(`src/main.ts exited with ${result.code} before it was ready: ${result.stderr}`)
    }
    if (Date.now() > deadline) {
      await kill()
      throw new Error(`src/main.ts was not ready within ${timeoutMs} ms: ${stderr}`)
    }
    const healthy = await fetch(`${url}/healthz`).then(
      async (response) => {
        await response.body?.cancel()
        return response.status === 200
      },
      () => false
    )
    if (healthy) break
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return { url, signal: (signal) => child.kill(signal), exited, kill, stdout: () => stdout }
}
