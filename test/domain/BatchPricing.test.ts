/**
 * The price of a delegated batch line (`batchPrice`): `batch_input` / `batch_output` where set, the normal prices
 * otherwise, the cache prices kept (an unset one following the batch input price).
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { batchPrice, type Price, textCost, toFixed } from "../../src/domain/Pricing.ts"

const ONE = toFixed(1)

Deno.test("batchPrice: batch prices replace input and output; the cost follows them exactly", () => {
  const price: Price = {
    input: toFixed(2),
    output: toFixed(8),
    batchInput: toFixed(1),
    batchOutput: toFixed(4),
    free: false
  }
  const billed = batchPrice(price)
  strictEqual(billed.input, toFixed(1))
  strictEqual(billed.output, toFixed(4))
  // Units are tokens × USD per 1M tokens: 1M prompt tokens at $1 and 500k completion tokens at $4.
  strictEqual(textCost(ONE, billed, 1_000_000, 500_000), 3_000_000n)
  strictEqual(textCost(ONE, billed, 10, 3), 10n * 1n + 3n * 4n)
  // Half the normal prices: the same tokens cost half.
  strictEqual(textCost(ONE, price, 1_000_000, 500_000), 6_000_000n)
})

Deno.test("batchPrice: unset batch prices fall back to the normal ones; cache prices are kept", () => {
  const plain: Price = { input: toFixed(2), output: toFixed(8), cachedInput: toFixed(0.5), free: false }
  deepStrictEqual(batchPrice(plain), plain)
  const onlyInput = batchPrice({ ...plain, batchInput: toFixed(1) })
  deepStrictEqual([onlyInput.input, onlyInput.output, onlyInput.cachedInput], [toFixed(1), toFixed(8), toFixed(0.5)])
  const uncached = batchPrice({ input: toFixed(2), output: toFixed(8), batchInput: toFixed(1), free: false })
  // An unset cached price follows `input`, now the batch input price.
  strictEqual(textCost(ONE, uncached, 100, 0, 100), textCost(ONE, uncached, 100, 0, 0))
  strictEqual(textCost(ONE, batchPrice({ ...plain, free: true, batchInput: ONE }), 100, 100), 0n)
})
