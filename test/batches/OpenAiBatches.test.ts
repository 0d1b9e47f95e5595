/**
 * OpenAI's Batch API through the official `openai` SDK (`files.create`, `batches.create` / `retrieve` / `list` /
 * `cancel`, `files.content`), on one gateway on PostgreSQL in front of the emulator: a chat batch whose lines go to
 * openai, anthropic and gemini channels (each translated from chat completions), every line billed exactly the
 * usage the emulator reported and its output in input order; an embeddings batch; an input with bad lines failing
 * validation with each line named and nothing run; a batch cancelled mid-run; another user's ids answering 404.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict"
import OpenAI, { toFile } from "openai"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { type RecordedRequest, startEmulator } from "../../emulator/Emulator.ts"
import { startGateway, type TestGateway } from "../support/Gateway.ts"

const ALICE = "sk-test-obatch-alice-0001"
const BOB = "sk-test-obatch-bob-0001"
const CHAT_MODELS = ["gpt-batch", "claude-batch", "gemini-batch"] as const

const config = (emulatorUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: {
        ...Object.fromEntries(CHAT_MODELS.map((model) => [model, { input: 1, output: 2 }])),
        "text-embedding-3-small": { input: 1 }
      },
      channels: [
        {
          name: "emu-openai",
          type: "openai",
          keys: ["sk-test-up-openai"],
          models: ["gpt-batch", "text-embedding-3-small"]
        },
        { name: "emu-anthropic", type: "anthropic", keys: ["sk-test-up-anthropic"], models: ["claude-batch"] },
        { name: "emu-gemini", type: "gemini", keys: ["sk-test-up-gemini"], models: ["gemini-batch"] }
      ].map((channel) => ({ ...channel, base_url: emulatorUrl })),
      users: [
        { username: "alice", group: "default", quota: 100_000_000, tokens: [{ name: "main", key: ALICE }] },
        { username: "bob", group: "default", quota: 100_000_000, tokens: [{ name: "main", key: BOB }] }
      ],
      settings: { batch_concurrency: 4, batch_poll_ms: 50 }
    }),
    "openai-batches.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

interface Row {
  readonly request_id: string
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly cost: string
  readonly status: number
}

const billedRows = async (gateway: TestGateway, batchId: string) =>
  (await gateway.query<Row>(
    `SELECT request_id, prompt_tokens, completion_tokens, cost::text AS cost, status FROM usage_logs
     WHERE request_id LIKE '${batchId}.%' ORDER BY id`
  )).filter((row) => row.status < 400)

const ENDS = new Set(["completed", "failed", "expired", "cancelled"])

const finished = async (client: OpenAI, id: string) => {
  for (let tries = 0; tries < 400; tries++) {
    const batch = await client.batches.retrieve(id)
    if (ENDS.has(batch.status)) return batch
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`batch ${id} did not end`)
}

/** Uploads `lines` (objects as JSON, strings as they are) as a JSONL file of purpose `batch`. */
const upload = async (client: OpenAI, lines: ReadonlyArray<unknown>) =>
  client.files.create({
    file: await toFile(
      new TextEncoder().encode(lines.map((line) => typeof line === "string" ? line : JSON.stringify(line)).join("\n")),
      "input.jsonl"
    ),
    purpose: "batch"
  })

const jsonl = async (client: OpenAI, fileId: string) =>
  (await (await client.files.content(fileId)).text()).split("\n").filter((line) => line !== "").map((line) =>
    JSON.parse(line)
  )

const callWith = (requests: ReadonlyArray<RecordedRequest>, text: string): RecordedRequest => {
  const found = requests.filter((request) => request.method === "POST" && JSON.stringify(request.body).includes(text))
  strictEqual(found.length, 1, `one upstream call for ${text}`)
  return found[0]
}

const chatLine = (index: number, marker: string) => ({
  custom_id: `req-${index}`,
  method: "POST",
  url: "/v1/chat/completions",
  body: {
    model: CHAT_MODELS[index % 3],
    max_tokens: 32,
    messages: [{ role: "user", content: `${marker}${index}x: answer briefly.` }]
  }
})

Deno.test("OpenAI batches through the openai SDK: chat and embeddings, validation, cancel, owner only", async (t) => {
  const emulator = startEmulator({ latencyMs: 20 })
  const gateway = await startGateway({ config, store: "postgres", emulator, ownsEmulator: true })
  const alice = new OpenAI({ apiKey: ALICE, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
  const bob = new OpenAI({ apiKey: BOB, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
  try {
    let chatBatchId = ""
    let inputFileId = ""
    await t.step(
      "a chat batch over three channel types: output in input order, each line billed as reported",
      async () => {
        const lines: Array<unknown> = Array.from({ length: 45 }, (_, index) => chatLine(index, "om"))
        // Valid for validation (a known model), refused when it runs: no messages.
        lines.push({
          custom_id: "no-messages",
          method: "POST",
          url: "/v1/chat/completions",
          body: { model: "gpt-batch" }
        })
        const input = await upload(alice, lines)
        inputFileId = input.id
        const created = await alice.batches.create({
          input_file_id: input.id,
          endpoint: "/v1/chat/completions",
          completion_window: "24h",
          metadata: { job: "nightly" }
        })
        ok(created.id.startsWith("batch_"))
        strictEqual(created.object, "batch")
        strictEqual(created.input_file_id, input.id)
        deepStrictEqual(created.metadata, { job: "nightly" })
        chatBatchId = created.id
        const batch = await finished(alice, created.id)
        strictEqual(batch.status, "completed")
        deepStrictEqual(batch.request_counts, { total: 46, completed: 45, failed: 1 })
        ok(batch.completed_at !== null && batch.output_file_id && batch.error_file_id)
        ok((batch.finalizing_at ?? 0) >= (batch.in_progress_at ?? Infinity))

        const output = await jsonl(alice, batch.output_file_id!)
        deepStrictEqual(output.map((line) => line.custom_id), Array.from({ length: 45 }, (_, index) => `req-${index}`))
        for (const [index, line] of output.entries()) {
          strictEqual(line.error, null)
          strictEqual(line.response.status_code, 200)
          strictEqual(line.response.request_id, `${created.id}.${index}`)
          strictEqual(line.response.body.object, "chat.completion")
          ok(line.response.body.choices[0].message.content.length > 0)
          ok(String(line.id).startsWith("batch_req_"))
        }
        const errors = await jsonl(alice, batch.error_file_id!)
        strictEqual(errors.length, 1)
        strictEqual(errors[0].custom_id, "no-messages")
        strictEqual(errors[0].response.status_code, 400)
        ok(errors[0].response.body.error.message.length > 0)
        const outputFile = await alice.files.retrieve(batch.output_file_id!)
        strictEqual(outputFile.purpose, "batch_output")

        const rows = await billedRows(gateway, created.id)
        strictEqual(rows.length, 45)
        strictEqual(new Set(rows.map((row) => row.request_id)).size, 45, "no line billed twice")
        for (const row of rows) {
          const index = Number(row.request_id.slice(created.id.length + 1))
          const usage = callWith(emulator.requests, `om${index}x`).usage
          ok(usage !== undefined)
          deepStrictEqual(
            { prompt: row.prompt_tokens, completion: row.completion_tokens },
            {
              prompt: usage.input + usage.cacheRead + (index % 3 === 1 ? usage.cacheWrite : 0),
              completion: usage.output
            },
            `line ${index}: the tokens its vendor reported`
          )
          strictEqual(BigInt(row.cost), BigInt(usage.input + 2 * usage.output), `line ${index}: priced as reported`)
        }
      }
    )

    await t.step("an embeddings batch", async () => {
      const input = await upload(
        alice,
        Array.from({ length: 12 }, (_, index) => ({
          custom_id: `emb-${index}`,
          method: "POST",
          url: "/v1/embeddings",
          body: { model: "text-embedding-3-small", input: `Embedding marker e${index}x for the batch.` }
        }))
      )
      const created = await alice.batches.create({
        input_file_id: input.id,
        endpoint: "/v1/embeddings",
        completion_window: "24h"
      })
      const batch = await finished(alice, created.id)
      strictEqual(batch.status, "completed")
      deepStrictEqual(batch.request_counts, { total: 12, completed: 12, failed: 0 })
      strictEqual(batch.error_file_id, null)
      const output = await jsonl(alice, batch.output_file_id!)
      deepStrictEqual(output.map((line) => line.custom_id), Array.from({ length: 12 }, (_, index) => `emb-${index}`))
      for (const line of output) {
        strictEqual(line.response.body.object, "list")
        ok(line.response.body.data[0].embedding.length > 0)
      }
      const rows = await billedRows(gateway, created.id)
      strictEqual(rows.length, 12)
      for (const row of rows) {
        const index = Number(row.request_id.slice(created.id.length + 1))
        const usage = callWith(emulator.requests, `e${index}x`).usage
        strictEqual(row.prompt_tokens, usage?.input)
        strictEqual(BigInt(row.cost), BigInt(usage!.input))
      }
    })

    await t.step("bad lines fail validation, each named by its line; nothing runs", async () => {
      const before = emulator.requests.length
      const input = await upload(alice, [
        chatLine(0, "bad"),
        chatLine(0, "bad"), // duplicate custom_id
        { ...chatLine(2, "bad"), url: "/v1/embeddings" },
        { ...chatLine(3, "bad"), body: { ...chatLine(3, "bad").body, model: "no-such-model" } },
        "{not json",
        { ...chatLine(5, "bad"), method: "GET" }
      ])
      const created = await alice.batches.create({
        input_file_id: input.id,
        endpoint: "/v1/chat/completions",
        completion_window: "24h"
      })
      strictEqual(created.status, "failed")
      ok(created.failed_at !== null)
      deepStrictEqual(
        created.errors?.data?.map((error) => [error.line, error.code, error.param]),
        [
          [2, "duplicate_custom_id", "custom_id"],
          [3, "mismatched_endpoint", "url"],
          [4, "model_not_found", "body.model"],
          [5, "invalid_json_line", null],
          [6, "invalid_method", "method"]
        ]
      )
      strictEqual(created.request_counts?.total, 0)
      await new Promise((resolve) => setTimeout(resolve, 150))
      strictEqual(emulator.requests.length, before, "no upstream call")
      // Bad create bodies name their field.
      await rejects(
        alice.batches.create({ input_file_id: input.id, endpoint: "/v1/nope" as never, completion_window: "24h" }),
        (error) => error instanceof OpenAI.BadRequestError && (error.error as { param?: string }).param === "endpoint"
      )
      await rejects(
        alice.batches.create({ input_file_id: "file-nope", endpoint: "/v1/embeddings", completion_window: "24h" }),
        (error) => error instanceof OpenAI.NotFoundError
      )
    })

    await t.step("cancel mid-run: finished lines billed and in the output, the rest cancelled", async () => {
      const input = await upload(alice, Array.from({ length: 80 }, (_, index) => chatLine(index, "oc")))
      const created = await alice.batches.create({
        input_file_id: input.id,
        endpoint: "/v1/chat/completions",
        completion_window: "24h"
      })
      for (let tries = 0; tries < 200; tries++) {
        const batch = await alice.batches.retrieve(created.id)
        if ((batch.request_counts?.completed ?? 0) >= 4) break
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      const cancelling = await alice.batches.cancel(created.id)
      ok(["cancelling", "cancelled"].includes(cancelling.status))
      ok(cancelling.cancelling_at !== null)
      const batch = await finished(alice, created.id)
      strictEqual(batch.status, "cancelled")
      ok(batch.cancelled_at !== null)
      const completed = batch.request_counts!.completed
      ok(completed >= 4 && completed < 80, `completed ${completed}`)
      strictEqual((await jsonl(alice, batch.output_file_id!)).length, completed)
      const errors = await jsonl(alice, batch.error_file_id!)
      strictEqual(errors.length, 80 - completed)
      ok(errors.every((line) => line.error?.code === "batch_cancelled" && line.response === null))
      strictEqual((await billedRows(gateway, created.id)).length, completed, "exactly the finished lines billed")
    })

    await t.step("list; another user's batch and file ids answer 404", async () => {
      const page = await alice.batches.list({ limit: 2 })
      strictEqual(page.data.length, 2)
      strictEqual(page.has_more, true)
      const all: Array<string> = []
      for await (const batch of alice.batches.list({ limit: 2 })) all.push(batch.id)
      strictEqual(all.length, 4)
      strictEqual(all.at(-1), chatBatchId)
      strictEqual((await bob.batches.list()).data.length, 0)
      await rejects(bob.batches.retrieve(chatBatchId), (error) => error instanceof OpenAI.NotFoundError)
      await rejects(bob.batches.cancel(chatBatchId), (error) => error instanceof OpenAI.NotFoundError)
      await rejects(
        bob.batches.create({ input_file_id: inputFileId, endpoint: "/v1/chat/completions", completion_window: "24h" }),
        (error) =>
          error instanceof OpenAI.NotFoundError && (error.error as { param?: string }).param === "input_file_id"
      )
    })
  } finally {
    await gateway.close()
  }
})
