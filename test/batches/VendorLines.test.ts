/**
 * A delegated batch's results laid onto its lines (`src/batches/vendor/VendorLines.ts`): a succeeded line costs its
 * usage at the batch prices (rounded up per line, group ratio applied), an errored one nothing, one the vendor left
 * out ends `canceled` or `expired` by how the batch ended; Anthropic usage counts cache reads and writes in the prompt.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { vendorLineEnds } from "../../src/batches/vendor/VendorLines.ts"
import { toFixed } from "../../src/domain/Pricing.ts"

const price = { input: toFixed(2), output: toFixed(4), batchInput: toFixed(1), batchOutput: toFixed(2), free: false }
const lines = [0, 1, 2].map((lineIndex) => ({ lineIndex, customId: `c-${lineIndex}`, model: "gpt" }))

Deno.test("an OpenAI batch's lines: succeeded billed at batch prices, errored free, missing canceled", () => {
  const ends = vendorLineEnds(
    "openai",
    "cancelled",
    lines,
    [
      {
        customId: "c-0",
        state: "succeeded",
        statusCode: 200,
        result: JSON.stringify({ usage: { prompt_tokens: 3, completion_tokens: 5 } })
      },
      { customId: "c-1", state: "errored", statusCode: 400, result: JSON.stringify({ error: { message: "bad" } }) },
      { customId: "c-9", state: "succeeded", statusCode: 200, result: "{}" }
    ],
    toFixed("1.5"),
    () => price
  )
  // (3 × $1 + 5 × $2) per 1M tokens × 1.5 = 19.5 micro-USD, rounded up.
  deepStrictEqual(ends.map((end) => [end.state, end.cost]), [["succeeded", 20n], ["errored", 0n], ["canceled", 0n]])
  strictEqual(ends[2].result, null)
})

Deno.test("an expired Message Batch: cache tokens in the prompt, the lines not run expired, unpriced free", () => {
  const ends = vendorLineEnds(
    "anthropic",
    "expired",
    lines.slice(0, 2),
    [{
      customId: "c-0",
      state: "succeeded",
      statusCode: 200,
      result: JSON.stringify({
        usage: { input_tokens: 2, output_tokens: 1, cache_read_input_tokens: 4, cache_creation_input_tokens: 1 }
      })
    }],
    toFixed(1),
    () => price
  )
  deepStrictEqual(ends[0].usage, { promptTokens: 7, completionTokens: 1, cachedTokens: 4, cacheWriteTokens: 1 })
  strictEqual(ends[0].cost, 9n)
  strictEqual(ends[1].state, "expired")
  strictEqual(
    vendorLineEnds(
      "anthropic",
      "completed",
      lines.slice(0, 1),
      [{
        customId: "c-0",
        state: "succeeded",
        statusCode: 200,
        result: JSON.stringify({ usage: { input_tokens: 2, output_tokens: 1 } })
      }],
      toFixed(1),
      () => undefined
    )[0].cost,
    0n
  )
})
