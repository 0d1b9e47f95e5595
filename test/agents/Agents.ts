/**
 * The three coding-agent CLIs the agents test drives (Claude Code, Codex CLI, Gemini CLI): their npm packages at
 * pinned versions, installed once into a cache outside the repository, and how each one is pointed at a gateway on
 * loopback with its telemetry, update checks and other non-essential traffic switched off.
 */
import { join } from "node:path"

/** Which CLI. */
export type AgentName = "claude" | "codex" | "gemini"

/** A CLI's npm package, pinned, and the name of its executable in `node_modules/.bin`. */
export interface AgentPackage {
  readonly name: string
  readonly version: string
  readonly bin: string
}

/** The pinned versions (the newest published when the test was written; each package ships a native binary). */
export const AGENT_PACKAGES: Readonly<Record<AgentName, AgentPackage>> = {
  claude: { name: "@anthropic-ai/claude-code", version: "2.1.332", bin: "claude" },
  codex: { name: "@openai/codex", version: "0.171.0", bin: "codex" },
  gemini: { name: "@google/gemini-cli", version: "0.61.0", bin: "gemini" }
}

/** Where the CLIs are cached: `SLUICE_AGENTS_CACHE`, else `$HOME/.cache/sluice-agents`. */
export const cacheRoot = (): string =>
  Deno.env.get("SLUICE_AGENTS_CACHE") ?? join(Deno.env.get("HOME") ?? "/tmp", ".cache", "sluice-agents")

/** The install directory of one package: `<cache>/<scope>+<name>@<version>`. */
export const installDir = (agent: AgentPackage): string =>
  join(cacheRoot(), `${agent.name.replace("/", "+")}@${agent.version}`)

/** The executable of an installed package. */
export const binOf = (agent: AgentPackage): string => join(installDir(agent), "node_modules", ".bin", agent.bin)

const exists = async (path: string): Promise<boolean> => {
  try {
    await Deno.stat(path)
    return true
  } catch {
    return false
  }
}

/** The version recorded in an installed package's `package.json`, if it is there. */
const installedVersion = async (agent: AgentPackage): Promise<string | undefined> => {
  try {
    const text = await Deno.readTextFile(join(installDir(agent), "node_modules", agent.name, "package.json"))
    const version = (JSON.parse(text) as { version?: unknown }).version
    return typeof version === "string" ? version : undefined
  } catch {
    return undefined
  }
}

const npm = async (args: ReadonlyArray<string>, timeoutMs: number) => {
  const output = await new Deno.Command("npm", {
    args: [...args],
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(timeoutMs)
  }).output().catch((error: unknown) => ({
    success: false,
    stdout: new Uint8Array(),
    stderr: new TextEncoder().encode(String(error))
  }))
  return {
    success: output.success,
    text: new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr)
  }
}

/** What installing the CLIs gave: each executable, or why the registry could not be reached. */
export type Installed =
  | { readonly _tag: "Ready"; readonly bins: Readonly<Record<AgentName, string>> }
  | { readonly _tag: "RegistryUnreachable"; readonly reason: string }

/**
 * Installs each CLI at its pinned version into its cache directory with `npm install --prefix` (skipped when the
 * cache already holds that version). When an install fails, the registry is asked for the package's version: if
 * that fails too, the registry is unreachable (the caller skips, saying so); otherwise the install error is thrown.
 */
export const installAgents = async (): Promise<Installed> => {
  const bins: Partial<Record<AgentName, string>> = {}
  for (const [name, agent] of Object.entries(AGENT_PACKAGES) as Array<[AgentName, AgentPackage]>) {
    const bin = binOf(agent)
    if (await installedVersion(agent) !== agent.version || !(await exists(bin))) {
      await Deno.mkdir(installDir(agent), { recursive: true })
      const spec = `${agent.name}@${agent.version}`
      const install = await npm(
        ["install", "--prefix", installDir(agent), "--no-audit", "--no-fund", "--loglevel=error", spec],
        600_000
      )
      if (!install.success) {
        const reachable = await npm(["view", spec, "version"], 60_000)
        if (!reachable.success) {
          return { _tag: "RegistryUnreachable", reason: `npm view ${spec}: ${reachable.text.trim().slice(0, 300)}` }
        }
        throw new Error(`npm install ${spec} failed:\n${install.text.slice(0, 2000)}`)
      }
    }
    if (!(await exists(bin))) throw new Error(`${agent.name}@${agent.version} has no ${agent.bin} executable`)
    bins[name] = bin
  }
  return { _tag: "Ready", bins: bins as Record<AgentName, string> }
}

/** The environment every CLI run starts from: only `PATH`, a private `HOME`, a dumb terminal, no proxies. */
const baseEnv = (home: string): Record<string, string> => ({
  PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
  HOME: home,
  TERM: "dumb",
  NO_COLOR: "1",
  NO_PROXY: "127.0.0.1,localhost",
  no_proxy: "127.0.0.1,localhost",
  CI: "1"
})

/** One CLI run: the command line, its environment and the files to write first (paths under the run's `HOME`). */
export interface AgentRun {
  readonly args: ReadonlyArray<string>
  readonly env: Record<string, string>
  readonly files: Readonly<Record<string, string>>
}

/**
 * Claude Code in print mode (`-p`, JSON result) against `gateway` with `key`, every model slot on `model`:
 * `ANTHROPIC_BASE_URL` and `ANTHROPIC_API_KEY`; `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC` (telemetry, error
 * reports, update checks, feedback), with `DISABLE_TELEMETRY`, `DISABLE_AUTOUPDATER`, `DISABLE_ERROR_REPORTING`
 * and `DISABLE_BUG_COMMAND` spelled out too. `Bash` is allowed without asking (no `--dangerously-skip-permissions`:
 * it refuses to run as root).
 */
export const claudeRun = (gateway: string, key: string, model: string, home: string, prompt: string): AgentRun => ({
  args: ["-p", prompt, "--output-format", "json", "--allowedTools", "Bash", "--max-turns", "4"],
  env: {
    ...baseEnv(home),
    CLAUDE_CONFIG_DIR: join(home, ".claude"),
    ANTHROPIC_BASE_URL: gateway,
    ANTHROPIC_API_KEY: key,
    ANTHROPIC_MODEL: model,
    ANTHROPIC_SMALL_FAST_MODEL: model,
    ANTHROPIC_DEFAULT_HAIKU_MODEL: model,
    ANTHROPIC_DEFAULT_SONNET_MODEL: model,
    ANTHROPIC_DEFAULT_OPUS_MODEL: model,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_TELEMETRY: "1",
    DISABLE_AUTOUPDATER: "1",
    DISABLE_ERROR_REPORTING: "1",
    DISABLE_BUG_COMMAND: "1"
  },
  files: {}
})

/**
 * Codex's `config.toml` for a gateway: a `sluice` provider on the Responses wire (`wire_api = "responses"`) at
 * `<gateway>/v1`, its key from `SLUICE_API_KEY`, no retries; reasoning on (`high`, with summaries), so a translated
 * channel's reasoning must come back in a form the next turn replays (`store: false` with
 * `include: ["reasoning.encrypted_content"]`, as Codex sends); no plugin, app or skill catalog fetched (from
 * chatgpt.com and GitHub, which Codex 0.171 otherwise contacts at start); no update check, analytics, feedback or OpenTelemetry
 * export; commands run without approval or sandbox (the test's own temporary directory). `websocket`: the provider
 * takes the Responses API's WebSocket transport (`supports_websockets`, with the `responses_websockets` feature on),
 * so Codex runs its turns over one socket at `<gateway>/v1/responses`.
 */
export const codexConfig = (gateway: string, websocket = false): string =>
  `model_provider = "sluice"
model_reasoning_effort = "high"
model_reasoning_summary = "auto"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.sluice]
name = "Sluice"
base_url = "${gateway}/v1"
env_key = "SLUICE_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
${websocket ? "supports_websockets = true\n" : ""}
[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"

[features]
plugins = false
remote_plugin = false
plugin_sharing = false
apps = false
tool_suggest = false
in_app_updates = false
${websocket ? "responses_websockets = true\n" : ""}`

/** Codex CLI non-interactive (`codex exec`) against `gateway`, configured by `codexConfig` (`websocket` as there). */
export const codexRun = (
  gateway: string,
  key: string,
  model: string,
  home: string,
  prompt: string,
  websocket = false
): AgentRun => ({
  args: ["exec", "--skip-git-repo-check", "-m", model, prompt],
  env: { ...baseEnv(home), CODEX_HOME: join(home, ".codex"), SLUICE_API_KEY: key },
  files: { ".codex/config.toml": codexConfig(gateway, websocket) }
})

/**
 * Gemini CLI's `settings.json`: API-key auth, no usage statistics, telemetry, auto-update or update notice.
 */
export const geminiSettings = {
  security: { auth: { selectedType: "gemini-api-key" } },
  privacy: { usageStatisticsEnabled: false },
  telemetry: { enabled: false },
  general: { enableAutoUpdate: false, enableAutoUpdateNotification: false }
}

/**
 * Gemini CLI in headless mode (`-p`, `--yolo`) against `gateway`: `GOOGLE_GEMINI_BASE_URL` and `GEMINI_API_KEY`;
 * the working directory trusted (`GEMINI_CLI_TRUST_WORKSPACE`), no relaunch of itself, telemetry off.
 */
export const geminiRun = (gateway: string, key: string, model: string, home: string, prompt: string): AgentRun => ({
  args: ["-m", model, "-p", prompt, "--yolo"],
  env: {
    ...baseEnv(home),
    GOOGLE_GEMINI_BASE_URL: gateway,
    GEMINI_API_KEY: key,
    GEMINI_CLI_TRUST_WORKSPACE: "true",
    GEMINI_CLI_NO_RELAUNCH: "true",
    GEMINI_TELEMETRY_ENABLED: "false"
  },
  files: { ".gemini/settings.json": JSON.stringify(geminiSettings, null, 2) }
})

/** The prompt that makes the emulator call each CLI's own tool on `file` (`tool:<name> {json}`, `Answer.ts`). */
export const toolPrompt = (agent: AgentName, file: string): string => {
  switch (agent) {
    case "claude":
      return `tool:Bash ${JSON.stringify({ command: `cat ${file}`, description: "Read the note" })}`
    case "codex":
      return `tool:exec_command ${JSON.stringify({ cmd: `cat ${file}` })}`
    case "gemini":
      return `tool:read_file ${JSON.stringify({ file_path: file })}`
  }
}

/** What a run printed and how it ended. */
export interface RunResult {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** Runs `bin` with `run` in `home` (also the working directory), killed after `timeoutMs`. */
export const runAgent = async (bin: string, run: AgentRun, home: string, timeoutMs: number): Promise<RunResult> => {
  for (const [path, text] of Object.entries(run.files)) {
    const full = join(home, path)
    await Deno.mkdir(join(full, ".."), { recursive: true })
    await Deno.writeTextFile(full, text)
  }
  const output = await new Deno.Command(bin, {
    args: [...run.args],
    cwd: home,
    env: run.env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(timeoutMs)
  }).output()
  return {
    code: output.code,
    stdout: new TextDecoder().decode(output.stdout),
    stderr: new TextDecoder().decode(output.stderr)
  }
}

/**
 * A proxy on loopback that lets nothing through: each connection's request line (`CONNECT host:443 HTTP/1.1`, or a
 * plain `GET http://…`) is recorded and answered 403. Runs set `HTTPS_PROXY`, `HTTP_PROXY` and `ALL_PROXY` to it
 * (with loopback in `NO_PROXY`), so any traffic a CLI sends anywhere but the gateway shows up in `attempts`.
 */
export const startTrapProxy = () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 })
  const attempts: Array<string> = []
  const serve = async () => {
    for await (const connection of listener) {
      ;(async () => {
        try {
          const buffer = new Uint8Array(4096)
          const read = await connection.read(buffer)
          const head = new TextDecoder().decode(buffer.subarray(0, read ?? 0))
          attempts.push(head.split("\r\n")[0].slice(0, 200))
          await connection.write(new TextEncoder().encode("HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n"))
        } catch {
          // A client that went away: nothing to record.
        } finally {
          try {
            connection.close()
          } catch {
            // Already closed.
          }
        }
      })()
    }
  }
  const served = serve().catch(() => {})
  const url = `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`
  return {
    url,
    attempts,
    close: async () => {
      listener.close()
      await served
    }
  }
}

/** `run` with every proxy variable pointing at `proxy` (loopback exempt). */
export const throughTrap = (run: AgentRun, proxy: string): AgentRun => ({
  ...run,
  env: {
    ...run.env,
    HTTPS_PROXY: proxy,
    https_proxy: proxy,
    HTTP_PROXY: proxy,
    http_proxy: proxy,
    ALL_PROXY: proxy,
    all_proxy: proxy
  }
})
