/**
 * Billing through a real PostgreSQL outage (docs/BILLING.md, "The journal"):
 * the gateway runs in-process against a TCP proxy in front of PostgreSQL
 * (`PostgresOutage.ts`) that closes every connection and refuses new ones
 * while down. The outage stays well under the lease stale time (fencing) and
 * the key cache's time to live, both warmed before it.
 *
 * - With a data directory, the journal's INSERT fails and the batches spill to
 *   the journal file: every answer of the outage (JSON and streamed chat
 *   completions through the `openai` SDK, Anthropic Messages through
 *   `@anthropic-ai/sdk`) succeeds, and once the database is back each is billed
 *   exactly once with the tokens the emulator reported, none missing, no
 *   unfolded row left in the journal table, `used_quota` the sum of the
 *   logged costs.
 * - With none (`memory://`), nothing durable can be written: a JSON answer is
 *   503 `quota_ledger_unavailable` and its charge taken back (its usage row
 *   cost 0, status 503), though the vendor answered it.
 */
import Anthropic from "@anthropic-ai/sdk"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { startEmulator } from "../../emulator/Emulator.ts"
import { BILLED_ROWS_SQL, checkBilling, type Outcome, reportedUsage } from "../support/CrashTraffic.ts"
import { basicConfig, freshPostgres, startGateway, type TestGateway } from "../support/Gateway.ts"
import { startPostgresOutage } from "../support/PostgresOutage.ts"
import type { Row } from "../support/Store.ts"

const KEY = "sk-test-alice-0001"
const PRICE = { input: 2, output: 8 }
const MAX_TOKENS = 32

/** basicConfig's openai channel and user, an anthropic channel beside it, and a key cache that outlives the outage. */
const config = (emulatorUrl: string) =>
  basicConfig(emulatorUrl, {
    models: { "gpt-test": PRICE, "claude-test": PRICE },
    channels: [
      { name: "emu-openai", type: "openai", base_url: emulatorUrl, keys: ["sk-test-upstream-1"], models: ["gpt-test"] },
      {
        name: "emu-anthropic",
        type: "anthropic",
        base_url: emulatorUrl,
        keys: ["sk-test-upstream-2"],
        models: ["claude-test"]
      }
    ],
    settings: { key_cache_ttl_ms: 60_000 }
  })

/** A gateway on a fresh database behind an outage proxy (and `dataDir`, if given); `body` gets both. */
const withOutage = async (
  dataDir: string | undefined,
  body: (gateway: TestGateway, outage: ReturnType<typeof startPostgresOutage>) => Promise<void>
) => {
  const emulator = startEmulator({ tokensPerSecond: 1000 })
  const database = await freshPostgres()
  const outage = startPostgresOutage(database.url)
  try {
    const gateway = await startGateway({ config, databaseUrl: outage.url, dataDir, emulator, ownsEmulator: true })
    try {
      await body(gateway, outage)
    } finally {
      outage.up()
      await gateway.close()
    }
  } finally {
    await outage.close()
    await database.drop()
  }
}

/** Waits until the gateway folded every batch (reconnecting after the outage may take a few commits). */
const settle = async (gateway: TestGateway) => {
  for (let tries = 0;; tries++) {
    try {
      return await gateway.settled()
    } catch (error) {
      if (tries >= 5) throw error
    }
  }
}

/** A metric's value on the gateway's `/metrics`. */
const metric = async (gateway: TestGateway, name: string): Promise<number> => {
  const text = await (await fetch(`${gateway.url}/metrics`)).text()
  const line = text.split("\n").find((entry) => entry.startsWith(`${name} `) || entry.startsWith(`${name}{`))
  return Number(line?.trim().split(" ").at(-1) ?? Number.NaN)
}

const chatJson = async (client: OpenAI, text: string): Promise<Outcome> => {
  const { data, response } = await client.chat.completions.create({
    model: "gpt-test",
    max_tokens: MAX_TOKENS,
    messages: [{ role: "user", content: text }]
  }).withResponse()
  ok(data.choices[0].message.content !== null)
  return { upstream: "openai", requestId: response.headers.get("x-request-id") ?? undefined, kind: "full" }
}

const chatStream = async (client: OpenAI, text: string): Promise<Outcome> => {
  const { data, response } = await client.chat.completions.create({
    model: "gpt-test",
    max_tokens: MAX_TOKENS,
    stream: true,
    stream_options: { include_usage: true },
    messages: [{ role: "user", content: text }]
  }).withResponse()
  let finished = false
  for await (const chunk of data) if (chunk.choices[0]?.finish_reason) finished = true
  ok(finished, "the stream ended with a finish reason")
  return { upstream: "openai", requestId: response.headers.get("x-request-id") ?? undefined, kind: "full" }
}

const messages = async (client: Anthropic, text: string, stream: boolean): Promise<Outcome> => {
  const request = { model: "claude-test", max_tokens: MAX_TOKENS, messages: [{ role: "user" as const, content: text }] }
  if (!stream) {
    const { data, response } = await client.messages.create(request).withResponse()
    strictEqual(data.type, "message")
    return { upstream: "anthropic", requestId: response.headers.get("x-request-id") ?? undefined, kind: "full" }
  }
  const { data, response } = await client.messages.create({ ...request, stream: true }).withResponse()
  let stopped = false
  for await (const event of data) if (event.type === "message_stop") stopped = true
  ok(stopped, "the stream ended with message_stop")
  return { upstream: "anthropic", requestId: response.headers.get("x-request-id") ?? undefined, kind: "full" }
}

const clientsOf = (gateway: TestGateway) => ({
  openai: new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 }),
  anthropic: new Anthropic({ baseURL: gateway.url, apiKey: KEY, maxRetries: 0 })
})

Deno.test({
  name: "database outage: answers during it spill to the journal file and are billed once when the database is back",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const dataDir = await Deno.makeTempDir({ prefix: "sluice_outage_" })
    try {
      await withOutage(dataDir, async (gateway, outage) => {
        const { openai, anthropic } = clientsOf(gateway)
        // Warm: the key cache, the leases of the token and the user, the pool.
        const outcomes: Array<Outcome> = [
          await chatJson(openai, "warm one"),
          await chatStream(openai, "warm two"),
          await messages(anthropic, "warm three", false)
        ]
        await settle(gateway)

        outage.down()
        const during = await Promise.all([
          ...Array.from({ length: 5 }, (_, index) => chatJson(openai, `outage json ${index}`)),
          ...Array.from({ length: 5 }, (_, index) => chatStream(openai, `outage stream ${index}`)),
          messages(anthropic, "outage messages json", false),
          messages(anthropic, "outage messages stream", true)
        ])
        const spilled = await metric(gateway, "sluice_charge_journal_spilled")
        const unwritten = await metric(gateway, "sluice_charge_journal_unwritten")
        const refused = outage.refused()
        outage.up()
        outcomes.push(...during)
        await settle(gateway)

        const rows = await gateway.query<Row>(BILLED_ROWS_SQL)
        const check = checkBilling({
          outcomes,
          rows,
          reported: reportedUsage(gateway.emulator.requests),
          price: PRICE,
          maxTokens: MAX_TOKENS
        })
        const [journal] = await gateway.query<Row>(
          `SELECT count(*) FILTER (WHERE c.id IS NULL) AS unfolded, count(c.id) AS folded
           FROM charge_journal j LEFT JOIN ledger_commits c ON c.id = j.id`
        )
        const [sums] = await gateway.query<Row>(
          `SELECT (SELECT used_quota FROM users WHERE username = 'alice')::text AS used,
                  (SELECT COALESCE(SUM(cost), 0) FROM usage_logs WHERE user_id =
                    (SELECT id FROM users WHERE username = 'alice'))::text AS logged`
        )
        const summary = `${outcomes.length} answers (${during.length} during the outage, ${refused} connections ` +
          `refused): ${check.mismatched.length} mismatched, ${check.missing.length} missing; ${spilled} batches ` +
          `spilled, ${unwritten} unwritten; journal table: ${journal.unfolded} unfolded rows, ${journal.folded} of ` +
          `folded batches`
        ok(outcomes.every((outcome) => outcome.requestId !== undefined), summary)
        ok(refused > 0 && spilled > 0, `the outage made the journal spill: ${summary}`)
        strictEqual(unwritten, 0, summary)
        deepStrictEqual(check.mismatched, [], summary)
        deepStrictEqual(check.missing, [], summary)
        strictEqual(check.full, outcomes.length, summary)
        // Every journaled charge folded, and no row left of a batch already folded.
        strictEqual(Number(journal.unfolded), 0, `charge_journal holds no unfolded row: ${summary}`)
        strictEqual(Number(journal.folded), 0, `charge_journal holds no row of a folded batch: ${summary}`)
        strictEqual(sums.used, sums.logged, "used_quota equals the logged costs")
      })
    } finally {
      await Deno.remove(dataDir, { recursive: true }).catch(() => undefined)
    }
  }
})

Deno.test({
  name: "database outage: with nothing durable to write, a JSON answer is 503 quota_ledger_unavailable and not charged",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    await withOutage(undefined, async (gateway, outage) => {
      const { openai } = clientsOf(gateway)
      const warm = await chatJson(openai, "warm one")
      await settle(gateway)

      outage.down()
      const failure = await openai.chat.completions.create({
        model: "gpt-test",
        max_tokens: MAX_TOKENS,
        messages: [{ role: "user", content: "outage json" }]
      }).then(() => undefined, (error: unknown) => error)
      outage.up()
      ok(failure instanceof OpenAI.APIError, `the answer failed: ${failure}`)
      strictEqual(failure.status, 503)
      strictEqual(failure.code, "quota_ledger_unavailable")
      const requestId = failure.requestID
      ok(requestId !== undefined && requestId !== null, "the 503 names its request")
      await settle(gateway)

      // The vendor answered it, with usage: the gateway took the charge back.
      const reported = reportedUsage(gateway.emulator.requests)
      ok((reported.get(requestId)?.completion ?? 0) > 0, "the emulator answered the withheld request")
      const rows = await gateway.query<Row>(
        `SELECT cost::text AS cost, status, error FROM usage_logs WHERE request_id = '${requestId}'`
      )
      deepStrictEqual(rows.map((row) => ({ cost: row.cost, status: Number(row.status), error: row.error })), [
        { cost: "0", status: 503, error: "quota_ledger_unavailable" }
      ])
      const check = checkBilling({
        outcomes: [warm],
        rows: await gateway.query<Row>(BILLED_ROWS_SQL),
        reported,
        price: PRICE,
        maxTokens: MAX_TOKENS
      })
      deepStrictEqual([check.mismatched, check.missing], [[], []])
      const [sums] = await gateway.query<Row>(
        `SELECT (SELECT used_quota FROM users WHERE username = 'alice')::text AS used,
                (SELECT COALESCE(SUM(cost), 0) FROM usage_logs WHERE user_id =
                  (SELECT id FROM users WHERE username = 'alice'))::text AS logged,
                (SELECT cost FROM usage_logs WHERE request_id = '${warm.requestId}')::text AS warm`
      )
      strictEqual(sums.used, sums.logged, "used_quota equals the logged costs")
      strictEqual(sums.used, sums.warm, "used_quota is the warm-up's cost alone: the withheld answer is not in it")
    })
  }
})

/**
 * A journal row never outlives the commit that folded its batch: the journal's INSERT of a batch is slow (its answer
 * held 150 ms by the proxy), so the usage log's next tick (50 ms) may take the batch while it has no place yet and
 * commit it (slower still: 400 ms) while the INSERT is on its way; whichever ends last deletes the row.
 */
Deno.test({
  name: "outage: a charge_journal row whose INSERT returns while the commit that folds its batch runs is deleted",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    await withOutage(undefined, async (gateway, outage) => {
      const { openai } = clientsOf(gateway)
      await chatJson(openai, "warm one")
      await settle(gateway)
      outage.delay("INSERT INTO charge_journal", 150)
      outage.delay("INSERT INTO ledger_commits", 400)
      // One after the other: each answer's batch is journaled while a tick's commit may be folding it.
      const answers: Array<Outcome> = []
      for (let index = 0; index < 6; index++) answers.push(await chatJson(openai, `slow journal ${index}`))
      await settle(gateway)
      await new Promise((resolve) => setTimeout(resolve, 1_000))
      const rows = await gateway.query<Row>(
        `SELECT EXISTS (SELECT 1 FROM ledger_commits c WHERE c.id = j.id) AS folded FROM charge_journal j`
      )
      const billed = await gateway.query<Row>(
        `SELECT request_id, count(*) AS count FROM usage_logs
         WHERE request_id IN (${answers.map((answer) => `'${answer.requestId}'`).join(", ")}) GROUP BY request_id`
      )
      deepStrictEqual(billed.map((row) => Number(row.count)), answers.map(() => 1), "each answer is billed once")
      deepStrictEqual(rows, [], "no journal row outlives its fold")
    })
  }
})
