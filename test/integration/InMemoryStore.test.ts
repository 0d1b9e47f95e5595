/**
 * The embedded store in memory (`memory://`, as `deno task demo` runs the gateway): it keeps nothing past the
 * process, so a charge needs no journal record to be as durable as the store. Answers, JSON and streamed, are
 * delivered (never withheld as `quota_ledger_unavailable`) and each is billed the tokens the emulator reported.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { browser } from "../support/Browser.ts"
import { basicConfig, ROOT_PASSWORD, startGateway } from "../support/Gateway.ts"

const KEY = "sk-test-alice-0001"

interface LogRow {
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly quota: number
}

Deno.test("an in-memory store: answers are delivered and billed as the emulator reported", async () => {
  const gateway = await startGateway({ config: (url) => basicConfig(url), inMemoryStore: true })
  try {
    const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
    const json = await openai.chat.completions.create({
      model: "gpt-test",
      messages: [{ role: "user", content: "in memory" }],
      max_tokens: 16
    })
    strictEqual(json.choices[0]?.finish_reason !== undefined, true)
    const stream = await openai.chat.completions.create({
      model: "gpt-test",
      messages: [{ role: "user", content: "in memory, streamed" }],
      max_tokens: 16,
      stream: true,
      stream_options: { include_usage: true }
    })
    let finished = false
    for await (const chunk of stream) if (chunk.choices[0]?.finish_reason) finished = true
    strictEqual(finished, true, "the stream ended with a finish reason, not an error event")

    await gateway.settled()
    const root = browser(gateway.url)
    await root.login("root", ROOT_PASSWORD)
    const logs = await root.call<{ items: Array<LogRow> }>("GET", "/api/log/?page_size=10")
    const billed = logs.data.items.map((row) => ({ prompt: row.prompt_tokens, completion: row.completion_tokens }))
    const reported = gateway.emulator.requests
      .filter((request) => request.usage !== undefined)
      .map((request) => ({ prompt: request.usage!.input, completion: request.usage!.output }))
    deepStrictEqual(billed.toReversed(), reported, "one row per answer, the tokens the emulator reported")
    for (const row of logs.data.items) {
      strictEqual(row.quota, Math.ceil(row.prompt_tokens * 2 + row.completion_tokens * 8), "priced at gpt-test's")
    }
  } finally {
    await gateway.close()
  }
})
