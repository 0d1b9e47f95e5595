/**
 * `POST /v1/responses/compact` through the `openai` SDK (`client.responses.compact`): forwarded as is (model
 * mapped) to channels with `settings.responses_compact`, billed exactly from the upstream's usage, a clear 400
 * where no channel of the model supports it, failover on upstream 5xx and no charge when every attempt fails.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { startGateway } from "../support/Gateway.ts"

const KEY = "sk-test-alice-0001"

/** Prices and ratio in thousandths (exact): ratio 1.5, input 2.5, output 10.125 USD per 1M tokens. */
const RATIO_MILLI = 1_500n
const INPUT_MILLI = 2_500n
const OUTPUT_MILLI = 10_125n

/** Quota units for one request: ceil(ratio × (prompt × input + completion × output)). */
const expectedCost = (usage: OpenAI.Responses.ResponseUsage): bigint => {
  const scaled = RATIO_MILLI *
    (BigInt(usage.input_tokens) * INPUT_MILLI + BigInt(usage.output_tokens) * OUTPUT_MILLI)
  return (scaled + 999_999n) / 1_000_000n
}

const config = (emulatorUrl: string) => {
  const compactChannel = (name: string, key: string, priority: number) => ({
    name,
    type: "openai",
    base_url: emulatorUrl,
    keys: [key],
    models: ["gpt-c"],
    priority,
    model_mapping: { "gpt-c": "gpt-c-upstream" },
    settings: { responses_compact: true }
  })
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1.5 } },
      models: {
        "gpt-c": { input: 2.5, output: 10.125 },
        "gpt-plain": { input: 2.5, output: 10.125 },
        "claude-c": { input: 2.5, output: 10.125 }
      },
      channels: [
        compactChannel("compact-primary", "sk-test-compact-1", 10),
        compactChannel("compact-secondary", "sk-test-compact-2", 0),
        {
          name: "plain",
          type: "openai",
          base_url: emulatorUrl,
          keys: ["sk-test-plain"],
          models: ["gpt-plain"],
          settings: { responses_api: true }
        },
        {
          name: "anthropic",
          type: "anthropic",
          base_url: emulatorUrl,
          keys: ["sk-test-anthropic"],
          models: ["claude-c"],
          settings: { responses_compact: true }
        }
      ],
      users: [{ username: "alice", group: "default", quota: 50_000_000, tokens: [{ name: "main", key: KEY }] }],
      settings: { cooldown_failures: 1000, retry_times: 2 }
    }),
    "compact.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

const used = async (gatewayUrl: string): Promise<bigint> => {
  const response = await fetch(`${gatewayUrl}/api/usage/token`, { headers: { authorization: `Bearer ${KEY}` } })
  const body = await response.json() as { data: { total_used: number } }
  return BigInt(body.data.total_used)
}

/** The SDK's request type, for bodies it would not let us write (tests of the gateway's validation). */
type CompactParams = OpenAI.Responses.ResponseCompactParams

const rejection = (promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> =>
  promise.then(
    () => {
      throw new Error("expected the request to fail")
    },
    (error) => {
      ok(error instanceof OpenAI.APIError, String(error))
      return error
    }
  )

const conversation: CompactParams["input"] = [
  { role: "user", content: "first question" },
  { role: "assistant", content: "first answer" },
  { role: "user", content: [{ type: "input_text", text: "second question" }] }
]

Deno.test("responses compact: forwarded, failed over, billed from upstream usage, refused where unsupported", async (t) => {
  const gateway = await startGateway({ store: "postgres", config })
  const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
  const compacts: Array<OpenAI.Responses.ResponseUsage> = []
  try {
    await t.step(
      "success: the compacted answer, the upstream body with the mapped model, the exact charge",
      async () => {
        const before = await used(gateway.url)
        const compacted = await client.responses.compact({
          model: "gpt-c",
          input: conversation,
          instructions: "keep names",
          prompt_cache_key: "cache-1"
        })
        strictEqual(compacted.object, "response.compaction")
        ok(compacted.id.startsWith("resp_"))
        strictEqual(typeof compacted.created_at, "number")
        const kinds = compacted.output.map((item) => item.type === "message" ? `message:${item.role}` : item.type)
        deepStrictEqual(kinds, ["message:user", "message:user", "compaction"])
        const last = compacted.output.at(-1) as OpenAI.Responses.ResponseCompactionItem
        ok(last.encrypted_content.length > 0)
        ok(compacted.usage.input_tokens > 0 && compacted.usage.output_tokens > 0)
        strictEqual(compacted.usage.total_tokens, compacted.usage.input_tokens + compacted.usage.output_tokens)
        compacts.push(compacted.usage)

        strictEqual(gateway.emulator.requests.length, 1)
        const upstream = gateway.emulator.requests[0]
        strictEqual(upstream.path, "/v1/responses/compact")
        strictEqual(upstream.key, "sk-test-compact-1")
        deepStrictEqual(upstream.body, {
          model: "gpt-c-upstream",
          input: conversation,
          instructions: "keep names",
          prompt_cache_key: "cache-1"
        })
        strictEqual(await used(gateway.url) - before, expectedCost(compacted.usage))
      }
    )

    await t.step("a string input is forwarded as a string", async () => {
      gateway.emulator.reset()
      const compacted = await client.responses.compact({ model: "gpt-c", input: "just one message" })
      deepStrictEqual(compacted.output.map((item) => item.type), ["message", "compaction"])
      strictEqual((gateway.emulator.requests[0].body as { input: unknown }).input, "just one message")
      compacts.push(compacted.usage)
    })

    await t.step("a model whose channels lack the setting: 400 naming the reason, nothing sent upstream", async () => {
      gateway.emulator.reset()
      const before = await used(gateway.url)
      for (const model of ["gpt-plain", "claude-c"]) {
        const error = await rejection(client.responses.compact({ model, input: "x" }))
        ok(error instanceof OpenAI.BadRequestError, `${model}: ${error.status}`)
        strictEqual(error.message.includes(`Model "${model}" has no channel that supports /v1/responses/compact`), true)
        const body = error.error as { param: string; code: string; type: string }
        strictEqual(body.param, "model")
        strictEqual(body.code, "invalid_request")
        strictEqual(body.type, "invalid_request_error")
      }
      strictEqual(gateway.emulator.requests.length, 0)
      strictEqual(await used(gateway.url), before)
    })

    await t.step("a model unknown to the group stays 503 model_not_found", async () => {
      const error = await rejection(client.responses.compact({ model: "no-such-model", input: "x" }))
      strictEqual(error.status, 503)
      strictEqual((error.error as { code: string }).code, "model_not_found")
    })

    await t.step("bad bodies: 400 with param naming the field", async () => {
      gateway.emulator.reset()
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [{ input: "x" }, "model"],
        [{ model: 7, input: "x" }, "model"],
        [{ model: "gpt-c", input: 5 }, "input"],
        [{ model: "gpt-c", input: ["not an item"] }, "input[0]"],
        [{ model: "gpt-c", instructions: ["no"] }, "instructions"],
        [{ model: "gpt-c", input: "x", stream: true }, "stream"]
      ]
      for (const [body, param] of cases) {
        const error = await rejection(client.responses.compact(body as CompactParams))
        ok(error instanceof OpenAI.BadRequestError, `${JSON.stringify(body)}: ${error.status}`)
        strictEqual((error.error as { param: string }).param, param, JSON.stringify(body))
      }
      const notJson = await fetch(`${gateway.url}/v1/responses/compact`, {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
        body: "[1, 2"
      })
      strictEqual(notJson.status, 400)
      strictEqual(((await notJson.json()) as { error: { code: string } }).error.code, "invalid_request")
      const noKey = await fetch(`${gateway.url}/v1/responses/compact`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-c", input: "x" })
      })
      strictEqual(noKey.status, 401)
      await noKey.body?.cancel()
      strictEqual(gateway.emulator.requests.length, 0)
    })

    await t.step("previous_response_id is expanded from the stored conversation", async () => {
      const first = await client.responses.create({ model: "gpt-c", input: "remember the llama" })
      gateway.emulator.reset()
      const compacted = await client.responses.compact({
        model: "gpt-c",
        input: "and then?",
        previous_response_id: first.id
      })
      strictEqual(compacted.object, "response.compaction")
      compacts.push(compacted.usage)
      const body = gateway.emulator.requests[0].body as Record<string, unknown>
      strictEqual("previous_response_id" in body, false)
      const text = JSON.stringify(body.input)
      ok(text.includes("remember the llama"), text)
      ok(text.includes("Echo: remember the llama"), text)
      ok(text.indexOf("remember the llama") < text.indexOf("and then?"), text)

      const unknown = await rejection(
        client.responses.compact({ model: "gpt-c", input: "x", previous_response_id: "resp_nope" })
      )
      strictEqual(unknown.status, 400)
      strictEqual((unknown.error as { param: string }).param, "previous_response_id")
    })

    await t.step("upstream 500 on the primary: the secondary answers, one charge", async () => {
      gateway.emulator.reset()
      gateway.emulator.setFaults([{ match: { path: "/v1/responses/compact", key: "sk-test-compact-1" }, status: 500 }])
      const before = await used(gateway.url)
      const compacted = await client.responses.compact({ model: "gpt-c", input: conversation })
      strictEqual(compacted.object, "response.compaction")
      deepStrictEqual(gateway.emulator.requests.map((request) => request.key), [
        "sk-test-compact-1",
        "sk-test-compact-2"
      ])
      ok(gateway.emulator.requests.every((request) => request.path === "/v1/responses/compact"))
      strictEqual(await used(gateway.url) - before, expectedCost(compacted.usage))
      compacts.push(compacted.usage)
    })

    await t.step("upstream 500 everywhere: an error and no charge", async () => {
      gateway.emulator.reset()
      gateway.emulator.setFaults([{ match: { path: "/v1/responses/compact" }, status: 500 }])
      const before = await used(gateway.url)
      const error = await rejection(client.responses.compact({ model: "gpt-c", input: conversation }))
      strictEqual(error.status, 500)
      strictEqual((error.error as { code: string }).code, "upstream_error")
      strictEqual(gateway.emulator.requests.length, 2)
      strictEqual(await used(gateway.url), before)
    })

    await t.step("the usage log holds one row per attempt; costs sum to the charges", async () => {
      await gateway.stop()
      const rows = await gateway.query<{
        model: string
        upstream_model: string | null
        prompt_tokens: number
        completion_tokens: number
        cost: string | bigint
        status: number
        channel: string | null
      }>(
        `SELECT l.model, l.upstream_model, l.prompt_tokens, l.completion_tokens, l.cost, l.status, c.name AS channel
         FROM usage_logs l LEFT JOIN channels c ON c.id = l.channel_id WHERE l.model = 'gpt-c' ORDER BY l.id`
      )
      const answered = rows.filter((row) => row.status === 200 && row.upstream_model === "gpt-c-upstream")
      // The plain Responses turn of the previous_response_id step is in the log too (through chat completions).
      const compactRows = answered.filter((_, index) => index !== 2)
      strictEqual(compactRows.length, compacts.length)
      compactRows.forEach((row, index) => {
        strictEqual(row.prompt_tokens, compacts[index].input_tokens)
        strictEqual(row.completion_tokens, compacts[index].output_tokens)
        strictEqual(BigInt(row.cost), expectedCost(compacts[index]))
      })
      strictEqual(compactRows.at(-1)!.channel, "compact-secondary")
      const failed = rows.filter((row) => row.status >= 400)
      // The primary's 500 in the failover step, then both channels' 500 in the last one.
      deepStrictEqual(failed.map((row) => `${row.channel}:${row.status}`), [
        "compact-primary:500",
        "compact-primary:500",
        "compact-secondary:500"
      ])
      ok(failed.every((row) => BigInt(row.cost) === 0n && row.prompt_tokens === 0 && row.completion_tokens === 0))
    })
  } finally {
    await gateway.close()
  }
})
