/**
 * The peer gateway of `deno task bench --peers`: Portkey's open-source AI
 * gateway (npm `@portkey-ai/gateway`, github.com/Portkey-AI/gateway), the
 * exact version pinned in `bench/peers/package.json` and its lockfile,
 * installed into `bench/peers/node_modules` with `npm ci` from the npm registry
 * alone (install scripts off: the package's only one is `patch-package`, with
 * no patches shipped), and run on Node.js as its README says
 * (`node build/start-server.js --port=<port> --headless`, `NODE_ENV=production`).
 * Nothing here is imported by Sluice, and CI does not run it.
 *
 * Portkey is routed to the emulator per request by headers
 * (portkey.ai/docs/api-reference/inference-api/headers): `x-portkey-provider:
 * openai` and `x-portkey-custom-host: <emulator>/v1`
 * (portkey.ai/docs/product/ai-gateway/custom-hosts: 127.0.0.1 is in the
 * self-hosted gateway's default `TRUSTED_CUSTOM_HOSTS`); the caller's bearer
 * token is sent to the provider as its key.
 *
 * @since 0.1.0
 */
import { freePort, type Started, type Supervisor } from "./Processes.ts"

/** The folder holding the peers' `package.json`, lockfile and (once installed) `node_modules`. @category constants */
export const peersDir = new URL("./peers/", import.meta.url).pathname

/** The Portkey version the lockfile pins (read from `bench/peers/package.json`). @category peers */
export const portkeyVersion = async (): Promise<string> => {
  const manifest: { dependencies?: Record<string, string> } = JSON.parse(
    await Deno.readTextFile(`${peersDir}package.json`)
  )
  const version = manifest.dependencies?.["@portkey-ai/gateway"]
  if (version === undefined) throw new Error("bench/peers/package.json does not name @portkey-ai/gateway.")
  return version
}

const run = async (command: string, args: ReadonlyArray<string>, cwd: string) => {
  const output = await new Deno.Command(command, { args: [...args], cwd, stdout: "piped", stderr: "piped" })
    .output()
    .catch((error: Error) => error)
  if (output instanceof Error) return { ok: false, text: output.message }
  const text = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr)
  return { ok: output.success, text }
}

/**
 * `node --version` (e.g. `v20.20.2`). Fails, saying how to install it, when
 * Node.js is missing.
 *
 * @category peers
 */
export const nodeVersion = async (): Promise<string> => {
  const result = await run("node", ["--version"], peersDir)
  if (!result.ok) {
    throw new Error(
      "Node.js is needed to run Portkey (`deno task bench --peers`) and was not found: install Node.js 20 or later."
    )
  }
  return result.text.trim()
}

/** The installed Portkey's entry point, installing it with `npm ci` first when it is missing. @category peers */
export const ensurePortkey = async (progress: (message: string) => void): Promise<string> => {
  const version = await portkeyVersion()
  const entry = `${peersDir}node_modules/@portkey-ai/gateway/build/start-server.js`
  const installed: { version?: string } | undefined = await Deno.readTextFile(
    `${peersDir}node_modules/@portkey-ai/gateway/package.json`
  ).then(JSON.parse, () => undefined)
  if (installed?.version === version) return entry
  progress(`Installing @portkey-ai/gateway@${version} into bench/peers (npm ci, from the npm registry)`)
  const result = await run("npm", ["ci", "--ignore-scripts", "--no-audit", "--no-fund"], peersDir)
  if (!result.ok) throw new Error(`npm ci in bench/peers failed:\n${result.text.slice(-2000)}`)
  return entry
}

/**
 * Starts Portkey on a free loopback port. It answers `GET /` with 200 once it
 * listens (its own health route), which `waitHealthy` can poll.
 *
 * @category peers
 */
export const startPortkey = async (supervisor: Supervisor, entry: string): Promise<Started> => {
  const port = freePort()
  const managed = await supervisor.start({
    name: "portkey",
    command: "node",
    args: [entry, `--port=${port}`, "--headless"],
    cwd: peersDir,
    // Production mode: no request-log page kept in memory for the local console.
    env: { NODE_ENV: "production" }
  })
  return { managed, url: `http://127.0.0.1:${port}` }
}

/**
 * The headers that route a Portkey request to the OpenAI-format emulator at
 * `emulatorUrl` with `upstreamKey` as the provider key.
 *
 * @category peers
 */
export const portkeyHeaders = (emulatorUrl: string, upstreamKey: string): Record<string, string> => ({
  Authorization: `Bearer ${upstreamKey}`,
  "x-portkey-provider": "openai",
  "x-portkey-custom-host": `${emulatorUrl}/v1`
})
