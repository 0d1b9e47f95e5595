/**
 * Deno Deploy mode (docs/OPERATING.md, "Deploy targets"): with `DATABASE_URL` set, the
 * gateway runs without writing files, without subprocesses and without FFI
 * (`--deny-write --deny-run --deny-ffi`; the one worker thread Sluice has is
 * PGlite's, which PostgreSQL does not need). `src/main.ts` is started that
 * way against a fresh PostgreSQL database, the official SDKs' smoke calls go
 * through it (chat completions, Responses, messages, generate-content; plain
 * and streamed), the probes and metrics answer, and on SIGINT (what Deno
 * Deploy sends, 5 s before SIGKILL) it exits 0 within those 5 s with every
 * usage row written and every lease handed back. Its stdout holds
 * one JSON access-log line per request.
 */
import Anthropic from "@anthropic-ai/sdk"
import { GoogleGenAI } from "@google/genai"
import { PgClient } from "@effect/sql-pg"
import { ok, strictEqual } from "node:assert/strict"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import OpenAI from "openai"
import { startEmulator } from "../../emulator/Emulator.ts"
import { freshPostgres } from "../support/Gateway.ts"
import { startMain, writeTempFile } from "../support/MainProcess.ts"

const KEY = "sk-test-deploy-0001"

/** The permissions of Deno Deploy, as far as the CLI can state them. */
const DEPLOY_PERMISSIONS = [
  "--allow-net",
  "--allow-env",
  "--allow-read",
  "--allow-sys",
  "--deny-write",
  "--deny-run",
  "--deny-ffi"
]

const config = (emulatorUrl: string) =>
  JSON.stringify({
    groups: { default: { ratio: 1 } },
    models: {
      "gpt-test": { input: 2, output: 8 },
      "claude-test": { input: 3, output: 15 },
      "gemini-test": { input: 1, output: 4 }
    },
    channels: [
      { name: "openai", type: "openai", base_url: emulatorUrl, keys: ["sk-test-up-openai"], models: ["gpt-test"] },
      {
        name: "anthropic",
        type: "anthropic",
        base_url: emulatorUrl,
        keys: ["sk-test-up-anthropic"],
        models: ["claude-test"]
      },
      { name: "gemini", type: "gemini", base_url: emulatorUrl, keys: ["sk-test-up-gemini"], models: ["gemini-test"] }
    ],
    users: [{ username: "alice", group: "default", quota: 50_000_000, tokens: [{ name: "main", key: KEY }] }]
  })

const query = <A extends object>(url: string, text: string) =>
  Effect.runPromise(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<A>(text)).pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })),
      Effect.scoped
    ) as Effect.Effect<ReadonlyArray<A>, unknown, never>
  )

Deno.test("deno deploy mode: no writes, no subprocesses, no FFI; the SDKs' smoke calls through it", async () => {
  const emulator = startEmulator()
  const postgres = await freshPostgres()
  const file = await writeTempFile("sluice.json", config(emulator.url))
  const main = await startMain(
    { DATABASE_URL: postgres.url, SLUICE_CONFIG: file.path, LOG_FORMAT: "json", SLUICE_SHUTDOWN_GRACE_SECONDS: "3" },
    60_000,
    DEPLOY_PERMISSIONS
  )
  let exited = false
  try {
    const openai = new OpenAI({ baseURL: `${main.url}/v1`, apiKey: KEY, maxRetries: 0 })
    const anthropic = new Anthropic({ baseURL: main.url, apiKey: KEY, maxRetries: 0 })
    const genai = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: main.url, apiVersion: "v1beta" } })
    let calls = 0

    const chat = await openai.chat.completions.create({
      model: "gpt-test",
      messages: [{ role: "user", content: "hi" }],
      max_tokens: 16
    })
    ok(chat.choices[0].message.content!.length > 0)
    calls++
    let streamed = ""
    for await (
      const chunk of await openai.chat.completions.create({
        model: "claude-test",
        messages: [{ role: "user", content: "hi" }],
        max_tokens: 16,
        stream: true
      })
    ) streamed += chunk.choices[0]?.delta.content ?? ""
    ok(streamed.length > 0)
    calls++
    const response = await openai.responses.create({ model: "gemini-test", input: "hi", max_output_tokens: 16 })
    ok(response.output_text.length > 0)
    calls++
    const message = await anthropic.messages.create({
      model: "gpt-test",
      max_tokens: 16,
      messages: [{ role: "user", content: "hi" }]
    })
    strictEqual(message.type, "message")
    calls++
    let deltas = 0
    for await (
      const event of anthropic.messages.stream({
        model: "claude-test",
        max_tokens: 16,
        messages: [{ role: "user", content: "hi" }]
      })
    ) if (event.type === "content_block_delta") deltas++
    ok(deltas > 0)
    calls++
    const generated = await genai.models.generateContent({ model: "gemini-test", contents: "hi" })
    ok((generated.text ?? "").length > 0)
    calls++
    let parts = 0
    for await (const chunk of await genai.models.generateContentStream({ model: "gpt-test", contents: "hi" })) {
      if ((chunk.text ?? "").length > 0) parts++
    }
    ok(parts > 0)
    calls++

    for (const path of ["/readyz", "/metrics"]) {
      const probe = await fetch(`${main.url}${path}`)
      strictEqual(probe.status, 200, path)
      await probe.body?.cancel()
    }

    // Deno Deploy stops an isolate with SIGINT and kills it 5 s later (docs.deno.com/deploy/reference/runtime,
    // "Shutdown"): with a 3 s grace the usage log and the leases are written back well within that.
    const stopping = performance.now()
    main.signal("SIGINT")
    const result = await main.exited
    exited = true
    strictEqual(result.code, 0, result.stderr)
    ok(performance.now() - stopping < 5_000, "stopped within Deno Deploy's 5 s")
    ok(!/PermissionDenied|NotCapable|Requires (write|run|ffi) access/i.test(result.stderr), result.stderr)

    // Background work lost nothing: every call's usage row is written, every lease handed back.
    const [rows] = await query<{ count: string }>(
      postgres.url,
      `SELECT COUNT(*)::text AS count FROM usage_logs WHERE status = 200`
    )
    strictEqual(Number(rows.count), calls)
    const [leases] = await query<{ count: string }>(postgres.url, `SELECT COUNT(*)::text AS count FROM quota_leases`)
    strictEqual(Number(leases.count), 0)

    const lines = main.stdout().split("\n").filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
    const requests = lines.filter((line) => line.msg === "request" && line.status === 200 && line.cost !== 0)
    strictEqual(requests.length, calls, "one access-log line per billed call")
    ok(!main.stdout().includes(KEY) && !main.stdout().includes("sk-test-up-"), "no key on stdout")
  } finally {
    if (!exited) await main.kill()
    await emulator.close()
    await file.remove()
    await postgres.drop()
  }
})
