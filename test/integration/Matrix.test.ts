/**
 * The cross-format matrix ("Every inbound format to every upstream type"):
 * each inbound format, through its own SDK, against each upstream channel type
 * on one emulator, non-streamed and streamed, for plain text, a tool call
 * round trip, an image input and reasoning. Each cell checks the answer in the
 * inbound format's own words, what the upstream received in its own wire
 * format, and that the ledger billed exactly the usage the upstream reported
 * (read the way each SDK reads: its stream ends at `[DONE]` / `message_stop` /
 * the last chunk). The `deepseek` column is the emulator's DeepSeek under its
 * `/deepseek` prefix (a base URL with a path): its model has a `cached_input`
 * price, and the second call of each tool round trip hits DeepSeek's context
 * cache, so those prompt tokens are billed at `cached_input`, exactly as many as
 * the emulator reported; DeepSeek's chat takes no images, so it has no image
 * cell (its 400 is `DeepSeek.test.ts`'s). The `azure` column is the emulator's
 * Azure OpenAI under `/azure`, a dated channel (its deployment paths; the v1 API
 * is `Azure.test.ts`'s).  * The `vertex` and `vertex-claude`
 * columns are one `vertex` channel on the emulator's Vertex AI under `/vertex`,
 * with the service-account key the emulator issued (so every call carries an
 * access token from its token endpoint): a Gemini model through generate-content
 * and a `claude…` model through rawPredict. The `bedrock` column is a bedrock channel
 * on the emulator's Bedrock Runtime (under `/bedrock`, SigV4-signed) speaking
 * Converse with Claude, `bedrock-invoke` one with `bedrock_api: invoke` (Claude
 * through InvokeModel with the Messages body, a Bedrock API key). One gateway
 * serves the whole file.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import Anthropic from "@anthropic-ai/sdk"
import { GoogleGenAI } from "@google/genai"
import OpenAI from "openai"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { type RecordedRequest, startEmulator } from "../../emulator/Emulator.ts"
import { startGateway } from "../support/Gateway.ts"
import {
  type Case,
  chatDriver,
  completionsDriver,
  type Driver,
  generateContentDriver,
  IMAGE_TEXT,
  messagesDriver,
  type Mode,
  type Outcome,
  PLAIN_TEXT,
  REASONING_TEXT,
  responsesDriver,
  WEATHER_TOOL
} from "./matrix/Inbound.ts"
import { CHANNEL_OF, checkUpstream, MODEL_OF, PATH_OF, type UpstreamName } from "./matrix/Upstream.ts"

const KEY = "sk-matrix-caller-0001"
const UPSTREAMS: ReadonlyArray<UpstreamName> = [
  "openai",
  "anthropic",
  "gemini",
  "deepseek",
  "azure",
  "vertex",
  "vertex-claude",
  "bedrock",
  "bedrock-invoke"
]

/**
 * The columns whose wire is the Messages API's, or Bedrock's Converse (input excludes cache reads and writes; no
 * thinking token count; the emulator's `sig-` signatures).
 */
const MESSAGES_WIRE: ReadonlySet<UpstreamName> = new Set(["anthropic", "vertex-claude", "bedrock", "bedrock-invoke"])

/** USD per 1M tokens (quota units per token): DeepSeek's model bills cache hits at a quarter of `input`. */
const PRICE_OF: Record<UpstreamName, { input: number; output: number; cached_input?: number }> = {
  openai: { input: 1, output: 2 },
  anthropic: { input: 1, output: 2 },
  gemini: { input: 1, output: 2 },
  deepseek: { input: 1, output: 2, cached_input: 0.25 },
  azure: { input: 1, output: 2 },
  vertex: { input: 1, output: 2 },
  "vertex-claude": { input: 1, output: 2 },
  bedrock: { input: 1, output: 2 },
  "bedrock-invoke": { input: 1, output: 2 }
}

/**
 * The channel of an upstream column: its type, key and settings (vertex: the emulator's project, a service account;
 * bedrock: `CHANNEL_OF`).
 */
const channelOf = (upstream: UpstreamName, serviceAccount: string): Record<string, unknown> =>
  upstream === "vertex" || upstream === "vertex-claude"
    ? { type: "vertex", keys: [serviceAccount], settings: { project: "sluice-test-project" } }
    : CHANNEL_OF[upstream] ?? { type: upstream, keys: [`upstream-key-${upstream}`] }

const matrixConfig = (serviceAccount: string) => (emulatorUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: Object.fromEntries(UPSTREAMS.map((upstream) => [MODEL_OF[upstream], PRICE_OF[upstream]])),
      channels: UPSTREAMS.map((upstream) => ({
        name: `emu-${upstream}`,
        ...channelOf(upstream, serviceAccount),
        base_url: emulatorUrl + PATH_OF[upstream],
        models: [MODEL_OF[upstream]]
      })),
      users: [{
        username: "matrix",
        group: "default",
        quota: 1_000_000_000,
        tokens: [{ name: "main", key: KEY }]
      }]
    }),
    "matrix.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

const assertUsage = (outcome: Outcome, label: string) => {
  ok((outcome.usage.input ?? 0) > 0, `${label}: input tokens in the format's usage field, got ${outcome.usage.input}`)
  ok(
    (outcome.usage.output ?? 0) > 0,
    `${label}: output tokens in the format's usage field, got ${outcome.usage.output}`
  )
}

const assertStreamShape = (driver: Driver, outcome: Outcome) => {
  const events = outcome.events ?? []
  ok(events.length > 0, "the stream carried events")
  switch (driver.name) {
    case "generate-content":
      ok(events.at(-1) !== "chunk", "the last chunk carries the finish reason")
      return
    case "responses":
      strictEqual(events[0], "response.created")
      strictEqual(events.at(-1), "response.completed")
      return
    case "messages":
      strictEqual(events[0], "message_start")
      strictEqual(events.at(-1), "message_stop")
      return
    default:
      return
  }
}

/** Runs one case through `driver` and checks the answer in the inbound format's own terms. */
const runCase = async (driver: Driver, upstream: UpstreamName, mode: Mode, testCase: Case): Promise<void> => {
  const stream = mode !== "non-stream"
  const model = MODEL_OF[upstream]
  const stop = driver.finishWords.stop
  switch (testCase) {
    case "plain text": {
      const outcome = await driver.plain(model, mode)
      strictEqual(outcome.text, `Echo: ${PLAIN_TEXT}`)
      strictEqual(outcome.finish, stop)
      strictEqual(outcome.toolCalls.length, 0)
      assertUsage(outcome, "answer")
      if (stream) assertStreamShape(driver, outcome)
      return
    }
    case "image input": {
      const outcome = await driver.image(model, mode)
      ok(outcome.text.startsWith("I see 1 image(s)"), `image answer, got ${JSON.stringify(outcome.text)}`)
      ok(
        outcome.text.endsWith(`Echo: ${IMAGE_TEXT}`),
        `image answer echoes the text, got ${JSON.stringify(outcome.text)}`
      )
      strictEqual(outcome.finish, stop)
      assertUsage(outcome, "answer")
      if (stream) assertStreamShape(driver, outcome)
      return
    }
    case "reasoning": {
      const outcome = await driver.reasoning(model, mode)
      strictEqual(outcome.reasoning, `Thinking about: ${REASONING_TEXT}`, "reasoning text in the format's own field")
      strictEqual(outcome.text, `Echo: ${REASONING_TEXT}`)
      strictEqual(outcome.finish, stop)
      assertUsage(outcome, "answer")
      if (driver.name === "messages") {
        ok(typeof outcome.signature === "string", "the thinking block carries a signature")
        if (MESSAGES_WIRE.has(upstream)) {
          ok(outcome.signature.startsWith("sig-"), `the upstream signature survives, got ${outcome.signature}`)
        }
      }
      // The emulator's messages usage has no `output_tokens_details.thinking_tokens` and Converse's usage no reasoning
      // count, so those upstreams report none there; the other upstreams do, and the count must reach the caller.
      if (!MESSAGES_WIRE.has(upstream)) {
        ok((outcome.usage.reasoning ?? 0) > 0, `reasoning tokens in the format's usage, got ${outcome.usage.reasoning}`)
      }
      if (stream) assertStreamShape(driver, outcome)
      return
    }
    case "tool call round trip": {
      const { first, second } = await driver.toolRoundTrip(model, mode)
      strictEqual(first.toolCalls.length, 1, "one tool call")
      const call = first.toolCalls[0]
      strictEqual(call.name, WEATHER_TOOL.name)
      ok(typeof call.input === "object" && call.input !== null, "tool arguments are a JSON object")
      strictEqual((call.input as Record<string, unknown>).city, "sample")
      if (driver.name !== "generate-content") ok(call.id.length > 0, "the tool call has an id")
      strictEqual(first.finish, driver.finishWords.toolCalls, "finish reason of a tool call")
      assertUsage(first, "tool call")
      ok(second.text.startsWith("Tool result: "), `answer to the tool result, got ${JSON.stringify(second.text)}`)
      ok(second.text.includes("21"), `the tool result reached the model, got ${JSON.stringify(second.text)}`)
      strictEqual(second.finish, stop)
      assertUsage(second, "answer to the tool result")
      if (stream) {
        assertStreamShape(driver, first)
        assertStreamShape(driver, second)
      }
      return
    }
  }
}

/** The model calls the emulator recorded (POSTs, Vertex AI's token requests left out). */
const upstreamCalls = (requests: ReadonlyArray<RecordedRequest>) =>
  requests.filter((request) => request.method === "POST" && request.path !== "/vertex/token")

/** One usage row as the ledger logged it. */
interface LoggedRow {
  readonly id: string
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly cached_tokens: number
  readonly cost: string
}

/**
 * Billed as the vendor reported: the rows logged for the case (read at once: a delivered answer's charge is
 * durable before its end reaches the caller) carry, summed, the tokens the emulator reported in its answers, in
 * the vendor's terms (Anthropic's input excludes its cache reads and writes), and the cost those tokens price to
 * at the model's price (1 USD input, 2 USD output per million tokens: 1 and 2 quota units a token; DeepSeek's
 * cache hits 0.25 a token, each answer's cost rounded up).
 */
const checkBilledAsReported = async (
  gateway: Awaited<ReturnType<typeof startGateway>>,
  upstream: UpstreamName,
  after: string
): Promise<string> => {
  const reported = gateway.emulator.requests.filter((request) => request.method === "POST" && request.usage)
  ok(reported.length > 0, "the emulator reported usage")
  const expected = reported.reduce(
    (sum, request) => {
      const usage = request.usage!
      const prompt = usage.input + (MESSAGES_WIRE.has(upstream) ? usage.cacheRead + usage.cacheWrite : 0)
      return { prompt: sum.prompt + prompt, completion: sum.completion + usage.output }
    },
    { prompt: 0, completion: 0 }
  )
  const rows = await gateway.query<LoggedRow>(
    `SELECT id::text AS id, prompt_tokens, completion_tokens, cached_tokens, cost::text AS cost FROM usage_logs
     WHERE id > ${after} AND status < 400 ORDER BY usage_logs.id`
  )
  strictEqual(rows.length, reported.length, "one billed row per answer")
  const billed = rows.reduce(
    (sum, row) => ({
      prompt: sum.prompt + row.prompt_tokens,
      completion: sum.completion + row.completion_tokens,
      cost: sum.cost + BigInt(row.cost)
    }),
    { prompt: 0, completion: 0, cost: 0n }
  )
  deepStrictEqual({ prompt: billed.prompt, completion: billed.completion }, expected, "billed tokens = reported")
  if (upstream === "deepseek") {
    // Per answer, in order: the cache hits DeepSeek reported are the cached tokens billed, at cached_input.
    deepStrictEqual(rows.map((row) => row.cached_tokens), reported.map((request) => request.usage!.cacheRead))
    const priced = reported.map((request) => {
      const usage = request.usage!
      const quarterUnits = 4 * (usage.input - usage.cacheRead) + usage.cacheRead + 8 * usage.output
      return BigInt(Math.ceil(quarterUnits / 4))
    })
    deepStrictEqual(rows.map((row) => BigInt(row.cost)), priced, "each answer billed its hits at cached_input")
  } else {
    strictEqual(billed.cost, BigInt(expected.prompt + 2 * expected.completion), "billed cost = reported usage priced")
  }
  return rows.at(-1)!.id
}

Deno.test("matrix: every inbound format to every upstream type", async (t) => {
  // On PostgreSQL, so the ledger is read as it is committed (the check reads the usage rows at once).
  const emulator = startEmulator()
  const serviceAccount = await emulator.vertexServiceAccountKey()
  const gateway = await startGateway({
    config: matrixConfig(serviceAccount),
    store: "postgres",
    emulator,
    ownsEmulator: true
  })
  const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
  const drivers: ReadonlyArray<Driver> = [
    chatDriver(openai),
    responsesDriver(openai),
    messagesDriver(new Anthropic({ baseURL: gateway.url, apiKey: KEY, maxRetries: 0 })),
    // @google/genai 3.1.0 defaults to API version v1; the gateway serves generate-content under /v1beta.
    generateContentDriver(
      new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: gateway.url, apiVersion: "v1beta" } }),
      { url: gateway.url, key: KEY }
    ),
    completionsDriver(openai)
  ]
  let lastRow = "0"
  try {
    for (const driver of drivers) {
      for (const upstream of UPSTREAMS) {
        for (const mode of driver.modes) {
          for (const testCase of driver.cases) {
            if (upstream === "deepseek" && testCase === "image input") continue
            await t.step(`${driver.name} → ${upstream} / ${mode} / ${testCase}`, async () => {
              gateway.emulator.reset()
              await runCase(driver, upstream, mode, testCase)
              checkUpstream({
                inbound: driver.name,
                upstream,
                stream: mode !== "non-stream",
                testCase,
                recorded: upstreamCalls(gateway.emulator.requests)
              })
              lastRow = await checkBilledAsReported(gateway, upstream, lastRow)
              if (upstream === "deepseek" && testCase === "tool call round trip") {
                const second = upstreamCalls(gateway.emulator.requests)[1]
                ok((second.usage?.cacheRead ?? 0) > 0, "the answer to the tool result hit DeepSeek's cache")
              }
            })
          }
        }
      }
    }
  } finally {
    await gateway.close()
  }
})
