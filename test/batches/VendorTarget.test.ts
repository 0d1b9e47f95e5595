/**
 * The delegation rule (`src/batches/vendor/VendorTarget.ts`): a batch whose models are all served by channels of
 * the batch's own type, one of which sets `vendor_batches` and serves them all, goes to that channel with each
 * model's upstream name; a mix of channel types, no channel with the setting, or a channel missing a model does not.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { vendorTarget } from "../../src/batches/vendor/VendorTarget.ts"
import type { Candidate } from "../../src/services/ChannelRouter.ts"
import type { Channel, ChannelType } from "../../src/storage/Catalog.ts"

const channel = (id: number, type: ChannelType, vendorBatches: boolean, extra: Channel["settings"] = {}): Channel => ({
  id,
  name: `channel-${id}`,
  type,
  baseUrl: "http://vendor.invalid",
  models: [],
  priority: 0,
  weight: 1,
  modelMapping: {},
  settings: { ...extra, vendor_batches: vendorBatches },
  enabled: true,
  keys: [{ position: 0, key: `sk-test-channel-${id}`, enabled: true, disabledReason: null }]
})

const candidate = (of: Channel, upstreamModel: string): Candidate => ({ channel: of, key: of.keys[0], upstreamModel })

Deno.test("a batch whose models one delegating channel serves goes to it, models mapped", () => {
  const plain = channel(1, "openai", false)
  const delegating = channel(2, "openai", true)
  const target = vendorTarget(
    "openai",
    "/v1/chat/completions",
    new Map([
      ["gpt-a", [candidate(plain, "gpt-a"), candidate(delegating, "gpt-a-up")]],
      ["gpt-b", [candidate(delegating, "gpt-b-up")]]
    ])
  )
  strictEqual(target?.candidate.channel.id, 2)
  deepStrictEqual([...(target?.upstreamModels ?? [])], [["gpt-a", "gpt-a-up"], ["gpt-b", "gpt-b-up"]])
})

Deno.test("a mix of channel types, no delegating channel, or a model it lacks runs through the gateway", () => {
  const openai = channel(1, "openai", true)
  const anthropic = channel(2, "anthropic", true)
  strictEqual(
    vendorTarget(
      "openai",
      "/v1/chat/completions",
      new Map([["gpt", [candidate(openai, "gpt")]], ["claude", [candidate(anthropic, "claude")]]])
    ),
    undefined
  )
  strictEqual(
    vendorTarget("openai", "/v1/chat/completions", new Map([["gpt", [candidate(channel(3, "openai", false), "g")]]])),
    undefined
  )
  strictEqual(
    vendorTarget(
      "openai",
      "/v1/chat/completions",
      new Map([["gpt", [candidate(openai, "gpt")]], ["gpt-2", [candidate(channel(4, "openai", false), "g2")]]])
    ),
    undefined
  )
  // A Message Batch goes only to an anthropic channel; an OpenAI batch not to one.
  strictEqual(vendorTarget("openai", "/v1/chat/completions", new Map([["c", [candidate(anthropic, "c")]]])), undefined)
  strictEqual(
    vendorTarget("anthropic", "/v1/messages", new Map([["c", [candidate(anthropic, "c")]]]))?.api,
    "anthropic"
  )
  // Responses lines need a channel with `/v1/responses`.
  strictEqual(vendorTarget("openai", "/v1/responses", new Map([["gpt", [candidate(openai, "gpt")]]])), undefined)
  strictEqual(
    vendorTarget(
      "openai",
      "/v1/responses",
      new Map([["gpt", [candidate(channel(5, "openai", true, { responses_api: true }), "gpt")]]])
    )?.candidate.channel.id,
    5
  )
  strictEqual(vendorTarget("openai", "/v1/chat/completions", new Map()), undefined)
})
