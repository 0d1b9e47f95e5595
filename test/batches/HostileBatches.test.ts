/**
 * Batches on the embedded store (PGlite) with hostile strings: `custom_id`s and message text holding NUL, unpaired
 * surrogates and a megabyte of text run, are stored and come back exactly as JSON carries them, through the
 * `openai` and `@anthropic-ai/sdk` clients; nothing crashes or leaks.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import Anthropic from "@anthropic-ai/sdk"
import OpenAI, { toFile } from "openai"
import { basicConfig, startGateway } from "../support/Gateway.ts"

const HOSTILE_IDS = ["nul\u0000id", "half\ud800", "\udfffback", "plain"]
const BIG = "x".repeat(1 << 20)

Deno.test("batches with NUL, lone surrogates and a megabyte of text on the embedded store", async () => {
  const gateway = await startGateway({
    config: (url) => basicConfig(url, { settings: { batch_poll_ms: 50 } } as never)
  })
  try {
    const openai = new OpenAI({ apiKey: "sk-test-alice-0001", baseURL: `${gateway.url}/v1`, maxRetries: 0 })
    const lines = HOSTILE_IDS.map((custom_id, index) =>
      JSON.stringify({
        custom_id,
        method: "POST",
        url: "/v1/chat/completions",
        body: {
          model: "gpt-test",
          max_tokens: 8,
          messages: [{ role: "user", content: index === 3 ? BIG : `text \u0000 with \ud83d and ${custom_id}` }]
        }
      })
    )
    const file = await openai.files.create({
      file: await toFile(new TextEncoder().encode(lines.join("\n") + "\n"), "hostile.jsonl"),
      purpose: "batch"
    })
    const created = await openai.batches.create({
      input_file_id: file.id,
      endpoint: "/v1/chat/completions",
      completion_window: "24h"
    })
    let batch = created
    for (let tries = 0; tries < 400 && batch.status !== "completed"; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 50))
      batch = await openai.batches.retrieve(created.id)
    }
    strictEqual(batch.status, "completed")
    deepStrictEqual(batch.request_counts, { total: 4, completed: 4, failed: 0 })
    const output = (await (await openai.files.content(batch.output_file_id!)).text()).split("\n").filter(Boolean)
      .map((line) => JSON.parse(line))
    // The ids come back exactly (JSON escapes the NUL and the lone surrogates, in the input file and the output).
    deepStrictEqual(output.map((line) => line.custom_id), HOSTILE_IDS)
    ok(output.every((line) => line.response.status_code === 200))

    const anthropic = new Anthropic({ apiKey: "sk-test-alice-0001", baseURL: gateway.url, maxRetries: 0 })
    const messageBatch = await anthropic.messages.batches.create({
      requests: [
        {
          custom_id: "hostile",
          params: {
            model: "gpt-test",
            max_tokens: 8,
            messages: [{ role: "user", content: `nul \u0000 half \ud800 ${BIG}` }]
          }
        },
        { custom_id: "bad-model", params: { model: "gpt-\u0000\ud800", max_tokens: 8, messages: [] } }
      ]
    })
    let ended = messageBatch
    for (let tries = 0; tries < 400 && ended.processing_status !== "ended"; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 50))
      ended = await anthropic.messages.batches.retrieve(messageBatch.id)
    }
    deepStrictEqual(ended.request_counts, { processing: 0, succeeded: 1, errored: 1, canceled: 0, expired: 0 })
    const results = []
    for await (const entry of await anthropic.messages.batches.results(messageBatch.id)) results.push(entry)
    deepStrictEqual(results.map((entry) => [entry.custom_id, entry.result.type]), [
      ["hostile", "succeeded"],
      ["bad-model", "errored"]
    ])
    const errored = results[1].result
    ok(errored.type === "errored" && !JSON.stringify(errored).includes("sk-test-upstream"))
  } finally {
    await gateway.close()
  }
})
