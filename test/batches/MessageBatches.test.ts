/**
 * Anthropic's Message Batches through the official `@anthropic-ai/sdk` (`messages.batches.create` / `retrieve` /
 * `list` / `results` / `cancel` / `delete`), on one gateway on PostgreSQL in front of the emulator: a batch whose
 * lines go to openai, anthropic and gemini channels, every line billed exactly the usage the emulator reported and
 * logged once under `<batch id>.<line index>`; lines that fail (an unknown model, bad params) errored and free; a
 * batch cancelled mid-run; another user's batch id answering 404; a bad create body refused with the field named; a
 * user out of quota and a key past its budget erroring the remaining lines at no cost; a rate-limited key slowed.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict"
import Anthropic from "@anthropic-ai/sdk"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { type RecordedRequest, startEmulator } from "../../emulator/Emulator.ts"
import { startGateway, type TestGateway } from "../support/Gateway.ts"
import { browser } from "../support/Browser.ts"

const ALICE = "sk-test-batch-alice-0001"
const BOB = "sk-test-batch-bob-0001"
const CAROL = "sk-test-batch-carol-0001"
const DAVE = "sk-test-batch-dave-0001"
const ERIN = "sk-test-batch-erin-0001"
const MODELS = ["gpt-batch", "claude-batch", "gemini-batch"] as const

const config = (emulatorUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      // 1 USD per 1M input tokens and 2 per 1M output: one and two quota units a token.
      models: Object.fromEntries(MODELS.map((model) => [model, { input: 1, output: 2 }])),
      channels: [
        { name: "emu-openai", type: "openai", keys: ["sk-test-up-openai"], models: ["gpt-batch"] },
        { name: "emu-anthropic", type: "anthropic", keys: ["sk-test-up-anthropic"], models: ["claude-batch"] },
        { name: "emu-gemini", type: "gemini", keys: ["sk-test-up-gemini"], models: ["gemini-batch"] }
      ].map((channel) => ({ ...channel, base_url: emulatorUrl })),
      users: [
        {
          username: "alice",
          password: "alice-password-1",
          group: "default",
          quota: 100_000_000,
          tokens: [{ name: "main", key: ALICE }]
        },
        { username: "bob", group: "default", quota: 100_000_000, tokens: [{ name: "main", key: BOB }] },
        // A balance for a few lines only: each line's hold is taken as it starts.
        { username: "carol", group: "default", quota: 2_000, tokens: [{ name: "main", key: CAROL }] },
        // One request in flight at once: the batch's other workers are refused (429) and wait.
        {
          username: "dave",
          group: "default",
          quota: 100_000_000,
          tokens: [{ name: "main", key: DAVE, limits: { concurrency: 1 } }]
        },
        // A key whose daily budget ($0.002) covers a few lines only.
        {
          username: "erin",
          group: "default",
          quota: 100_000_000,
          tokens: [{ name: "main", key: ERIN, budgets: [{ amount: 0.002, period: "day" }] }]
        }
      ],
      settings: { batch_concurrency: 8, batch_poll_ms: 50 }
    }),
    "batches.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

interface Row {
  readonly request_id: string
  readonly model: string
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly cost: string
  readonly status: number
}

const rowsOf = (gateway: TestGateway, batchId: string) =>
  gateway.query<Row>(
    `SELECT request_id, model, prompt_tokens, completion_tokens, cost::text AS cost, status FROM usage_logs
     WHERE request_id LIKE '${batchId}.%' ORDER BY id`
  )

/** Polls the batch until it has ended (at most 20 s). */
const ended = async (client: Anthropic, id: string) => {
  for (let tries = 0; tries < 400; tries++) {
    const batch = await client.messages.batches.retrieve(id)
    if (batch.processing_status === "ended") return batch
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`batch ${id} did not end`)
}

/** The emulator's answering call that carried the marker `text`. */
const callWith = (requests: ReadonlyArray<RecordedRequest>, text: string): RecordedRequest => {
  const found = requests.filter((request) => request.method === "POST" && JSON.stringify(request.body).includes(text))
  strictEqual(found.length, 1, `one upstream call for ${text}`)
  return found[0]
}

Deno.test("Message Batches through the Anthropic SDK: run, billed per line, cancel, owner only", async (t) => {
  const emulator = startEmulator({ latencyMs: 20 })
  const gateway = await startGateway({ config, store: "postgres", emulator, ownsEmulator: true })
  const alice = new Anthropic({ apiKey: ALICE, baseURL: gateway.url, maxRetries: 0 })
  const bob = new Anthropic({ apiKey: BOB, baseURL: gateway.url, maxRetries: 0 })
  try {
    let batchId = ""
    await t.step("a 200-line batch over three channel types: every line billed as the emulator reported", async () => {
      const requests = Array.from({ length: 198 }, (_, index) => ({
        custom_id: `line-${index}`,
        params: {
          model: MODELS[index % 3],
          max_tokens: 64,
          messages: [{ role: "user" as const, content: `Batch marker m${index}x: say something short.` }]
        }
      }))
      const [quotaBefore] = await gateway.query<{ quota: string }>(
        "SELECT quota::text AS quota FROM users WHERE username = 'alice'"
      )
      const created = await alice.messages.batches.create({
        requests: [
          ...requests,
          // Errored lines: a model the key cannot use, and params the Messages route refuses.
          {
            custom_id: "unknown-model",
            params: { model: "no-such-model", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }
          },
          { custom_id: "bad-params", params: { model: "gpt-batch", max_tokens: 8 } as never }
        ]
      })
      ok(created.id.startsWith("msgbatch_"))
      strictEqual(created.type, "message_batch")
      ok(["in_progress", "ended"].includes(created.processing_status))
      strictEqual(created.results_url === null, created.processing_status !== "ended")
      ok(Date.parse(created.expires_at) - Date.parse(created.created_at) >= 24 * 3600_000 - 1000)
      batchId = created.id
      const batch = await ended(alice, created.id)
      deepStrictEqual(batch.request_counts, { processing: 0, succeeded: 198, errored: 2, canceled: 0, expired: 0 })
      ok(batch.ended_at !== null && batch.results_url !== null)
      strictEqual(batch.cancel_initiated_at, null)

      const results = new Map<string, Anthropic.Messages.MessageBatchResult>()
      for await (const entry of await alice.messages.batches.results(created.id)) {
        results.set(entry.custom_id, entry.result)
      }
      strictEqual(results.size, 200)
      for (let index = 0; index < 198; index++) {
        const result = results.get(`line-${index}`)
        ok(result?.type === "succeeded", `line-${index} succeeded`)
        strictEqual(result.message.type, "message")
        strictEqual(result.message.model, MODELS[index % 3])
        ok(result.message.content.some((block) => block.type === "text" && block.text.length > 0))
      }
      for (const id of ["unknown-model", "bad-params"]) {
        const result = results.get(id)
        ok(result?.type === "errored", `${id} errored`)
        strictEqual(result.error.type, "error")
        ok(result.error.error.message.length > 0)
      }
      const errored = results.get("bad-params")
      ok(errored?.type === "errored" && errored.error.error.type === "invalid_request_error")

      // One billed usage row per succeeded line, under its request id, billed the tokens the vendor reported.
      const rows = await rowsOf(gateway, created.id)
      const billed = rows.filter((row) => row.status < 400)
      strictEqual(billed.length, 198)
      strictEqual(new Set(billed.map((row) => row.request_id)).size, 198, "no line billed twice")
      let total = 0n
      for (const row of billed) {
        const index = Number(row.request_id.slice(created.id.length + 1))
        const usage = callWith(emulator.requests, `m${index}x`).usage
        ok(usage !== undefined, `the emulator recorded line ${index}'s usage`)
        strictEqual(row.model, MODELS[index % 3])
        deepStrictEqual(
          { prompt: row.prompt_tokens, completion: row.completion_tokens },
          {
            prompt: usage.input + usage.cacheRead + (index % 3 === 1 ? usage.cacheWrite : 0),
            completion: usage.output
          },
          `line ${index}: the tokens its vendor reported`
        )
        strictEqual(BigInt(row.cost), BigInt(usage.input + 2 * usage.output), `line ${index}: priced as reported`)
        total += BigInt(row.cost)
      }
      // The failed lines cost nothing: the balance fell by exactly the billed lines' costs.
      for (const row of rows.filter((row) => row.status >= 400)) strictEqual(row.cost, "0")
      const [quotaAfter] = await gateway.query<{ quota: string }>(
        "SELECT quota::text AS quota FROM users WHERE username = 'alice'"
      )
      strictEqual(BigInt(quotaBefore.quota) - BigInt(quotaAfter.quota), total)

      // The caller's own log shows the batch's rows by its id, with their cost.
      const page = browser(gateway.url)
      await page.login("alice", "alice-password-1")
      type LogPage = { total: number; items: Array<{ batch_id: string | null; quota: number; status: number }> }
      const pages = await Promise.all(
        [1, 2].map((number) =>
          page.call<LogPage>("GET", `/api/log/self?batch_id=${created.id}&page_size=100&page=${number}`)
        )
      )
      strictEqual(pages[0].data.total, rows.length)
      const items = pages.flatMap((answer) => answer.data.items)
      strictEqual(items.length, rows.length)
      ok(items.every((item) => item.batch_id === created.id))
      strictEqual(
        items.filter((item) => item.status < 400).reduce((sum, item) => sum + BigInt(item.quota), 0n),
        total
      )
    })

    await t.step("list pages newest first; another user's batch answers 404", async () => {
      const second = await alice.messages.batches.create({
        requests: [{
          custom_id: "one",
          params: { model: "gpt-batch", max_tokens: 8, messages: [{ role: "user", content: "Batch marker solo." }] }
        }]
      })
      await ended(alice, second.id)
      const page = await alice.messages.batches.list({ limit: 1 })
      deepStrictEqual(page.data.map((batch) => batch.id), [second.id])
      strictEqual(page.has_more, true)
      const all: Array<string> = []
      for await (const batch of alice.messages.batches.list({ limit: 1 })) all.push(batch.id)
      deepStrictEqual(all, [second.id, batchId])
      strictEqual((await bob.messages.batches.list()).data.length, 0)
      await rejects(bob.messages.batches.retrieve(batchId), (error) => error instanceof Anthropic.NotFoundError)
      await rejects(bob.messages.batches.results(batchId), (error) => error instanceof Anthropic.NotFoundError)
      await rejects(bob.messages.batches.cancel(batchId), (error) => error instanceof Anthropic.NotFoundError)
      await rejects(bob.messages.batches.delete(batchId), (error) => error instanceof Anthropic.NotFoundError)
      await rejects(
        alice.messages.batches.retrieve("msgbatch_nope"),
        (error) => error instanceof Anthropic.NotFoundError
      )
      const deleted = await alice.messages.batches.delete(second.id)
      deepStrictEqual(deleted, { id: second.id, type: "message_batch_deleted" })
      await rejects(alice.messages.batches.retrieve(second.id), (error) => error instanceof Anthropic.NotFoundError)
    })

    await t.step("a bad create body is refused, naming the field; nothing is stored", async () => {
      const line = (custom_id: string) => ({
        custom_id,
        params: { model: "gpt-batch", max_tokens: 8, messages: [{ role: "user" as const, content: "x" }] }
      })
      for (
        const [requests, named] of [
          [[line("a"), line("a")], "requests[1].custom_id"],
          [[line("bad id!")], "requests[0].custom_id"],
          [[{ ...line("s"), params: { ...line("s").params, stream: true } }], "requests[0].params.stream"],
          [[], "requests"]
        ] as const
      ) {
        await rejects(
          alice.messages.batches.create({ requests: requests as never }),
          (error) => error instanceof Anthropic.BadRequestError && String(error.message).includes(named)
        )
      }
      strictEqual((await alice.messages.batches.list()).data.length, 1)
    })

    await t.step("cancel mid-run: running lines finish and are billed, the rest end canceled", async () => {
      const created = await alice.messages.batches.create({
        requests: Array.from({ length: 80 }, (_, index) => ({
          custom_id: `c-${index}`,
          params: {
            model: MODELS[index % 3],
            max_tokens: 16,
            messages: [{ role: "user" as const, content: `Cancel marker c${index}x.` }]
          }
        }))
      })
      for (let tries = 0; tries < 200; tries++) {
        const batch = await alice.messages.batches.retrieve(created.id)
        if (batch.request_counts.succeeded >= 4) break
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      const canceling = await alice.messages.batches.cancel(created.id)
      ok(canceling.cancel_initiated_at !== null)
      ok(["canceling", "ended"].includes(canceling.processing_status))
      const batch = await ended(alice, created.id)
      const counts = batch.request_counts
      ok(counts.succeeded >= 4 && counts.canceled > 0, JSON.stringify(counts))
      strictEqual(counts.succeeded + counts.canceled, 80)
      const canceled: Array<string> = []
      for await (const entry of await alice.messages.batches.results(created.id)) {
        if (entry.result.type === "canceled") canceled.push(entry.custom_id)
      }
      strictEqual(canceled.length, counts.canceled)
      const billed = (await rowsOf(gateway, created.id)).filter((row) => row.status < 400)
      strictEqual(billed.length, counts.succeeded, "exactly the finished lines billed")
      // A canceled line never reached a vendor.
      for (const id of canceled) {
        const index = id.slice(2)
        strictEqual(
          emulator.requests.filter((request) => JSON.stringify(request.body).includes(`c${index}x`)).length,
          0
        )
      }
    })

    await t.step(
      "a user out of quota: the remaining lines error with insufficient_user_quota and cost nothing",
      async () => {
        const carol = new Anthropic({ apiKey: CAROL, baseURL: gateway.url, maxRetries: 0 })
        const created = await carol.messages.batches.create({
          requests: Array.from({ length: 40 }, (_, index) => ({
            custom_id: `q-${index}`,
            params: {
              model: "gpt-batch",
              max_tokens: 200,
              messages: [{ role: "user" as const, content: `Quota marker q${index}x. ${"words to bill ".repeat(60)}` }]
            }
          }))
        })
        const batch = await ended(carol, created.id)
        const counts = batch.request_counts
        ok(counts.succeeded >= 1 && counts.errored >= 1, JSON.stringify(counts))
        strictEqual(counts.succeeded + counts.errored, 40)
        let quotaErrors = 0
        for await (const entry of await carol.messages.batches.results(created.id)) {
          if (entry.result.type === "errored") {
            // The Messages route's own error, as the key would have got it: the spec's code and type.
            const error = entry.result.error.error as unknown as { type: string; code: string }
            strictEqual(error.code, "insufficient_user_quota")
            strictEqual(error.type, "platform_api_error")
            ok(/quota/i.test(entry.result.error.error.message), entry.result.error.error.message)
            quotaErrors++
          }
        }
        strictEqual(quotaErrors, counts.errored)
        const rows = await rowsOf(gateway, created.id)
        const billed = rows.filter((row) => row.status < 400)
        strictEqual(billed.length, counts.succeeded)
        const spent = billed.reduce((sum, row) => sum + BigInt(row.cost), 0n)
        const [after] = await gateway.query<{ quota: string }>(
          "SELECT quota::text AS quota FROM users WHERE username = 'carol'"
        )
        strictEqual(2_000n - BigInt(after.quota), spent, "the balance fell by the billed lines only")
      }
    )

    await t.step("a key's rate limit delays lines rather than failing them", async () => {
      const dave = new Anthropic({ apiKey: DAVE, baseURL: gateway.url, maxRetries: 0 })
      const created = await dave.messages.batches.create({
        requests: Array.from({ length: 8 }, (_, index) => ({
          custom_id: `d-${index}`,
          params: {
            model: MODELS[index % 3],
            max_tokens: 16,
            messages: [{ role: "user" as const, content: `Limit marker d${index}x.` }]
          }
        }))
      })
      const batch = await ended(dave, created.id)
      deepStrictEqual(batch.request_counts, { processing: 0, succeeded: 8, errored: 0, canceled: 0, expired: 0 })
      const billed = (await rowsOf(gateway, created.id)).filter((row) => row.status < 400)
      strictEqual(billed.length, 8)
      strictEqual(new Set(billed.map((row) => row.request_id)).size, 8)
      ok(
        gateway.logs.some((line) => line.includes(`"request_id":"${created.id}.`) && line.includes('"status":429')),
        "some lines were refused by the limit first"
      )
    })

    await t.step("a key past its budget: the remaining lines error with budget_exceeded, not retried", async () => {
      const erin = new Anthropic({ apiKey: ERIN, baseURL: gateway.url, maxRetries: 0 })
      const created = await erin.messages.batches.create({
        requests: Array.from({ length: 30 }, (_, index) => ({
          custom_id: `b-${index}`,
          params: {
            model: "gpt-batch",
            max_tokens: 200,
            messages: [{ role: "user" as const, content: `Budget marker b${index}x. ${"words to bill ".repeat(60)}` }]
          }
        }))
      })
      const batch = await ended(erin, created.id)
      const counts = batch.request_counts
      ok(counts.succeeded >= 1 && counts.errored >= 1, JSON.stringify(counts))
      strictEqual(counts.succeeded + counts.errored, 30)
      for await (const entry of await erin.messages.batches.results(created.id)) {
        if (entry.result.type === "errored") {
          strictEqual((entry.result.error.error as unknown as { code: string }).code, "budget_exceeded")
        }
      }
      const billed = (await rowsOf(gateway, created.id)).filter((row) => row.status < 400)
      strictEqual(billed.length, counts.succeeded)
      ok(billed.reduce((sum, row) => sum + BigInt(row.cost), 0n) <= 2_000n, "within the budget")
    })
  } finally {
    await gateway.close()
  }
})
