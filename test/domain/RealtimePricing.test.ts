/**
 * The Realtime prices (`realtimeCost`, `realtimeBound`, `isRealtimePriced`): each kind of token at its own price,
 * cached counts capped at their kind, a report without details billed at the dearer price of its direction, the
 * float bound at the dearest prices, and the usage decoder refusing what is not a count.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import {
  isRealtimePriced,
  type Price,
  realtimeBound,
  realtimeCost,
  type RealtimeTokens,
  toFixed
} from "../../src/domain/Pricing.ts"
import { realtimeUsageOf } from "../../src/relay/realtime/RealtimeUsage.ts"

const ONE = 1_000_000_000n
const price: Price = {
  input: toFixed(4),
  cachedInput: toFixed(0.4),
  output: toFixed(16),
  audioInput: toFixed(32),
  cachedAudioInput: toFixed(0.4),
  audioOutput: toFixed(64),
  free: false
}
const none: RealtimeTokens = {
  inputTokens: 0,
  outputTokens: 0,
  textInput: 0,
  audioInput: 0,
  imageInput: 0,
  cachedText: 0,
  cachedAudio: 0,
  cachedImage: 0,
  textOutput: 0,
  audioOutput: 0
}

Deno.test("realtimeCost: text, audio, cached and output tokens at their own prices, rounded up once", () => {
  const tokens = {
    ...none,
    inputTokens: 1_300,
    textInput: 1_000,
    audioInput: 300,
    cachedText: 500,
    cachedAudio: 100,
    outputTokens: 250,
    textOutput: 50,
    audioOutput: 200
  }
  // 500×4 + 500×0.4 + 200×32 + 100×0.4 + 50×16 + 200×64 = 2000 + 200 + 6400 + 40 + 800 + 12800
  strictEqual(realtimeCost(ONE, price, tokens), 22_240n)
  strictEqual(realtimeCost(ONE * 2n, price, tokens), 44_480n)
  strictEqual(realtimeCost(ONE, price, { ...none, inputTokens: 1, textInput: 1, cachedText: 1 }), 1n, "0.4 → 1")
  strictEqual(realtimeCost(ONE, { ...price, free: true }, tokens), 0n)
})

Deno.test("realtimeCost: cached counts are capped at their kind; totals without details bill at the dearer price", () => {
  strictEqual(realtimeCost(ONE, price, { ...none, inputTokens: 10, audioInput: 10, cachedAudio: 99 }), 4n)
  strictEqual(realtimeCost(ONE, price, { ...none, inputTokens: 10, outputTokens: 10 }), 10n * 32n + 10n * 64n)
  strictEqual(
    realtimeCost(ONE, { input: toFixed(4), output: toFixed(16), free: false }, {
      ...none,
      inputTokens: 10,
      audioInput: 10
    }),
    40n,
    "no audio price: the text price"
  )
})

Deno.test("realtimeBound and isRealtimePriced", () => {
  strictEqual(realtimeBound(ONE, price, 1_000, 100), 1_000n * 32n + 100n * 64n)
  strictEqual(realtimeBound(ONE, { ...price, free: true }, 1_000, 100), 0n)
  strictEqual(isRealtimePriced(price), true)
  strictEqual(isRealtimePriced({ input: toFixed(4), output: toFixed(16), free: false }), false)
  strictEqual(isRealtimePriced({ ...price, audioOutput: undefined }), false)
  strictEqual(isRealtimePriced({ free: true }), true)
})

Deno.test("realtimeUsageOf: the vendor's usage read field by field, anything not a count as 0", () => {
  deepStrictEqual(
    realtimeUsageOf({
      type: "response.done",
      response: {
        usage: {
          input_tokens: 12,
          output_tokens: "9",
          input_token_details: {
            text_tokens: 10,
            audio_tokens: -2,
            cached_tokens: 4,
            cached_tokens_details: { text_tokens: 3, audio_tokens: 1.5, image_tokens: 1e300 }
          },
          output_token_details: { text_tokens: 4, audio_tokens: 5 }
        }
      }
    }),
    { ...none, inputTokens: 12, textInput: 10, cachedText: 3, textOutput: 4, audioOutput: 5 }
  )
  deepStrictEqual(
    realtimeUsageOf({ response: { usage: { input_tokens: 5, input_token_details: { cached_tokens: 2 } } } }),
    { ...none, inputTokens: 5, cachedText: 2 },
    "a cached total without details counts as cached text"
  )
  strictEqual(realtimeUsageOf({ response: { usage: null } }), undefined)
  strictEqual(realtimeUsageOf({ response: "x" }), undefined)
})
