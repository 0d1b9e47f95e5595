/**
 * The two cache prices end to end: a model priced with `cached_input` and
 * `cache_write` on an anthropic channel of the emulator (which reports half a
 * prompt as read from the cache when it says "cached", and half as written to
 * it when it says "cachewrite", as `cache_read_input_tokens` and
 * `cache_creation_input_tokens`), called through the `openai` SDK; each
 * request is billed with those prices for those tokens and `input` for the
 * rest. A model without cache prices is billed by the outer contract's formula
 * whatever the cache counts.
 */
import { strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { basicConfig, startGateway } from "../support/Gateway.ts"

const KEY = "sk-test-alice-0001"

Deno.test("cache prices: cache reads at cached_input, writes at cache_write, the rest at input", async () => {
  const gateway = await startGateway({
    config: (url) =>
      basicConfig(url, {
        models: {
          "claude-cache": { input: 3, output: 15, cached_input: 0.3, cache_write: 3.75 },
          "claude-plain": { input: 3, output: 15 }
        },
        channels: [{
          name: "emu-anthropic",
          type: "anthropic",
          base_url: url,
          keys: ["sk-test-upstream-anthropic"],
          models: ["claude-cache", "claude-plain"]
        }]
      })
  })
  try {
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
    const billed = async (model: string, content: string) => {
      const completion = await client.chat.completions.create({ model, messages: [{ role: "user", content }] })
      await new Promise((resolve) => setTimeout(resolve, 300))
      const response = await fetch(`${gateway.url}/api/usage/token`, { headers: { authorization: `Bearer ${KEY}` } })
      const used = (await response.json()).data.total_used as number
      return { usage: completion.usage!, used }
    }
    // Costs in micro-USD: tokens × USD per 1M tokens; hundredths keep 0.3 and 3.75 whole.
    const ceilHundredths = (hundredths: number) => Math.ceil(hundredths / 100)

    const read = await billed("claude-cache", "this prompt is cached, mostly cached")
    const cached = read.usage.prompt_tokens_details!.cached_tokens!
    strictEqual(cached, Math.floor(read.usage.prompt_tokens / 2))
    strictEqual(
      read.used,
      ceilHundredths(300 * (read.usage.prompt_tokens - cached) + 30 * cached + 1500 * read.usage.completion_tokens)
    )

    const write = await billed("claude-cache", "this prompt goes to the cache: cachewrite please")
    const written = Math.floor(write.usage.prompt_tokens / 2)
    strictEqual(
      write.used - read.used,
      ceilHundredths(300 * (write.usage.prompt_tokens - written) + 375 * written + 1500 * write.usage.completion_tokens)
    )

    const plain = await billed("claude-plain", "this prompt is cached as well, cached")
    strictEqual(
      plain.used - write.used,
      ceilHundredths(300 * plain.usage.prompt_tokens + 1500 * plain.usage.completion_tokens),
      "no cache prices: the outer contract's formula"
    )
  } finally {
    await gateway.close()
  }
})
