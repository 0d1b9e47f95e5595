/**
 * A batch outliving the instance running it, and a batch outliving its window, through the `@anthropic-ai/sdk`
 * on PostgreSQL: an instance stopped mid-batch leaves its claimed lines to a second instance on the same database,
 * which takes them over once their lease runs out, so every line ends once and is billed at most once (a line
 * whose earlier attempt was billed is not sent again, as a takeover of a dead instance's claims shows); a batch past `batch_window_seconds` ends with its lines
 * not started `expired`, its finished lines billed and nothing else; a user at `batch_max_in_progress` unfinished
 * batches is refused another.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict"
import Anthropic from "@anthropic-ai/sdk"
import OpenAI, { toFile } from "openai"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { startEmulator } from "../../emulator/Emulator.ts"
import { freshPostgres, startGateway, type TestGateway } from "../support/Gateway.ts"

const KEY = "sk-test-batch-recovery-0001"

const config = (settings: Record<string, number>) => (emulatorUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: { "gpt-batch": { input: 1, output: 2 } },
      channels: [{
        name: "emu-openai",
        type: "openai",
        base_url: emulatorUrl,
        keys: ["sk-test-up-openai"],
        models: ["gpt-batch"]
      }],
      users: [{ username: "alice", group: "default", quota: 100_000_000, tokens: [{ name: "main", key: KEY }] }],
      settings: { batch_poll_ms: 50, ...settings }
    }),
    "recovery.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

const requests = (count: number, marker: string) =>
  Array.from({ length: count }, (_, index) => ({
    custom_id: `${marker}-${index}`,
    params: {
      model: "gpt-batch",
      max_tokens: 16,
      messages: [{ role: "user" as const, content: `Recovery marker ${marker}${index}x.` }]
    }
  }))

const ended = async (client: Anthropic, id: string) => {
  for (let tries = 0; tries < 400; tries++) {
    const batch = await client.messages.batches.retrieve(id)
    if (batch.processing_status === "ended") return batch
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`batch ${id} did not end`)
}

const billedPerRequest = async (gateway: TestGateway, batchId: string) => {
  const rows = await gateway.query<{ request_id: string; billed: string }>(
    `SELECT request_id, count(*) FILTER (WHERE status < 400)::text AS billed FROM usage_logs
     WHERE request_id LIKE '${batchId}.%' GROUP BY request_id`
  )
  return new Map(rows.map((row) => [row.request_id, Number(row.billed)]))
}

Deno.test("a batch survives the instance running it: a second instance takes its lines over", async () => {
  const emulator = startEmulator({ latencyMs: 150 })
  const database = await freshPostgres()
  const settings = { batch_concurrency: 4, batch_lease_seconds: 1 }
  const first = await startGateway({ config: config(settings), databaseUrl: database.url, emulator })
  let second: TestGateway | undefined
  try {
    const client = new Anthropic({ apiKey: KEY, baseURL: first.url, maxRetries: 0 })
    const created = await client.messages.batches.create({ requests: requests(24, "r") })
    for (let tries = 0; tries < 200; tries++) {
      if ((await client.messages.batches.retrieve(created.id)).request_counts.succeeded >= 4) break
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    // The first instance stops mid-batch: no line starts any more, the running ones finish and are recorded.
    await first.stop()
    const running = await first.query<{ line_index: number }>(
      "SELECT line_index FROM batch_lines WHERE state = 'running'",
      false
    )
    strictEqual(running.length, 0, "a graceful stop leaves no line claimed")
    second = await startGateway({ config: config(settings), databaseUrl: database.url, emulator })
    const resumed = new Anthropic({ apiKey: KEY, baseURL: second.url, maxRetries: 0 })
    const batch = await ended(resumed, created.id)
    const counts = batch.request_counts
    strictEqual(counts.succeeded + counts.errored, 24, JSON.stringify(counts))
    ok(counts.succeeded >= 20, JSON.stringify(counts))
    const billed = await billedPerRequest(second, created.id)
    let interrupted = 0
    let index = 0
    for await (const entry of await resumed.messages.batches.results(created.id)) {
      const requestId = `${created.id}.${index++}`
      if (entry.result.type === "succeeded") {
        strictEqual(billed.get(requestId), 1, `${requestId}: a succeeded line is billed once`)
      } else {
        ok(entry.result.type === "errored")
        // (A stop past the drain deadline: answered and billed, its answer lost; billed once, never sent again.)
        strictEqual((entry.result.error.error as unknown as { code: string }).code, "batch_line_interrupted")
        strictEqual(billed.get(requestId), 1)
        interrupted++
      }
    }
    strictEqual(index, 24)
    strictEqual(interrupted, counts.errored)
    strictEqual([...billed.values()].reduce((sum, n) => sum + n, 0), 24, "every line billed exactly once")
  } finally {
    await first.stop()
    await second?.stop()
    await database.drop()
    await emulator.close()
  }
})

Deno.test("a batch past its window ends expired: its finished lines billed, the rest not run", async () => {
  const emulator = startEmulator({ latencyMs: 150 })
  const gateway = await startGateway({
    config: config({ batch_concurrency: 1, batch_window_seconds: 1, batch_max_in_progress: 1 }),
    store: "postgres",
    emulator,
    ownsEmulator: true
  })
  try {
    const client = new Anthropic({ apiKey: KEY, baseURL: gateway.url, maxRetries: 0 })
    const created = await client.messages.batches.create({ requests: requests(20, "e") })
    // One unfinished batch is this user's most (`batch_max_in_progress: 1`).
    await rejects(
      client.messages.batches.create({ requests: requests(1, "second") }),
      (error) => error instanceof Anthropic.RateLimitError
    )
    const batch = await ended(client, created.id)
    const counts = batch.request_counts
    ok(counts.succeeded >= 1 && counts.expired >= 1, JSON.stringify(counts))
    strictEqual(counts.succeeded + counts.expired, 20)
    let expired = 0
    for await (const entry of await client.messages.batches.results(created.id)) {
      if (entry.result.type === "expired") expired++
    }
    strictEqual(expired, counts.expired)
    const billed = await billedPerRequest(gateway, created.id)
    strictEqual([...billed.values()].reduce((sum, n) => sum + n, 0), counts.succeeded)
    const calls = emulator.requests.filter((request) => JSON.stringify(request.body).includes("Recovery marker e"))
    strictEqual(calls.length, counts.succeeded, "an expired line never reached the vendor")

    // The same through OpenAI's API: status `expired`, the finished lines in the output file, the rest in the error
    // file as `batch_expired`.
    const openai = new OpenAI({ apiKey: KEY, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
    const input = await openai.files.create({
      file: await toFile(
        new TextEncoder().encode(
          Array.from({ length: 20 }, (_, index) =>
            JSON.stringify({
              custom_id: `x-${index}`,
              method: "POST",
              url: "/v1/chat/completions",
              body: { model: "gpt-batch", max_tokens: 8, messages: [{ role: "user", content: `Expiry x${index}y.` }] }
            })).join("\n")
        ),
        "expiring.jsonl"
      ),
      purpose: "batch"
    })
    let openaiBatch = await openai.batches.create({
      input_file_id: input.id,
      endpoint: "/v1/chat/completions",
      completion_window: "24h"
    })
    for (let tries = 0; tries < 400 && openaiBatch.status !== "expired"; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 50))
      openaiBatch = await openai.batches.retrieve(openaiBatch.id)
    }
    strictEqual(openaiBatch.status, "expired")
    ok(openaiBatch.expired_at !== null)
    const completed = openaiBatch.request_counts!.completed
    ok(completed >= 1 && completed < 20, `completed ${completed}`)
    const text = async (id: string) => (await (await openai.files.content(id)).text()).split("\n").filter(Boolean)
    strictEqual((await text(openaiBatch.output_file_id!)).length, completed)
    const expiredLines = (await text(openaiBatch.error_file_id!)).map((line) => JSON.parse(line))
    strictEqual(expiredLines.length, 20 - completed)
    ok(expiredLines.every((line) => line.error.code === "batch_expired"))
    const openaiBilled = await billedPerRequest(gateway, openaiBatch.id)
    strictEqual([...openaiBilled.values()].reduce((sum, n) => sum + n, 0), completed)
  } finally {
    await gateway.close()
  }
})

Deno.test("takeover of a dead instance's lines: a charged attempt is not sent again, an uncharged one is", async () => {
  const emulator = startEmulator()
  const gateway = await startGateway({
    config: config({ batch_lease_seconds: 1 }),
    store: "postgres",
    emulator,
    ownsEmulator: true
  })
  try {
    const client = new Anthropic({ apiKey: KEY, baseURL: gateway.url, maxRetries: 0 })
    const created = await client.messages.batches.create({ requests: requests(4, "t") })
    await ended(client, created.id)
    const callsOf = (index: number) =>
      emulator.requests.filter((request) => JSON.stringify(request.body).includes(`Recovery marker t${index}x`)).length
    deepStrictEqual([0, 1, 2, 3].map(callsOf), [1, 1, 1, 1])
    // As a dead instance leaves them: line 0 answered and charged but its result never recorded; line 1 claimed and
    // never charged (its usage row gone, as if the call never reached a vendor); both leases run out.
    await gateway.query(
      `UPDATE batch_lines SET state = 'running', claimed_by = 'dead-instance', claimed_until = now() - interval '1 second',
         result = NULL, status_code = NULL, finished_at = NULL
       WHERE line_index IN (0, 1) AND batch_id = (SELECT id FROM batches WHERE public_id = '${created.id}')`
    )
    await gateway.query(`DELETE FROM usage_logs WHERE request_id = '${created.id}.1'`)
    await gateway.query(`UPDATE batches SET status = 'in_progress', ended_at = NULL WHERE public_id = '${created.id}'`)
    const batch = await ended(client, created.id)
    deepStrictEqual(batch.request_counts, { processing: 0, succeeded: 3, errored: 1, canceled: 0, expired: 0 })
    const results = []
    for await (const entry of await client.messages.batches.results(created.id)) results.push(entry)
    const first = results[0].result
    ok(first.type === "errored")
    strictEqual((first.error.error as unknown as { code: string }).code, "batch_line_interrupted")
    strictEqual(results[1].result.type, "succeeded")
    deepStrictEqual([0, 1, 2, 3].map(callsOf), [1, 2, 1, 1], "only the uncharged line was sent again")
    const billed = await billedPerRequest(gateway, created.id)
    deepStrictEqual([0, 1, 2, 3].map((index) => billed.get(`${created.id}.${index}`)), [1, 1, 1, 1])
  } finally {
    await gateway.close()
  }
})

Deno.test("two instances share one batch: every line runs once, on one of them, billed once", async () => {
  const emulator = startEmulator({ latencyMs: 40 })
  const database = await freshPostgres()
  const settings = { batch_concurrency: 2 }
  const first = await startGateway({ config: config(settings), databaseUrl: database.url, emulator })
  const second = await startGateway({ config: config(settings), databaseUrl: database.url, emulator })
  try {
    const client = new Anthropic({ apiKey: KEY, baseURL: first.url, maxRetries: 0 })
    const created = await client.messages.batches.create({ requests: requests(40, "s") })
    const batch = await ended(new Anthropic({ apiKey: KEY, baseURL: second.url, maxRetries: 0 }), created.id)
    deepStrictEqual(batch.request_counts, { processing: 0, succeeded: 40, errored: 0, canceled: 0, expired: 0 })
    const runners = await first.query<{ claimed_by: string; lines: string }>(
      `SELECT claimed_by, count(*)::text AS lines FROM batch_lines GROUP BY claimed_by`
    )
    strictEqual(runners.length, 2, `both instances ran lines: ${JSON.stringify(runners)}`)
    for (let index = 0; index < 40; index++) {
      const calls = emulator.requests.filter((request) =>
        JSON.stringify(request.body).includes(`Recovery marker s${index}x`)
      )
      strictEqual(calls.length, 1, `line ${index} reached the vendor once`)
    }
    // Each instance folds its own charges: both are waited for.
    await second.settled()
    const billed = await billedPerRequest(first, created.id)
    strictEqual(billed.size, 40)
    ok([...billed.values()].every((count) => count === 1), "every line billed once")
  } finally {
    await first.stop()
    await second.stop()
    await database.drop()
    await emulator.close()
  }
})
