/**
 * Billing exactness under concurrency, on both stores (the race is only real
 * on PostgreSQL, where requests run on several connections): 50 concurrent
 * requests on one key, streams and plain answers of different prompt sizes.
 * Afterwards user used_quota == token used_quota == SUM(usage_logs.cost) ==
 * the sum the clients can compute from the usage they received
 * (ceil(ratio × (prompt × input + completion × output)) per request), and a
 * user whose quota covers only a few of the requests never goes below zero.
 */
import { ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { startEmulator } from "../../emulator/Emulator.ts"
import { basicConfig, type Store } from "../support/Gateway.ts"
import { big, startStoredGateway } from "../support/Store.ts"

const RICH_KEY = "sk-test-alice-0001"
const POOR_KEY = "sk-test-carol-0001"
const CONCURRENT = 50
const MAX_TOKENS = 32

/** Prices and ratio of the test config, in thousandths (exact). */
const RATIO_MILLI = 1_500n
const INPUT_MILLI = 2_500n
const OUTPUT_MILLI = 10_125n

/** Quota units for one request: ceil(ratio × (prompt × input + completion × output)), in integers only. */
const expectedCost = (promptTokens: number, completionTokens: number): bigint => {
  const scaled = RATIO_MILLI * (BigInt(promptTokens) * INPUT_MILLI + BigInt(completionTokens) * OUTPUT_MILLI)
  return (scaled + 999_999n) / 1_000_000n
}

/** The gateway's hold for a one-message request (prompt bytes + 16 tokens of allowance, `max_tokens` out). */
const holdOf = (content: string): bigint => expectedCost(new TextEncoder().encode(content).length + 16, MAX_TOKENS)

/** Request `index`: even ones stream; prompts from 1 to 12 words. */
const promptOf = (index: number): string =>
  Array.from({ length: (index * 7) % 12 + 1 }, (_, word) => `w${index}x${word}`).join(" ")

const POOR_QUOTA = 10n * Array.from({ length: CONCURRENT }, (_, index) => holdOf(promptOf(index)))
  .reduce((a, b) => (a > b ? a : b))

const config = (emulatorUrl: string) =>
  basicConfig(emulatorUrl, {
    groups: { default: { ratio: 1.5 } },
    models: { "gpt-test": { input: 2.5, output: 10.125 } },
    users: [
      { username: "alice", group: "default", quota: 1_000_000_000, tokens: [{ name: "main", key: RICH_KEY }] },
      { username: "carol", group: "default", quota: Number(POOR_QUOTA), tokens: [{ name: "main", key: POOR_KEY }] }
    ]
  })

/** One request as the client saw it: the usage it was told, or the HTTP status it failed with. */
type Outcome =
  | { readonly ok: true; readonly promptTokens: number; readonly completionTokens: number }
  | { readonly ok: false; readonly status: number | undefined }

const send = async (client: OpenAI, index: number): Promise<Outcome> => {
  const request = { model: "gpt-test", messages: [{ role: "user" as const, content: promptOf(index) }] }
  try {
    if (index % 2 === 0) {
      const stream = await client.chat.completions.create({
        ...request,
        max_tokens: MAX_TOKENS,
        stream: true,
        stream_options: { include_usage: true }
      })
      let usage: OpenAI.CompletionUsage | null | undefined
      for await (const chunk of stream) usage = chunk.usage ?? usage
      ok(usage !== null && usage !== undefined, "a stream with include_usage ends with usage")
      return { ok: true, promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens }
    }
    const completion = await client.chat.completions.create({ ...request, max_tokens: MAX_TOKENS })
    ok(completion.usage !== undefined)
    return {
      ok: true,
      promptTokens: completion.usage.prompt_tokens,
      completionTokens: completion.usage.completion_tokens
    }
  } catch (error) {
    if (error instanceof OpenAI.APIError) return { ok: false, status: error.status }
    throw error
  }
}

const fire = (url: string, key: string): Promise<ReadonlyArray<Outcome>> => {
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0 })
  return Promise.all(Array.from({ length: CONCURRENT }, (_, index) => send(client, index)))
}

const billedByClients = (outcomes: ReadonlyArray<Outcome>): bigint =>
  outcomes.reduce(
    (sum, outcome) => outcome.ok ? sum + expectedCost(outcome.promptTokens, outcome.completionTokens) : sum,
    0n
  )

const billingTest = (store: Store) =>
  Deno.test(`billing is exact under ${CONCURRENT} concurrent requests on one key (${store})`, async () => {
    // Latency keeps every hold in flight together, so the poor user's reservations really compete.
    const emulator = startEmulator({ latencyMs: 300 })
    const gateway = await startStoredGateway({ store, config, emulator }).catch(async (error) => {
      await emulator.close()
      throw error
    })
    try {
      const rich = await fire(gateway.url, RICH_KEY)
      const failedRich = rich.filter((outcome) => !outcome.ok)
      strictEqual(failedRich.length, 0, `failures: ${JSON.stringify(failedRich)}`)
      const richBilled = billedByClients(rich)
      ok(richBilled > 0n)

      const poor = await fire(gateway.url, POOR_KEY)
      const refused = poor.filter((outcome) => !outcome.ok)
      ok(refused.every((outcome) => !outcome.ok && outcome.status === 402), JSON.stringify(refused))
      ok(refused.length > 0, "some requests were refused for quota")
      ok(refused.length < CONCURRENT - 9, `at least the ~10 covered requests ran (${refused.length} refused)`)
      const poorBilled = billedByClients(poor)

      await gateway.stop()
      const rows = await gateway.query(`
        SELECT u.username, u.quota, u.request_count, u.used_quota AS user_used, t.used_quota AS token_used,
               (SELECT coalesce(sum(l.cost), 0) FROM usage_logs l WHERE l.user_id = u.id) AS logged,
               (SELECT count(*) FROM usage_logs l WHERE l.user_id = u.id) AS log_rows
        FROM users u JOIN tokens t ON t.user_id = u.id ORDER BY u.username`)
      const [alice, carol] = rows
      strictEqual(alice.username, "alice")
      strictEqual(carol.username, "carol")
      for (
        const [row, billed, answered, granted] of [
          [alice, richBilled, rich.length, 1_000_000_000n],
          [carol, poorBilled, poor.length - refused.length, POOR_QUOTA]
        ] as const
      ) {
        const name = String(row.username)
        strictEqual(big(row.user_used), billed, `${name}: user used_quota`)
        strictEqual(big(row.token_used), billed, `${name}: token used_quota`)
        strictEqual(big(row.logged), billed, `${name}: SUM(usage_logs.cost)`)
        strictEqual(Number(row.log_rows), answered, `${name}: one usage row per answered request`)
        strictEqual(Number(row.request_count), answered, `${name}: request_count counts charged requests`)
        ok(big(row.quota) >= 0n, `${name}: quota never below zero`)
        strictEqual(big(row.quota), granted - billed, `${name}: no hold left behind`)
      }
    } finally {
      await gateway.close()
      await emulator.close()
    }
  })

billingTest("postgres")
billingTest("pglite")
