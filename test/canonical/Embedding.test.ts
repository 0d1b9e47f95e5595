/**
 * The embedding estimates: the typical count follows the text routes' rule
 * (ceil(characters / 4) + 3 per input; token arrays exactly), and the hold's
 * upper bound is never below it, whatever the text (NUL, lone surrogates,
 * astral characters).
 */
import { ok, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import {
  type EmbeddingInput,
  embeddingTokensTypical,
  embeddingTokensUpperBound
} from "../../src/canonical/Embedding.ts"

Deno.test("embedding estimates: the typical count is the text routes' rule", () => {
  strictEqual(
    embeddingTokensTypical({ model: "m", inputs: [{ type: "text", text: "abcde" }, { type: "text", text: "xyz" }] }),
    Math.ceil(8 / 4) + 6
  )
  strictEqual(embeddingTokensTypical({ model: "m", inputs: [{ type: "tokens", tokens: [1, 2, 3] }] }), 3 + 3)
  strictEqual(
    embeddingTokensTypical({ model: "m", inputs: [{ type: "text", text: "abcd", title: "efgh" }] }),
    2 + 3
  )
})

Deno.test("embedding estimates: the upper bound covers the typical count", () => {
  const input: fc.Arbitrary<EmbeddingInput> = fc.oneof(
    fc.record({
      type: fc.constant("text" as const),
      // Any UTF-16 code units, lone surrogates and NUL included.
      text: fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit)) })
    }),
    fc.record({ type: fc.constant("tokens" as const), tokens: fc.array(fc.nat()) })
  )
  fc.assert(fc.property(fc.array(input, { maxLength: 20 }), (inputs) => {
    const request = { model: "m", inputs }
    ok(embeddingTokensUpperBound(request) >= embeddingTokensTypical(request))
  }))
})
