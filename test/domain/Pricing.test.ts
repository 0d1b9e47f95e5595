/**
 * Exact cost arithmetic (docs/ARCHITECTURE.md, "Outer contract"): fixed-point prices and
 * ratios, ceil per request, free models, and `toFixed` rounding up past 9
 * decimals.
 */
import { ok, strictEqual, throws } from "node:assert/strict"
import {
  audioCost,
  characterCost,
  holdPrice,
  imageCost,
  isTextPriced,
  type Price,
  searchCost,
  textCost,
  toFixed,
  videoCost
} from "../../src/domain/Pricing.ts"

const price = (input: number | string, output: number | string, free = false): Price => ({
  input: toFixed(input),
  output: toFixed(output),
  free
})
const ONE = toFixed(1)

Deno.test("toFixed: decimals become bigints scaled by 10^9", () => {
  strictEqual(toFixed(0), 0n)
  strictEqual(toFixed(2), 2_000_000_000n)
  strictEqual(toFixed(2.5), 2_500_000_000n)
  strictEqual(toFixed("2.5"), 2_500_000_000n)
  strictEqual(toFixed(" 10.125 "), 10_125_000_000n)
  strictEqual(toFixed("7."), 7_000_000_000n)
  strictEqual(toFixed(0.1), 100_000_000n)
  strictEqual(toFixed(0.3), 300_000_000n)
  strictEqual(toFixed("0.000000001"), 1n)
  strictEqual(toFixed("1.000000000000"), 1_000_000_000n)
})

Deno.test("toFixed: more than 9 decimals round up, never down", () => {
  strictEqual(toFixed("0.0000000001"), 1n)
  strictEqual(toFixed("1.0000000010"), 1_000_000_001n)
  strictEqual(toFixed("0.1234567891"), 123_456_790n)
  strictEqual(toFixed("0.1234567890000"), 123_456_789n)
  strictEqual(toFixed(1 / 3), 333_333_334n)
})

Deno.test("toFixed: refuses what is not a non-negative decimal", () => {
  for (const bad of ["-1", "abc", "1e3", "", "1.2.3", "0x10", -0.5]) {
    throws(() => toFixed(bad), RangeError, `toFixed(${JSON.stringify(bad)})`)
  }
})

Deno.test("textCost: ceil(ratio × (prompt × input + completion × output)) in micro-USD", () => {
  // 1.5 × (1000 × 2.5 + 500 × 10.125) = 1.5 × 7562.5 = 11343.75 → 11344
  strictEqual(textCost(toFixed(1.5), price(2.5, 10.125), 1000, 500), 11_344n)
  // Whole results stay whole: 1 × (1000 × 2 + 100 × 8) = 2800
  strictEqual(textCost(ONE, price(2, 8), 1000, 100), 2_800n)
  // One million tokens at $3 per 1M tokens is $3 = 3,000,000 micro-USD.
  strictEqual(textCost(ONE, price(3, 15), 1_000_000, 0), 3_000_000n)
  strictEqual(textCost(ONE, price(3, 15), 0, 1_000_000), 15_000_000n)
})

Deno.test("textCost: exact where floating point is not (0.1 + 0.2)", () => {
  // In floats 10 × (0.1 + 0.2) = 3.0000000000000004, whose ceil would be 4.
  strictEqual(Math.ceil(10 * (1 * 0.1 + 1 * 0.2)), 4)
  strictEqual(textCost(toFixed(10), price(0.1, 0.2), 1, 1), 3n)
  strictEqual(textCost(ONE, price(0.1, 0.2), 10, 10), 3n)
  // 0.7 × 3 = 2.1 → 3
  strictEqual(textCost(toFixed(0.7), price(0.1, 0.2), 10, 10), 3n)
})

Deno.test("textCost: any fraction of a unit is charged as a whole unit", () => {
  strictEqual(textCost(ONE, price("0.000001", 0), 1, 0), 1n)
  strictEqual(textCost(ONE, price("0.5", 0), 1, 0), 1n)
  strictEqual(textCost(ONE, price("0.5", 0), 2, 0), 1n)
  strictEqual(textCost(ONE, price("0.5", 0), 3, 0), 2n)
  strictEqual(textCost(toFixed("1.000000001"), price(1, 0), 1, 0), 2n)
})

Deno.test("textCost: nothing to pay for nothing, for free models and at ratio 0", () => {
  strictEqual(textCost(ONE, price(2, 8), 0, 0), 0n)
  strictEqual(textCost(ONE, price(2, 8, true), 1000, 1000), 0n)
  strictEqual(textCost(ONE, { free: true }, 1000, 1000), 0n)
  strictEqual(textCost(0n, price(2, 8), 1000, 1000), 0n)
  // A model priced for input only charges no output.
  strictEqual(textCost(ONE, { input: toFixed(2), free: false }, 10, 1000), 20n)
})

Deno.test("textCost: token counts are clamped to whole non-negative numbers", () => {
  strictEqual(textCost(ONE, price(2, 8), -5, 1), 8n)
  strictEqual(textCost(ONE, price(2, 8), 10.9, 0), 20n)
})

Deno.test("textCost: big numbers stay exact", () => {
  const tokens = Number.MAX_SAFE_INTEGER
  strictEqual(textCost(toFixed(2), price(75, 150), tokens, tokens), 2n * 225n * BigInt(tokens))
})

Deno.test("imageCost and videoCost: ceil(ratio × count × price × 10^6)", () => {
  const media: Price = { perImage: toFixed(0.04), perSecond: toFixed("0.1"), free: false }
  strictEqual(imageCost(ONE, media, 3), 120_000n)
  strictEqual(imageCost(toFixed(1.5), media, 1), 60_000n)
  strictEqual(videoCost(ONE, media, 4), 400_000n)
  // Started seconds are charged whole.
  strictEqual(videoCost(ONE, media, 4.2), 500_000n)
  strictEqual(imageCost(ONE, { ...media, free: true }, 3), 0n)
  strictEqual(videoCost(ONE, { ...media, free: true }, 3), 0n)
})

Deno.test("isTextPriced: free, or an input or output price", () => {
  strictEqual(isTextPriced({ free: true }), true)
  strictEqual(isTextPriced({ input: 0n, free: false }), true)
  strictEqual(isTextPriced({ output: toFixed(1), free: false }), true)
  strictEqual(isTextPriced({ perImage: toFixed(1), free: false }), false)
  strictEqual(isTextPriced({ free: false }), false)
})

Deno.test("textCost: cache reads at cached_input and cache writes at cache_write, each input when unset", () => {
  const cached: Price = {
    input: toFixed(3),
    output: toFixed(15),
    cachedInput: toFixed(0.3),
    cacheWrite: toFixed(3.75),
    free: false
  }
  // 1000 prompt tokens of which 600 read from the cache and 300 written to it, 100 completion tokens:
  // 100 × 3 + 600 × 0.3 + 300 × 3.75 + 100 × 15 = 300 + 180 + 1125 + 1500 = 3105 micro-USD.
  strictEqual(textCost(ONE, cached, 1000, 100, 600, 300), 3_105n)
  // Unset cache prices are `input`: the outer contract's formula, whatever the cache counts say.
  const plain = price(3, 15)
  strictEqual(textCost(ONE, plain, 1000, 100, 600, 300), textCost(ONE, plain, 1000, 100))
  // Cache counts above the prompt are capped to it.
  strictEqual(textCost(ONE, cached, 100, 0, 500, 500), 30n)
  strictEqual(textCost(ONE, cached, 100, 0, 0, 500), 375n)
})

Deno.test("holdPrice: a hold prices prompt tokens at the dearest prompt price", () => {
  const writes: Price = { input: toFixed(3), output: toFixed(15), cacheWrite: toFixed(3.75), free: false }
  strictEqual(holdPrice(writes).input, toFixed(3.75))
  const plain = price(3, 15)
  strictEqual(holdPrice(plain), plain)
  ok(textCost(ONE, holdPrice(writes), 1000, 0) >= textCost(ONE, writes, 1000, 0, 0, 1000))
})

Deno.test("characterCost, audioCost, searchCost: ceil(ratio × measure × price), free is 0", () => {
  const ratio = toFixed("1.5")
  // 35 characters at 15 USD per 1M: 1.5 × 35 × 15 = 787.5 → 788 micro-USD.
  strictEqual(characterCost(ratio, { perMillionCharacters: toFixed("15"), free: false }, 35), 788n)
  // 2,500 ms at 0.0001 USD a second: 1.5 × 2.5 × 100 = 375.
  strictEqual(audioCost(ratio, { perSecond: toFixed("0.0001"), free: false }, 2500), 375n)
  // 3 search units at 0.002 USD: 1.5 × 3 × 2000 = 9000.
  strictEqual(searchCost(ratio, { perSearch: toFixed("0.002"), free: false }, 3), 9000n)
  strictEqual(searchCost(ratio, { perSearch: toFixed("0.002"), free: true }, 3), 0n)
})
