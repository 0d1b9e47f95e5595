/**
 * The ledger agrees with the vendor (docs/ARCHITECTURE.md, "Billing truth"): a caller that
 * leaves at any byte after the final usage is billed exactly what the upstream
 * reported; the cost rides on every billed answer (`x-sluice-cost`, and a
 * stream's final usage when asked) and equals the usage row's and the access
 * log's; a charge is committed before the answer's end leaves, and a stream
 * whose charge cannot be committed ends with the ledger's error event instead
 * of its end. Compared with
 * what the emulator reported, never with the ledger alone.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { startGateway, type TestGateway } from "../support/Gateway.ts"

const KEY = "sk-test-ledger-truth-0001"

const config = (emulatorUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: { "m-openai": { input: 1, output: 2 }, "m-anthropic": { input: 1, output: 2 } },
      channels: [
        { name: "emu-openai", type: "openai", base_url: emulatorUrl, keys: ["sk-test-up-1"], models: ["m-openai"] },
        {
          name: "emu-anthropic",
          type: "anthropic",
          base_url: emulatorUrl,
          keys: ["sk-test-up-2"],
          models: ["m-anthropic"]
        }
      ],
      users: [{ username: "ledger", group: "default", quota: 1_000_000_000, tokens: [{ name: "k", key: KEY }] }]
    }),
    "ledger.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

interface Row {
  readonly request_id: string
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly cost: string
}

const rowsAfter = (gateway: TestGateway, after: number) =>
  gateway.query<Row & { readonly id: number }>(
    `SELECT id::int AS id, request_id, prompt_tokens, completion_tokens, cost::text AS cost FROM usage_logs
     WHERE id > ${after} AND status < 400 ORDER BY id`
  )

const lastId = async (gateway: TestGateway) =>
  (await gateway.query<{ readonly id: number }>("SELECT COALESCE(MAX(id), 0)::int AS id FROM usage_logs"))[0].id

/** The last answer's reported usage as the gateway bills it (Anthropic's input counts its cache reads too). */
const lastReported = (gateway: TestGateway) => {
  const usage = gateway.emulator.requests.filter((request) => request.method === "POST").at(-1)?.usage
  ok(usage !== undefined, "the emulator reported usage")
  return { prompt: usage.input + usage.cacheRead + usage.cacheWrite, completion: usage.output }
}

const chatBody = (stream: boolean, extra: object = {}) =>
  JSON.stringify({
    model: "m-openai",
    stream,
    messages: [{ role: "user", content: "tell me about rivers and the sea and everything in between" }],
    ...extra
  })

const messagesBody = JSON.stringify({
  model: "m-anthropic",
  stream: true,
  max_tokens: 200,
  messages: [{ role: "user", content: "tell me about rivers and the sea and everything in between" }]
})

const post = (gateway: TestGateway, path: string, body: string, headers: Record<string, string> = {}) =>
  fetch(`${gateway.url}${path}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${KEY}`,
      "x-api-key": KEY,
      "anthropic-version": "2023-06-01",
      "content-type": "application/json",
      ...headers
    },
    body
  })

/** Reads `response` until at least `bytes` bytes arrived (or the end), then hangs up; returns what it read. */
const readThenLeave = async (response: Response, bytes: number): Promise<string> => {
  const reader = response.body!.getReader()
  const chunks: Array<Uint8Array> = []
  let total = 0
  while (total < bytes) {
    const { done, value } = await reader.read()
    if (done) break
    chunks.push(value)
    total += value.length
  }
  await reader.cancel()
  return new TextDecoder().decode(new Uint8Array(chunks.flatMap((chunk) => [...chunk])))
}

Deno.test("ledger truth: billed answers carry x-sluice-cost, equal to the usage row and the access log", async () => {
  const gateway = await startGateway({ config, store: "postgres" })
  try {
    const before = await lastId(gateway)
    const response = await post(gateway, "/v1/chat/completions", chatBody(false))
    strictEqual(response.status, 200)
    const answer = await response.json()
    const header = response.headers.get("x-sluice-cost")
    ok(header !== null && /^\d+\.\d{6}$/.test(header), `x-sluice-cost ${header}`)
    // Committed before the answer left: read at once, no flush.
    const [row] = await rowsAfter(gateway, before)
    const reported = lastReported(gateway)
    deepStrictEqual({ prompt: row.prompt_tokens, completion: row.completion_tokens }, reported)
    strictEqual(answer.usage.prompt_tokens, reported.prompt)
    strictEqual(BigInt(row.cost), BigInt(reported.prompt + 2 * reported.completion))
    strictEqual(header, (Number(row.cost) / 1e6).toFixed(6))
    const logged = gateway.logs.map((line) => JSON.parse(line)).find((line) =>
      line.request_id === response.headers.get("x-request-id") && line.cost !== undefined
    )
    strictEqual(logged?.cost, Number(row.cost), "the access log's cost is the row's")
  } finally {
    await gateway.close()
  }
})

Deno.test("ledger truth: a stream's final usage carries its cost when asked, in the body or by header", async () => {
  const gateway = await startGateway({ config, store: "postgres" })
  try {
    for (
      const [path, body, headers] of [
        ["/v1/chat/completions", chatBody(true, { stream_options: { include_cost: true } }), {}],
        ["/v1/messages", messagesBody, { "x-sluice-include-cost": "1" }]
      ] as const
    ) {
      const before = await lastId(gateway)
      const response = await post(gateway, path, body, headers)
      const text = await response.text()
      const costs = [...text.matchAll(/"cost":([0-9.e-]+)/g)].map((match) => Number(match[1]))
      strictEqual(costs.length, 1, `one cost in ${path}: ${text}`)
      const [row] = await rowsAfter(gateway, before)
      strictEqual(costs[0], Number(row.cost) / 1e6, path)
      deepStrictEqual({ prompt: row.prompt_tokens, completion: row.completion_tokens }, lastReported(gateway))
    }
    // The gateway's own option never reaches the vendor.
    const sent = gateway.emulator.requests.find((request) => request.path === "/v1/chat/completions")
    deepStrictEqual((sent?.body as { stream_options?: object }).stream_options, { include_usage: true })
  } finally {
    await gateway.close()
  }
})

Deno.test("property: a caller leaving at any byte after the final usage is billed exactly the reported usage", async () => {
  const gateway = await startGateway({ config, store: "postgres" })
  try {
    for (
      const [path, body, marker] of [
        ["/v1/chat/completions", chatBody(true, { stream_options: { include_usage: true } }), '"choices":[]'],
        ["/v1/messages", messagesBody, "message_delta"]
      ] as const
    ) {
      const whole = await (await post(gateway, path, body)).text()
      const from = new TextEncoder().encode(whole.slice(0, whole.indexOf(marker))).length
      const to = new TextEncoder().encode(whole).length
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: from + 1, max: to }), async (offset) => {
          const before = await lastId(gateway)
          const read = await readThenLeave(await post(gateway, path, body), offset)
          ok(read.includes(marker), "the final usage reached the caller")
          // The bill was committed before the final usage left: no wait, no flush.
          const rows = await rowsAfter(gateway, before)
          strictEqual(rows.length, 1)
          deepStrictEqual(
            { prompt: rows[0].prompt_tokens, completion: rows[0].completion_tokens },
            lastReported(gateway),
            `${path} left at byte ${offset} of ${to}`
          )
        }),
        { numRuns: 15 }
      )
    }
  } finally {
    await gateway.close()
  }
})

Deno.test("ledger truth: an answer whose charge no journal can hold is withheld: a stream's end, a JSON answer whole", async () => {
  // On PostgreSQL without a data directory there is no spill file: with the journal table away, nothing is durable.
  const gateway = await startGateway({ config, store: "postgres" })
  try {
    // A first answer takes the lease: the holds below are served from memory, as in an outage.
    await (await post(gateway, "/v1/chat/completions", chatBody(false))).text()
    // The first answer's row is in before the mark is read (on a loaded machine it could land just after it).
    for (let tries = 0; (await lastId(gateway)) === 0 && tries < 50; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    const before = await lastId(gateway)
    ok(before > 0, "the first answer's usage row")
    await gateway.query("ALTER TABLE charge_journal RENAME TO charge_journal_away")
    const chat = await (await post(gateway, "/v1/chat/completions", chatBody(true))).text()
    ok(chat.includes('"code":"quota_ledger_unavailable"'), chat)
    ok(!chat.includes("[DONE]"), chat)
    ok(chat.includes('"content":'), "the answer's text before the final usage was delivered")
    const messages = await (await post(gateway, "/v1/messages", messagesBody)).text()
    ok(messages.includes("event: error\n") && messages.includes("quota_ledger_unavailable"), messages)
    ok(!messages.includes("message_stop"), messages)
    const json = await post(gateway, "/v1/chat/completions", chatBody(false))
    strictEqual(json.status, 503)
    strictEqual((await json.json()).error.code, "quota_ledger_unavailable")
    // A commit tick may still write a streamed answer's charge while the journal is away (the usage table is
    // there); what it wrote must be what stands at the end, once, at the reported cost.
    const away = await gateway.query<{ readonly id: number; readonly cost: string }>(
      `SELECT id::int AS id, cost::text AS cost FROM usage_logs WHERE id > ${before} ORDER BY id`,
      false
    )
    await gateway.query("ALTER TABLE charge_journal_away RENAME TO charge_journal", false)
    const again = await (await post(gateway, "/v1/chat/completions", chatBody(true))).text()
    ok(again.trimEnd().endsWith("data: [DONE]"), again)
    // The streams' delivered text is billed once the database takes the fold; the withheld JSON answer is not.
    const rows = await gateway.query<
      { readonly id: number; readonly cost: string; readonly status: number; readonly stream: boolean }
    >(
      `SELECT id::int AS id, cost::text AS cost, status, stream FROM usage_logs WHERE id > ${before} ORDER BY id`
    )
    strictEqual(rows.length, 4)
    deepStrictEqual(away, rows.slice(0, away.length).map(({ id, cost }) => ({ id, cost })))
    deepStrictEqual(
      rows.filter((row) => !row.stream).map((row) => ({ cost: row.cost, status: row.status })),
      [{ cost: "0", status: 503 }]
    )
    ok(rows.filter((row) => row.stream).every((row) => BigInt(row.cost) > 0n && row.status === 200))
    const [sums] = await gateway.query<{ readonly used: string; readonly logged: string }>(
      `SELECT (SELECT sum(used_quota)::text FROM users) AS used, (SELECT sum(cost)::text FROM usage_logs) AS logged`
    )
    strictEqual(sums.used, sums.logged)
  } finally {
    await gateway.close()
  }
})
