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
import { Result } from "effect"
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
  startTrapProxy,
  throughTrap,
  toolPrompt
} from "./Agents.ts"

const KEY = "sk-test-agents-0001"

/**
 * The gateway for one run: `model` served by the channel of type `type` only (so its name can be the one each CLI
 * knows: Codex sends its full tool set, `apply_patch` as a freeform custom tool included, only for a model it
 * knows), the other two types beside it.
 */
const config = (model: string, type: ChannelType, upstreamSocket = false) => (emulatorUrl: string) => {
  const channel = (channelType: ChannelType, settings: Record<string, unknown> = {}) => ({
    name: CHANNEL_NAMES[channelType],
    type: channelType,
    base_url: emulatorUrl,
    keys: [`sk-test-upstream-${channelType}`],
    models: [channelType === type ? model : `other-${channelType}`],
    settings
  })
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: {
        [model]: { input: 2.5, output: 10 },
        "other-openai": { input: 1, output: 1 },
        "other-anthropic": { input: 1, output: 1 },
        "other-gemini": { input: 1, output: 1 }
      },
      // The openai channel speaks Responses (`responses_api`): Codex's requests reach it as sent.
      // With `upstreamSocket`, a client's Responses socket reaches it over its own upstream socket.
      channels: [
        channel("openai", { responses_api: true, ...(upstreamSocket ? { responses_websocket: true } : {}) }),
        channel("anthropic"),
        channel("gemini")
      ],
      users: [{ username: "agent", group: "default", quota: 100_000_000, tokens: [{ name: "agents", key: KEY }] }]
    }),
    "agents.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

type ChannelType = "openai" | "anthropic" | "gemini"

const CHANNEL_NAMES: Readonly<Record<ChannelType, string>> = {
  openai: "emu-openai",
  anthropic: "emu-anthropic",
  gemini: "emu-gemini"
}

/** The model name each CLI is run with: one it knows, so it sends what it sends to the vendor's own models. */
const AGENT_MODELS: Readonly<Record<AgentName, string>> = {
  claude: "claude-demo",
  codex: "gpt-5.5",
  gemini: "gemini-3.1-pro-preview"
}

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

type Body = Record<string, unknown>

const bodies = (gateway: TestGateway): ReadonlyArray<Body> =>
  gateway.emulator.requests.map((request) => (request.body ?? {}) as Body)

/**
 * What each agent's requests must look like upstream, beyond the round trip (issue 26's fields): Claude Code's
 * system message, `context_management` and betas reach an anthropic channel and nothing else; Codex's custom
 * `apply_patch` tool, `store: false`, `include` and `prompt_cache_key` reach a Responses channel as sent, and its
 * reasoning comes back in a form the next turn replays on every type (a signed thinking block, a signed thought, an
 * encrypted reasoning item); Gemini CLI's `thinkingLevel` reaches a gemini channel.
 */
const checkFields = (agent: AgentName, type: ChannelType, gateway: TestGateway) => {
  const sent = bodies(gateway)
  const last = sent[sent.length - 1]
  const json = JSON.stringify(sent)
  const betas = gateway.emulator.requests.map((request) => request.headers["anthropic-beta"])
  if (agent === "claude") {
    if (type === "anthropic") {
      ok(sent.every((body) => (body.messages as Array<Body>).some((message) => message.role === "system")))
      ok(sent.every((body) => body.context_management !== undefined))
      ok(betas.every((beta) => beta?.includes("claude-code-20250219")))
    } else {
      ok(betas.every((beta) => beta === undefined))
      ok(!json.includes("context_management"))
    }
  }
  if (agent === "codex") {
    if (type === "openai") {
      ok((last.tools as Array<Body>).some((tool) => tool.type === "custom" && tool.name === "apply_patch"))
      strictEqual(last.store, false)
      deepStrictEqual(last.include, ["reasoning.encrypted_content"])
      strictEqual(typeof last.prompt_cache_key, "string")
      ok((last.input as Array<Body>).some((item) => item.type === "reasoning" && item.encrypted_content !== undefined))
    } else if (type === "anthropic") {
      const assistant = (last.messages as Array<Body>).find((message) => message.role === "assistant")
      const first = (assistant?.content as Array<Body>)[0]
      strictEqual(first.type, "thinking")
      ok(typeof first.signature === "string" && first.signature !== "")
    } else {
      const model = (last.contents as Array<Body>).find((content) => content.role === "model")
      ok((model?.parts as Array<Body>).some((part) => typeof part.thoughtSignature === "string"))
    }
  }
  if (agent === "gemini" && type === "gemini") {
    strictEqual(((last.generationConfig as Body).thinkingConfig as Body).thinkingLevel, "HIGH")
  }
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
    for (const type of ["openai", "anthropic", "gemini"] as const) {
      const pkg = AGENT_PACKAGES[agent]
      const model = AGENT_MODELS[agent]
      const channel = CHANNEL_NAMES[type]
      Deno.test(
        `${pkg.name}@${pkg.version} completes a tool round trip on ${model} served by the ${type} channel, every request 2xx and billed`,
        async () => {
          const gateway = await startGateway({ config: config(model, type), store: "postgres" })
          const home = await Deno.makeTempDir({ prefix: `sluice-agent-${agent}-` })
          try {
            const marker = `marker-${crypto.randomUUID()}`
            await Deno.writeTextFile(`${home}/note.txt`, `${marker}\n`)
            const run = RUNS[agent](gateway.url, KEY, model, home, toolPrompt(agent, "note.txt"))
            const trap = startTrapProxy()
            const result = await runAgent(installed.bins[agent], throughTrap(run, trap.url), home, 180_000)
              .finally(() => trap.close())
            // Telemetry, update checks and other non-essential traffic are off: nothing but the gateway was called.
            deepStrictEqual(trap.attempts, [], "traffic beyond the gateway")
            const said = `exit ${result.code}\nstdout:\n${result.stdout.slice(-3000)}\nstderr:\n${
              result.stderr.slice(-3000)
            }`
            strictEqual(result.code, 0, said)
            ok(result.stdout.includes("Tool result:"), said)
            ok(result.stdout.includes(marker), said)

            checkFields(agent, type, gateway)
            // The tool's output reached the upstream in the agent's second turn.
            const upstream = gateway.emulator.requests.filter((request) =>
              (JSON.stringify(request.body) ?? "").includes(marker)
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

  // Codex edits through `apply_patch`, a custom (freeform grammar) tool: as sent on a Responses channel, offered as a
  // function with one string argument on the others, its call answered back as a `custom_tool_call`.
  for (const type of ["openai", "anthropic", "gemini"] as const) {
    const pkg = AGENT_PACKAGES.codex
    const model = AGENT_MODELS.codex
    Deno.test(
      `${pkg.name}@${pkg.version} edits a file with its custom apply_patch tool on ${model} served by the ${type} channel`,
      async () => {
        const gateway = await startGateway({ config: config(model, type), store: "postgres" })
        const home = await Deno.makeTempDir({ prefix: "sluice-agent-patch-" })
        try {
          const marker = `marker-${crypto.randomUUID()}`
          await Deno.writeTextFile(`${home}/note.txt`, `${marker}\n`)
          const patch =
            `*** Begin Patch\n*** Update File: note.txt\n@@\n-${marker}\n+patched-${marker}\n*** End Patch\n`
          const prompt = `tool:apply_patch ${JSON.stringify({ input: patch })}`
          const trap = startTrapProxy()
          const result = await runAgent(
            installed.bins.codex,
            throughTrap(codexRun(gateway.url, KEY, model, home, prompt), trap.url),
            home,
            180_000
          ).finally(() => trap.close())
          deepStrictEqual(trap.attempts, [], "traffic beyond the gateway")
          const said = `exit ${result.code}\nstdout:\n${result.stdout.slice(-3000)}\nstderr:\n${
            result.stderr.slice(-3000)
          }`
          strictEqual(result.code, 0, said)
          ok(result.stdout.includes("Tool result:"), said)
          strictEqual(await Deno.readTextFile(`${home}/note.txt`), `patched-${marker}\n`, said)
          const sent = bodies(gateway)
          const last = sent[sent.length - 1]
          if (type === "openai") {
            ok((last.input as Array<Body>).some((item) => item.type === "custom_tool_call" && item.input === patch))
            ok((last.input as Array<Body>).some((item) => item.type === "custom_tool_call_output"))
          } else {
            // The call went back upstream as the function call it was translated from, its input whole.
            const calls = type === "anthropic"
              ? (last.messages as Array<Body>).flatMap((message) =>
                Array.isArray(message.content) ? message.content as Array<Body> : []
              ).filter((block) => block.type === "tool_use").map((block) => [block.name, block.input])
              : (last.contents as Array<Body>).flatMap((content) => content.parts as Array<Body>)
                .filter((part) => part.functionCall !== undefined)
                .map((part) => [(part.functionCall as Body).name, (part.functionCall as Body).args])
            deepStrictEqual(calls, [["apply_patch", { input: patch }]])
            const offered = JSON.stringify(last.tools)
            ok(offered.includes('"apply_patch"') && offered.includes("The tool's raw input"), offered.slice(0, 500))
          }
          const lines = accessLines(gateway.logs)
          deepStrictEqual(lines.filter((line) => line.status < 200 || line.status >= 300), [])
          const generations = lines.filter((line) => GENERATION_ROUTES.has(line.route))
          ok(
            generations.length >= 2 &&
              generations.every((line) => line.cost > 0 && line.channel === CHANNEL_NAMES[type])
          )
        } finally {
          await gateway.close()
          await Deno.remove(home, { recursive: true }).catch(() => {})
        }
      }
    )
  }
}

// Codex over the Responses API's WebSocket transport (`supports_websockets`): its turns run as `response.create`
// events on one socket at `/v1/responses`, each billed as a response of its own, on a Responses channel (over HTTP,
// and over the channel's own upstream socket, `responses_websocket`) and on a translated one.
if (installed._tag !== "RegistryUnreachable") {
  for (const [type, upstreamSocket] of [["openai", false], ["openai", true], ["anthropic", false]] as const) {
    const pkg = AGENT_PACKAGES.codex
    const model = AGENT_MODELS.codex
    Deno.test(
      `${pkg.name}@${pkg.version} completes a tool round trip over the Responses WebSocket on the ${type} channel${
        upstreamSocket ? " over its upstream socket" : ""
      }`,
      async () => {
        const gateway = await startGateway({ config: config(model, type, upstreamSocket), store: "postgres" })
        const home = await Deno.makeTempDir({ prefix: "sluice-agent-socket-" })
        try {
          const marker = `marker-${crypto.randomUUID()}`
          await Deno.writeTextFile(`${home}/note.txt`, `${marker}\n`)
          const trap = startTrapProxy()
          const result = await runAgent(
            installed.bins.codex,
            throughTrap(codexRun(gateway.url, KEY, model, home, toolPrompt("codex", "note.txt"), true), trap.url),
            home,
            180_000
          ).finally(() => trap.close())
          deepStrictEqual(trap.attempts, [], "traffic beyond the gateway")
          const said = `exit ${result.code}\nstdout:\n${result.stdout.slice(-3000)}\nstderr:\n${
            result.stderr.slice(-3000)
          }`
          strictEqual(result.code, 0, said)
          ok(result.stdout.includes(marker), said)
          // The socket's line is written when it closes, after Codex exits.
          let sockets: ReadonlyArray<{ socket_id: string; route: string; responses: number }> = []
          for (let tries = 0; sockets.length === 0 && tries < 50; tries++) {
            await new Promise((resolve) => setTimeout(resolve, 100))
            sockets = gateway.logs.flatMap((line) => {
              try {
                const parsed = JSON.parse(line) as { msg?: string; socket_id: string; route: string; responses: number }
                return parsed.msg === "socket" ? [parsed] : []
              } catch {
                return []
              }
            })
          }
          ok(sockets.length >= 1 && sockets.every((socket) => socket.route === "/v1/responses"), said)
          const lines = accessLines(gateway.logs)
          const onSocket = lines.filter((line) =>
            line.route === "/v1/responses" &&
            sockets.some((socket) => line.request_id.startsWith(`${socket.socket_id}.`))
          )
          ok(onSocket.length >= 2, `expected a tool call and an answer on the socket, got ${JSON.stringify(lines)}`)
          strictEqual(onSocket.length, sockets.reduce((sum, socket) => sum + socket.responses, 0))
          for (const line of onSocket) {
            strictEqual(line.status, 200)
            strictEqual(line.channel, CHANNEL_NAMES[type])
            ok(line.cost > 0, `unbilled: ${JSON.stringify(line)}`)
          }
          // Every response on the socket has its usage row, under its access line's id, at the cost that line reported.
          const rows = await waitForUsageRows(gateway, onSocket.map((line) => line.request_id))
          for (const line of onSocket) {
            const row = rows.find((candidate) => candidate.request_id === line.request_id)
            ok(row !== undefined, `no usage row for ${line.request_id}`)
            strictEqual(Number(row.cost), line.cost)
            strictEqual(row.status, 200)
          }
          ok(
            gateway.emulator.requests.some((request) => (JSON.stringify(request.body) ?? "").includes(marker)),
            "the tool's output reached the upstream"
          )
          if (upstreamSocket) {
            const creates = gateway.emulator.requests.filter((request) =>
              request.path === "/v1/responses" && request.method === "POST"
            )
            ok(
              creates.length >= 2 && creates.every((request) => request.transport === "websocket"),
              `every turn over the upstream socket: ${JSON.stringify(creates.map((request) => request.transport))}`
            )
          }
        } finally {
          await gateway.close()
          await Deno.remove(home, { recursive: true }).catch(() => {})
        }
      }
    )
  }
}
