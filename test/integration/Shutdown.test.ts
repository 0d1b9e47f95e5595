/**
 * Graceful shutdown of `src/main.ts` (docs/ARCHITECTURE.md, "Outer contract"): on SIGTERM
 * the process stops accepting, lets in-flight requests and streams finish,
 * flushes the usage log and exits 0 — so no usage row is lost, not even for
 * requests that answered a moment before the signal.
 */
import { ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { type Emulator, startEmulator } from "../../emulator/Emulator.ts"
import { freshPostgres } from "../support/Gateway.ts"
import { type MainProcess, startMain, writeTempFile } from "../support/MainProcess.ts"
import { queryPostgres } from "../support/Store.ts"

const KEY = "sk-test-alice-0001"

const configText = (emulatorUrl: string) =>
  JSON.stringify({
    groups: { default: { ratio: 1 } },
    models: { "gpt-test": { input: 2, output: 8 } },
    channels: [{
      name: "emu-openai",
      type: "openai",
      base_url: emulatorUrl,
      keys: ["sk-test-upstream-1"],
      models: ["gpt-test"]
    }],
    users: [{ username: "alice", group: "default", quota: 100_000_000, tokens: [{ name: "main", key: KEY }] }]
  })

/** Runs `body` against `src/main.ts` on a fresh PostgreSQL database in front of `emulator`; cleans up after. */
const withMain = async (
  emulator: Emulator,
  body: (main: MainProcess, query: (text: string) => Promise<ReadonlyArray<Record<string, unknown>>>) => Promise<void>
) => {
  const database = await freshPostgres()
  const file = await writeTempFile("sluice.json", configText(emulator.url))
  try {
    const main = await startMain({ SLUICE_CONFIG: file.path, DATABASE_URL: database.url })
    try {
      await body(main, (text) => queryPostgres(database.url, text))
    } finally {
      await main.kill()
    }
  } finally {
    await Promise.all([emulator.close(), database.drop(), file.remove()])
  }
}

Deno.test("shutdown: SIGTERM right after N answers loses no usage row", async () => {
  const requests = 20
  await withMain(startEmulator(), async (main, query) => {
    const client = new OpenAI({ baseURL: `${main.url}/v1`, apiKey: KEY, maxRetries: 0 })
    const answers = await Promise.all(Array.from({ length: requests }, async (_, index) => {
      const request = { model: "gpt-test", messages: [{ role: "user" as const, content: `request ${index}` }] }
      if (index % 2 === 0) return (await client.chat.completions.create(request)).choices[0].message.content
      let text = ""
      for await (const chunk of await client.chat.completions.create({ ...request, stream: true })) {
        text += chunk.choices[0]?.delta?.content ?? ""
      }
      return text
    }))
    strictEqual(answers.filter((answer) => answer?.startsWith("Echo: request")).length, requests)
    main.signal("SIGTERM")
    const exit = await main.exited
    strictEqual(exit.code, 0)
    // Everything it wrote is in the log's one shape: stdout's lines JSON (the start's `Listening` among them), stderr
    // nothing but Deno's own notices.
    const lines = main.stdout().split("\n").filter((line) => line.trim() !== "").map((line) => JSON.parse(line))
    ok(lines.every((line) => Object.keys(line).slice(0, 3).join() === "time,level,msg"), "time, level, msg first")
    const listening = lines.find((line) => line.msg === "Listening")
    strictEqual(listening?.url, main.url, "the start says its address")
    strictEqual(
      exit.stderr.split("\n").filter((line) => line.trim() !== "" && !/^(Download|Warning|Initialize)\b/.test(line))
        .length,
      0,
      exit.stderr
    )
    const [row] = await query("SELECT count(*) AS rows, count(DISTINCT request_id) AS ids FROM usage_logs")
    strictEqual(Number(row.rows), requests)
    strictEqual(Number(row.ids), requests)
  })
})

Deno.test("shutdown: a stream in flight when SIGTERM arrives completes and is logged", async () => {
  // Ten events a second: the answer below takes about a second and a half to stream.
  await withMain(startEmulator({ tokensPerSecond: 10 }), async (main, query) => {
    const words = "one two three four five six seven eight nine ten eleven twelve"
    const response = await fetch(`${main.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
      body: JSON.stringify({
        model: "gpt-test",
        messages: [{ role: "user", content: words }],
        stream: true,
        stream_options: { include_usage: true }
      })
    })
    strictEqual(response.status, 200)
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
    let body = ""
    const first = await reader.read()
    body += first.value ?? ""
    main.signal("SIGTERM")
    const signalledAt = Date.now()
    while (true) {
      const { done, value } = await reader.read()
      if (done) break
      body += value
    }
    ok(Date.now() - signalledAt > 500, "the stream kept going after the signal")
    const chunks = body.split("\n").filter((line) => line.startsWith("data: ")).map((line) => line.slice(6))
    strictEqual(chunks.at(-1), "[DONE]")
    const parsed = chunks.slice(0, -1).map((data) => JSON.parse(data) as OpenAI.ChatCompletionChunk)
    const text = parsed.map((chunk) => chunk.choices[0]?.delta?.content ?? "").join("")
    strictEqual(text, `Echo: ${words}`)
    const usage = parsed.find((chunk) => chunk.usage)?.usage
    ok(usage !== undefined && usage !== null)

    strictEqual((await main.exited).code, 0)
    const rows = await query("SELECT status, stream, completion_tokens, cost FROM usage_logs")
    strictEqual(rows.length, 1)
    strictEqual(Number(rows[0].status), 200)
    strictEqual(rows[0].stream, true)
    strictEqual(Number(rows[0].completion_tokens), usage.completion_tokens)
    strictEqual(BigInt(String(rows[0].cost)), BigInt(usage.prompt_tokens * 2 + usage.completion_tokens * 8))
  })
})

Deno.test("shutdown: a stream cut at the deadline is billed for what was delivered, logged, and every lease is back", async () => {
  // Five events a second: the answer below would take about ten seconds; the deadline is one.
  const emulator = startEmulator({ tokensPerSecond: 5 })
  const database = await freshPostgres()
  const file = await writeTempFile("sluice.json", configText(emulator.url))
  try {
    const main = await startMain({
      SLUICE_CONFIG: file.path,
      DATABASE_URL: database.url,
      SLUICE_SHUTDOWN_GRACE_SECONDS: "1"
    })
    try {
      const words = Array.from({ length: 50 }, (_, index) => `word${index}`).join(" ")
      const response = await fetch(`${main.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
        body: JSON.stringify({ model: "gpt-test", messages: [{ role: "user", content: words }], stream: true })
      })
      strictEqual(response.status, 200)
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
      let body = (await reader.read()).value ?? ""
      main.signal("SIGTERM")
      const signalledAt = Date.now()
      try {
        while (true) {
          const { done, value } = await reader.read()
          if (done) break
          body += value
        }
      } catch {
        // the gateway cut the stream
      }
      ok(!body.includes("[DONE]"), "the stream was cut before its end")
      ok(body.includes("word1"), "some text was delivered")
      strictEqual((await main.exited).code, 0)
      ok(Date.now() - signalledAt < 8_000, "the process stopped at the deadline, not at the stream's end")

      const query = (text: string) => queryPostgres(database.url, text)
      const rows = await query("SELECT status, stream, completion_tokens, cost FROM usage_logs")
      strictEqual(rows.length, 1, "the cut stream is logged")
      strictEqual(rows[0].stream, true)
      ok(Number(rows[0].completion_tokens) > 0, "billed for what was delivered")
      ok(BigInt(String(rows[0].cost)) > 0n)
      const [user] = await query("SELECT used_quota FROM users WHERE username = 'alice'")
      strictEqual(BigInt(String(user.used_quota)), BigInt(String(rows[0].cost)), "used_quota equals the logged cost")
      const leases = await query("SELECT count(*) AS count FROM quota_leases")
      strictEqual(Number(leases[0].count), 0, "every lease row is released")
    } finally {
      await main.kill()
    }
  } finally {
    await Promise.all([emulator.close(), database.drop(), file.remove()])
  }
})
