/**
 * Prompt estimates: the byte count behind the hold's upper bound is the
 * UTF-8 encoder's, for any string (astral characters, lone surrogates).
 */
import { strictEqual } from "node:assert/strict"
import fc from "fast-check"
import { promptTokensUpperBound, utf8Length } from "../../src/canonical/Estimate.ts"

const encoder = new TextEncoder()

Deno.test("utf8Length: equals the encoded length of any string", () => {
  fc.assert(
    fc.property(fc.string({ unit: "binary", maxLength: 64 }), (text) => {
      strictEqual(utf8Length(text), encoder.encode(text).length)
    }),
    { numRuns: 5000 }
  )
  strictEqual(utf8Length("a😀é世\ud800x"), encoder.encode("a😀é世\ud800x").length)
})

Deno.test("promptTokensUpperBound: at least the prompt's UTF-8 bytes plus the allowances", () => {
  const text = "Grüße 😀 世界"
  const bound = promptTokensUpperBound({
    model: "m",
    stream: false,
    messages: [{ role: "user", content: [{ type: "text", text }] }]
  })
  strictEqual(bound, 8 + 8 + encoder.encode(text).length)
})
