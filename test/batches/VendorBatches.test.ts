/**
 * Batches delegated to the vendors' own batch APIs (channels with `settings.vendor_batches: true`), through the
 * official SDKs (`openai`: `files.create`, `batches.create` / `retrieve` / `cancel`, `files.content`;
 * `@anthropic-ai/sdk`: `messages.batches.create` / `retrieve` / `cancel` / `results`), on a gateway on PostgreSQL in
 * front of the emulator's batch APIs: an OpenAI batch and a Message Batch each submitted to the vendor as one batch
 * (the emulator ran every line inside it, none as a call of its own), every line billed exactly the usage the
 * emulator reported at the model's batch prices (set apart from the normal ones), one usage row per line under
 * `<batch id>.<line index>`, a failed line free; a batch cancelled mid-run billing only the lines that ran; a vendor
 * refusing the create (400) leaving the batch to the gateway, billed at the normal prices; and, on a gateway with a
 * two-second window, a batch that outlives it ending `expired` with the lines that ran billed and the rest not.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import Anthropic from "@anthropic-ai/sdk"
import OpenAI, { toFile } from "openai"
import { Result } from "effect"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { type RecordedRequest, startEmulator } from "../../emulator/Emulator.ts"
import { startGateway, type TestGateway } from "../support/Gateway.ts"

const ALICE = "sk-test-vbatch-alice-0001"
const CAROL = "sk-test-vbatch-carol-0001"
const UPSTREAM_OPENAI = "sk-test-up-vbatch-openai"
const UPSTREAM_ANTHROPIC = "sk-test-up-vbatch-anthropic"

/** USD per 1M tokens: one quota unit a token per dollar (ratio 1). Batch prices differ from the normal ones. */
const PRICES = {
  "gpt-vb": { normal: { input: 4, output: 8 }, batch: { input: 1, output: 2 } },
  "claude-vb": { normal: { input: 3, output: 9 }, batch: { input: 2, output: 5 } }
} as const

const config = (settings: Record<string, unknown>) => (emulatorUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: Object.fromEntries(
        Object.entries(PRICES).map(([model, price]) => [model, {
          ...price.normal,
          batch_input: price.batch.input,
          batch_output: price.batch.output
        }])
      ),
      channels: [
        {
          name: "vendor-openai",
          type: "openai",
          keys: [UPSTREAM_OPENAI],
          models: ["gpt-vb"],
          model_mapping: { "gpt-vb": "gpt-vb-upstream" },
          settings: { vendor_batches: true }
        },
        {
          name: "vendor-anthropic",
          type: "anthropic",
          keys: [UPSTREAM_ANTHROPIC],
          models: ["claude-vb"],
          settings: { vendor_batches: true }
        }
      ].map((channel) => ({ ...channel, base_url: emulatorUrl })),
      users: [
        { username: "alice", group: "default", quota: 100_000_000, tokens: [{ name: "main", key: ALICE }] },
        // A balance for a few lines only: each line is held and booked as its result is recorded.
        { username: "carol", group: "default", quota: 100, tokens: [{ name: "main", key: CAROL }] }
      ],
      settings: { batch_poll_ms: 50, batch_vendor_poll_ms: 60, ...settings }
    }),
    "vendor-batches.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

interface Row {
  readonly request_id: string
  readonly channel_id: number
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly cost: string
  readonly status: number
}

const rowsOf = (gateway: TestGateway, batchId: string) =>
  gateway.query<Row>(
    `SELECT request_id, channel_id, prompt_tokens, completion_tokens, cost::text AS cost, status FROM usage_logs
     WHERE request_id LIKE '${batchId}.%' ORDER BY request_id`
  )

const vendorIdOf = async (gateway: TestGateway, batchId: string): Promise<string | null> =>
  (await gateway.query<{ vendor_batch_id: string | null }>(
    `SELECT vendor_batch_id FROM batches WHERE public_id = '${batchId}'`,
    false
  ))[0]?.vendor_batch_id ?? null

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The line calls the emulator ran inside vendor batch `vendorId`. */
const ranIn = (requests: ReadonlyArray<RecordedRequest>, vendorId: string) =>
  requests.filter((request) => request.method === "POST" && request.headers["x-emulator-batch"] === vendorId)

/** The one emulator call whose body carried `marker`. */
const callWith = (requests: ReadonlyArray<RecordedRequest>, marker: string): RecordedRequest => {
  const found = requests.filter((request) =>
    request.method === "POST" && !request.path.includes("batches") && JSON.stringify(request.body).includes(marker)
  )
  strictEqual(found.length, 1, `one call for ${marker}`)
  return found[0]
}

/** What a line costs at `price` for the usage the emulator reported (prompt: Anthropic's input plus its cache). */
const costOf = (
  usage: NonNullable<RecordedRequest["usage"]>,
  vendor: "openai" | "anthropic",
  price: { readonly input: number; readonly output: number }
) => {
  const prompt = vendor === "openai" ? usage.input : usage.input + usage.cacheRead + usage.cacheWrite
  return { prompt, completion: usage.output, cost: BigInt(prompt * price.input + usage.output * price.output) }
}

const quotaOf = async (gateway: TestGateway, username = "alice") =>
  BigInt(
    (await gateway.query<{ quota: string }>(`SELECT quota::text AS quota FROM users WHERE username = '${username}'`))[0]
      .quota
  )

const OPENAI_ENDS = new Set(["completed", "failed", "expired", "cancelled"])

const openAiEnded = async (client: OpenAI, id: string) => {
  for (let tries = 0; tries < 600; tries++) {
    const batch = await client.batches.retrieve(id)
    if (OPENAI_ENDS.has(batch.status)) return batch
    await sleep(50)
  }
  throw new Error(`batch ${id} did not end`)
}

const anthropicEnded = async (client: Anthropic, id: string) => {
  for (let tries = 0; tries < 600; tries++) {
    const batch = await client.messages.batches.retrieve(id)
    if (batch.processing_status === "ended") return batch
    await sleep(50)
  }
  throw new Error(`batch ${id} did not end`)
}

const chatLine = (index: number, marker: string) => ({
  custom_id: `caller id ${index}`,
  method: "POST",
  url: "/v1/chat/completions",
  body: { model: "gpt-vb", max_tokens: 24, messages: [{ role: "user", content: `${marker}${index}x: be brief.` }] }
})

const messageLine = (index: number, marker: string) => ({
  custom_id: `line-${index}`,
  params: {
    model: "claude-vb",
    max_tokens: 24,
    messages: [{ role: "user" as const, content: `${marker}${index}x: be brief.` }]
  }
})

const upload = async (client: OpenAI, lines: ReadonlyArray<unknown>) =>
  client.files.create({
    file: await toFile(new TextEncoder().encode(lines.map((line) => JSON.stringify(line)).join("\n")), "in.jsonl"),
    purpose: "batch"
  })

const jsonl = async (client: OpenAI, fileId: string) =>
  (await (await client.files.content(fileId)).text()).split("\n").filter((line) => line !== "").map((line) =>
    JSON.parse(line)
  )

Deno.test("vendor batches: delegated to OpenAI and Anthropic, billed at batch prices, cancel, refused create", async (t) => {
  const emulator = startEmulator({ batchPolls: 8, validKeys: [UPSTREAM_OPENAI, UPSTREAM_ANTHROPIC] })
  const gateway = await startGateway({ config: config({}), store: "postgres", emulator, ownsEmulator: true })
  const openai = new OpenAI({ apiKey: ALICE, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
  const anthropic = new Anthropic({ apiKey: ALICE, baseURL: gateway.url, maxRetries: 0 })
  const [openAiChannel] = await gateway.query<{ id: number }>("SELECT id FROM channels WHERE name = 'vendor-openai'")
  try {
    await t.step(
      "an OpenAI batch runs as one vendor batch; each line billed its usage at the batch prices",
      async () => {
        const quotaBefore = await quotaOf(gateway)
        const lines: Array<unknown> = Array.from({ length: 8 }, (_, index) => chatLine(index, "vo"))
        // The vendor refuses this line (no messages): errored, free.
        lines.push({ custom_id: "no messages", method: "POST", url: "/v1/chat/completions", body: { model: "gpt-vb" } })
        const input = await upload(openai, lines)
        const created = await openai.batches.create({
          input_file_id: input.id,
          endpoint: "/v1/chat/completions",
          completion_window: "24h"
        })
        const batch = await openAiEnded(openai, created.id)
        strictEqual(batch.status, "completed")
        deepStrictEqual(batch.request_counts, { total: 9, completed: 8, failed: 1 })

        const vendorId = await vendorIdOf(gateway, created.id)
        ok(vendorId?.startsWith("batch_"), "submitted to the vendor")
        const creates = emulator.requests.filter((request) =>
          request.method === "POST" && request.path === "/v1/batches"
        )
        strictEqual(creates.length, 1, "one vendor batch")
        strictEqual(creates[0].key, UPSTREAM_OPENAI)
        const ran = ranIn(emulator.requests, vendorId!)
        strictEqual(ran.length, 9, "every line ran inside the vendor batch")
        ok(ran.every((request) => (request.body as { model: string }).model === "gpt-vb-upstream"), "model mapped")

        const output = await jsonl(openai, batch.output_file_id!)
        deepStrictEqual(
          output.map((line) => line.custom_id),
          Array.from({ length: 8 }, (_, index) => `caller id ${index}`)
        )
        for (const [index, line] of output.entries()) {
          strictEqual(line.response.status_code, 200)
          strictEqual(line.response.request_id, `${created.id}.${index}`)
          strictEqual(line.response.body.object, "chat.completion")
        }
        const errors = await jsonl(openai, batch.error_file_id!)
        deepStrictEqual(errors.map((line) => [line.custom_id, line.response.status_code]), [["no messages", 400]])

        const rows = await rowsOf(gateway, created.id)
        strictEqual(rows.length, 9, "one usage row per line")
        strictEqual(new Set(rows.map((row) => row.request_id)).size, 9)
        let total = 0n
        for (const row of rows) {
          const index = Number(row.request_id.slice(created.id.length + 1))
          strictEqual(row.channel_id, openAiChannel.id)
          if (index === 8) {
            deepStrictEqual([row.status, row.cost], [400, "0"], "the failed line is free")
            continue
          }
          const usage = callWith(emulator.requests, `vo${index}x`).usage
          ok(usage !== undefined && usage.input > 0 && usage.output > 0)
          const expected = costOf(usage, "openai", PRICES["gpt-vb"].batch)
          deepStrictEqual(
            {
              status: row.status,
              prompt: row.prompt_tokens,
              completion: row.completion_tokens,
              cost: BigInt(row.cost)
            },
            { status: 200, prompt: expected.prompt, completion: expected.completion, cost: expected.cost },
            `line ${index}: its reported usage at the batch prices`
          )
          ok(expected.cost < costOf(usage, "openai", PRICES["gpt-vb"].normal).cost)
          total += expected.cost
        }
        strictEqual(quotaBefore - (await quotaOf(gateway)), total, "the balance paid exactly the lines' costs")
      }
    )

    await t.step("a takeover after a stop between billing and recording bills no line twice", async () => {
      // The state an instance leaves when it stops after its charges were journaled but before the lines' results
      // were recorded: lines pending, the vendor batch running, its claim another instance's whose lease ran out.
      const [done] = await gateway.query<{ public_id: string }>(
        "SELECT public_id FROM batches WHERE api = 'openai' AND vendor_batch_id IS NOT NULL ORDER BY id LIMIT 1"
      )
      const rowsBefore = await rowsOf(gateway, done.public_id)
      const quotaBefore = await quotaOf(gateway)
      const retrievesBefore = emulator.requests.filter((request) => request.path.startsWith("/v1/batches/")).length
      await gateway.query(
        `UPDATE batch_lines SET state = 'pending', status_code = NULL, result = NULL, finished_at = NULL
         WHERE batch_id = (SELECT id FROM batches WHERE public_id = '${done.public_id}')`
      )
      await gateway.query(
        `UPDATE batches SET status = 'in_progress', ended_at = NULL, finalizing_at = NULL, output_file_id = NULL,
           error_file_id = NULL, vendor_phase = 'running', vendor_polled_at = NULL,
           vendor_claimed_by = 'batches-stopped', vendor_claimed_until = now() - interval '1 second'
         WHERE public_id = '${done.public_id}'`
      )
      const batch = await openAiEnded(openai, done.public_id)
      strictEqual(batch.status, "completed")
      deepStrictEqual(batch.request_counts, { total: 9, completed: 8, failed: 1 })
      ok(
        emulator.requests.filter((request) => request.path.startsWith("/v1/batches/")).length > retrievesBefore,
        "the vendor batch was read again"
      )
      const output = await jsonl(openai, batch.output_file_id!)
      strictEqual(output.length, 8)
      ok(output.every((line) => line.response.body.object === "chat.completion"), "the results recorded again")
      deepStrictEqual(await rowsOf(gateway, done.public_id), rowsBefore, "no row added")
      strictEqual(await quotaOf(gateway), quotaBefore, "nothing billed again")
    })

    await t.step(
      "a Message Batch runs as one vendor batch; each line billed its usage at the batch prices",
      async () => {
        const quotaBefore = await quotaOf(gateway)
        const created = await anthropic.messages.batches.create({
          requests: [
            ...Array.from({ length: 6 }, (_, index) => messageLine(index, "va")),
            { custom_id: "bad-params", params: { model: "claude-vb", max_tokens: 8 } as never }
          ]
        })
        const batch = await anthropicEnded(anthropic, created.id)
        deepStrictEqual(batch.request_counts, { processing: 0, succeeded: 6, errored: 1, canceled: 0, expired: 0 })
        const vendorId = await vendorIdOf(gateway, created.id)
        ok(vendorId?.startsWith("msgbatch_"), "submitted to the vendor")
        strictEqual(
          emulator.requests.filter((request) => request.method === "POST" && request.path === "/v1/messages/batches")
            .length,
          1,
          "one vendor batch"
        )
        strictEqual(ranIn(emulator.requests, vendorId!).length, 7, "every line ran inside the vendor batch")

        const results = new Map<string, Anthropic.Messages.MessageBatchResult>()
        for await (const entry of await anthropic.messages.batches.results(created.id)) {
          results.set(entry.custom_id, entry.result)
        }
        strictEqual(results.size, 7)
        strictEqual(results.get("bad-params")?.type, "errored")
        const rows = await rowsOf(gateway, created.id)
        strictEqual(rows.length, 7, "one usage row per line")
        let total = 0n
        for (const row of rows) {
          const index = Number(row.request_id.slice(created.id.length + 1))
          if (index === 6) {
            strictEqual(row.cost, "0", "the failed line is free")
            ok(row.status >= 400)
            continue
          }
          const result = results.get(`line-${index}`)
          ok(result?.type === "succeeded")
          const usage = callWith(emulator.requests, `va${index}x`).usage!
          strictEqual(result.message.usage.output_tokens, usage.output)
          const expected = costOf(usage, "anthropic", PRICES["claude-vb"].batch)
          deepStrictEqual(
            { prompt: row.prompt_tokens, completion: row.completion_tokens, cost: BigInt(row.cost) },
            { prompt: expected.prompt, completion: expected.completion, cost: expected.cost },
            `line ${index}: its reported usage at the batch prices`
          )
          total += expected.cost
        }
        strictEqual(quotaBefore - (await quotaOf(gateway)), total, "the balance paid exactly the lines' costs")
      }
    )

    await t.step("a delegated batch cancelled mid-run bills only the lines the vendor ran", async () => {
      const created = await anthropic.messages.batches.create({
        requests: Array.from({ length: 8 }, (_, index) => messageLine(index, "vc"))
      })
      let vendorId: string | null = null
      for (let tries = 0; tries < 400; tries++) {
        vendorId ??= await vendorIdOf(gateway, created.id)
        if (vendorId !== null && ranIn(emulator.requests, vendorId).length >= 2) break
        await sleep(10)
      }
      ok(vendorId !== null)
      const canceling = await anthropic.messages.batches.cancel(created.id)
      ok(canceling.cancel_initiated_at !== null)
      const batch = await anthropicEnded(anthropic, created.id)
      const ran = ranIn(emulator.requests, vendorId)
      ok(ran.length >= 2 && ran.length < 8, `${ran.length} lines ran`)
      deepStrictEqual(batch.request_counts, {
        processing: 0,
        succeeded: ran.length,
        errored: 0,
        canceled: 8 - ran.length,
        expired: 0
      })
      ok(emulator.requests.some((request) => request.path === `/v1/messages/batches/${vendorId}/cancel`))
      const rows = await rowsOf(gateway, created.id)
      strictEqual(rows.length, ran.length, "a row for each line that ran, none for the rest")
      for (const row of rows) {
        const index = Number(row.request_id.slice(created.id.length + 1))
        const usage = callWith(emulator.requests, `vc${index}x`).usage!
        strictEqual(BigInt(row.cost), costOf(usage, "anthropic", PRICES["claude-vb"].batch).cost)
      }
    })

    await t.step("a key out of quota gets its remaining lines refused at no cost; the rest billed", async () => {
      const carol = new Anthropic({ apiKey: CAROL, baseURL: gateway.url, maxRetries: 0 })
      const created = await carol.messages.batches.create({
        requests: Array.from({ length: 8 }, (_, index) => messageLine(index, "vq"))
      })
      const batch = await anthropicEnded(carol, created.id)
      const vendorId = await vendorIdOf(gateway, created.id)
      ok(vendorId !== null)
      strictEqual(ranIn(emulator.requests, vendorId).length, 8, "the vendor ran every line")
      const counts = batch.request_counts
      ok(counts.succeeded > 0 && counts.errored > 0, JSON.stringify(counts))
      strictEqual(counts.succeeded + counts.errored, 8)
      const refused: Array<string> = []
      for await (const entry of await carol.messages.batches.results(created.id)) {
        if (entry.result.type !== "errored") continue
        refused.push(entry.custom_id)
        const error = entry.result.error.error as unknown as { code: string }
        strictEqual(error.code, "insufficient_user_quota")
      }
      strictEqual(refused.length, counts.errored)
      const rows = await rowsOf(gateway, created.id)
      strictEqual(rows.length, 8, "one usage row per line")
      let total = 0n
      for (const row of rows) {
        const index = Number(row.request_id.slice(created.id.length + 1))
        if (refused.includes(`line-${index}`)) {
          deepStrictEqual([row.status, row.cost], [402, "0"], `line ${index}: refused, free`)
          continue
        }
        const usage = callWith(emulator.requests, `vq${index}x`).usage!
        strictEqual(BigInt(row.cost), costOf(usage, "anthropic", PRICES["claude-vb"].batch).cost)
        total += BigInt(row.cost)
      }
      strictEqual(100n - (await quotaOf(gateway, "carol")), total, "the balance paid the billed lines, no more")
    })

    await t.step("a vendor refusing the create leaves the batch to the gateway, at the normal prices", async () => {
      emulator.setFaults([{ match: { path: "/v1/batches" }, status: 400, times: 1 }])
      const creates = () => emulator.requests.filter((request) => request.path === "/v1/batches").length
      const before = creates()
      const input = await upload(openai, Array.from({ length: 4 }, (_, index) => chatLine(index, "vr")))
      const created = await openai.batches.create({
        input_file_id: input.id,
        endpoint: "/v1/chat/completions",
        completion_window: "24h"
      })
      const batch = await openAiEnded(openai, created.id)
      emulator.clearFaults()
      strictEqual(batch.status, "completed")
      deepStrictEqual(batch.request_counts, { total: 4, completed: 4, failed: 0 })
      strictEqual(creates(), before + 1, "the vendor was asked once")
      strictEqual(await vendorIdOf(gateway, created.id), null)
      const rows = await rowsOf(gateway, created.id)
      strictEqual(rows.length, 4)
      for (const row of rows) {
        const index = Number(row.request_id.slice(created.id.length + 1))
        const call = callWith(emulator.requests, `vr${index}x`)
        strictEqual(call.headers["x-emulator-batch"], undefined, "a call of its own, sent by the gateway")
        strictEqual(BigInt(row.cost), costOf(call.usage!, "openai", PRICES["gpt-vb"].normal).cost)
      }
      const refusal = gateway.logs.find((line) => line.includes("vendor_error") && line.includes(created.id))
      ok(refusal !== undefined, "the refusal is logged")
      ok(refusal.includes("400"))
      ok(!gateway.logs.some((line) => line.includes(UPSTREAM_OPENAI)), "no key in the logs")
    })
  } finally {
    await gateway.close()
  }
})

Deno.test("vendor batches: a delegated batch that outlives its window ends expired, the lines that ran billed", async () => {
  const emulator = startEmulator({ batchPolls: 60, validKeys: [UPSTREAM_OPENAI, UPSTREAM_ANTHROPIC] })
  const gateway = await startGateway({
    config: config({ batch_window_seconds: 2 }),
    store: "postgres",
    emulator,
    ownsEmulator: true
  })
  const openai = new OpenAI({ apiKey: ALICE, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
  try {
    const input = await upload(openai, Array.from({ length: 60 }, (_, index) => chatLine(index, "ve")))
    const created = await openai.batches.create({
      input_file_id: input.id,
      endpoint: "/v1/chat/completions",
      completion_window: "24h"
    })
    const batch = await openAiEnded(openai, created.id)
    strictEqual(batch.status, "expired")
    ok(batch.expired_at !== null)
    const vendorId = await vendorIdOf(gateway, created.id)
    ok(vendorId !== null)
    ok(emulator.requests.some((request) => request.path === `/v1/batches/${vendorId}/cancel`), "cancelled there")
    const ran = ranIn(emulator.requests, vendorId).length
    ok(ran > 0 && ran < 60, `${ran} lines ran`)
    deepStrictEqual(batch.request_counts, { total: 60, completed: ran, failed: 0 })
    strictEqual((await jsonl(openai, batch.output_file_id!)).length, ran)
    const rows = await rowsOf(gateway, created.id)
    strictEqual(rows.length, ran, "the lines that ran billed, the rest not")
    for (const row of rows) {
      const index = Number(row.request_id.slice(created.id.length + 1))
      const usage = callWith(emulator.requests, `ve${index}x`).usage!
      strictEqual(BigInt(row.cost), costOf(usage, "openai", PRICES["gpt-vb"].batch).cost)
    }
  } finally {
    await gateway.close()
  }
})
