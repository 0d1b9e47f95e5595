/**
 * The gateway's client of the vendors' batch APIs (`src/batches/vendor/VendorBatchApi.ts`) against the emulator's
 * OpenAI Files + Batch APIs and Anthropic Message Batches: a batch submitted with its models mapped and the
 * channel's key, retrieved until it ends, and its results read back line by line with the usage the emulator
 * recorded; a batch cancelled mid-run; a wrong key failing without leaking it.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { Effect, Exit } from "effect"
import { startEmulator } from "../../emulator/Emulator.ts"
import {
  cancelVendorBatch,
  retrieveVendorBatch,
  submitVendorBatch,
  type VendorApi,
  vendorBatchResults,
  type VendorBatchState
} from "../../src/batches/vendor/VendorBatchApi.ts"
import { lineCost, lineUsage } from "../../src/batches/vendor/VendorLineUsage.ts"
import { toFixed } from "../../src/domain/Pricing.ts"
import type { Channel } from "../../src/upstreams/Adapter.ts"

const KEY = "sk-test-vendor-batch-0001"

const untilEnded = async (api: VendorApi, channel: Channel, id: string): Promise<VendorBatchState> => {
  for (let tries = 0; tries < 20; tries++) {
    const state = await Effect.runPromise(retrieveVendorBatch(api, channel, KEY, id))
    if (state.phase === "ended") return state
  }
  throw new Error(`vendor batch ${id} did not end`)
}

const chatLine = (index: number) => ({
  customId: `line-${index}`,
  body: { model: "gpt-public", messages: [{ role: "user", content: `question ${index}` }], max_tokens: 16 }
})

Deno.test("an OpenAI batch is uploaded with its models mapped, run, and read back with the emulator's usage", async () => {
  const emulator = startEmulator({ batchPolls: 2, validKeys: [KEY] })
  try {
    const channel: Channel = { type: "openai", baseUrl: `${emulator.url}/v1`, settings: {} }
    const lines = [0, 1, 2].map(chatLine)
    const { id, fileId } = await Effect.runPromise(
      submitVendorBatch("openai", channel, KEY, "/v1/chat/completions", lines, (model) => `${model}-upstream`)
    )
    ok(id.startsWith("batch_"))
    ok(fileId?.startsWith("file-"))
    const state = await untilEnded("openai", channel, id)
    strictEqual(state.end, "completed")
    const results = await Effect.runPromise(vendorBatchResults("openai", channel, KEY, id, state))
    deepStrictEqual(results.map((result) => result.customId).sort(), ["line-0", "line-1", "line-2"])
    const ran = emulator.requests.filter((request) =>
      request.path === "/v1/chat/completions" && request.headers["x-emulator-batch"] === id
    )
    strictEqual(ran.length, 3)
    for (const request of ran) {
      strictEqual((request.body as { model: string }).model, "gpt-public-upstream")
      strictEqual(request.key, KEY)
    }
    const reported = ran.reduce((sum, request) => sum + (request.usage?.input ?? 0) + (request.usage?.output ?? 0), 0)
    let seen = 0
    for (const result of results) {
      strictEqual(result.state, "succeeded")
      strictEqual(result.statusCode, 200)
      const usage = lineUsage("openai", JSON.parse(result.result ?? "null"))
      ok(usage !== undefined && usage.promptTokens > 0 && usage.completionTokens > 0)
      seen += usage.promptTokens + usage.completionTokens
      // $1 / $2 per 1M normally, $0.5 / $1 in a batch: the line costs its tokens at the batch prices, rounded up.
      const price = {
        input: toFixed(1),
        output: toFixed(2),
        batchInput: toFixed("0.5"),
        batchOutput: toFixed(1),
        free: false
      }
      strictEqual(
        lineCost(toFixed(1), price, usage),
        BigInt(Math.ceil(usage.promptTokens * 0.5 + usage.completionTokens))
      )
    }
    strictEqual(seen, reported)
  } finally {
    await emulator.close()
  }
})

Deno.test("a Message Batch is submitted with params.model mapped and its results read with the emulator's usage", async () => {
  const emulator = startEmulator({ batchPolls: 2, validKeys: [KEY] })
  try {
    const channel: Channel = { type: "anthropic", baseUrl: emulator.url, settings: { headers: { "x-team": "evals" } } }
    const lines = [0, 1].map((index) => ({
      customId: `m-${index}`,
      body: { model: "claude-public", max_tokens: 32, messages: [{ role: "user", content: `hello ${index}` }] }
    }))
    const { id, fileId } = await Effect.runPromise(
      submitVendorBatch("anthropic", channel, KEY, "/v1/messages", lines, () => "claude-upstream")
    )
    ok(id.startsWith("msgbatch_"))
    strictEqual(fileId, undefined)
    const created = emulator.requests.find((request) => request.path === "/v1/messages/batches")
    strictEqual(created?.headers["x-team"], "evals")
    const state = await untilEnded("anthropic", channel, id)
    strictEqual(state.end, "completed")
    const results = await Effect.runPromise(vendorBatchResults("anthropic", channel, KEY, id, state))
    strictEqual(results.length, 2)
    const ran = emulator.requests.filter((request) => request.headers["x-emulator-batch"] === id)
    strictEqual(ran.length, 2)
    for (const request of ran) strictEqual((request.body as { model: string }).model, "claude-upstream")
    const reported = ran.reduce((sum, request) => sum + (request.usage?.input ?? 0) + (request.usage?.output ?? 0), 0)
    const seen = results.reduce((sum, result) => {
      strictEqual(result.state, "succeeded")
      const usage = lineUsage("anthropic", JSON.parse(result.result ?? "null"))
      return sum + (usage?.promptTokens ?? 0) + (usage?.completionTokens ?? 0)
    }, 0)
    strictEqual(seen, reported)
  } finally {
    await emulator.close()
  }
})

Deno.test("a vendor batch cancelled mid-run keeps the lines that ran", async () => {
  const emulator = startEmulator({ batchPolls: 4, validKeys: [KEY] })
  try {
    for (const api of ["openai", "anthropic"] as const) {
      const channel: Channel = { type: api, baseUrl: emulator.url, settings: {} }
      const lines = [0, 1, 2, 3].map((index) =>
        api === "openai" ? chatLine(index) : {
          customId: `line-${index}`,
          body: { model: "claude-x", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }
        }
      )
      const endpoint = api === "openai" ? "/v1/chat/completions" : "/v1/messages"
      const { id } = await Effect.runPromise(submitVendorBatch(api, channel, KEY, endpoint, lines, (model) => model))
      // OpenAI's first retrieve validates; the next runs a share of the lines.
      await Effect.runPromise(retrieveVendorBatch(api, channel, KEY, id))
      await Effect.runPromise(retrieveVendorBatch(api, channel, KEY, id))
      await Effect.runPromise(cancelVendorBatch(api, channel, KEY, id))
      const state = await untilEnded(api, channel, id)
      strictEqual(state.end, "cancelled")
      const results = await Effect.runPromise(vendorBatchResults(api, channel, KEY, id, state))
      const ran = emulator.requests.filter((request) =>
        request.headers["x-emulator-batch"] === id && request.path === endpoint
      ).length
      ok(ran > 0 && ran < 4, `${api}: ${ran} lines ran`)
      strictEqual(results.filter((result) => result.state === "succeeded").length, ran)
    }
  } finally {
    await emulator.close()
  }
})

Deno.test("a refused key fails the call with the vendor's status and without the key", async () => {
  const emulator = startEmulator({ validKeys: ["sk-test-other-key"] })
  try {
    const channel: Channel = { type: "openai", baseUrl: emulator.url, settings: {} }
    const exit = await Effect.runPromiseExit(
      submitVendorBatch("openai", channel, KEY, "/v1/chat/completions", [chatLine(0)], (model) => model)
    )
    ok(Exit.isFailure(exit))
    const text = JSON.stringify(exit.cause)
    ok(text.includes("401"), text)
    ok(!text.includes(KEY))
  } finally {
    await emulator.close()
  }
})
