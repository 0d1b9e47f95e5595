import { Result } from "effect"
import { ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { startGateway } from "../support/Gateway.ts"

const KEY = "sk-test-alice-0001"

const config = (emulatorUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: { "m-openai": { input: 1, output: 2 }, "m-anthropic": { input: 1, output: 2 } },
      channels: [
        {
          name: "openai",
          type: "openai",
          base_url: emulatorUrl,
          keys: ["sk-test-up"],
          models: ["m-openai"],
          settings: { responses_api: true }
        },
        { name: "anthropic", type: "anthropic", base_url: emulatorUrl, keys: ["sk-test-up"], models: ["m-anthropic"] }
      ],
      users: [{ username: "alice", group: "default", quota: 50_000_000, tokens: [{ name: "main", key: KEY }] }]
    }),
    "responses.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

Deno.test("responses: previous_response_id continues a conversation on every upstream type", async (t) => {
  const gateway = await startGateway({ config })
  const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
  try {
    for (const model of ["m-openai", "m-anthropic"]) {
      await t.step(model, async () => {
        const first = await client.responses.create({ model, input: "first turn", instructions: "be brief" })
        strictEqual(first.output_text, "Echo: first turn")
        const second = await client.responses.create({ model, input: "second turn", previous_response_id: first.id })
        strictEqual(second.output_text, "Echo: second turn")
        const upstream = JSON.stringify(gateway.emulator.requests.at(-1)!.body)
        ok(upstream.includes("first turn"), "the earlier turn reached the upstream")
        ok(upstream.includes("Echo: first turn"), "the earlier answer reached the upstream")
      })
    }

    await t.step("streamed answers are stored too", async () => {
      const stream = await client.responses.create({ model: "m-anthropic", input: "streamed turn", stream: true })
      let id = ""
      for await (const event of stream) if (event.type === "response.completed") id = event.response.id
      ok(id !== "")
      const next = await client.responses.create({ model: "m-openai", input: "after", previous_response_id: id })
      strictEqual(next.output_text, "Echo: after")
      ok(JSON.stringify(gateway.emulator.requests.at(-1)!.body).includes("Echo: streamed turn"))
    })

    await t.step("an unknown id is a 400 naming the field", async () => {
      const error = await client.responses.create({ model: "m-openai", input: "x", previous_response_id: "resp_nope" })
        .catch((failure) => failure)
      ok(error instanceof OpenAI.BadRequestError)
      strictEqual((error.error as { param: string }).param, "previous_response_id")
    })
  } finally {
    await gateway.close()
  }
})
