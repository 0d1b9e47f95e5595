/**
 * Prompt-cache breakpoints through Sluice, with the official SDKs as callers and the emulator as the vendor:
 *
 * - `@anthropic-ai/sdk` Messages with `cache_control` on the system prompt and a message, to a `bedrock` channel on
 *   the Converse API: the upstream body holds a `cachePoint` after each marked block; the emulator (which caches by
 *   prefix up to the last cache point) reports a cache write the first time and a cache read on the repeat, and each
 *   is billed exactly as it reported (writes at `cache_write`, reads at `cached_input`), streamed and not;
 * - an OpenAI chat caller to an `anthropic` channel: nothing to carry, no `cache_control` in the upstream body;
 * - a Messages caller to the `anthropic` channel: the body goes as sent, markers and all.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { BEDROCK_TEST_CHANNEL_KEY } from "../../emulator/BedrockAuth.ts"
import { startGateway } from "../support/Gateway.ts"
import { assertBilledAsReported, type BilledAs, postsSince, rowsAfter } from "../support/BilledAsReported.ts"

const KEY = "sk-test-cache-caller-0001"
/** USD per 1M tokens. */
const PRICE = { input: 2, output: 8, cached_input: 0.5, cache_write: 2.5 }
const BILLED: BilledAs = {
  vendor: "the vendor",
  quarters: { input: 8, cachedInput: 2, cacheWrite: 10, output: 32 },
  cacheApart: true
}
const CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"

const config = (emulatorUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: { "cp-bedrock": PRICE, "cp-claude": PRICE },
      channels: [
        {
          name: "bedrock-converse",
          type: "bedrock",
          base_url: `${emulatorUrl}/bedrock`,
          keys: [BEDROCK_TEST_CHANNEL_KEY],
          models: ["cp-bedrock"],
          model_mapping: { "cp-bedrock": CLAUDE },
          settings: { region: "us-east-1" }
        },
        {
          name: "anthropic",
          type: "anthropic",
          base_url: emulatorUrl,
          keys: ["sk-test-up-cache"],
          models: ["cp-claude"]
        }
      ],
      users: [{ username: "cora", group: "default", quota: 1_000_000_000, tokens: [{ name: "main", key: KEY }] }]
    }),
    "cache-breakpoints.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

/** A Claude Code-like request: a long system prompt marked for the cache, then a marked user turn. */
const claudeCodeLike = (model: string, question: string) => ({
  model,
  max_tokens: 128,
  system: [
    { type: "text" as const, text: "You are a coding agent working in a large repository of TypeScript code." },
    {
      type: "text" as const,
      text: "Follow the house style. Keep answers short.",
      cache_control: { type: "ephemeral" as const, ttl: "1h" as const }
    }
  ],
  messages: [
    {
      role: "user" as const,
      content: [
        {
          type: "text" as const,
          text: "Here is the file tree: src/, test/, docs/.",
          cache_control: { type: "ephemeral" as const }
        }
      ]
    },
    { role: "assistant" as const, content: "Understood." },
    { role: "user" as const, content: question }
  ]
})

Deno.test("cache breakpoints: Messages to Converse sends cachePoint blocks, billed write then read as reported", async (t) => {
  const gateway = await startGateway({ config, store: "postgres" })
  const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: KEY, maxRetries: 0 })
  const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
  let lastRow = "0"
  const nextRows = async (expected: number) => {
    let rows = await rowsAfter(gateway, lastRow)
    for (let tries = 0; rows.length < expected && tries < 50; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      rows = await rowsAfter(gateway, lastRow)
    }
    if (rows.length > 0) lastRow = rows.at(-1)!.id
    return rows
  }
  try {
    await t.step("the first call writes the prefix, the repeat reads it; each billed as Bedrock reported", async () => {
      const from = gateway.emulator.requests.length
      const first = await anthropic.messages.create(claudeCodeLike("cp-bedrock", "Where are the tests?"))
      const sent = postsSince(gateway, from).at(-1)!
      strictEqual(sent.path, `/bedrock/model/${encodeURIComponent(CLAUDE)}/converse`)
      const body = sent.body as {
        system: ReadonlyArray<unknown>
        messages: ReadonlyArray<{ role: string; content: ReadonlyArray<unknown> }>
      }
      deepStrictEqual(body.system, [
        { text: "You are a coding agent working in a large repository of TypeScript code." },
        { text: "Follow the house style. Keep answers short." },
        { cachePoint: { type: "default", ttl: "1h" } }
      ])
      deepStrictEqual(body.messages[0].content, [
        { text: "Here is the file tree: src/, test/, docs/." },
        { cachePoint: { type: "default" } }
      ])
      deepStrictEqual(body.messages[2].content, [{ text: "Where are the tests?" }])
      const written = sent.usage!
      ok(written.cacheWrite > 0 && written.cacheRead === 0, "the emulator wrote the prefix to its cache")
      strictEqual(first.usage.cache_creation_input_tokens, written.cacheWrite, "the caller sees the write")
      strictEqual(first.usage.cache_read_input_tokens ?? 0, 0)

      // The same prefix, another question, streamed: read from the cache.
      const stream = await anthropic.messages.create({
        ...claudeCodeLike("cp-bedrock", "And where are the docs?"),
        stream: true
      })
      let cacheRead = 0
      for await (const event of stream) {
        if (event.type === "message_start") cacheRead = event.message.usage.cache_read_input_tokens ?? 0
        if (event.type === "message_delta") cacheRead = event.usage.cache_read_input_tokens ?? cacheRead
      }
      const repeat = postsSince(gateway, from).at(-1)!
      strictEqual(repeat.path, `/bedrock/model/${encodeURIComponent(CLAUDE)}/converse-stream`)
      ok(JSON.stringify(repeat.body).includes('"cachePoint"'))
      const read = repeat.usage!
      strictEqual(read.cacheRead, written.cacheWrite, "the repeat reads what the first call wrote")
      strictEqual(read.cacheWrite, 0)
      strictEqual(cacheRead, read.cacheRead, "the caller sees the read")

      const rows = await nextRows(2)
      assertBilledAsReported(rows, postsSince(gateway, from), BILLED)
      strictEqual(rows[0].cached_tokens, 0)
      strictEqual(rows[1].cached_tokens, read.cacheRead)
      ok(BigInt(rows[0].cost) > BigInt(rows[1].cost), "the write costs more than the read")
    })

    await t.step("an OpenAI chat caller to an anthropic channel: no cache_control is sent", async () => {
      const from = gateway.emulator.requests.length
      const answer = await openai.chat.completions.create({
        model: "cp-claude",
        messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Say hello" }],
        max_tokens: 32
      })
      ok((answer.choices[0].message.content ?? "").length > 0)
      const sent = postsSince(gateway, from).at(-1)!
      strictEqual(sent.path, "/v1/messages")
      strictEqual(JSON.stringify(sent.body).includes("cache_control"), false)
      strictEqual((sent.body as { system?: unknown }).system, "Be brief.")
      assertBilledAsReported(await nextRows(1), postsSince(gateway, from), BILLED)
    })

    await t.step("a Messages caller to the anthropic channel: the body goes as sent, markers and all", async () => {
      const from = gateway.emulator.requests.length
      const request = claudeCodeLike("cp-claude", "Where are the tests?")
      await anthropic.messages.create(request)
      const sent = postsSince(gateway, from).at(-1)!
      deepStrictEqual((sent.body as { system: unknown }).system, request.system)
      deepStrictEqual((sent.body as { messages: unknown }).messages, request.messages)
      assertBilledAsReported(await nextRows(1), postsSince(gateway, from), BILLED)
    })
  } finally {
    await gateway.close()
  }
})
