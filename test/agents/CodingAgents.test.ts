/**
 * The published coding agents through the gateway, for real: Claude Code, Codex CLI and Gemini CLI (npm, pinned in
 * `Agents.ts`, cached outside the repository) each run in print mode on a model of each upstream type (an `openai`
 * channel on the Responses wire, an `anthropic` and a `gemini` channel, all on the emulator). The prompt makes the
 * emulator answer with a call of the agent's own tool (`tool:<name> {json}`, `Answer.ts`) that reads a file holding a
 * fresh marker; the agent runs it and sends the output back; the emulator answers `Tool result: <output>`, which the
 * agent prints. So the marker in the agent's output proves the whole tool round trip. Every request the agent made
 * is answered 2xx, and every generation is billed (a usage row with its cost).
 *
 * Run with `deno task test:agents` (its own CI step). When the npm registry cannot be reached and the CLIs are not
 * cached, the tests are registered as ignored under a name that says why.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { startGateway, type TestGateway } from "../support/Gateway.ts"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import {
  AGENT_PACKAGES,
  type AgentName,
  type AgentRun,
  claudeRun,
  codexRun,
  geminiRun,
  installAgents,
  runAgent,
  toolPrompt
} from "./Agents.ts"

const KEY = "sk-test-agents-0001"

const config = (emulatorUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: {
        "gpt-demo": { input: 2.5, output: 10 },
        "claude-demo": { input: 3, output: 15 },
        "gemini-demo": { input: 1.25, output: 5 }
      },
      channels: [
        {
          name: "emu-openai",
          type: "openai",
          base_url: emulatorUrl,
          keys: ["sk-test-upstream-openai"],
          models: ["gpt-demo"],
          settings: { responses_api: true }
        },
        {
          name: "emu-anthropic",
          type: "anthropic",
          base_url: emulatorUrl,
          keys: ["sk-test-upstream-anthropic"],
          models: ["claude-demo"]
        },
        {
          name: "emu-gemini",
          type: "gemini",
          base_url: emulatorUrl,
          keys: ["sk-test-upstream-gemini"],
          models: ["gemini-demo"]
        }
      ],
      users: [{ username: "agent", group: "default", quota: 100_000_000, tokens: [{ name: "agents", key: KEY }] }]
    }),
    "agents.json"
  )
  if (!parsed.ok) throw new Error(parsed.message)
  return parsed.file
}

const MODELS: ReadonlyArray<readonly [string, string]> = [
  ["gpt-demo", "emu-openai"],
  ["claude-demo", "emu-anthropic"],
  ["gemini-demo", "emu-gemini"]
]

const RUNS: Readonly<
  Record<AgentName, (gateway: string, key: string, model: string, home: string, prompt: string) => AgentRun>
> = { claude: claudeRun, codex: codexRun, gemini: geminiRun }

/** One access-log line of the gateway (`AccessLog.ts`). */
interface AccessLine {
  readonly msg: string
  readonly request_id: string
  readonly route: string
  readonly status: number
  readonly model: string | null
  readonly channel: string | null
  readonly cost: number
}

const accessLines = (lines: ReadonlyArray<string>): ReadonlyArray<AccessLine> =>
  lines.flatMap((line) => {
    try {
      const parsed = JSON.parse(line) as AccessLine
      return parsed.msg === "request" && typeof parsed.route === "string" ? [parsed] : []
    } catch {
      return []
    }
  })

/** The routes that generate (and bill); counting and listing models are free. */
const GENERATION_ROUTES: ReadonlySet<string> = new Set([
  "/v1/messages",
  "/v1/responses",
  "/v1beta/models/{model}:generateContent",
  "/v1beta/models/{model}:streamGenerateContent"
])

const waitForUsageRows = async (gateway: TestGateway, ids: ReadonlyArray<string>) => {
  const quoted = ids.map((id) => `'${id.replaceAll("'", "''")}'`).join(",")
  for (let attempt = 0; attempt < 50; attempt++) {
    const rows = await gateway.query<{ request_id: string; cost: string; status: number; channel_name: string }>(
      `SELECT u.request_id, u.cost::text AS cost, u.status, c.name AS channel_name
       FROM usage_logs u LEFT JOIN channels c ON c.id = u.channel_id WHERE u.request_id IN (${quoted})`
    )
    if (rows.length >= ids.length) return rows
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error("usage rows did not arrive")
}

const installed = await installAgents()

if (installed._tag === "RegistryUnreachable") {
  Deno.test({
    name: `coding agents: SKIPPED, the npm registry is unreachable and the CLIs are not cached (${installed.reason})`,
    ignore: true,
    fn: () => {}
  })
} else {
  for (const agent of ["claude", "codex", "gemini"] as const) {
    for (const [model, channel] of MODELS) {
      const pkg = AGENT_PACKAGES[agent]
      Deno.test(
        `${pkg.name}@${pkg.version} completes a tool round trip on ${model} (${channel}), every request 2xx and billed`,
        async () => {
          const gateway = await startGateway({ config, store: "postgres" })
          const home = await Deno.makeTempDir({ prefix: `sluice-agent-${agent}-` })
          try {
            const marker = `marker-${crypto.randomUUID()}`
            await Deno.writeTextFile(`${home}/note.txt`, `${marker}\n`)
            const run = RUNS[agent](gateway.url, KEY, model, home, toolPrompt(agent, "note.txt"))
            const result = await runAgent(installed.bins[agent], run, home, 180_000)
            const said = `exit ${result.code}\nstdout:\n${result.stdout.slice(-3000)}\nstderr:\n${
              result.stderr.slice(-3000)
            }`
            strictEqual(result.code, 0, said)
            ok(result.stdout.includes("Tool result:"), said)
            ok(result.stdout.includes(marker), said)

            // The tool's output reached the upstream in the agent's second turn.
            const upstream = gateway.emulator.requests.filter((request) =>
              JSON.stringify(request.body).includes(marker)
            )
            ok(upstream.length >= 1, "no upstream request carried the tool's output")

            const lines = accessLines(gateway.logs)
            const failed = lines.filter((line) => line.status < 200 || line.status >= 300)
            deepStrictEqual(failed, [], `requests not answered 2xx: ${JSON.stringify(failed)}`)
            const generations = lines.filter((line) => GENERATION_ROUTES.has(line.route))
            ok(generations.length >= 2, `expected a tool call and an answer, got ${JSON.stringify(lines)}`)
            for (const line of generations) {
              strictEqual(line.model, model)
              strictEqual(line.channel, channel)
              ok(line.cost > 0, `unbilled: ${JSON.stringify(line)}`)
            }
            const rows = await waitForUsageRows(gateway, generations.map((line) => line.request_id))
            for (const line of generations) {
              const row = rows.find((candidate) => candidate.request_id === line.request_id)
              ok(row !== undefined, `no usage row for ${line.request_id}`)
              strictEqual(Number(row.cost), line.cost)
              strictEqual(row.status, 200)
              strictEqual(row.channel_name, channel)
            }
          } finally {
            await gateway.close()
            await Deno.remove(home, { recursive: true }).catch(() => {})
          }
        }
      )
    }
  }
}
