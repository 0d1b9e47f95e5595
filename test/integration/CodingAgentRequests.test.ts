/**
 * What the coding agents send, through the official SDK, on each upstream type (issue 26): Claude Code's messages
 * body (a mid-conversation `system` message, `thinking: {type: "adaptive", display: "omitted"}`,
 * `output_config.effort`, `context_management`, `anthropic-beta`), `POST /v1/messages/count_tokens` (free), and a new
 * value of a known field (taken by a same-format channel, refused by name on a translation, without charge).
 */
import { Result } from "effect"
import Anthropic from "@anthropic-ai/sdk"
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict"
import { promptTokensTypical } from "../../src/canonical/Estimate.ts"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { formatOf } from "../../src/formats/Formats.ts"
import { startGateway, type TestGateway } from "../support/Gateway.ts"

const KEY = "sk-test-claude-0001"
const BETAS = ["claude-code-20250219", "interleaved-thinking-2025-05-14", "context-management-2025-06-27"]

const config = (emulatorUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: {
        "claude-demo": { input: 3, output: 15 },
        "gpt-demo": { input: 2.5, output: 10 },
        "gemini-demo": { input: 1.25, output: 5 }
      },
      channels: [
        {
          name: "emu-anthropic",
          type: "anthropic",
          base_url: emulatorUrl,
          keys: ["sk-test-up-a"],
          models: ["claude-demo"],
          model_mapping: { "claude-demo": "claude-upstream" }
        },
        { name: "emu-openai", type: "openai", base_url: emulatorUrl, keys: ["sk-test-up-o"], models: ["gpt-demo"] },
        { name: "emu-gemini", type: "gemini", base_url: emulatorUrl, keys: ["sk-test-up-g"], models: ["gemini-demo"] }
      ],
      users: [{ username: "dev", group: "default", quota: 100_000_000, tokens: [{ name: "cli", key: KEY }] }]
    }),
    "agents.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

const withGateway = async (body: (gateway: TestGateway, client: Anthropic) => Promise<void>) => {
  const gateway = await startGateway({ config, store: "postgres" })
  try {
    await body(gateway, new Anthropic({ baseURL: gateway.url, apiKey: KEY, maxRetries: 0 }))
  } finally {
    await gateway.close()
  }
}

/** Claude Code's request shape (2.1.x print mode), cut down to one tool. */
const claudeCodeBody = (model: string) => ({
  model,
  max_tokens: 32000,
  stream: true,
  system: [{ type: "text", text: "You are Claude Code.", cache_control: { type: "ephemeral" } }],
  messages: [
    { role: "user", content: [{ type: "text", text: "read the note" }] },
    { role: "system", content: "# Environment\nPrimary working directory: /work" },
    { role: "user", content: "and say hello" }
  ],
  tools: [{
    name: "Bash",
    description: "Run a command",
    input_schema: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
    cache_control: { type: "ephemeral" }
  }],
  thinking: { type: "adaptive", display: "omitted" },
  output_config: { effort: "high" },
  context_management: { edits: [{ type: "clear_thinking_20251015", keep: "all" }] },
  metadata: { user_id: "user-1" }
})

/** Streams `body` with Claude Code's betas; the names of the tools the answer calls (the emulator calls `Bash`). */
const streamCalls = async (client: Anthropic, body: unknown) => {
  const stream = client.messages.stream(body as Anthropic.MessageStreamParams, {
    headers: { "anthropic-beta": BETAS.join(",") }
  })
  const message = await stream.finalMessage()
  strictEqual(message.stop_reason, "tool_use")
  return message.content.flatMap((block) => block.type === "tool_use" ? [block.name] : [])
}

const lastUpstream = (gateway: TestGateway) => gateway.emulator.requests[gateway.emulator.requests.length - 1]

Deno.test("Claude Code's body on an anthropic channel: forwarded as sent, system message in place, betas too", async () => {
  await withGateway(async (gateway, client) => {
    deepStrictEqual(await streamCalls(client, claudeCodeBody("claude-demo")), ["Bash"])
    const upstream = lastUpstream(gateway)
    strictEqual(upstream.path, "/v1/messages")
    strictEqual(upstream.headers["anthropic-beta"], BETAS.join(","))
    const body = upstream.body as Record<string, unknown>
    deepStrictEqual(body, { ...claudeCodeBody("claude-upstream") })
  })
})

Deno.test("Claude Code's body on a chat channel: system message in place, effort as reasoning_effort", async () => {
  await withGateway(async (gateway, client) => {
    deepStrictEqual(await streamCalls(client, claudeCodeBody("gpt-demo")), ["Bash"])
    const upstream = lastUpstream(gateway)
    strictEqual(upstream.path, "/v1/chat/completions")
    strictEqual(upstream.headers["anthropic-beta"], undefined)
    const body = upstream.body as { messages: Array<{ role: string; content: unknown }>; reasoning_effort: string }
    deepStrictEqual(body.messages.map((message) => message.role), ["system", "user", "system", "user"])
    ok(JSON.stringify(body.messages[2].content).includes("# Environment"))
    strictEqual(body.reasoning_effort, "high")
    strictEqual("context_management" in body, false)
  })
})

Deno.test("Claude Code's body on a gemini channel: system messages folded into systemInstruction in order", async () => {
  await withGateway(async (gateway, client) => {
    deepStrictEqual(await streamCalls(client, claudeCodeBody("gemini-demo")), ["Bash"])
    const upstream = lastUpstream(gateway)
    const body = upstream.body as {
      systemInstruction: { parts: Array<{ text: string }> }
      contents: Array<unknown>
    }
    // generate-content has no system turn: both system texts go to `systemInstruction`, top-level one first.
    deepStrictEqual(body.systemInstruction.parts.map((part) => part.text), [
      "You are Claude Code.",
      "# Environment\nPrimary working directory: /work"
    ])
    // The two user turns around it meet, and generate-content joins them into one.
    deepStrictEqual(body.contents, [{ role: "user", parts: [{ text: "read the note" }, { text: "and say hello" }] }])
    strictEqual("context_management" in body, false)
  })
})

Deno.test("count_tokens: the vendor's count on an anthropic channel, the estimate elsewhere; free", async () => {
  await withGateway(async (gateway, client) => {
    const request = {
      model: "claude-demo",
      system: "Be brief.",
      messages: [{ role: "user" as const, content: "Count these words for me, please." }]
    }
    const direct = new Anthropic({ baseURL: gateway.emulator.url, apiKey: "sk-test-up-a", maxRetries: 0 })
    const vendor = await direct.messages.countTokens({ ...request, model: "claude-upstream" })
    const counted = await client.messages.countTokens(request, { headers: { "anthropic-beta": BETAS[0] } })
    strictEqual(counted.input_tokens, vendor.input_tokens)
    const upstream = lastUpstream(gateway)
    strictEqual(upstream.path, "/v1/messages/count_tokens")
    strictEqual(upstream.headers["anthropic-beta"], BETAS[0])
    strictEqual((upstream.body as { model: string }).model, "claude-upstream")

    const before = gateway.emulator.requests.length
    const estimated = await client.messages.countTokens({ ...request, model: "gpt-demo" })
    const decoded = formatOf("anthropic").decodeRequest({ ...request, model: "gpt-demo" }, {})
    ok(Result.isSuccess(decoded))
    strictEqual(estimated.input_tokens, promptTokensTypical(decoded.success))
    strictEqual(gateway.emulator.requests.length, before, "no upstream call for an estimate")

    await rejects(
      client.messages.countTokens({ model: "claude-demo", messages: "hello" } as never),
      (error: unknown) =>
        error instanceof Anthropic.BadRequestError &&
        (error.error as { error: { param: string } }).error.param === "messages"
    )
    const rows = await gateway.query<{ n: string }>("SELECT count(*)::text AS n FROM usage_logs")
    strictEqual(rows[0].n, "0")
    const usage = await fetch(`${gateway.url}/api/usage/token`, { headers: { authorization: `Bearer ${KEY}` } })
    strictEqual((await usage.json()).data.total_used, 0)
  })
})

Deno.test("a new thinking type reaches an anthropic channel as sent and is refused by name on a translation", async () => {
  await withGateway(async (gateway, client) => {
    const body = (model: string) => ({
      model,
      max_tokens: 200,
      messages: [{ role: "user", content: "hello" }],
      thinking: { type: "dreaming" }
    })
    const answered = await client.messages.create(body("claude-demo") as never) as Anthropic.Message
    strictEqual(answered.type, "message")
    deepStrictEqual((lastUpstream(gateway).body as { thinking: unknown }).thinking, { type: "dreaming" })
    const before = gateway.emulator.requests.length
    await rejects(
      client.messages.create(body("gemini-demo") as never),
      (error: unknown) =>
        error instanceof Anthropic.BadRequestError &&
        (error.error as { error: { param: string } }).error.param === "thinking.type"
    )
    strictEqual(gateway.emulator.requests.length, before, "a refused translation calls no upstream")
    await new Promise((resolve) => setTimeout(resolve, 200))
    const rows = await gateway.query<{ model: string; cost: string }>(
      "SELECT model, cost::text AS cost FROM usage_logs"
    )
    deepStrictEqual(rows.map((row) => row.model), ["claude-demo"])
  })
})
