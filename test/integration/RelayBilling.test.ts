/**
 * The relay's billing edges, on PostgreSQL: a stream cut before its final
 * usage is billed for what it delivered (whatever the upstream reported so
 * far); a caller that leaves while its hold waits for the database gets its
 * concurrency permit back; a request naming no output cap is sent the cap its
 * hold was sized for, in the upstream format's own field.
 */
import { PgClient } from "@effect/sql-pg"
import { Deferred, Effect, Fiber, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { basicConfig, startGateway, type TestGateway } from "../support/Gateway.ts"

const KEY = "sk-test-alice-0001"

const config = (emulatorUrl: string) =>
  basicConfig(emulatorUrl, {
    models: {
      "gpt-test": { input: 2, output: 8 },
      "claude-test": { input: 3, output: 15 },
      "gemini-test": { input: 1, output: 4 }
    },
    channels: [
      { name: "emu-openai", type: "openai", base_url: emulatorUrl, keys: ["sk-test-up-1"], models: ["gpt-test"] },
      {
        name: "emu-anthropic",
        type: "anthropic",
        base_url: emulatorUrl,
        keys: ["sk-test-up-2"],
        models: ["claude-test"]
      },
      { name: "emu-gemini", type: "gemini", base_url: emulatorUrl, keys: ["sk-test-up-3"], models: ["gemini-test"] }
    ],
    users: [{
      username: "alice",
      group: "default",
      quota: 100_000_000,
      tokens: [{ name: "main", key: KEY, limits: { concurrency: 1 } }]
    }]
  })

/** The usage rows of streamed requests. */
const streamed = (gateway: TestGateway) =>
  gateway.query<{ completion_tokens: number; cost: string; status: number }>(
    "SELECT completion_tokens, cost::text AS cost, status FROM usage_logs WHERE stream ORDER BY id"
  )

Deno.test("relay billing: cut streams, permits on disconnect, the held output cap", async (t) => {
  const gateway = await startGateway({ config, store: "postgres" })
  try {
    await t.step("a caller that leaves while its hold waits for the database gets its permit back", async () => {
      const release = await lockUser(gateway.databaseUrl!, "alice")
      // A fresh gateway has no lease yet: this request's hold waits for the locked row.
      const first = new OpenAI({ apiKey: KEY, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
      const aborted = new AbortController()
      const calls = gateway.emulator.requests.length
      try {
        // Straight to the web handler, whose request signal interrupts the request's fiber when it aborts
        // (what a disconnect does once the server notices it).
        void gateway.handler(
          new Request(`${gateway.url}/v1/chat/completions`, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
            body: JSON.stringify({ model: "gpt-test", messages: [{ role: "user", content: "hi" }], max_tokens: 8 }),
            signal: aborted.signal
          })
        ).catch(() => undefined)
        await new Promise((resolve) => setTimeout(resolve, 300))
        aborted.abort()
      } finally {
        await release()
      }
      await new Promise((resolve) => setTimeout(resolve, 200))
      strictEqual(gateway.emulator.requests.length, calls, "the request that left was never sent upstream")
      // The token allows one request at a time: a leaked permit would make this a 429.
      const answer = await first.chat.completions.create({
        model: "gpt-test",
        messages: [{ role: "user", content: "hi again" }],
        max_tokens: 8
      })
      ok(answer.choices[0].message.content !== null)
    })

    await t.step("an Anthropic stream cut after its text is billed for the text delivered, not one token", async () => {
      // message_start (output_tokens: 1), content_block_start, then text deltas; cut before message_delta.
      gateway.emulator.setFaults([{ match: { path: "/v1/messages" }, breakAfterEvents: 8, times: 1 }])
      const response = await fetch(`${gateway.url}/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": KEY, "anthropic-version": "2023-06-01" },
        body: JSON.stringify({
          model: "claude-test",
          max_tokens: 400,
          stream: true,
          messages: [{ role: "user", content: "Tell me a long story about a river, with many words in it." }]
        })
      })
      const text = await response.text()
      gateway.emulator.setFaults([])
      let delivered = 0
      for (const line of text.split("\n")) {
        if (!line.startsWith("data: ")) continue
        const event = JSON.parse(line.slice(6))
        if (event.type === "content_block_delta" && event.delta?.type === "text_delta") {
          delivered += event.delta.text.length
        }
      }
      ok(delivered > 8, `some text was delivered (${delivered} characters)`)
      ok(text.includes("event: error"), "the caller got an in-band error, not a complete answer")
      await waitFor(async () => (await streamed(gateway)).length === 1)
      const [row] = await streamed(gateway)
      strictEqual(row.status, 502)
      strictEqual(row.completion_tokens, Math.ceil(delivered / 4))
      ok(BigInt(row.cost) > 0n)
    })

    await t.step("no output cap named: the held cap is sent in the upstream format's field", async () => {
      const openai = new OpenAI({ apiKey: KEY, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
      const sent = () => gateway.emulator.requests.at(-1)!.body as Record<string, unknown>

      await openai.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "hi" }] })
      strictEqual(sent().max_completion_tokens, 4096)
      strictEqual(sent().max_tokens, undefined)

      await openai.chat.completions.create({
        model: "gpt-test",
        messages: [{ role: "user", content: "hi" }],
        max_tokens: 9
      })
      strictEqual(sent().max_tokens, 9, "the caller's own cap passes unchanged")
      strictEqual(sent().max_completion_tokens, undefined)

      const stream = await openai.chat.completions.create({
        model: "gpt-test",
        messages: [{ role: "user", content: "hi" }],
        stream: true
      })
      for await (const _ of stream) { /* read to the end */ }
      strictEqual(sent().max_completion_tokens, 4096)

      // Responses in, translated to chat completions upstream.
      await openai.responses.create({ model: "gpt-test", input: "hi" })
      strictEqual(sent().max_completion_tokens, 4096)

      // Generate-content in, passed through to a gemini channel.
      const generated = await fetch(`${gateway.url}/v1beta/models/gemini-test:generateContent`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-goog-api-key": KEY },
        body: JSON.stringify({
          contents: [{ role: "user", parts: [{ text: "hi" }] }],
          generationConfig: { temperature: 0.5 }
        })
      })
      strictEqual(generated.status, 200)
      await generated.body?.cancel()
      const generationConfig = sent().generationConfig as Record<string, unknown>
      strictEqual(generationConfig.maxOutputTokens, 4096)
      strictEqual(generationConfig.temperature, 0.5)

      // Chat in, translated to an Anthropic upstream (which always needs max_tokens).
      await openai.chat.completions.create({ model: "claude-test", messages: [{ role: "user", content: "hi" }] })
      strictEqual(sent().max_tokens, 4096)
    })
  } finally {
    await gateway.close()
  }
})

const waitFor = async (condition: () => Promise<boolean>) => {
  for (let tries = 0; tries < 100; tries++) {
    if (await condition()) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error("timed out waiting")
}

/** Holds `FOR UPDATE` on the user's row in an open transaction until the returned function is called. */
const lockUser = async (databaseUrl: string, username: string): Promise<() => Promise<void>> => {
  const locked = Effect.runSync(Deferred.make<void>())
  const done = Effect.runSync(Deferred.make<void>())
  const fiber = Effect.runFork(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql.withTransaction(Effect.gen(function* () {
        yield* sql`SELECT id FROM users WHERE username = ${username} FOR UPDATE`
        yield* Deferred.succeed(locked, undefined)
        yield* Deferred.await(done)
      }))
    }).pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 1 })),
      Effect.scoped
    ) as Effect.Effect<void, unknown, never>
  )
  await Effect.runPromise(Deferred.await(locked))
  return async () => {
    Effect.runSync(Deferred.succeed(done, undefined))
    await Effect.runPromise(Fiber.join(fiber))
  }
}
